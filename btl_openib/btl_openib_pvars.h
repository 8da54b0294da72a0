/*
 * btl_openib_pvars.h - MPI_T performance variables (btl_openib_pvars.c).
 */
#ifndef BTL_OPENIB_PVARS_H
#define BTL_OPENIB_PVARS_H

struct mca_base_component_2_1_0_t;

/* Register every variable; at component registration. */
int openib_pvars_register(const struct mca_base_component_2_1_0_t *c);

#endif

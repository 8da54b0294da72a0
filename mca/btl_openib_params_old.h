/*
 * btl_openib_params_old.h - the old openib's parameters, accepted
 * (btl_openib_params_old.c).
 */
#ifndef BTL_OPENIB_PARAMS_OLD_H
#define BTL_OPENIB_PARAMS_OLD_H

struct mca_base_component_2_1_0_t;

/* After our own parameters (the synonyms point at them). */
int openib_old_params_register(const struct mca_base_component_2_1_0_t *c);

/* At init: translate what maps, one notice for each old name a user set. */
void openib_old_params_apply(const char *nodename);

#endif

/*
 * btl_openib_hmem_glue.h - where the fragment path meets the HMEM copy hooks.
 * Every copy of user payload in the BTL goes through these functions.
 */
#ifndef BTL_OPENIB_HMEM_GLUE_H
#define BTL_OPENIB_HMEM_GLUE_H

#include "btl_openib/btl_openib.h"

struct opal_convertor_t;

int openib_hmem_glue_register(const struct mca_base_component_2_1_0_t *c);
int openib_hmem_glue_init(void);
void openib_hmem_glue_fini(void);
struct openib_hmem_object *openib_hmem_glue_child(struct openib_hmem_object *parent);
void openib_hmem_glue_release(struct openib_hmem_object *o);

/* Pack up to *size bytes from the convertor into dst; *size gets the bytes
 * packed. Returns 0 or a negative OPAL code. */
int openib_hmem_pack(mca_btl_openib_module_t *m, struct opal_convertor_t *conv, void *dst,
                     size_t *size);

/* Copy the PML's header (host memory) into a fragment. */
static inline void openib_hmem_copy_header(mca_btl_openib_module_t *m, void *dst,
                                           const void *src, size_t len)
{
    (void) m;
    memcpy(dst, src, len);
}

#endif

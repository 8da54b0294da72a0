/*
 * btl_openib_reg.h - memory registration: Open MPI's grdma registration
 * cache in front of ibv_reg_mr, and the BTL's register/deregister ops.
 */
#ifndef BTL_OPENIB_REG_H
#define BTL_OPENIB_REG_H

#include "btl_openib/btl_openib.h"

int openib_reg_cache_create(struct openib_device *dev);
void openib_reg_cache_destroy(struct openib_device *dev);

mca_btl_base_registration_handle_t *openib_register_mem(mca_btl_base_module_t *btl,
                                                         mca_btl_base_endpoint_t *ep,
                                                         void *base, size_t size, uint32_t flags);
int openib_deregister_mem(mca_btl_base_module_t *btl, mca_btl_base_registration_handle_t *h);

/* lkey of a free-list item's registered payload */
static inline uint32_t openib_item_lkey(opal_free_list_item_t *item)
{
    return ((struct openib_reg *) item->registration)->mr->lkey;
}

#endif

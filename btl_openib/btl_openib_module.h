/*
 * btl_openib_module.h - the module operations of btl_openib_module.c
 * (procs, descriptors, sends). Open MPI reaches them only through the ops
 * table of btl_openib_ops.c, which takes openib_lock around each; called
 * from inside openib, the lock is already held.
 */
#ifndef BTL_OPENIB_MODULE_H
#define BTL_OPENIB_MODULE_H

#include "btl_openib/btl_openib.h"

int openib_add_procs(mca_btl_base_module_t *btl, size_t nprocs, opal_proc_t **procs,
                     mca_btl_base_endpoint_t **peers, opal_bitmap_t *reachable);
int openib_del_procs(mca_btl_base_module_t *btl, size_t nprocs, opal_proc_t **procs,
                     mca_btl_base_endpoint_t **peers);
int openib_finalize(mca_btl_base_module_t *btl);
mca_btl_base_descriptor_t *openib_alloc(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep,
                                        uint8_t order, size_t size, uint32_t flags);
int openib_free(mca_btl_base_module_t *btl, mca_btl_base_descriptor_t *des);
mca_btl_base_descriptor_t *openib_prepare_src(mca_btl_base_module_t *btl,
                                              mca_btl_base_endpoint_t *ep, opal_convertor_t *conv,
                                              uint8_t order, size_t reserve, size_t *size,
                                              uint32_t flags);
int openib_send(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep,
                mca_btl_base_descriptor_t *des, mca_btl_base_tag_t tag);
int openib_sendi(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep, opal_convertor_t *conv,
                 void *header, size_t header_size, size_t payload_size, uint8_t order,
                 uint32_t flags, mca_btl_base_tag_t tag, mca_btl_base_descriptor_t **descriptor);
void openib_dump(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep, int verbose);
int openib_register_error(mca_btl_base_module_t *btl, mca_btl_base_module_error_cb_fn_t cb);

#endif /* BTL_OPENIB_MODULE_H */

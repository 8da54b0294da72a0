/*
 * btl_openib_rdma.h - RDMA put/get, atomics and flush.
 */
#ifndef BTL_OPENIB_RDMA_H
#define BTL_OPENIB_RDMA_H

#include "btl_openib/btl_openib.h"

/* An RDMA write (btl_put) or read (btl_get), by `op`; the rest as the BTL
 * interface's put/get. */
int openib_rdma(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep, void *local_address,
                uint64_t remote_address, mca_btl_base_registration_handle_t *local_handle,
                mca_btl_base_registration_handle_t *remote_handle, size_t size,
                enum ibv_wr_opcode op, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                void *cbdata);
int openib_atomic_fop(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep,
                      void *local_address, uint64_t remote_address,
                      mca_btl_base_registration_handle_t *local_handle,
                      mca_btl_base_registration_handle_t *remote_handle,
                      mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                      mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);
int openib_atomic_cswap(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep,
                        void *local_address, uint64_t remote_address,
                        mca_btl_base_registration_handle_t *local_handle,
                        mca_btl_base_registration_handle_t *remote_handle, uint64_t compare,
                        uint64_t value, int flags, int order,
                        mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);
struct openib_frag;
/* Finish an RDMA staged through a bounce buffer; returns the final status. */
int openib_rdma_bounce_done(struct openib_frag *f, int status);
/* Drop the registrations an RDMA fragment took for itself (a loopback
 * atomic's), at its completion or when it could not be posted. */
void openib_rdma_release_regs(struct openib_frag *f);

int openib_flush(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep);

#endif

/*
 * btl_openib_ops.c - the module's operations table: what Open MPI calls.
 *
 * Each entry point takes openib_lock around the operation it names
 * (btl_openib_lock.h: what the lock guards, why it is dropped around every
 * call out to Open MPI). The operations themselves live in
 * btl_openib_module.c, btl_openib_rdma.c and btl_openib_reg.c and assume
 * the lock is held, so openib calls them freely from inside.
 */
#include "opal_config.h"

#include "btl_openib/btl_openib.h"
#include "btl_openib/btl_openib_lock.h"
#include "btl_openib/btl_openib_module.h"
#include "btl_openib/btl_openib_rdma.h"
#include "btl_openib/btl_openib_reg.h"

/* rc = call, under the lock */
#define UNDER_LOCK(rc, call) \
    do {                     \
        openib_lock_take();  \
        (rc) = call;         \
        openib_lock_drop();  \
    } while (0)

static int locked_add_procs(mca_btl_base_module_t *btl, size_t nprocs, opal_proc_t **procs,
                            mca_btl_base_endpoint_t **peers, opal_bitmap_t *reachable)
{
    int rc;

    UNDER_LOCK(rc, openib_add_procs(btl, nprocs, procs, peers, reachable));
    return rc;
}

static int locked_del_procs(mca_btl_base_module_t *btl, size_t nprocs, opal_proc_t **procs,
                            mca_btl_base_endpoint_t **peers)
{
    int rc;

    UNDER_LOCK(rc, openib_del_procs(btl, nprocs, procs, peers));
    return rc;
}

static int locked_finalize(mca_btl_base_module_t *btl)
{
    int rc;

    UNDER_LOCK(rc, openib_finalize(btl));
    return rc;
}

static mca_btl_base_descriptor_t *locked_alloc(mca_btl_base_module_t *btl,
                                               mca_btl_base_endpoint_t *ep, uint8_t order,
                                               size_t size, uint32_t flags)
{
    mca_btl_base_descriptor_t *d;

    UNDER_LOCK(d, openib_alloc(btl, ep, order, size, flags));
    return d;
}

static int locked_free(mca_btl_base_module_t *btl, mca_btl_base_descriptor_t *des)
{
    int rc;

    UNDER_LOCK(rc, openib_free(btl, des));
    return rc;
}

static mca_btl_base_descriptor_t *locked_prepare_src(mca_btl_base_module_t *btl,
                                                     mca_btl_base_endpoint_t *ep,
                                                     opal_convertor_t *conv, uint8_t order,
                                                     size_t reserve, size_t *size, uint32_t flags)
{
    mca_btl_base_descriptor_t *d;

    UNDER_LOCK(d, openib_prepare_src(btl, ep, conv, order, reserve, size, flags));
    return d;
}

static int locked_send(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep,
                       mca_btl_base_descriptor_t *des, mca_btl_base_tag_t tag)
{
    int rc;

    UNDER_LOCK(rc, openib_send(btl, ep, des, tag));
    return rc;
}

static int locked_sendi(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep,
                        opal_convertor_t *conv, void *header, size_t header_size,
                        size_t payload_size, uint8_t order, uint32_t flags,
                        mca_btl_base_tag_t tag, mca_btl_base_descriptor_t **descriptor)
{
    int rc;

    UNDER_LOCK(rc, openib_sendi(btl, ep, conv, header, header_size, payload_size, order, flags,
                                tag, descriptor));
    return rc;
}

static int locked_rdma(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep, void *local,
                       uint64_t remote, mca_btl_base_registration_handle_t *lh,
                       mca_btl_base_registration_handle_t *rh, size_t size,
                       enum ibv_wr_opcode op, mca_btl_base_rdma_completion_fn_t cb, void *ctx,
                       void *data)
{
    int rc;

    UNDER_LOCK(rc, openib_rdma(btl, ep, local, remote, lh, rh, size, op, cb, ctx, data));
    return rc;
}

/* btl_put and btl_get share a signature (flags and order are not used) */
#define OPENIB_RDMA_ARGS                                                                  \
    mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep, void *local_address,         \
        uint64_t remote_address, mca_btl_base_registration_handle_t *local_handle,        \
        mca_btl_base_registration_handle_t *remote_handle, size_t size, int flags,        \
        int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata

static int locked_put(OPENIB_RDMA_ARGS)
{
    return locked_rdma(btl, ep, local_address, remote_address, local_handle, remote_handle, size,
                       IBV_WR_RDMA_WRITE, cbfunc, cbcontext, cbdata);
}

static int locked_get(OPENIB_RDMA_ARGS)
{
    return locked_rdma(btl, ep, local_address, remote_address, local_handle, remote_handle, size,
                       IBV_WR_RDMA_READ, cbfunc, cbcontext, cbdata);
}

static int locked_atomic_fop(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep,
                             void *local_address, uint64_t remote_address,
                             mca_btl_base_registration_handle_t *local_handle,
                             mca_btl_base_registration_handle_t *remote_handle,
                             mca_btl_base_atomic_op_t op, uint64_t operand, int flags,
                             int order, mca_btl_base_rdma_completion_fn_t cbfunc,
                             void *cbcontext, void *cbdata)
{
    int rc;

    UNDER_LOCK(rc, openib_atomic_fop(btl, ep, local_address, remote_address, local_handle,
                                     remote_handle, op, operand, flags, order, cbfunc,
                                     cbcontext, cbdata));
    return rc;
}

static int locked_atomic_cswap(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep,
                               void *local_address, uint64_t remote_address,
                               mca_btl_base_registration_handle_t *local_handle,
                               mca_btl_base_registration_handle_t *remote_handle,
                               uint64_t compare, uint64_t value, int flags, int order,
                               mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                               void *cbdata)
{
    int rc;

    UNDER_LOCK(rc, openib_atomic_cswap(btl, ep, local_address, remote_address, local_handle,
                                       remote_handle, compare, value, flags, order, cbfunc,
                                       cbcontext, cbdata));
    return rc;
}

static mca_btl_base_registration_handle_t *locked_register_mem(mca_btl_base_module_t *btl,
                                                               mca_btl_base_endpoint_t *ep,
                                                               void *base, size_t size,
                                                               uint32_t flags)
{
    mca_btl_base_registration_handle_t *h;

    UNDER_LOCK(h, openib_register_mem(btl, ep, base, size, flags));
    return h;
}

static int locked_deregister_mem(mca_btl_base_module_t *btl,
                                 mca_btl_base_registration_handle_t *h)
{
    int rc;

    UNDER_LOCK(rc, openib_deregister_mem(btl, h));
    return rc;
}

static int locked_register_error(mca_btl_base_module_t *btl,
                                 mca_btl_base_module_error_cb_fn_t cb)
{
    int rc;

    UNDER_LOCK(rc, openib_register_error(btl, cb));
    return rc;
}

static void locked_dump(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep, int verbose)
{
    openib_lock_take();
    openib_dump(btl, ep, verbose);
    openib_lock_drop();
}

/* flush waits in opal_progress, which it calls without the lock */
static int locked_flush(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep)
{
    int rc;

    UNDER_LOCK(rc, openib_flush(btl, ep));
    return rc;
}

mca_btl_openib_module_t openib_module_template = {
    .super = {
        .btl_component = &mca_btl_openib_component.super,
        /* Up to 32 KiB eagerly (into the 64 KiB shared buffers): a copy on
         * each side of 32 KiB takes a few microseconds at memory bandwidth,
         * about what the rendezvous's extra round trip (RTS, then an RDMA
         * read and its FIN) costs on an HCA, so smaller messages go faster
         * copied and larger ones faster zero-copy. */
        .btl_eager_limit = 32768 - 8,
        .btl_rndv_eager_limit = 32768 - 8,
        .btl_max_send_size = 65536 - 8,
        .btl_rdma_pipeline_send_length = 1024 * 1024,
        .btl_rdma_pipeline_frag_size = 1024 * 1024,
        .btl_min_rdma_pipeline_size = 256 * 1024,
        .btl_exclusivity = MCA_BTL_EXCLUSIVITY_DEFAULT,
        .btl_latency = 10,
        .btl_bandwidth = 10000,
        .btl_flags = MCA_BTL_FLAGS_SEND | MCA_BTL_FLAGS_PUT | MCA_BTL_FLAGS_GET |
                     MCA_BTL_FLAGS_SEND_INPLACE | MCA_BTL_FLAGS_ATOMIC_FOPS |
                     MCA_BTL_FLAGS_RDMA_FLUSH,
        .btl_atomic_flags = MCA_BTL_ATOMIC_SUPPORTS_ADD | MCA_BTL_ATOMIC_SUPPORTS_CSWAP,
        .btl_registration_handle_size = sizeof(mca_btl_base_registration_handle_t),
        .btl_get_limit = 1u << 30,
        .btl_put_limit = 1u << 30,
        .btl_get_alignment = 0,
        .btl_put_alignment = 0,
        .btl_get_local_registration_threshold = 0,
        .btl_put_local_registration_threshold = 0,
        .btl_add_procs = locked_add_procs,
        .btl_del_procs = locked_del_procs,
        .btl_finalize = locked_finalize,
        .btl_alloc = locked_alloc,
        .btl_free = locked_free,
        .btl_prepare_src = locked_prepare_src,
        .btl_send = locked_send,
        .btl_sendi = locked_sendi,
        .btl_put = locked_put,
        .btl_get = locked_get,
        .btl_dump = locked_dump,
        .btl_atomic_fop = locked_atomic_fop,
        .btl_atomic_cswap = locked_atomic_cswap,
        .btl_register_mem = locked_register_mem,
        .btl_deregister_mem = locked_deregister_mem,
        .btl_register_error = locked_register_error,
        .btl_flush = locked_flush,
    },
};

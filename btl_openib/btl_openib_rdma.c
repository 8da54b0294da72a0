/*
 * btl_openib_rdma.c - RDMA put/get, atomics and flush.
 */
#include "opal_config.h"

#include <string.h>
#include <time.h>

#include "opal/constants.h"
#include "opal/runtime/opal_progress.h"

#include "common/openib_clock.h"
#include "btl_openib/btl_openib_lock.h"
#include "btl_openib/btl_openib_rdma.h"
#include "btl_openib/btl_openib_reg.h"
#include "hmem/openib_hmem_btl.h"
#include "btl_openib/btl_openib_proc.h"
#include "btl_openib/btl_openib_send.h"
#include "mca/btl_openib_params.h"

/* Build an RDMA/atomic fragment; its completion runs the caller's callback. */
static openib_frag_t *rdma_frag(mca_btl_openib_module_t *m, mca_btl_base_endpoint_t *ep,
                                void *local, size_t size, mca_btl_base_registration_handle_t *lh,
                                mca_btl_base_rdma_completion_fn_t cb, void *ctx, void *data)
{
    openib_frag_t *f = openib_frag_alloc_rdma(m);

    if (OPAL_UNLIKELY(NULL == f)) {
        return NULL;
    }
    f->ep = ep;
    f->qp = 0;
    f->kind = OPENIB_FRAG_RDMA;
    f->local_address = local;
    f->local_handle = lh;
    f->rdma_cb = cb;
    f->cbctx = ctx;
    f->cbdata = data;
    f->bounce = NULL;
    f->user_reg = NULL;
    f->target_reg = NULL;
    f->sge[0] = (struct ibv_sge) {
        .addr = (uintptr_t) local,
        .length = (uint32_t) size,
        .lkey = lh ? lh->lkey : 0,
    };
    f->swr = (struct ibv_send_wr) {
        .wr_id = (uintptr_t) f,
        .sg_list = f->sge,
        .num_sge = 1,
        .send_flags = IBV_SEND_SIGNALED,
    };
    return f;
}

/*
 * Local memory the NIC cannot register (a bounce handle): the operation runs
 * on a registered host buffer; a put fills it first through the HMEM copy
 * hook, a get empties it at completion (openib_rdma_bounce_done).
 */
static int stage_bounce(mca_btl_openib_module_t *m, openib_frag_t *f, size_t size,
                        enum ibv_wr_opcode op)
{
    const struct openib_bounce_handle *b = (const struct openib_bounce_handle *) f->local_handle;

    f->bounce = malloc(size ? size : 1);
    if (NULL == f->bounce) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    f->bounce_len = size;
    f->bounce_handle = openib_register_mem(&m->super, f->ep, f->bounce, size ? size : 1, 0);
    if (NULL == f->bounce_handle) {
        free(f->bounce);
        f->bounce = NULL;
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    if (op == IBV_WR_RDMA_WRITE &&
        openib_hmem_copy_from_buf(m->dev->hmem, b->iface, b->device, f->bounce, f->local_address,
                                  size) != (ssize_t) size) {
        openib_deregister_mem(&m->super, f->bounce_handle);
        free(f->bounce);
        f->bounce = NULL;
        return OPAL_ERROR;
    }
    f->sge[0].addr = (uintptr_t) f->bounce;
    f->sge[0].lkey = f->bounce_handle->lkey;
    m->stats.bounced++;
    return OPAL_SUCCESS;
}

int openib_rdma_bounce_done(openib_frag_t *f, int status)
{
    const struct openib_bounce_handle *b = (const struct openib_bounce_handle *) f->local_handle;
    mca_btl_openib_module_t *m = f->m;

    if (OPAL_SUCCESS == status && f->swr.opcode == IBV_WR_RDMA_READ &&
        openib_hmem_copy_to_buf(m->dev->hmem, b->iface, b->device, f->local_address, f->bounce,
                                f->bounce_len) != (ssize_t) f->bounce_len) {
        status = OPAL_ERROR;
    }
    openib_deregister_mem(&m->super, f->bounce_handle);
    free(f->bounce);
    f->bounce = NULL;
    return status;
}

void openib_rdma_release_regs(openib_frag_t *f)
{
    if (OPAL_UNLIKELY(NULL != f->target_reg)) {
        openib_deregister_mem(&f->m->super, f->target_reg);
        f->target_reg = NULL;
    }
    if (OPAL_UNLIKELY(NULL != f->user_reg)) {
        openib_deregister_mem(&f->m->super, f->user_reg);
        f->user_reg = NULL;
    }
}

static int submit_rdma(mca_btl_base_endpoint_t *ep, openib_frag_t *f)
{
    int rc;

    ep->rdma_outstanding++; /* for flush; dropped at completion */
    rc = openib_ep_submit(ep, f);
    if (OPAL_SUCCESS != rc) {
        ep->rdma_outstanding--;
        if (f->bounce) {
            (void) openib_rdma_bounce_done(f, rc);
        }
        openib_rdma_release_regs(f);
        openib_frag_return(f);
    }
    return rc;
}

/*
 * A NULL remote handle means the "remote" address is mapped in this process:
 * osc/rdma passes one for its own window and, when every rank is on one node,
 * for node-local peers' windows in its shared segment, whichever endpoint it
 * names. A put or get is then a copy here, its callback run before returning.
 */
static int local_op(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep, void *local,
                    uint64_t remote, mca_btl_base_registration_handle_t *lh, size_t size,
                    enum ibv_wr_opcode op, mca_btl_base_rdma_completion_fn_t cb, void *ctx,
                    void *data)
{
    if (op == IBV_WR_RDMA_WRITE) {
        memmove((void *) (uintptr_t) remote, local, size);
    } else {
        memmove(local, (void *) (uintptr_t) remote, size);
    }
    cb(btl, ep, local, lh, ctx, data, OPAL_SUCCESS);
    return OPAL_SUCCESS;
}

/*
 * An atomic on memory mapped here (a NULL remote handle, as above) goes
 * through the device on our loopback queue pair, not through the CPU: other
 * ranks' atomics on the same word may come with a handle, through the device
 * (osc/rdma's MPI_Win_create windows on one node), and a device's atomics
 * are atomic only among themselves (IBV_ATOMIC_HCA; rxe's are a locked
 * read-modify-write in the kernel). A CPU compare-and-swap beside them loses
 * updates. The memory is registered for this operation (the registration
 * cache keeps it) and released at its completion.
 */
static int loopback_atomic(mca_btl_openib_module_t *m, void *local, uint64_t remote,
                           mca_btl_base_registration_handle_t *lh,
                           mca_btl_base_rdma_completion_fn_t cb, void *ctx, void *data,
                           openib_frag_t **out)
{
    mca_btl_base_registration_handle_t *target, *lreg = NULL;
    mca_btl_base_endpoint_t *self;
    openib_frag_t *f;
    char why[160];

    self = openib_peer_endpoint(m, opal_proc_local_get(), why, sizeof(why));
    if (OPAL_UNLIKELY(NULL == self)) {
        OPENIB_VERBOSE(1, "an atomic on local memory needs the loopback endpoint: %s", why);
        return OPAL_ERR_UNREACH;
    }
    target = openib_register_mem(&m->super, self, (void *) (uintptr_t) remote, 8,
                                 MCA_BTL_REG_FLAG_REMOTE_ATOMIC);
    if (OPAL_UNLIKELY(NULL == target || (target->flags & OPENIB_HANDLE_BOUNCE))) {
        if (target) {
            openib_deregister_mem(&m->super, target);
        }
        return OPAL_ERR_NOT_SUPPORTED;
    }
    if (NULL == lh) {
        lh = lreg = openib_register_mem(&m->super, self, local, 8, 0);
        if (OPAL_UNLIKELY(NULL == lreg)) {
            openib_deregister_mem(&m->super, target);
            return OPAL_ERR_OUT_OF_RESOURCE;
        }
    }
    f = rdma_frag(m, self, local, 8, lh, cb, ctx, data);
    if (OPAL_UNLIKELY(NULL == f)) {
        openib_deregister_mem(&m->super, target);
        if (lreg) {
            openib_deregister_mem(&m->super, lreg);
        }
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    f->target_reg = target;
    f->user_reg = lreg;
    *out = f;
    return OPAL_SUCCESS;
}

/* A refused operation retried unchanged: said once; at the
 * OPENIB_REFUSED_RETRIES-th retry the caller loops, and the job ends with
 * why (the PML's error callback) instead of hanging. Returns whether this
 * one repeats the last. */
static bool refused_again(mca_btl_base_endpoint_t *ep, const void *rh, uint64_t remote,
                          size_t size, const char *what)
{
    uint32_t n = openib_refusal_note(&ep->refused, rh, remote);
    char why[160];

    if (n != OPENIB_REFUSED_RETRIES) {
        return n > 0;
    }
    openib_show_help("refused-retried", true, opal_process_info.nodename, what, size,
                     (unsigned long long) remote, ep->desc, (int) n);
    snprintf(why, sizeof(why), "%s of %zu bytes at 0x%llx retried %d times with a handle that "
             "does not cover it", what, size, (unsigned long long) remote, (int) n);
    if (ep->module->error_cb) {
        OPENIB_CALLOUT(ep->module->error_cb(&ep->module->super, MCA_BTL_ERROR_FLAGS_FATAL,
                                            ep->proc, why));
    }
    return true;
}

/* Whether the peer's handle rh registers [remote, remote + size); if so,
 * *rkey is its rkey, from the one copy that was checked. An operation
 * outside the range, or with a handle copied while it changed (see
 * openib_handle_check), would end in a remote access error, which on RC
 * takes the queue pair (and every other operation on it) down; refused
 * here, it fails alone and the caller hears why. */
static bool remote_covered(mca_btl_base_endpoint_t *ep,
                           const mca_btl_base_registration_handle_t *rh, uint64_t remote,
                           size_t size, const char *what, uint32_t *rkey)
{
    mca_btl_base_registration_handle_t h;
    bool whole = openib_handle_take(rh, &h);

    if (OPAL_LIKELY(whole && openib_handle_covers(&h, remote, size))) {
        *rkey = h.rkey;
        return true;
    }
    if (refused_again(ep, rh, remote, size, what)) {
        return false;
    }
    if (!whole) {
        OPENIB_VERBOSE(1, "refused %s of %zu bytes at 0x%llx on %s: the remote handle changed "
                       "while it was read (its check word does not match its rkey 0x%x and "
                       "range 0x%llx-0x%llx)", what, size, (unsigned long long) remote, ep->desc,
                       h.rkey, (unsigned long long) h.base, (unsigned long long) (h.base + h.len));
    } else {
        OPENIB_VERBOSE(1, "refused %s of %zu bytes at 0x%llx on %s: the remote handle (rkey "
                       "0x%x) registers 0x%llx-0x%llx only", what, size,
                       (unsigned long long) remote, ep->desc, h.rkey,
                       (unsigned long long) h.base, (unsigned long long) (h.base + h.len));
    }
    return false;
}

int openib_rdma(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep, void *local,
                uint64_t remote, mca_btl_base_registration_handle_t *lh,
                mca_btl_base_registration_handle_t *rh, size_t size, enum ibv_wr_opcode op,
                mca_btl_base_rdma_completion_fn_t cb, void *ctx, void *data)
{
    mca_btl_openib_module_t *m = (mca_btl_openib_module_t *) btl;
    openib_frag_t *f;
    uint32_t rkey;

    if (OPAL_UNLIKELY(size > (op == IBV_WR_RDMA_WRITE ? btl->btl_put_limit : btl->btl_get_limit))) {
        return OPAL_ERR_NOT_AVAILABLE;
    }
    if (OPAL_UNLIKELY(NULL == rh)) {
        return local_op(btl, ep, local, remote, lh, size, op, cb, ctx, data);
    }
    if (OPAL_UNLIKELY(!remote_covered(ep, rh, remote, size,
                                      op == IBV_WR_RDMA_WRITE ? "an RDMA write" : "an RDMA read",
                                      &rkey))) {
        return OPAL_ERR_BAD_PARAM;
    }
    f = rdma_frag(m, ep, local, size, lh, cb, ctx, data);
    if (OPAL_UNLIKELY(NULL == f)) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    f->swr.opcode = op;
    f->swr.wr.rdma.remote_addr = remote;
    f->swr.wr.rdma.rkey = rkey;
    if (OPAL_UNLIKELY(lh && (lh->flags & OPENIB_HANDLE_BOUNCE))) {
        int rc = stage_bounce(m, f, size, op);
        if (OPAL_SUCCESS != rc) {
            openib_frag_return(f);
            return rc;
        }
    }
    if (op == IBV_WR_RDMA_WRITE) {
        m->stats.puts++;
        m->stats.put_bytes += size;
    } else {
        m->stats.gets++;
        m->stats.get_bytes += size;
    }
    return submit_rdma(ep, f);
}

static int atomic_common(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep, void *local,
                         uint64_t remote, mca_btl_base_registration_handle_t *lh,
                         mca_btl_base_registration_handle_t *rh, enum ibv_wr_opcode op,
                         uint64_t a, uint64_t b, int flags,
                         mca_btl_base_rdma_completion_fn_t cb, void *ctx, void *data)
{
    mca_btl_openib_module_t *m = (mca_btl_openib_module_t *) btl;
    openib_frag_t *f;
    uint32_t rkey;

    if ((flags & MCA_BTL_ATOMIC_FLAG_32BIT) || (lh && (lh->flags & OPENIB_HANDLE_BOUNCE))) {
        return OPAL_ERR_NOT_SUPPORTED; /* verbs atomics: 64-bit, on host memory */
    }
    /* verbs atomics need 8-byte alignment; a misaligned one would be a
     * remote invalid request, fatal for the queue pair */
    if (OPAL_UNLIKELY(remote & 7)) {
        return OPAL_ERR_BAD_PARAM;
    }
    if (OPAL_UNLIKELY(NULL == rh)) {
        int rc = loopback_atomic(m, local, remote, lh, cb, ctx, data, &f);

        if (OPAL_SUCCESS != rc) {
            return rc;
        }
        rkey = f->target_reg->rkey;
        ep = f->ep;
    } else {
        if (OPAL_UNLIKELY(!remote_covered(ep, rh, remote, 8, "an atomic", &rkey))) {
            return OPAL_ERR_BAD_PARAM;
        }
        f = rdma_frag(m, ep, local, 8, lh, cb, ctx, data);
        if (OPAL_UNLIKELY(NULL == f)) {
            return OPAL_ERR_OUT_OF_RESOURCE;
        }
    }
    f->swr.opcode = op;
    f->swr.wr.atomic.remote_addr = remote;
    f->swr.wr.atomic.rkey = rkey;
    f->swr.wr.atomic.compare_add = a;
    f->swr.wr.atomic.swap = b;
    m->stats.atomics++;
    return submit_rdma(ep, f);
}

int openib_atomic_fop(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep,
                      void *local_address, uint64_t remote_address,
                      mca_btl_base_registration_handle_t *local_handle,
                      mca_btl_base_registration_handle_t *remote_handle,
                      mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                      mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    if (op != MCA_BTL_ATOMIC_ADD) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    return atomic_common(btl, ep, local_address, remote_address, local_handle, remote_handle,
                         IBV_WR_ATOMIC_FETCH_AND_ADD, operand, 0, flags, cbfunc, cbcontext,
                         cbdata);
}

int openib_atomic_cswap(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep,
                        void *local_address, uint64_t remote_address,
                        mca_btl_base_registration_handle_t *local_handle,
                        mca_btl_base_registration_handle_t *remote_handle, uint64_t compare,
                        uint64_t value, int flags, int order,
                        mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    return atomic_common(btl, ep, local_address, remote_address, local_handle, remote_handle,
                         IBV_WR_ATOMIC_CMP_AND_SWP, compare, value, flags, cbfunc, cbcontext,
                         cbdata);
}

static int32_t outstanding(mca_btl_openib_module_t *m, mca_btl_base_endpoint_t *ep)
{
    int32_t n = 0;
    int i;

    if (ep) {
        return ep->rdma_outstanding;
    }
    for (i = 0; i < opal_pointer_array_get_size(&m->endpoints); ++i) {
        mca_btl_openib_endpoint_t *e = opal_pointer_array_get_item(&m->endpoints, i);
        n += e ? e->rdma_outstanding : 0;
    }
    return n;
}

int openib_flush(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep)
{
    mca_btl_openib_module_t *m = (mca_btl_openib_module_t *) btl;
    const long give_up_ms = openib_now_ms() + 1000L * openib_params.flush_timeout;

    /* Bounded: a peer that never answers turns into a QP error (retry
     * count x ACK timeout), which completes the operations with an error;
     * the clock below only guards against a device that stops completing. */
    while (outstanding(m, ep) > 0) {
        OPENIB_CALLOUT(opal_progress());
        if (openib_now_ms() > give_up_ms) {
            OPENIB_VERBOSE(1, "flush gave up after %d s with %d operations outstanding",
                           openib_params.flush_timeout, outstanding(m, ep));
            return OPAL_ERROR;
        }
    }
    return OPAL_SUCCESS;
}

/*
 * btl_openib_send.c - posting sends, RDMA operations and receives.
 */
#include "opal_config.h"

#include <errno.h>
#include <string.h>

#include "opal/constants.h"

#include "btl_openib/btl_openib_credits.h"
#include "btl_openib/btl_openib_eager_rdma.h"
#include "common/openib_errno.h"
#include "common/openib_post.h"
#include "btl_openib/btl_openib_lock.h"
#include "btl_openib/btl_openib_peer_limit.h"
#include "btl_openib/btl_openib_rdma.h"
#include "btl_openib/btl_openib_reg.h"
#include "btl_openib/btl_openib_send.h"
#include "btl_openib/btl_openib_xrc.h"
#include "mca/btl_openib_params.h"

int openib_ep_submit(mca_btl_openib_endpoint_t *ep, openib_frag_t *f)
{
    int rc;

    f->ep = ep;
    openib_ep_touch(ep);
    if (OPAL_LIKELY(ep->conn.state == OPENIB_CONN_CONNECTED &&
                    opal_list_is_empty(&ep->conn.queued))) {
        return openib_post_frag(ep, f);
    }
    rc = openib_lazy_submit(&ep->conn, &f->des.super.super);
    if (1 == rc) {
        return openib_post_frag(ep, f);
    }
    if (OPAL_ERR_UNREACH == rc) {
        OPENIB_VERBOSE(1, "%s is unreachable: %s (CPC %s)", ep->desc, ep->conn.why,
                       ep->cpc ? ep->cpc->component->name : "none");
    }
    return rc;
}

static bool have_resources(mca_btl_openib_endpoint_t *ep, openib_frag_t *f)
{
    struct openib_ep_qp *qp = &ep->qps[f->qp];

    if (openib_qp_data_room(ep, f->qp) <= 0) {
        return false;
    }
    if (f->kind == OPENIB_FRAG_SEND && openib_credits_available(qp, f->qp) <= 0) {
        /* Maybe the peer already wrote our mailbox. */
        return openib_credits_from_mailbox(ep) && openib_credits_available(qp, f->qp) > 0;
    }
    return true;
}

void openib_ep_mark_stalled(mca_btl_openib_endpoint_t *ep)
{
    if (!ep->stalled) {
        ep->stalled = true;
        opal_list_append(&ep->module->stalled, &ep->super);
    }
}

/* Signal at least every this many WQEs so unsignaled ones get reclaimed. */
#define SIGNAL_EVERY 16

int openib_qp_post(mca_btl_openib_endpoint_t *ep, int q, struct ibv_send_wr *wr, bool need_signal)
{
    struct openib_ep_qp *qp = &ep->qps[q];
    /* Only a signaled completion gives WQEs back, so besides every
     * SIGNAL_EVERY-th WQE, each of the last SIGNAL_EVERY before the queue
     * runs dry is signaled: whenever posting stops for want of WQEs, the last
     * one posted will complete and free the others (with small
     * btl_openib_max_send_wr every WQE is signaled). */
    bool sig = need_signal || qp->unsignaled + 1 >= SIGNAL_EVERY || qp->sd_wqe <= SIGNAL_EVERY;
    int rc;

    if (sig) {
        wr->send_flags |= IBV_SEND_SIGNALED;
    } else {
        wr->send_flags &= ~IBV_SEND_SIGNALED;
    }
    if (OPAL_UNLIKELY(ep->xrc)) {
        openib_xrc_stamp_wr(ep, q, wr); /* XRC: which of the node's SRQs */
    }
    rc = openib_post_send_one(qp->qp, wr); /* 0: queued, it will complete */
    if (OPAL_UNLIKELY(rc)) {
        /* The verbs edge: ibv_post_send returns an errno value without
         * necessarily setting errno; callers name it from errno. */
        errno = rc;
        return openib_err_from_errno(rc);
    }
    qp->sd_wqe--;
    ep->module->send_budget--;
    if (sig) {
        qp->reclaim[qp->reclaim_tail] = qp->unsignaled;
        if (++qp->reclaim_tail == qp->reclaim_size) { /* no division per post */
            qp->reclaim_tail = 0;
        }
        qp->unsignaled = 0;
    } else {
        qp->unsignaled++;
    }
    return OPAL_SUCCESS;
}

static int post_now(mca_btl_openib_endpoint_t *ep, openib_frag_t *f)
{
    struct openib_ep_qp *qp = &ep->qps[f->qp];
    bool need_signal = true, early_return = false;
    int rc;

    if (f->kind == OPENIB_FRAG_SEND) {
        openib_hdr_stamp(ep, f->hdr);
        f->len = (uint32_t) (sizeof(struct openib_hdr) + f->seg[0].seg_len);
        f->sge[0] = (struct ibv_sge) {
            .addr = (uintptr_t) f->hdr,
            .length = f->len,
            .lkey = f->lkey,
        };
        f->swr = (struct ibv_send_wr) {
            .wr_id = (uintptr_t) f,
            .sg_list = f->sge,
            .num_sge = 1,
            .opcode = IBV_WR_SEND,
        };
        if (f->des.des_segment_count == 2) {
            /* in place: the user's data is the second SGE */
            f->sge[1] = (struct ibv_sge) {
                .addr = (uintptr_t) f->seg[1].seg_addr.pval,
                .length = (uint32_t) f->seg[1].seg_len,
                .lkey = f->user_reg->lkey,
            };
            f->swr.num_sge = 2;
            f->len += (uint32_t) f->seg[1].seg_len;
        } else if (f->len <= ep->module->max_inline) {
            f->swr.send_flags = IBV_SEND_INLINE;
            ep->module->stats.inline_sends++;
            /* The data is in the WQE already: a fragment nobody waits for
             * goes back now and needs no completion. Its WR then names the
             * endpoint, not the fragment, for when it is signaled anyway
             * (every SIGNAL_EVERY WRs) or flushed by an error. */
            early_return = (f->des.des_flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP) &&
                           NULL == f->des.des_cbfunc;
            if (early_return) {
                need_signal = false;
                f->swr.wr_id = OPENIB_WRID_MAKE(ep, f->qp);
            }
        }
    }
    rc = openib_qp_post(ep, f->qp, &f->swr, need_signal);
    if (OPAL_UNLIKELY(rc)) {
        OPENIB_VERBOSE(1, "ibv_post_send to %s failed: %s", ep->desc, strerror(errno));
        if (f->kind == OPENIB_FRAG_SEND) {
            openib_hdr_unstamp(ep);
        }
        return OPAL_ERROR;
    }
    if (f->kind == OPENIB_FRAG_SEND) {
        if (openib_queue_is_pp(f->qp)) {
            qp->sent++;
        }
        ep->module->stats.sends++;
        ep->module->stats.send_bytes += f->len - sizeof(struct openib_hdr);
        ep->module->stats.queue_msgs++;
        ep->module->stats.queue_bytes += f->len - sizeof(struct openib_hdr);
        if (early_return) {
            openib_frag_return(f);
        }
    }
    return OPAL_SUCCESS;
}

int openib_send_ctl(mca_btl_openib_endpoint_t *ep, uint8_t tag, const void *data, size_t len,
                    bool now)
{
    openib_frag_t *f = openib_frag_alloc_send(ep->module, len);
    int rc;

    if (NULL == f) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    if (len) {
        memcpy(openib_frag_payload(f), data, len);
    }
    f->seg[0].seg_len = len;
    f->des.des_flags = MCA_BTL_DES_FLAGS_BTL_OWNERSHIP;
    f->des.des_cbfunc = NULL;
    f->hdr->tag = tag;
    rc = now ? openib_post_frag(ep, f) : openib_ep_submit(ep, f);
    if (OPAL_SUCCESS != rc) {
        openib_frag_return(f);
    }
    return rc;
}

int openib_post_frag(mca_btl_openib_endpoint_t *ep, openib_frag_t *f)
{
    f->ep = ep;
    if (OPAL_UNLIKELY(ep->conn.state == OPENIB_CONN_FAILED || ep->closing)) {
        return OPAL_ERR_UNREACH;
    }
    /* Small enough for the peer's eager ring, and nothing waits before it. */
    if (ep->eager.peer_rkey && f->kind == OPENIB_FRAG_SEND && openib_ep_may_send_now(ep)) {
        int rc = openib_eager_rdma_send_frag(ep, f);
        if (OPAL_ERR_NOT_SUPPORTED != rc) {
            return rc;
        }
    }
    /* One FIFO per endpoint, whatever the queue: nothing overtakes what
     * already waits, so the peer receives in the order we were given. */
    if (!openib_ep_may_send_now(ep) || !have_resources(ep, f)) {
        opal_list_append(&ep->pending, &f->des.super.super);
        ep->module->stats.queued_for_credits++;
        openib_ep_mark_stalled(ep);
        return OPAL_SUCCESS;
    }
    return post_now(ep, f);
}

void openib_ep_drain(mca_btl_openib_endpoint_t *ep)
{
    bool left;

    if (OPAL_UNLIKELY(ep->closing)) {
        return; /* its QPs are flushed or gone; teardown fails what waits */
    }
    openib_credits_from_mailbox(ep);
    /* Credits first: they cost no receive buffer and may unblock the peer. */
    left = !openib_credits_return(ep);
    while (!opal_list_is_empty(&ep->pending)) {
        openib_frag_t *f = (openib_frag_t *) opal_list_get_first(&ep->pending);
        int rc;

        if (!have_resources(ep, f)) {
            left = true;
            break;
        }
        opal_list_remove_first(&ep->pending);
        rc = OPAL_ERR_NOT_SUPPORTED;
        if (ep->eager.peer_rkey && f->kind == OPENIB_FRAG_SEND) {
            rc = openib_eager_rdma_send_frag(ep, f); /* the ring, when it fits */
        }
        if (OPAL_ERR_NOT_SUPPORTED == rc) {
            rc = post_now(ep, f);
        }
        if (OPAL_SUCCESS != rc) {
            openib_frag_fail(ep, f, OPAL_ERROR);
        }
    }
    if (!left && ep->stalled) {
        ep->stalled = false;
        opal_list_remove_item(&ep->module->stalled, &ep->super);
    }
}

void openib_send_complete(openib_frag_t *f, int status)
{
    mca_btl_base_descriptor_t *d = &f->des;
    mca_btl_openib_module_t *m = f->m;

    if (f->kind == OPENIB_FRAG_RDMA) {
        f->ep->rdma_outstanding--;
        if (OPAL_UNLIKELY(NULL != f->bounce)) {
            status = openib_rdma_bounce_done(f, status);
        }
        openib_rdma_release_regs(f);
        OPENIB_CALLOUT(f->rdma_cb(&m->super, f->ep, f->local_address, f->local_handle, f->cbctx,
                                  f->cbdata, status));
        openib_frag_return(f);
        return;
    }
    /* The NIC is done with the user's buffer. Read what the fragment says
     * before the callback: a descriptor the PML owns may be freed (and
     * reused by another thread) inside it. */
    bool ours = d->des_flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP;

    if (f->user_reg) {
        openib_deregister_mem(&m->super, f->user_reg);
        f->user_reg = NULL;
    }
    /* send() always returns OPAL_SUCCESS (never 1, "done inline"), so the
     * PML expects its callback on every completion. */
    if (d->des_cbfunc) {
        OPENIB_CALLOUT(d->des_cbfunc(&m->super, f->ep, d, status));
    }
    if (ours) {
        openib_frag_return(f);
    }
}

void openib_ep_fail_pending(mca_btl_openib_endpoint_t *ep, int rc)
{
    opal_list_item_t *it;

    while (NULL != (it = opal_list_remove_first(&ep->pending))) {
        openib_frag_fail(ep, (openib_frag_t *) it, rc);
    }
}

void openib_frag_fail(mca_btl_openib_endpoint_t *ep, openib_frag_t *f, int rc)
{
    f->ep = ep;
    openib_send_complete(f, rc);
}

int openib_post_recv(mca_btl_openib_module_t *m, mca_btl_openib_endpoint_t *ep, openib_frag_t *f)
{
    struct ibv_recv_wr *bad;
    int q = f->qp;
    int err;

    f->sge[0] = (struct ibv_sge) {
        .addr = (uintptr_t) f->hdr,
        .length = mca_btl_openib_component.rq.q[q].size,
        .lkey = f->lkey,
    };
    f->rwr = (struct ibv_recv_wr) {
        .wr_id = (uintptr_t) f,
        .sg_list = f->sge,
        .num_sge = 1,
    };
    /* The verbs edge: an errno value, named in the log. Callers only ask
     * whether the buffer was posted, and get OPAL_ERROR for any reason: a
     * receive the hardware refused is not a shortage to retry. */
    if (openib_queue_is_pp(q)) {
        err = ibv_post_recv(ep->qps[q].qp, &f->rwr, &bad);
    } else {
        err = ibv_post_srq_recv(m->srq[q], &f->rwr, &bad);
    }
    if (OPAL_UNLIKELY(err)) {
        OPENIB_VERBOSE(1, "posting a receive on %s:%d queue %d failed: %s", m->dev->name,
                       m->port_num, q, strerror(err));
        return OPAL_ERROR;
    }
    return OPAL_SUCCESS;
}

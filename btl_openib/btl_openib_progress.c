/*
 * btl_openib_progress.c - completion queue polling and receive dispatch.
 */
#include "opal_config.h"

#include <string.h>

#include "opal/constants.h"

#include "btl_openib/btl_openib_async.h"
#include "btl_openib/btl_openib_credits.h"
#include "btl_openib/btl_openib_cts.h"
#include "btl_openib/btl_openib_eager_rdma.h"
#include "btl_openib/btl_openib_lock.h"
#include "btl_openib/btl_openib_order.h"
#include "btl_openib/btl_openib_peer_limit.h"
#include "btl_openib/btl_openib_send.h"
#include "btl_openib/btl_openib_teardown.h"
#include "btl_openib/btl_openib_wc.h"
#include "btl_openib/btl_openib_xrc.h"
#include "connect/cpc_oob.h"
#include "mca/btl_openib_params.h"

void openib_deliver(mca_btl_openib_module_t *m, mca_btl_openib_endpoint_t *ep, uint8_t tag,
                    void *data, size_t len)
{
    if (OPAL_LIKELY(tag >= OPENIB_TAG_PML_FIRST)) {
        const mca_btl_active_message_callback_t *reg = mca_btl_base_active_message_trigger + tag;
        mca_btl_base_segment_t seg = {
            .seg_addr.pval = data,
            .seg_len = len,
        };
        mca_btl_base_descriptor_t des = {
            .des_segments = &seg,
            .des_segment_count = 1,
        };

        m->stats.recvs++;
        m->stats.recv_bytes += len;
        if (ep) {
            openib_ep_touch(ep);
        }
        if (OPAL_LIKELY(reg->cbfunc)) {
            OPENIB_CALLOUT(reg->cbfunc(&m->super, tag, &des, reg->cbdata));
        }
    } else if (tag == OPENIB_TAG_EAGER_RDMA && ep) {
        openib_eager_rdma_on_offer(ep, data, len);
    } else if (tag >= OPENIB_TAG_CLOSE_REQ && tag <= OPENIB_TAG_CLOSE_NACK && ep) {
        openib_peer_limit_on_msg(ep, tag);
    }
    /* OPENIB_TAG_CREDIT: the credits were all it carried */
}

/* A receive too short to hold our header: no openib sender makes one, so
 * it is dropped (never decoded, never handed to the PML), counted
 * (received_short_dropped) and logged, the first ten and then every
 * hundredth so a flood cannot fill the log. Its buffer goes back to its
 * queue, and a per-peer one still counts as a credit for the peer. */
static void drop_short(mca_btl_openib_module_t *m, mca_btl_openib_endpoint_t *ep,
                       openib_frag_t *f, uint32_t length)
{
    uint64_t n = ++m->stats.recv_short;
    int q = f->qp;

    if (n <= 10 || 0 == n % 100) {
        OPENIB_VERBOSE(1, "%s:%d: dropped a %u-byte receive on queue %d from %s: shorter than "
                       "the %zu-byte openib header (%llu dropped so far)", m->dev->name,
                       m->port_num, length, q, ep ? ep->desc : "an unknown QP",
                       sizeof(struct openib_hdr), (unsigned long long) n);
    }
    if (openib_queue_is_pp(q) && (NULL == ep || ep->closing)) {
        openib_frag_return(f);
        return;
    }
    f->ep = ep;
    if (OPAL_SUCCESS != openib_post_recv(m, ep, f)) {
        openib_frag_return(f);
        return;
    }
    if (NULL != ep && openib_queue_is_pp(q)) {
        ep->qps[q].reposted++;
        (void) openib_credits_return(ep);
    }
}

static void handle_recv(mca_btl_openib_module_t *m, const struct openib_completion *c)
{
    openib_frag_t *f = (openib_frag_t *) (uintptr_t) c->id;
    mca_btl_openib_endpoint_t *ep = c->ep;
    struct openib_hdr hdr;
    int q = f->qp;

    /* Before anything reads the header (credits, order, tag). */
    if (OPAL_UNLIKELY(openib_recv_payload_len(c->length) < 0)) {
        drop_short(m, ep, f, c->length);
        return;
    }
    hdr = *f->hdr;
    if (OPAL_UNLIKELY(NULL == ep)) {
        if (mca_btl_openib_component.rq.q[q].type == OPENIB_RQ_XRC) {
            /* XRC: target QPs are per remote node, no endpoint's */
            openib_xrc_recv_orphan(m, f, c->length);
            return;
        }
        /* A QP we no longer know (its endpoint was torn down). A shared
         * queue's buffer goes back to the SRQ, which would shrink otherwise;
         * a per-peer one died with its QP. */
        if (openib_queue_is_pp(q) || OPAL_SUCCESS != openib_post_recv(m, NULL, f)) {
            openib_frag_return(f);
        }
        return;
    }
    openib_credits_from_hdr(ep, &hdr); /* credits count whenever they arrive */
    if (OPAL_UNLIKELY(ep->cts_wait) && !ep->closing) {
        /* its first arrival on QP q, in any order (a closing endpoint
         * does not become connected: its QPs may be gone already) */
        openib_cts_arrived(ep, q);
    }
    if (OPAL_UNLIKELY(hdr.seq != ep->recv_seq)) {
        openib_order_hold(ep, f, c->length); /* ahead of its turn (btl_openib_order.c) */
        return;
    }
    openib_recv_deliver(m, ep, f, c->length);
    if (OPAL_UNLIKELY(!opal_list_is_empty(&ep->held))) {
        openib_order_release(ep);
    }
    if (ep->stalled) {
        openib_ep_drain(ep);
    }
}

void openib_recv_deliver(mca_btl_openib_module_t *m, mca_btl_openib_endpoint_t *ep,
                         openib_frag_t *f, uint32_t length)
{
    /* Copied before the buffer goes back to the hardware, which may fill
     * it again at once. */
    const struct openib_hdr hdr = *f->hdr;
    int q = f->qp;

    /* handle_recv dropped anything shorter than the header */
    openib_deliver(m, ep, hdr.tag, f->hdr + 1, (size_t) openib_recv_payload_len(length));
    /* only now: a message that arrives during the callback waits its turn */
    ep->recv_seq++;
    /* Give the buffer back to the hardware, then owe the peer a credit;
     * a closing endpoint's per-peer buffers are not wanted any more. */
    f->ep = ep;
    if (OPAL_UNLIKELY(ep->closing) && openib_queue_is_pp(q)) {
        openib_frag_return(f);
    } else if (OPAL_LIKELY(OPAL_SUCCESS == openib_post_recv(m, ep, f))) {
        if (openib_queue_is_pp(q)) {
            ep->qps[q].reposted++;
            (void) openib_credits_return(ep);
        }
    } else {
        openib_frag_return(f);
    }
    if (hdr.tag >= OPENIB_TAG_PML_FIRST) {
        openib_eager_rdma_note_recv(ep);
    }
}

static void handle_send_done(mca_btl_openib_module_t *m, const struct openib_completion *c)
{
    mca_btl_openib_endpoint_t *ep;

    if (c->id & OPENIB_WRID_CTRL) {
        ep = OPENIB_WRID_EP(c->id);
        openib_qp_reclaim(ep, OPENIB_WRID_QUEUE(c->id));
    } else {
        openib_frag_t *f = OPENIB_WRID_FRAG(c->id);
        ep = f->ep;
        if (OPAL_UNLIKELY(openib_frag_is_marker(f))) {
            openib_teardown_marker_done(f, c->status); /* not counted against the WQEs */
            return;
        }
        openib_qp_reclaim(ep, OPENIB_WRID_FRAG_QP(c->id, f));
        openib_send_complete(f, c->status == IBV_WC_SUCCESS ? OPAL_SUCCESS : OPAL_ERROR);
    }
    if (ep->stalled) {
        openib_ep_drain(ep);
    }
}

/* What the failed work request was, for the error report (the opcode of an
 * error completion is undefined: the fragment says what it carried). */
static const char *openib_wr_describe(const struct openib_completion *c, char *buf, size_t len)
{
    const openib_frag_t *f = OPENIB_WRID_FRAG(c->id);

    if (c->is_recv) {
        return "a receive";
    }
    if (c->id & OPENIB_WRID_CTRL) {
        return "a credit write, an inline send or an inline eager-RDMA write";
    }
    if (c->id & OPENIB_WRID_RING) {
        snprintf(buf, len, "an eager-RDMA write of %u bytes to 0x%llx, rkey 0x%x", f->sge[0].length,
                 (unsigned long long) f->swr.wr.rdma.remote_addr, f->swr.wr.rdma.rkey);
    } else if (f->kind == OPENIB_FRAG_RDMA) {
        snprintf(buf, len, "RDMA opcode %d of %u bytes at 0x%llx, rkey 0x%x, local 0x%llx lkey 0x%x",
                 (int) f->swr.opcode, f->sge[0].length,
                 (unsigned long long) f->swr.wr.rdma.remote_addr, f->swr.wr.rdma.rkey,
                 (unsigned long long) f->sge[0].addr, f->sge[0].lkey);
    } else {
        snprintf(buf, len, "a send of %u bytes", f->len);
    }
    return buf;
}

static void handle_error(mca_btl_openib_module_t *m, const struct openib_completion *c)
{
    mca_btl_openib_endpoint_t *ep = c->ep;
    char what[160];

    if (!(c->id & OPENIB_WRID_CTRL) && !c->is_recv &&
        openib_frag_is_marker(OPENIB_WRID_FRAG(c->id))) {
        openib_teardown_marker_done(OPENIB_WRID_FRAG(c->id), c->status);
        return;
    }
    if (c->status == IBV_WC_WR_FLUSH_ERR && ep && !ep->closing &&
        ep->conn.state == OPENIB_CONN_CONNECTED && !openib_endpoint_peer_closed(ep)) {
        /* Flushed, and nothing of ours closed it or reported why: the QP
         * went to the error state under us (an iWARP peer that found no
         * receive buffer terminates the connection this way). Said once:
         * the endpoint fails, later flushes are quiet. */
        openib_endpoint_fail(ep, OPAL_ERROR, "its queue pair went to the error state and the "
                             "work on it was flushed (on iWARP: the peer had no receive buffer "
                             "posted for a send)");
    } else if (c->status == IBV_WC_WR_FLUSH_ERR || (ep && ep->closing)) {
        /* QP going down: complete quietly, the async/teardown path reports. */
        if (ep && ep->closing && IBV_TRANSPORT_IWARP == m->dev->ctx->device->transport_type) {
            ep->iwarp_broken = true; /* teardown waits no more for it */
        }
    } else if (ep && openib_endpoint_peer_closed(ep)) {
        /* the peer said goodbye (it is finalizing): the end, not a loss */
        OPENIB_VERBOSE(10, "%s closed its side: %s", ep->desc, ibv_wc_status_str(c->status));
        openib_endpoint_close_quietly(ep);
    } else {
        OPENIB_VERBOSE(1, "completion error on %s:%d: %s (%s, vendor error 0x%x)",
                       m->dev->name, m->port_num, ibv_wc_status_str(c->status),
                       openib_wr_describe(c, what, sizeof(what)), c->vendor_err);
        if (ep) {
            openib_endpoint_fail(ep, OPAL_ERROR, ibv_wc_status_str(c->status));
        }
    }
    if (c->is_recv) {
        openib_frag_return((openib_frag_t *) (uintptr_t) c->id);
    } else if (c->id & OPENIB_WRID_CTRL) {
        openib_qp_reclaim(OPENIB_WRID_EP(c->id), OPENIB_WRID_QUEUE(c->id));
    } else {
        openib_frag_t *f = OPENIB_WRID_FRAG(c->id);
        if (f->ep) {
            openib_qp_reclaim(f->ep, OPENIB_WRID_FRAG_QP(c->id, f));
        }
        openib_send_complete(f, OPAL_ERROR);
    }
}

int openib_progress_cq(mca_btl_openib_module_t *m)
{
    struct ibv_wc wc[64];
    int n, i, batch = openib_params.poll_batch;

    if (batch > 64 || batch < 1) {
        batch = 64;
    }
    n = ibv_poll_cq(m->cq, batch, wc);
    if (OPAL_UNLIKELY(n < 0)) {
        OPENIB_VERBOSE(1, "ibv_poll_cq on %s:%d failed", m->dev->name, m->port_num);
        return 0;
    }
    for (i = 0; i < n; ++i) {
        struct openib_completion c;

        openib_completion_from_wc(m, &wc[i], &c);
        if (OPAL_UNLIKELY(c.status != IBV_WC_SUCCESS)) {
            handle_error(m, &c);
        } else if (c.is_recv) {
            handle_recv(m, &c);
        } else {
            handle_send_done(m, &c);
        }
    }
    return n;
}

void openib_progress_cq_drain(mca_btl_openib_module_t *m)
{
    long left = m->cq->cqe;
    int n;

    while (left > 0 && (n = openib_progress_cq(m)) > 0) {
        left -= n;
    }
}

/* Retry the endpoints waiting for credits or WQEs: as many as wait now,
 * each taken from the front of the stalled list and moved to its back
 * before its drain. No pointer is kept across a drain (a drain may
 * complete sends, and their callbacks, made without the lock, may send
 * and stall, unstall or even destroy any endpoint), so the walk costs the
 * stalled endpoints, not every endpoint of the port. */
static void drain_stalled(mca_btl_openib_module_t *m)
{
    size_t k = opal_list_get_size(&m->stalled);

    while (k-- > 0 && !opal_list_is_empty(&m->stalled)) {
        mca_btl_openib_endpoint_t *ep;

        ep = (mca_btl_openib_endpoint_t *) opal_list_get_first(&m->stalled);

        opal_list_remove_item(&m->stalled, &ep->super);
        opal_list_append(&m->stalled, &ep->super);
        openib_ep_drain(ep);
    }
}

/* Connection setup is rare: look at it once every this many progress
 * calls, so the loop that waits for a message polls little more than the
 * CQs. */
#define CONTROL_EVERY 16

int openib_component_progress(void)
{
    static unsigned tick;
    int i, count = 0;

    /* one poller at a time; the others have nothing to do here */
    if (!openib_progress_enter()) {
        return 0;
    }
    openib_lock_take();
    count += openib_async_poll(); /* one load unless a device event waits */
    for (i = 0; i < mca_btl_openib_component.num_modules; ++i) {
        mca_btl_openib_module_t *m = mca_btl_openib_component.modules[i];
        /* rings first: they carry the small, latency-bound messages */
        if (m->num_eager) {
            count += openib_eager_rdma_poll(m);
        }
        count += openib_progress_cq(m);
        if (OPAL_UNLIKELY(!opal_list_is_empty(&m->stalled))) {
            drain_stalled(m);
        }
        if (OPAL_UNLIKELY(m->num_parking || m->over_limit)) {
            count += openib_peer_limit_progress(m); /* idle closes (btl_openib_max_peers) */
        }
    }
    if (OPAL_UNLIKELY(__atomic_load_n(&openib_connect_work, __ATOMIC_ACQUIRE))) {
        /* a CPC's thread queued something: look now */
        __atomic_store_n(&openib_connect_work, 0, __ATOMIC_RELAXED);
        count += openib_connect_progress(true);
    } else if (OPAL_UNLIKELY(0 == (++tick % CONTROL_EVERY))) {
        /* timers, and events nobody flags (the rdma_cm channel's own) */
        count += openib_connect_progress(false);
    }
    openib_lock_drop();
    openib_progress_leave();
    return count;
}

/*
 * btl_openib_credits.c - credit accounting for per-peer receive queues.
 */
#include "opal_config.h"

#include <errno.h>
#include <string.h>

#include "opal/constants.h"

#include "btl_openib/btl_openib_credits.h"
#include "btl_openib/btl_openib_frag.h"
#include "btl_openib/btl_openib_send.h"
#include "mca/btl_openib_params.h"

void openib_credits_stamp(mca_btl_openib_endpoint_t *ep, struct openib_hdr *hdr)
{
    uint32_t best = 0;
    int i, pick = -1;

    /* Report the queue owing the most credits. */
    for (i = 0; i < mca_btl_openib_component.num_pp; ++i) {
        int q = mca_btl_openib_component.pp_queue[i];
        uint32_t owed;

        if (q >= ep->num_qps) {
            break;
        }
        owed = ep->qps[q].reposted - ep->qps[q].advertised;
        if (pick < 0 || owed > best) {
            best = owed;
            pick = q;
        }
    }
    hdr->reserved = 0;
    /* Eager-RDMA ring slots compete like another queue. */
    if (ep->eager.ring && ep->eager.recv_n - ep->eager.recv_advertised > best) {
        hdr->cr_qp = OPENIB_EAGER_CR_QP;
        hdr->credits = (uint16_t) ep->eager.recv_n;
        ep->eager.recv_advertised = ep->eager.recv_n;
        return;
    }
    if (pick < 0) {
        hdr->cr_qp = OPENIB_NO_CREDIT_QP;
        hdr->credits = 0;
        return;
    }
    hdr->cr_qp = (uint8_t) pick;
    hdr->credits = (uint16_t) ep->qps[pick].reposted;
    ep->qps[pick].advertised = ep->qps[pick].reposted;
}

/* Serial arithmetic: a stale (older) 16-bit value must not move *count back. */
static void learn_serial16(uint32_t *count, uint16_t value)
{
    uint16_t delta = (uint16_t) (value - (uint16_t) *count);

    if (delta && delta < 0x8000) {
        *count += delta;
    }
}

void openib_credits_from_hdr(mca_btl_openib_endpoint_t *ep, const struct openib_hdr *hdr)
{
    if (hdr->cr_qp == OPENIB_EAGER_CR_QP) {
        learn_serial16(&ep->eager.peer_returned, hdr->credits);
        return;
    }
    if (hdr->cr_qp >= ep->num_qps || !openib_queue_is_pp(hdr->cr_qp)) {
        return;
    }
    learn_serial16(&ep->qps[hdr->cr_qp].peer_returned, hdr->credits);
}

bool openib_credits_from_mailbox(mca_btl_openib_endpoint_t *ep)
{
    bool any = false;
    int q;

    if (NULL == ep->mailbox) {
        return false;
    }
    for (q = 0; q < ep->num_qps; ++q) {
        uint32_t v = ep->mailbox[q];
        if (openib_queue_is_pp(q) && (int32_t) (v - ep->qps[q].peer_returned) > 0) {
            ep->qps[q].peer_returned = v;
            any = true;
        }
    }
    if ((int32_t) (ep->mailbox[OPENIB_MAILBOX_EAGER] - ep->eager.peer_returned) > 0) {
        ep->eager.peer_returned = ep->mailbox[OPENIB_MAILBOX_EAGER];
        any = true;
    }
    return any;
}

int openib_credits_write(mca_btl_openib_endpoint_t *ep, int idx, uint32_t value)
{
    struct ibv_send_wr wr;
    struct ibv_sge sge;
    int rc;

    /* One send WQE, and some of the port's budget, are kept back for this
     * so credits can always flow. */
    if (ep->qps[0].sd_wqe <= 0 || ep->module->send_budget <= 0) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    ep->credit_src[idx] = value;
    sge = (struct ibv_sge) {
        .addr = (uintptr_t) &ep->credit_src[idx],
        .length = sizeof(uint32_t),
        .lkey = ep->mailbox_lkey,
    };
    wr = (struct ibv_send_wr) {
        .wr_id = OPENIB_WRID_MAKE(ep, 0), /* completion frees the WQE */
        .sg_list = &sge,
        .num_sge = 1,
        .opcode = IBV_WR_RDMA_WRITE,
        .send_flags = IBV_SEND_INLINE,
        .wr.rdma = {
            .remote_addr = ep->peer_mailbox_addr + (uint64_t) idx * sizeof(uint32_t),
            .rkey = ep->peer_mailbox_rkey,
        },
    };
    if (ep->module->max_inline < sizeof(uint32_t)) {
        wr.send_flags &= ~IBV_SEND_INLINE;
    }
    /* An inline write needs no completion; otherwise credit_src must stay
     * untouched until it completes, which signaling guarantees. */
    rc = openib_qp_post(ep, 0, &wr, !(wr.send_flags & IBV_SEND_INLINE));
    if (rc) {
        OPENIB_VERBOSE(1, "returning credits to %s failed: %s", ep->desc, strerror(errno));
        return OPAL_ERROR;
    }
    ep->module->stats.credit_writes++;
    return OPAL_SUCCESS;
}

/* Whether queue q (OPENIB_MAILBOX_EAGER: the ring) owes the peer an
 * explicit return: enough consumed buffers that the peer, which may be
 * sending one way and so never hears of them piggy-backed, must be told
 * before it runs out. */
static bool owes(const mca_btl_openib_endpoint_t *ep, int q)
{
    if (OPENIB_MAILBOX_EAGER == q) {
        return NULL != ep->eager.ring &&
               ep->eager.recv_n - ep->eager.recv_advertised >= (uint32_t) openib_params.eager_rdma_slots / 2;
    }
    return openib_queue_is_pp(q) &&
           ep->qps[q].reposted - ep->qps[q].advertised >= mca_btl_openib_component.rq.q[q].window;
}

bool openib_credits_return(mca_btl_openib_endpoint_t *ep)
{
    int q;

    /* Before the connection is up our QPs may not send yet; the
     * connection's completion calls this again (cb_connect_complete). */
    if (ep->conn.state != OPENIB_CONN_CONNECTED || 0 == ep->peer_mailbox_rkey || ep->closing) {
        return true;
    }
    for (q = 0; q < ep->num_qps; ++q) {
        if (!owes(ep, q)) {
            continue;
        }
        if (OPAL_SUCCESS != openib_credits_write(ep, q, ep->qps[q].reposted)) {
            goto later;
        }
        ep->qps[q].advertised = ep->qps[q].reposted;
    }
    if (owes(ep, OPENIB_MAILBOX_EAGER)) {
        if (OPAL_SUCCESS != openib_credits_write(ep, OPENIB_MAILBOX_EAGER, ep->eager.recv_n)) {
            goto later;
        }
        ep->eager.recv_advertised = ep->eager.recv_n;
    }
    return true;

later:
    /* No WQE free now: the stalled list is retried by progress and on this
     * endpoint's next send completion, so the credits are not lost. */
    openib_ep_mark_stalled(ep);
    return false;
}

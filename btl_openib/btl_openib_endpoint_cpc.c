/*
 * btl_openib_endpoint_cpc.c - what a CPC calls back into for an endpoint
 * (openib_cpc_btl_ops): our QPs' numbers, the peer's, the QPs to RTR and
 * RTS, receives posted, and the outcome (connected or failed); and the
 * loopback endpoint, which makes those calls itself.
 */
#include "opal_config.h"

#include <errno.h>
#include <string.h>

#include "opal/constants.h"
#include "opal/util/proc.h"

#include "btl_openib/btl_openib.h"
#include "common/openib_clock.h"
#include "btl_openib/btl_openib_credits.h"
#include "btl_openib/btl_openib_cts.h"
#include "btl_openib/btl_openib_eager_rdma.h"
#include "btl_openib/btl_openib_frag.h"
#include "btl_openib/btl_openib_lock.h"
#include "btl_openib/btl_openib_qp_state.h"
#include "btl_openib/btl_openib_peer_cost.h"
#include "btl_openib/btl_openib_peer_limit.h"
#include "btl_openib/btl_openib_proc.h"
#include "btl_openib/btl_openib_send.h"
#include "mca/btl_openib_params.h"

/* Per-CPC counters: oob, rdma_cm and xoob have their own slot. */
static int stats_slot(const mca_btl_openib_endpoint_t *ep)
{
    int id = ep->cpc ? ep->cpc->component->id : 0;

    return id >= OPENIB_CPC_ID_OOB && id <= OPENIB_CPC_ID_XOOB ? id - 1 : OPENIB_STATS_CPCS - 1;
}

static int cb_local_qp_info(void *btl_ep, struct openib_cpc_qp_info *out)
{
    mca_btl_openib_endpoint_t *ep = btl_ep;
    int q, rc;

    openib_endpoint_note_started(ep); /* the passive side: the peer's request is here */
    rc = openib_endpoint_create_qps(ep);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    openib_cpc_qp_info_init(out);
    out->mtu = 128u << ep->module->port_attr.active_mtu;
    memcpy(out->gid, ep->module->gid.raw, 16);
    out->lid = ep->module->port_attr.lid;
    out->num_qps = (uint8_t) ep->num_qps;
    for (q = 0; q < ep->num_qps; ++q) {
        out->qpn[q] = ep->qps[q].qp->qp_num;
        out->psn[q] = ep->qps[q].psn;
    }
    out->rq_layout = openib_rq_spec_hash(&mca_btl_openib_component.rq);
    out->mailbox_addr = (uintptr_t) ep->mailbox;
    out->mailbox_rkey = ep->mailbox_rkey;
    return OPAL_SUCCESS;
}

static int qp_to_rtr(mca_btl_openib_endpoint_t *ep, int q, const struct openib_cpc_qp_info *peer)
{
    const struct openib_qp_peer p = {
        .qpn = peer->qpn[q],
        .psn = peer->psn[q],
        .mtu = peer->mtu,
        .lid = peer->lid,
        .gid = peer->gid,
    };

    return openib_qp_to_rtr(ep->module, ep->qps[q].qp, &p, true);
}

static int qp_to_rts(mca_btl_openib_endpoint_t *ep, int q)
{
    return openib_qp_to_rts(ep->module, ep->qps[q].qp, ep->qps[q].psn);
}

static int cb_qps_to_rts(void *btl_ep)
{
    mca_btl_openib_endpoint_t *ep = btl_ep;
    int q;

    for (q = 0; q < ep->num_qps; ++q) {
        if (qp_to_rts(ep, q)) {
            snprintf(ep->conn.why, sizeof(ep->conn.why), "QP %d to RTS failed: %s", q,
                     strerror(errno));
            return OPAL_ERROR;
        }
    }
    return OPAL_SUCCESS;
}

/* The peer's data (a passive side's QPs are created here, when the
 * request arrives): its queue layout must be ours, and its credit mailbox
 * is kept. iWARP stops here: the CM moves the QPs (it was handed each
 * one's number). */
static int cb_peer_qp_info(void *btl_ep, const struct openib_cpc_qp_info *peer)
{
    mca_btl_openib_endpoint_t *ep = btl_ep;
    int rc;

    rc = openib_endpoint_create_qps(ep);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    if (peer->num_qps != ep->num_qps ||
        peer->rq_layout != openib_rq_spec_hash(&mca_btl_openib_component.rq)) {
        snprintf(ep->conn.why, sizeof(ep->conn.why),
                 "btl_openib_receive_queues differs between the two processes (%d vs %d queues)",
                 ep->num_qps, peer->num_qps);
        return OPAL_ERR_BAD_PARAM;
    }
    ep->peer_mailbox_addr = peer->mailbox_addr;
    ep->peer_mailbox_rkey = peer->mailbox_rkey;
    return OPAL_SUCCESS;
}

/* The same, then our QPs to RTR against the peer's (and to RTS). */
static int cb_connect_qps(void *btl_ep, const struct openib_cpc_qp_info *peer, bool to_rts)
{
    mca_btl_openib_endpoint_t *ep = btl_ep;
    int q, rc;

    rc = cb_peer_qp_info(ep, peer);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    for (q = 0; q < ep->num_qps; ++q) {
        if (qp_to_rtr(ep, q, peer)) {
            snprintf(ep->conn.why, sizeof(ep->conn.why), "QP %d to RTR failed: %s", q,
                     strerror(errno));
            return OPAL_ERROR;
        }
    }
    return to_rts ? cb_qps_to_rts(ep) : OPAL_SUCCESS;
}

static void cb_connect_established(void *btl_ep, bool initiator)
{
    mca_btl_openib_endpoint_t *ep = btl_ep;

    OPENIB_VERBOSE(10, "connected to %s with CPC %s (%d QPs, %s, %s sends first)", ep->desc,
                   ep->cpc ? ep->cpc->component->name : "?", ep->num_qps,
                   initiator ? "initiator" : "responder", initiator ? "this side" : "the peer");
    openib_cts_established(ep, initiator);
}

static int cb_post_recvs(void *btl_ep)
{
    mca_btl_openib_endpoint_t *ep = btl_ep;
    int q;
    uint32_t i;

    for (q = 0; q < ep->num_qps; ++q) {
        if (!openib_queue_is_pp(q)) {
            continue;
        }
        for (i = 0; i < mca_btl_openib_component.rq.q[q].count; ++i) {
            openib_frag_t *f = (openib_frag_t *) opal_free_list_get(&ep->module->recv_frags[q]);
            int rc;
            if (NULL == f) {
                return OPAL_ERR_OUT_OF_RESOURCE;
            }
            f->ep = ep;
            rc = openib_post_recv(ep->module, ep, f);
            if (OPAL_SUCCESS != rc) {
                openib_frag_return(f);
                return rc;
            }
        }
    }
    return OPAL_SUCCESS;
}

/* The connection is up: send what queued behind it, then do what had to
 * wait for it. A responder may have received a whole queue's worth of
 * messages before this point; the credits for them, and a ring offer the
 * threshold already earned, must go out now, since nothing may ever arrive
 * again to trigger them (a one-way burst). */
void openib_endpoint_connected(mca_btl_openib_endpoint_t *ep)
{
    struct openib_stats *st = &ep->module->stats;

    if (!ep->is_self) {
        int k = stats_slot(ep);
        uint64_t usec = ep->conn_t0_usec ? openib_now_usec() - ep->conn_t0_usec : 0;
        struct openib_peer_cost c;

        st->conn_made[k]++;
        st->conn_usec_sum[k] += usec;
        if (usec > st->conn_usec_max[k]) {
            st->conn_usec_max[k] = usec;
        }
        openib_peer_cost(ep, &c);
        OPENIB_VERBOSE(10, "%s: connected; this peer costs %llu bytes of host memory: %d QP(s) "
                       "with %llu bytes of send queue, endpoint %llu, per-peer receive buffers %llu",
                       ep->desc, (unsigned long long) openib_peer_cost_bytes(&c), c.qps,
                       (unsigned long long) c.send_queue, (unsigned long long) c.endpoint,
                       (unsigned long long) c.recv);
    }
    openib_lazy_connected(&ep->conn);
    (void) openib_credits_return(ep);
    if (!ep->is_self) {
        openib_peer_limit_connected(ep);
    }
    if (!ep->eager.offered && ep->eager.seen >= (uint32_t) openib_params.eager_rdma_threshold) {
        openib_eager_rdma_offer(ep);
    }
}

static void cb_connect_complete(void *btl_ep)
{
    mca_btl_openib_endpoint_t *ep = btl_ep;

    OPENIB_VERBOSE(10, "connected to %s with CPC %s (%d QPs)", ep->desc,
                   ep->cpc ? ep->cpc->component->name : "?", ep->num_qps);
    openib_endpoint_connected(ep);
}

static void cb_connect_failed(void *btl_ep, int rc, const char *why)
{
    mca_btl_openib_endpoint_t *ep = btl_ep;

    if (ep->conn.state == OPENIB_CONN_FAILED) {
        return;
    }
    ep->module->stats.conn_failed++;
    openib_lru_unlink(ep); /* not a connected peer any more */
    /* The CPC says which step failed; what the BTL found (why it could not
     * make its part) goes with it. */
    if (why && ep->conn.why[0] && NULL == strstr(why, ep->conn.why)) {
        char both[sizeof(ep->conn.why)];
        snprintf(both, sizeof(both), "%.120s: %.130s", why, ep->conn.why);
        snprintf(ep->conn.why, sizeof(ep->conn.why), "%s", both);
        why = ep->conn.why;
    }
    /* Losing an established connection is a different story for the user
     * than never getting one. */
    openib_show_help(ep->conn.state == OPENIB_CONN_CONNECTED ? "connection-lost"
                                                              : "connect-failed",
                     true, opal_process_info.nodename, ep->desc,
                     ep->cpc ? ep->cpc->component->name : "none", why ? why : ep->conn.why);
    openib_lazy_failed(&ep->conn, rc, why);
    if (ep->module->error_cb) {
        OPENIB_CALLOUT(ep->module->error_cb(&ep->module->super, MCA_BTL_ERROR_FLAGS_FATAL,
                                            ep->proc, ep->conn.why));
    }
}

/* A peer's connect request reached this module: its endpoint, made now if
 * the peer contacted us first (btl_openib_proc.c). */
static struct openib_cpc_endpoint *cb_endpoint_for_peer(void *btl, const void *peer_id,
                                                        size_t len, char *why, size_t why_len)
{
    mca_btl_openib_endpoint_t *ep;
    opal_process_name_t name;

    if (len != sizeof(name)) {
        snprintf(why, why_len, "peer id of %zu bytes (expected %zu)", len, sizeof(name));
        return NULL;
    }
    memcpy(&name, peer_id, sizeof(name));
    ep = openib_peer_contacted_us(btl, &name, why, why_len);
    if (ep && OPENIB_PARK_NONE != ep->park) {
        /* the last connection is still being closed here: the CPC has the
         * peer retry, and the retry finds a fresh endpoint */
        snprintf(why, why_len, "closing the previous, idle connection with it");
        return NULL;
    }
    return ep && !ep->is_self ? &ep->cpc_ep : NULL;
}

const struct openib_cpc_btl_ops openib_cpc_btl_ops = {
    .size = sizeof(struct openib_cpc_btl_ops),
    .local_qp_info = cb_local_qp_info,
    .connect_qps = cb_connect_qps,
    .qps_to_rts = cb_qps_to_rts,
    .post_recvs = cb_post_recvs,
    .connect_complete = cb_connect_complete,
    .connect_failed = cb_connect_failed,
    .endpoint_for_peer = cb_endpoint_for_peer,
    .peer_qp_info = cb_peer_qp_info,
    .connect_established = cb_connect_established,
};

/* The loopback endpoint needs no CPC: its QPs connect to themselves. */
int openib_endpoint_self_connect(mca_btl_openib_endpoint_t *ep)
{
    struct openib_cpc_qp_info me;
    int rc;

    rc = cb_local_qp_info(ep, &me);
    if (OPAL_SUCCESS == rc) {
        rc = cb_connect_qps(ep, &me, true);
    }
    if (OPAL_SUCCESS == rc) {
        rc = cb_post_recvs(ep);
    }
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    OPENIB_VERBOSE(100, "loopback endpoint on %s:%d connected", ep->module->dev->name,
                   ep->module->port_num);
    openib_endpoint_connected(ep);
    return OPAL_SUCCESS;
}

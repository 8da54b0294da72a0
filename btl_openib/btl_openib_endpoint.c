/*
 * btl_openib_endpoint.c - endpoints: their QPs, QP state transitions, and the
 * calls a CPC makes back into the BTL (openib_cpc_btl_ops).
 */
#include "opal_config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "opal/constants.h"
#include "opal/util/proc.h"

#include "btl_openib/btl_openib.h"
#include "btl_openib/btl_openib_clock.h"
#include "btl_openib/btl_openib_cq.h"
#include "btl_openib/btl_openib_credits.h"
#include "btl_openib/btl_openib_cts.h"
#include "btl_openib/btl_openib_eager_rdma.h"
#include "btl_openib/btl_openib_frag.h"
#include "btl_openib/btl_openib_lock.h"
#include "btl_openib/btl_openib_qp_state.h"
#include "btl_openib/btl_openib_order.h"
#include "btl_openib/btl_openib_peer_cost.h"
#include "btl_openib/btl_openib_peer_limit.h"
#include "btl_openib/btl_openib_proc.h"
#include "btl_openib/btl_openib_send.h"
#include "btl_openib/btl_openib_teardown.h"
#include "mca/btl_openib_params.h"

/* Why a verbs resource for ep could not be made, for the user: the call,
 * errno, and when pinning memory failed, the locked-memory limit. */
static void resource_failed(mca_btl_openib_endpoint_t *ep, const char *what, int err)
{
    struct rlimit rl;
    char limit[96] = "";

    if ((ENOMEM == err || EPERM == err || EAGAIN == err) && 0 == getrlimit(RLIMIT_MEMLOCK, &rl) &&
        RLIM_INFINITY != rl.rlim_cur) {
        snprintf(limit, sizeof(limit), " (locked-memory limit, ulimit -l: %llu KiB; raise it)",
                 (unsigned long long) rl.rlim_cur / 1024);
    }
    snprintf(ep->conn.why, sizeof(ep->conn.why), "%s failed: %s%s", what, strerror(err), limit);
    OPENIB_VERBOSE(1, "%s: %s", ep->desc, ep->conn.why);
}

/* The mailbox the peer RDMA-writes credits into and the words we write
 * from, one item of the module's registered list. An item goes back to
 * the list only after the endpoint's QPs are destroyed, so no late write
 * of the old peer can reach the next endpoint that gets it. */
static int create_mailbox(mca_btl_openib_endpoint_t *ep)
{
    opal_free_list_item_t *it = opal_free_list_get(&ep->module->mailboxes);
    struct openib_reg *reg;

    if (NULL == it) {
        resource_failed(ep, "registering credit mailboxes", errno ? errno : ENOMEM);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    memset(it->ptr, 0, OPENIB_MAILBOX_BYTES);
    reg = (struct openib_reg *) it->registration;
    ep->mailbox_item = it;
    ep->mailbox = it->ptr;
    ep->credit_src = (uint32_t *) it->ptr + OPENIB_MAILBOX_ENTRIES;
    ep->mailbox_lkey = reg->mr->lkey;
    ep->mailbox_rkey = reg->mr->rkey;
    return OPAL_SUCCESS;
}

/* Per-CPC counters: oob, rdma_cm and xoob have their own slot. */
static int stats_slot(const mca_btl_openib_endpoint_t *ep)
{
    int id = ep->cpc ? ep->cpc->component->id : 0;

    return id >= OPENIB_CPC_ID_OOB && id <= OPENIB_CPC_ID_XOOB ? id - 1 : OPENIB_STATS_CPCS - 1;
}

static void note_started(mca_btl_openib_endpoint_t *ep)
{
    if (0 == ep->conn_t0_usec) {
        ep->conn_t0_usec = openib_now_usec();
    }
}

/* CQ entries this endpoint's per-peer receive buffers may complete (its
 * sends come out of the port's send budget, btl_openib_cq.h). */
static int pp_receives(const struct openib_rq_spec *rq)
{
    int q, need = 0;

    for (q = 0; q < rq->num; ++q) {
        if (rq->q[q].type == OPENIB_RQ_PP) {
            need += (int) rq->q[q].count;
        }
    }
    return need;
}

/* Create this endpoint's QPs (one per receive queue) in INIT. */
static int create_qps(mca_btl_openib_endpoint_t *ep)
{
    mca_btl_openib_module_t *m = ep->module;
    const struct openib_rq_spec *rq = &mca_btl_openib_component.rq;
    int q, rc;

    if (ep->qps_created) {
        return OPAL_SUCCESS;
    }
    /* XRC: xoob attaches the endpoint to a shared send QP instead
     * (btl_openib_xrc.c); only the loopback endpoint gets here, and it has
     * no RC QP that an XRC SRQ could serve. */
    if (rq->num > 0 && rq->q[0].type == OPENIB_RQ_XRC) {
        snprintf(ep->conn.why, sizeof(ep->conn.why),
                 "loopback over XRC receive queues is not supported (use btl self)");
        return OPAL_ERR_NOT_SUPPORTED;
    }
    rc = create_mailbox(ep);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    rc = openib_cq_reserve_recv(m, pp_receives(rq));
    if (OPAL_SUCCESS != rc) {
        snprintf(ep->conn.why, sizeof(ep->conn.why), "the completion queue of %s:%d cannot "
                 "grow for another peer's per-peer receive buffers (lower the P counts in "
                 "btl_openib_receive_queues)", m->dev->name, m->port_num);
        return rc;
    }
    ep->cq_reserved = true;
    for (q = 0; q < rq->num; ++q) {
        struct ibv_qp_init_attr ia = {
            .send_cq = m->cq,
            .recv_cq = m->cq,
            .srq = rq->q[q].type == OPENIB_RQ_PP ? NULL : m->srq[q],
            .cap = {
                .max_send_wr = openib_params.max_send_wr,
                .max_recv_wr = rq->q[q].type == OPENIB_RQ_PP ? rq->q[q].count : 0,
                .max_send_sge = OPENIB_SEND_MAX_SGE,
                .max_recv_sge = 1,
                .max_inline_data = m->max_inline,
            },
            .qp_type = IBV_QPT_RC,
            .sq_sig_all = 0,
        };
        struct openib_ep_qp *qp = &ep->qps[q];

        qp->qp = ibv_create_qp(m->dev->pd, &ia);
        if (NULL == qp->qp) {
            resource_failed(ep, "creating a queue pair", errno);
            return OPAL_ERR_OUT_OF_RESOURCE;
        }
        if ((rc = openib_qp_to_init(m, qp->qp))) {
            resource_failed(ep, "moving a queue pair to INIT", rc);
            return OPAL_ERROR;
        }
        qp->psn = (uint32_t) (random() & 0xffffff);
        qp->reclaim_size = ia.cap.max_send_wr + 1;
        qp->reclaim = calloc(qp->reclaim_size, sizeof(*qp->reclaim));
        if (NULL == qp->reclaim) {
            return OPAL_ERR_OUT_OF_RESOURCE;
        }
        qp->sd_wqe = (int32_t) ia.cap.max_send_wr; /* see openib_qp_data_room */
        qp->sq_bytes = (uint32_t) openib_send_queue_bytes(&ia.cap, m->dev->defaults.sq_slot_header);
        opal_hash_table_set_value_uint32(&m->qp_map, qp->qp->qp_num, ep);
    }
    ep->num_qps = rq->num;
    /* The initiator sends first (btl_openib_cts.h): count arrivals from
     * now, they may come before our CM reports the connection. */
    if (ep->cpc && ep->cpc->uses_cts) {
        ep->cts_wait = (1u << rq->num) - 1;
    }
    ep->qps_created = true;
    return OPAL_SUCCESS;
}

static int cb_local_qp_info(void *btl_ep, struct openib_cpc_qp_info *out)
{
    mca_btl_openib_endpoint_t *ep = btl_ep;
    int q, rc;

    note_started(ep); /* the passive side: the peer's request is here */
    rc = create_qps(ep);
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

    rc = create_qps(ep);
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

/* ---- lazy connection glue ---- */

/* The loopback endpoint needs no CPC: its QPs connect to themselves. */
static int self_connect(mca_btl_openib_endpoint_t *ep)
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

static int lazy_start(void *ctx)
{
    mca_btl_openib_endpoint_t *ep = ctx;

    note_started(ep);
    if (ep->is_self) {
        return self_connect(ep);
    }
    return openib_connect_start_connect(ep->cpc, &ep->cpc_ep);
}

static int lazy_send(void *ctx, opal_list_item_t *item)
{
    return openib_post_frag(ctx, (openib_frag_t *) item);
}

static void lazy_fail(void *ctx, opal_list_item_t *item, int rc)
{
    openib_frag_fail(ctx, (openib_frag_t *) item, rc);
}

static const struct openib_lazy_ops lazy_ops = {
    .start = lazy_start,
    .send = lazy_send,
    .fail = lazy_fail,
};

/* What a quiesced endpoint's connection holds: its QPs, their CQ room, its
 * ring and its mailbox (the CPC's part is the caller's). */
static void release_connection(mca_btl_openib_endpoint_t *ep)
{
    mca_btl_openib_module_t *m = ep->module;
    int q;

    openib_lru_unlink(ep);
    for (q = 0; q < OPENIB_MAX_QUEUES; ++q) {
        if (ep->qps[q].qp) {
            opal_hash_table_remove_value_uint32(&m->qp_map, ep->qps[q].qp->qp_num);
            ibv_destroy_qp(ep->qps[q].qp);
        }
        free(ep->qps[q].reclaim);
    }
    memset(ep->qps, 0, sizeof(ep->qps));
    ep->num_qps = 0;
    ep->qps_created = false;
    if (ep->cq_reserved) {
        openib_cq_release_recv(m, pp_receives(&mca_btl_openib_component.rq));
        ep->cq_reserved = false;
    }
    openib_eager_rdma_fini(ep); /* the QPs are gone: nothing writes the ring now */
    if (ep->mailbox_item) {
        opal_free_list_return(&m->mailboxes, ep->mailbox_item);
        ep->mailbox_item = NULL;
    }
    ep->mailbox = NULL;
    ep->credit_src = NULL;
}

/* The CPC's side of the endpoint, fresh: at creation, and again for each
 * connection after an idle close. */
static int cpc_endpoint_setup(mca_btl_openib_endpoint_t *ep)
{
    openib_cpc_endpoint_init(&ep->cpc_ep);
    ep->cpc_ep.btl_ep = ep;
    ep->cpc_ep.btl_ops = &openib_cpc_btl_ops;
    ep->cpc_ep.peer_desc = ep->desc;
    ep->cpc_ep.local_id = &opal_proc_local_get()->proc_name;
    ep->cpc_ep.peer_id = &ep->name;
    ep->cpc_ep.id_len = sizeof(opal_process_name_t);
    ep->cpc_ep.peer_blob = ep->remote_cpc.blob;
    ep->cpc_ep.peer_blob_len = ep->remote_cpc.blob_len;
    ep->cpc_ep.peer_port = &ep->peer_cpc_port;
    return openib_connect_endpoint_init(ep->cpc, &ep->cpc_ep);
}

/* After an idle close (btl_openib_peer_limit.c) both sides have
 * delivered everything and quiesced: the endpoint starts over as if new,
 * keeping the sends that wait for the next connection. */
int openib_endpoint_reset(mca_btl_openib_endpoint_t *ep)
{
    int rc;

    if (ep->cpc) {
        openib_connect_endpoint_finalize(ep->cpc, &ep->cpc_ep);
    }
    release_connection(ep);
    ep->send_seq = ep->recv_seq = 0;
    ep->cts_wait = 0;
    ep->cts_established = false;
    ep->closing = ep->quiesced = false;
    ep->markers = 0;
    ep->peer_mailbox_addr = 0;
    ep->peer_mailbox_rkey = 0;
    ep->conn_t0_usec = 0;
    ep->park = OPENIB_PARK_NONE;
    rc = cpc_endpoint_setup(ep);
    if (OPAL_SUCCESS != rc) {
        openib_lazy_failed(&ep->conn, rc, "the CPC could not set up the endpoint again");
        return rc;
    }
    return openib_lazy_reopen(&ep->conn);
}

mca_btl_openib_endpoint_t *openib_endpoint_create(mca_btl_openib_module_t *m, opal_proc_t *proc,
                                                  const struct openib_modex_port *peer)
{
    mca_btl_openib_endpoint_t *ep;
    struct openib_cpc_module *local = NULL;
    const struct openib_modex_cpc *remote = NULL;
    int rc;

    rc = openib_connect_match(m->cpcs, m->num_cpcs, peer, &local, &remote);
    if (OPAL_SUCCESS != rc) {
        OPENIB_VERBOSE(10, "%s:%d shares no CPC with rank %u's port %s:%d; not reachable this way",
                       m->dev->name, m->port_num, proc->proc_name.vpid, peer->dev_name,
                       peer->port_num);
        return NULL;
    }
    ep = calloc(1, sizeof(*ep));
    if (NULL == ep) {
        return NULL;
    }
    OBJ_CONSTRUCT(&ep->super, opal_list_item_t);
    OBJ_CONSTRUCT(&ep->lru_item, opal_list_item_t);
    ep->module = m;
    ep->proc = proc;
    ep->name = proc->proc_name;
    ep->is_self = proc == opal_proc_local_get();
    ep->cpc = local;
    ep->remote_cpc = *remote;
    snprintf(ep->desc, sizeof(ep->desc), "rank %u (%s) port %s:%d", proc->proc_name.vpid,
             proc->proc_hostname ? proc->proc_hostname : "?", peer->dev_name, peer->port_num);
    OBJ_CONSTRUCT(&ep->pending, opal_list_t);
    OBJ_CONSTRUCT(&ep->held, opal_list_t);
    openib_lazy_init(&ep->conn, &lazy_ops, ep);

    openib_connect_modex_peer_port(peer, &ep->peer_cpc_port);
    snprintf(ep->peer_dev_name, sizeof(ep->peer_dev_name), "%s", peer->dev_name);
    ep->peer_cpc_port.dev_name = ep->peer_dev_name;

    if (OPAL_SUCCESS != cpc_endpoint_setup(ep)) {
        OPENIB_VERBOSE(1, "CPC %s could not set up an endpoint for %s", local->component->name,
                       ep->desc);
        openib_lazy_fini(&ep->conn);
        free(ep);
        return NULL;
    }
    ep->index = opal_pointer_array_add(&m->endpoints, ep);
    opal_proc_table_set_value(&m->peers, ep->name, ep);
    return ep;
}

void openib_endpoint_destroy(mca_btl_openib_endpoint_t *ep)
{
    mca_btl_openib_module_t *m;

    if (NULL == ep) {
        return;
    }
    OPENIB_VERBOSE(100, "destroying endpoint %s (%s)", ep->desc, openib_lazy_state_name(ep->conn.state));
    m = ep->module;
    openib_peer_limit_forget(ep); /* progress must not close it later */
    openib_endpoints_quiesce(&ep, 1); /* nothing in a CQ may refer to ep after this */
    if (ep->cpc) {
        openib_connect_endpoint_finalize(ep->cpc, &ep->cpc_ep);
    }
    openib_lazy_fini(&ep->conn);
    openib_ep_fail_pending(ep, OPAL_ERR_UNREACH);
    OBJ_DESTRUCT(&ep->pending);
    openib_order_drop(ep);
    OBJ_DESTRUCT(&ep->held);
    if (ep->stalled) {
        opal_list_remove_item(&m->stalled, &ep->super);
    }
    release_connection(ep);
    opal_pointer_array_set_item(&m->endpoints, ep->index, NULL);
    opal_proc_table_remove_value(&m->peers, ep->name);
    OBJ_DESTRUCT(&ep->lru_item);
    OBJ_DESTRUCT(&ep->super);
    free(ep);
}

/*
 * cpc_rdma_cm_responder.c - the rdma_cm handshake's responder side: the
 * checks on a peer's request (frame and MAC, membership, source address,
 * freshness), the crossing rule, assembling the chunks, the answer (REP,
 * or a REJ with a reason), and the events of the connection we accepted.
 * The protocol is described at the top of cpc_rdma_cm_conn.c; iWARP's
 * per-QP requests are answered in cpc_rdma_cm_iwarp.c.
 */
#include "opal_config.h"

#include <errno.h>
#include <rdma/rdma_cma.h>
#include <string.h>

#include "opal/constants.h"

#include "connect/cpc_active.h"
#include "connect/cpc_rdma_cm_conn.h"

void rcm_reject(struct rdma_cm_id *id, const void *local_id, enum rcm_reason why)
{
    uint8_t pd[RCM_HDR_LEN];

    rcm_hdr_encode(pd, RCM_REJ, local_id, (uint8_t) why);
    (void) rdma_reject(id, pd, sizeof(pd));
    rcm_drop_id(&id);
}

static bool initiating(const struct rcm_ep *e)
{
    return RS_ADDR == e->st || RS_ROUTE == e->st || RS_REQ_SENT == e->st || RS_RETRY == e->st;
}

static bool same_peer_qps(const struct openib_cpc_qp_info *a, const struct openib_cpc_qp_info *b)
{
    return a->num_qps == b->num_qps && a->rq_layout == b->rq_layout &&
           a->mailbox_addr == b->mailbox_addr && a->mailbox_rkey == b->mailbox_rkey &&
           0 == memcmp(a->qpn, b->qpn, sizeof(a->qpn)) &&
           0 == memcmp(a->psn, b->psn, sizeof(a->psn));
}

/* Answer a complete REQ: our QPs to RTR, receives posted, REP out. */
static void accept_request(struct rcm_ep *e, const struct rcm_event *ev)
{
    struct openib_cpc_endpoint *cep = e->cep;
    struct rdma_cm_id *id = ev->id;
    uint32_t qpn0 = rcm_wire_qpn(e, ev->qp_num);
    struct openib_cpc_qp_info peer, mine;
    struct rdma_conn_param p;
    uint8_t pd[RCM_REP_PRIV_MAX], body[RCM_BODY_MAX];
    struct rcm_blob b;
    size_t len;
    int rc;

    openib_cpc_qp_info_init(&peer);
    if (OPAL_SUCCESS != rcm_peer_blob(cep, &b) ||
        OPAL_SUCCESS != rcm_body_decode(e->rx.data, e->rx.len, qpn0, &peer)) {
        rcm_reject(id, cep->local_id, RCM_REJ_BAD);
        rcm_fail(e, OPAL_ERR_UNREACH, "the peer's request is corrupt");
        return;
    }
    rcm_peer_path(e, id, &peer);
    if (e->qps_rtr) {
        /* The peer gave up on an attempt we had answered and asks again:
         * same QPs, so the answer stands. */
        rc = same_peer_qps(&peer, &e->peer_q) ? OPAL_SUCCESS : OPAL_ERR_BAD_PARAM;
    } else if (e->mod->iwarp) {
        /* the CM moves our QPs when the peer connects each of them */
        rc = cep->btl_ops->peer_qp_info(cep->btl_ep, &peer);
        if (OPAL_SUCCESS == rc) {
            rc = rcm_post_recvs_once(e);
        }
        e->qps_rtr = OPAL_SUCCESS == rc;
        e->peer_q = peer;
    } else {
        rc = cep->btl_ops->connect_qps(cep->btl_ep, &peer, false);
        if (OPAL_SUCCESS == rc) {
            rc = cep->btl_ops->post_recvs(cep->btl_ep);
        }
        e->qps_rtr = OPAL_SUCCESS == rc;
        e->peer_q = peer;
    }
    if (OPAL_SUCCESS == rc) {
        rc = cep->btl_ops->local_qp_info(cep->btl_ep, &mine);
    }
    len = OPAL_SUCCESS == rc ? rcm_body_encode(&mine, body) : 0;
    if (0 != len) {
        /* keyed with the initiator's token, echoing its nonce */
        len = rcm_rep_encode(pd, cep->local_id, cep->peer_id, b.token, e->rx.nonce,
                             rcm_wire_qpn(e, mine.qpn[0]), body, len);
    }
    if (0 == len) {
        rcm_reject(id, cep->local_id, RCM_REJ_BAD);
        rcm_fail(e, OPAL_SUCCESS == rc ? OPAL_ERR_BAD_PARAM : rc,
                 "setting up the queue pairs for the peer's request failed");
        return;
    }
    if (e->mod->iwarp && NULL == id->qp && 0 != rcm_handshake_qp(id)) {
        RCM_LOG(e, "creating the handshake's QP failed: %s; waiting for the peer's next "
                "request", strerror(errno));
        rcm_reject(id, cep->local_id, RCM_REJ_LATER);
        e->st = RS_WAIT_PEER;
        return;
    }
    rcm_conn_param(e, ev, &p);
    p.private_data = pd;
    p.private_data_len = (uint8_t) len;
    p.qp_num = mine.qpn[0];
    id->context = e;
    /* The request came on the listeners' channel; what follows the accept
     * (ESTABLISHED, ...) must reach this thread's channel. */
    if (0 != rdma_migrate_id(id, rcm.ch) || 0 != rdma_accept(id, &p)) {
        /* Typically the initiator gave up on this request while it waited in
         * our queue: its next one gets the same answer. */
        RCM_LOG(e, "rdma_accept failed: %s; waiting for the peer's next request",
                strerror(errno));
        rcm_reject(id, cep->local_id, RCM_REJ_LATER);
        rcm_drop_id(&e->pas_id);
        e->st = RS_WAIT_PEER;
        return;
    }
    rcm_drop_id(&e->pas_id); /* an earlier answer the peer gave up on */
    e->pas_id = id;
    e->st = RS_RESPONDING;
    RCM_LOG(e, "REP sent");
}

/* A request that failed a check: rejected with no private data (a stranger
 * learns nothing), its cm_id destroyed, nothing else touched. */
void rcm_refuse_request(const struct rcm_event *ev, enum openib_refusal r, const char *detail)
{
    rcm_refused(ev->id, r, "request", detail);
    (void) rdma_reject(ev->id, NULL, 0);
    rdma_destroy_id(ev->id);
}

void rcm_on_request(struct rcm_module *mod, const struct rcm_event *ev)
{
    struct openib_cpc_endpoint *cep = NULL;
    struct rcm_ep *e;
    struct rcm_msg m;
    struct rcm_req r;
    struct rcm_blob b;
    enum openib_refusal bad;
    uint8_t sender[RCM_ID_LEN + 1];
    char why[128] = "";

    if (!rcm.have_local_id || NULL == mod->btl_ops) {
        rcm_reject(ev->id, rcm.local_id, RCM_REJ_LATER); /* no endpoint yet: the peer retries */
        return;
    }
    /* Every check before anything is touched: the frame (lengths, layout,
     * MAC under our token, which also proves the sender knows it), the
     * sender's membership, its address, freshness. */
    if (mod->iwarp && OPAL_SUCCESS == rcm_msg_decode(ev->priv, ev->priv_len, &m) &&
        RCM_QREQ == m.type) {
        rcm_on_qp_request(mod, ev);
        return;
    }
    bad = rcm_req_verify(ev->priv, ev->priv_len, mod->iwarp ? 0 : ev->qp_num, rcm.local_id,
                         openib_auth_local_token(), &r);
    if (REFUSAL_OK != bad) {
        rcm_refuse_request(ev, bad,
                           REFUSAL_BAD_MAC == bad ? "not keyed with our token: not a job member, "
                                                    "or meant for another process"
                                                  : "not an openib-ng request of this version");
        return;
    }
    cep = mod->btl_ops->endpoint_for_peer(mod->btl, r.src, RCM_ID_LEN, why, sizeof(why));
    if (NULL == cep) {
        /* It knows our token, so it is of the job; the endpoint may come
         * later: it is told to retry. */
        rcm_refused(ev->id, REFUSAL_NOT_MEMBER, "request", why);
        rcm_reject(ev->id, rcm.local_id, RCM_REJ_LATER);
        return;
    }
    e = rcm_own_ep(cep);
    if (NULL == e || RS_DONE == e->st || RS_FAILED == e->st) {
        rcm_reject(ev->id, cep->local_id, RCM_REJ_BAD);
        return;
    }
    if (RS_QPS == e->st) {
        /* iWARP: a late request of a crossing we already settled */
        rcm_reject(ev->id, cep->local_id, RCM_REJ_CROSS);
        return;
    }
    if (OPAL_SUCCESS != rcm_peer_blob(cep, &b)) {
        rcm_refuse_request(ev, REFUSAL_NOT_MEMBER,
                           "the claimed sender published no rdma_cm address of this version");
        return;
    }
    if (!rcm_sockaddr_is(rdma_get_peer_addr(ev->id), b.ip)) {
        rcm_refuse_request(ev, REFUSAL_BAD_SOURCE_ADDR, e->cep->peer_desc);
        return;
    }
    memcpy(sender, r.src, RCM_ID_LEN);
    sender[RCM_ID_LEN] = (uint8_t) r.idx; /* each chunk is good once */
    if (!openib_auth_replay_fresh(&rcm.replay, sender, sizeof(sender), r.nonce)) {
        rcm_refuse_request(ev, REFUSAL_REPLAY, e->cep->peer_desc);
        return;
    }
    RCM_LOG(e, "REQ chunk %u/%u received in state '%s'", r.idx + 1, r.count,
            rcm_state_names[e->st]);
    if (initiating(e)) {
        if (openib_cpc_keeps_initiating(cep)) {
            RCM_LOG(e, "crossing connects: we keep initiating, refusing the peer's request");
            rcm_reject(ev->id, cep->local_id, RCM_REJ_CROSS);
            return;
        }
        RCM_LOG(e, "crossing connects: dropping our attempt to answer the peer's request");
        rcm_drop_id(&e->act_id);
        e->next_chunk = 0;
    }
    if (e->active_index < 0) {
        e->deadline_ms = 0;
        rcm_set_active(e, true);
    }
    rcm_alive(e); /* its REQ */
    if (!rcm_rx_store(&e->rx, &r)) {
        e->st = RS_RECEIVING;
        rcm_reject(ev->id, cep->local_id, RCM_REJ_MORE);
        return;
    }
    accept_request(e, ev);
}

static bool any_qid(const struct rcm_ep *e)
{
    int q;

    for (q = 0; q < OPENIB_CPC_MAX_QPS; ++q) {
        if (NULL != e->qid[q]) {
            return true;
        }
    }
    return false;
}

void rcm_on_passive_event(struct rcm_ep *e, const struct rcm_event *ev)
{
    switch (ev->type) {
    case RDMA_CM_EVENT_ESTABLISHED:
        if (RS_RESPONDING != e->st || e->mod->iwarp) {
            return; /* iWARP: the handshake's connection; the QPs' follow */
        }
        if (OPAL_SUCCESS != e->cep->btl_ops->qps_to_rts(e->cep->btl_ep)) {
            rcm_fail(e, OPAL_ERROR, "moving the queue pairs to RTS failed");
            return;
        }
        rcm_done(e);
        return;
    case RDMA_CM_EVENT_REJECTED:
    case RDMA_CM_EVENT_CONNECT_ERROR:
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_DISCONNECTED:
        if (RS_RESPONDING == e->st && 0 == e->qup && !any_qid(e)) {
            /* Our REP went unanswered (the peer dropped that attempt): its
             * next REQ gets the same answer. */
            RCM_LOG(e, "%s after our REP (status %d); waiting for the peer's next request",
                    rdma_event_str(ev->type), ev->status);
            rcm_drop_id(&e->pas_id);
            e->st = RS_WAIT_PEER;
        }
        return;
    default:
        return;
    }
}

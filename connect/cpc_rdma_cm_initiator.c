/*
 * cpc_rdma_cm_initiator.c - the rdma_cm handshake's initiator side: an
 * attempt (address, route, REQ chunks), the reply, the peer's refusals
 * (CROSS, MORE, LATER, BUSY, the kernel CM's own), retries and questions
 * to a busy peer. The protocol is described at the top of
 * cpc_rdma_cm_conn.c; iWARP's connection of each QP after the reply is in
 * cpc_rdma_cm_iwarp.c.
 */
#include "opal_config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "opal/constants.h"

#include "connect/cpc_active.h"
#include "connect/cpc_rdma_cm_conn.h"

#define RCM_BUSY_BACKOFF_MS 250 /* the first question again to a busy peer */
/* The kernel CM's reject reason when nothing listens on the service (IB
 * spec "invalid service ID"; rdma_cm reports it as the event status). */
#define RCM_IB_REJ_INVALID_SERVICE_ID 8

void rcm_retry(struct rcm_ep *e, const char *fmt, ...)
{
    char why[OPENIB_CPC_WHY_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    rcm_drop_id(&e->act_id);
    e->next_chunk = 0;
    if (++e->failures > rcm_max_retries()) {
        rcm_fail(e, OPAL_ERR_UNREACH, "%s; gave up after %d failed attempts "
                 "(btl_openib_connect_rdma_cm_retries)", why, e->failures);
        return;
    }
    e->st = RS_RETRY;
    e->retry_ms = openib_cpc_retry_at_ms(e->failures);
    RCM_LOG(e, "attempt %d: %s; retrying", e->attempts, why);
}

/* REJ(BUSY) from the peer's listener thread: alive, not in MPI. Ask again
 * after a back-off doubling to OPENIB_CPC_RETRY_MAX_MS, for as long as it
 * answers; this is no failed attempt. */
static void busy_retry(struct rcm_ep *e)
{
    long backoff = (long) RCM_BUSY_BACKOFF_MS << (e->busy < 4 ? e->busy : 4);

    if (backoff > OPENIB_CPC_RETRY_MAX_MS) {
        backoff = OPENIB_CPC_RETRY_MAX_MS;
    }
    e->busy++;
    rcm_drop_id(&e->act_id);
    e->next_chunk = 0;
    e->st = RS_RETRY;
    e->retry_ms = openib_now_ms() + backoff;
    if (1 == e->busy || 0 == e->busy % 10) {
        RCM_LOG(e, "attempt %d: the peer is alive but its process is not in MPI (busy answer %d "
                "from its listener thread); asking again in %ld ms, with no deadline while it "
                "answers", e->attempts, e->busy, backoff);
    }
}

void rcm_start_attempt(struct rcm_ep *e)
{
    struct sockaddr_in src = { .sin_family = AF_INET }, dst = { .sin_family = AF_INET };
    struct rdma_cm_id *id;
    struct rcm_blob b;

    switch (rcm_peer_blob(e->cep, &b)) {
    case OPAL_SUCCESS:
        break;
    case OPAL_ERR_NOT_SUPPORTED:
        rcm_fail(e, OPAL_ERR_UNREACH, "the peer runs another openib-ng version (rdma_cm modex "
                 "version %u, this process speaks %d)", (unsigned) e->cep->peer_blob[0],
                 RCM_BLOB_VERSION);
        return;
    default:
        rcm_fail(e, OPAL_ERR_UNREACH, "the peer's rdma_cm address in the modex is corrupt");
        return;
    }
    dst.sin_port = htons(b.port);
    dst.sin_addr.s_addr = b.ip;
    e->attempts++;
    /* A new handshake (not the next chunk of this one): a new nonce, so
     * the responder's replay memory takes it and no reply to an earlier
     * attempt can pass for the answer to this one. */
    if (0 == e->next_chunk && OPAL_SUCCESS != openib_auth_nonce(e->nonce)) {
        rcm_retry(e, "no random bytes for the handshake nonce");
        return;
    }
    if (0 != rdma_create_id(rcm.ch, &id, e, RDMA_PS_TCP)) {
        rcm_retry(e, "rdma_create_id failed: %s", strerror(errno));
        return;
    }
    e->act_id = id;
    /* Our port's own address as the source: the handshake stays on this
     * device (and on rxe, loopback between two processes works). */
    src.sin_addr.s_addr = e->mod->ip;
    if (0 != rdma_resolve_addr(id, (struct sockaddr *) &src, (struct sockaddr *) &dst,
                               (int) rcm_step_timeout_ms())) {
        rcm_retry(e, "rdma_resolve_addr failed: %s", strerror(errno));
        return;
    }
    e->st = RS_ADDR;
    e->step_ms = openib_now_ms() + rcm_step_timeout_ms();
    if (openib_cpc_reg.verbose_level >= 100) {
        char ip[INET_ADDRSTRLEN] = "?";
        inet_ntop(AF_INET, &dst.sin_addr, ip, sizeof(ip));
        RCM_LOG(e, "attempt %d: resolving %s:%u", e->attempts, ip, (unsigned) ntohs(dst.sin_port));
    }
}

static void send_req(struct rcm_ep *e)
{
    struct openib_cpc_endpoint *cep = e->cep;
    struct openib_cpc_qp_info q;
    struct rdma_conn_param p;
    uint8_t body[RCM_BODY_MAX], pd[RCM_REQ_PRIV_MAX];
    struct rcm_blob b;
    size_t len;
    int rc, n;

    rc = cep->btl_ops->local_qp_info(cep->btl_ep, &q);
    if (OPAL_SUCCESS != rc) {
        rcm_fail(e, rc, "creating the queue pairs failed");
        return;
    }
    len = rcm_body_encode(&q, body);
    n = (int) RCM_CHUNKS(len);
    /* rcm_start_attempt decoded the blob already */
    len = 0 == len || OPAL_SUCCESS != rcm_peer_blob(cep, &b)
              ? 0
              : rcm_req_encode(pd, cep->local_id, cep->peer_id, b.token, e->nonce,
                               rcm_wire_qpn(e, q.qpn[0]), body, len, (unsigned) e->next_chunk);
    if (0 == len) {
        rcm_fail(e, OPAL_ERR_BAD_PARAM, "our QP data cannot be carried (%u QPs)",
                 (unsigned) q.num_qps);
        return;
    }
    if (e->mod->iwarp && NULL == e->act_id->qp && 0 != rcm_handshake_qp(e->act_id)) {
        rcm_retry(e, "creating the handshake's QP failed: %s", strerror(errno));
        return;
    }
    rcm_conn_param(e, NULL, &p);
    p.private_data = pd;
    p.private_data_len = (uint8_t) len;
    p.qp_num = q.qpn[0];
    if (0 != rdma_connect(e->act_id, &p)) {
        int err = errno;

        if (rcm_port_taken(e, e->act_id, err, &e->hport_busy, "handshake")) {
            /* the same chunk again at once, from another port: the peer
             * saw nothing and this is no failed attempt */
            rcm_drop_id(&e->act_id);
            rcm_start_attempt(e);
            return;
        }
        e->hport_busy = 0;
        rcm_retry(e, "rdma_connect failed: %s%s", strerror(err), rcm_port_hint(e, err));
        return;
    }
    e->hport_busy = 0;
    e->st = RS_REQ_SENT;
    e->step_ms = openib_now_ms() + rcm_step_timeout_ms();
    RCM_LOG(e, "REQ chunk %d/%d sent (%u bytes)", e->next_chunk + 1, n,
            (unsigned) p.private_data_len);
}

static void on_reply(struct rcm_ep *e, const struct rcm_event *ev)
{
    struct openib_cpc_endpoint *cep = e->cep;
    struct openib_cpc_qp_info peer;
    enum openib_refusal r;
    const uint8_t *body;
    size_t body_len;
    int rc;

    openib_cpc_qp_info_init(&peer);
    r = rcm_rep_verify(ev->priv, ev->priv_len, rcm_wire_qpn(e, ev->qp_num), cep->local_id,
                       openib_auth_local_token(), cep->peer_id, e->nonce, &body, &body_len);
    if (REFUSAL_OK == r &&
        OPAL_SUCCESS != rcm_body_decode(body, body_len, rcm_wire_qpn(e, ev->qp_num), &peer)) {
        r = REFUSAL_MALFORMED;
    }
    if (REFUSAL_OK != r) {
        /* Nothing of it is used: this attempt is dropped like one that
         * got no answer, and the next has a new nonce. */
        rcm_refused(ev->id, r, "reply", e->cep->peer_desc);
        rcm_retry(e, "the reply was refused (%s)", openib_refusal_name(r));
        return;
    }
    if (e->mod->iwarp) {
        /* The handshake is done (its connection is up); now each of our
         * QPs gets a connection of its own, which the CM moves to RTS. */
        rc = cep->btl_ops->peer_qp_info(cep->btl_ep, &peer);
        if (OPAL_SUCCESS == rc) {
            rc = rcm_post_recvs_once(e);
        }
        if (OPAL_SUCCESS != rc) {
            rcm_fail(e, rc, "setting up the queue pairs with the peer's reply failed");
            return;
        }
        e->nq = peer.num_qps;
        rcm_qps_connect(e);
        return;
    }
    rcm_peer_path(e, ev->id, &peer);
    rc = cep->btl_ops->connect_qps(cep->btl_ep, &peer, true);
    if (OPAL_SUCCESS == rc) {
        rc = cep->btl_ops->post_recvs(cep->btl_ep);
    }
    if (OPAL_SUCCESS != rc) {
        rcm_fail(e, rc, "connecting the queue pairs with the peer's reply failed");
        return;
    }
    /* QP-less: librdmacm leaves the RTU to us. */
    if (0 != rdma_establish(e->act_id)) {
        rcm_fail(e, OPAL_ERR_UNREACH, "rdma_establish failed: %s", strerror(errno));
        return;
    }
    rcm_done(e);
}

static void on_reject(struct rcm_ep *e, const struct rcm_event *ev)
{
    struct rcm_msg m;

    /* Our REJs carry our header; the kernel's own do not. Nothing listening
     * means the peer's process is gone (its listener lives as long as it
     * does); the others (stale connection, timeout) are worth another
     * attempt. */
    if (OPAL_SUCCESS != rcm_msg_decode(ev->priv, ev->priv_len, &m) || RCM_REJ != m.type) {
        if (RCM_IB_REJ_INVALID_SERVICE_ID == ev->status) {
            rcm_fail(e, OPAL_ERR_UNREACH, "nothing listens at the peer's rdma_cm address any more "
                     "(IB CM reject reason %d, invalid service ID): the peer process has exited",
                     ev->status);
            return;
        }
        rcm_retry(e, "the request was refused (IB CM reason %d)", ev->status);
        return;
    }
    rcm_alive(e);
    switch (m.arg) {
    case RCM_REJ_CROSS:
        rcm_drop_id(&e->act_id);
        e->next_chunk = 0;
        e->st = RS_WAIT_PEER;
        e->step_ms = openib_now_ms() + rcm_step_timeout_ms();
        RCM_LOG(e, "crossing connects: the peer initiates, waiting for its request");
        break;
    case RCM_REJ_MORE:
        rcm_drop_id(&e->act_id);
        e->next_chunk++;
        rcm_start_attempt(e);
        break;
    case RCM_REJ_LATER:
        rcm_retry(e, "the peer asks us to try again later (no endpoint for us yet?)");
        break;
    case RCM_REJ_BUSY:
        switch (rcm_busy_decode(&m)) {
        case OPAL_SUCCESS:
            busy_retry(e);
            break;
        case OPAL_ERR_NOT_SUPPORTED:
            rcm_fail(e, OPAL_ERR_UNREACH, "the peer answered 'busy' with a marker of version %u "
                     "(this process reads %d): mixed openib-ng versions", (unsigned) m.rest[0],
                     RCM_BUSY_VERSION);
            break;
        default:
            rcm_fail(e, OPAL_ERR_UNREACH, "the peer's 'busy' answer is cut short (%zu bytes)",
                     ev->priv_len);
            break;
        }
        break;
    default:
        rcm_fail(e, OPAL_ERR_UNREACH, "the peer refused the connection");
        break;
    }
}

void rcm_on_active_event(struct rcm_ep *e, const struct rcm_event *ev)
{
    switch (ev->type) {
    case RDMA_CM_EVENT_ADDR_RESOLVED:
        if (RS_ADDR != e->st) {
            return;
        }
        if (0 != rdma_resolve_route(e->act_id, (int) rcm_step_timeout_ms())) {
            rcm_retry(e, "rdma_resolve_route failed: %s", strerror(errno));
            return;
        }
        e->st = RS_ROUTE;
        e->step_ms = openib_now_ms() + rcm_step_timeout_ms();
        return;
    case RDMA_CM_EVENT_ROUTE_RESOLVED:
        if (RS_ROUTE == e->st) {
            send_req(e);
        }
        return;
    case RDMA_CM_EVENT_CONNECT_RESPONSE:
    case RDMA_CM_EVENT_ESTABLISHED:
        /* The reply, in the event's private data. ESTABLISHED brings it
         * only on iWARP: the handshake's connection (with its own QP) is up. */
        if (RS_REQ_SENT == e->st && (RDMA_CM_EVENT_ESTABLISHED != ev->type || e->mod->iwarp)) {
            on_reply(e, ev);
        }
        return;
    case RDMA_CM_EVENT_REJECTED:
        if (RS_REQ_SENT == e->st) {
            on_reject(e, ev);
        }
        return;
    case RDMA_CM_EVENT_ADDR_ERROR:
    case RDMA_CM_EVENT_ROUTE_ERROR:
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_CONNECT_ERROR:
        if (RS_ADDR == e->st || RS_ROUTE == e->st || RS_REQ_SENT == e->st) {
            rcm_retry(e, "%s (status %d)", rdma_event_str(ev->type), ev->status);
        }
        return;
    default:
        return; /* DISCONNECTED once connected: the peer is leaving */
    }
}

/*
 * cpc_rdma_cm_iwarp.c - what the rdma_cm handshake does differently on
 * iWARP, for both sides: the connection parameters and the QP number the
 * MACs cover (used on InfiniBand/RoCE too, where they are librdmacm's
 * maxima and the QP number the CM carries), the handshake connection's own
 * QP, and after the handshake one connection per QP (QREQ/QREP). Why iWARP
 * needs this: the top of cpc_rdma_cm_conn.c.
 */
#include "opal_config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <string.h>

#include "opal/constants.h"

#include "common/openib_errno.h"
#include "connect/cpc_active.h"
#include "connect/cpc_rdma_cm_conn.h"

/* The connection parameters: on InfiniBand/RoCE as librdmacm resolves its
 * maxima; on iWARP the device's limits, and when answering a request no
 * more than the initiator can use (its initiator depth bounds our
 * responder resources, and the other way round). */
void rcm_conn_param(const struct rcm_ep *e, const struct rcm_event *req,
                    struct rdma_conn_param *p)
{
    memset(p, 0, sizeof(*p));
    p->responder_resources = RDMA_MAX_RESP_RES;
    p->initiator_depth = RDMA_MAX_INIT_DEPTH;
    p->retry_count = 7;
    p->rnr_retry_count = 7;
    if (!e->mod->iwarp) {
        return;
    }
    p->responder_resources = e->mod->max_rd_atom;
    p->initiator_depth = e->mod->max_init_rd_atom;
    if (NULL != req) {
        if (req->initiator_depth < p->responder_resources) {
            p->responder_resources = req->initiator_depth;
        }
        if (req->responder_resources < p->initiator_depth) {
            p->initiator_depth = req->responder_resources;
        }
    }
}

/* The QP number the handshake's MAC covers: the one conn_param carries on
 * InfiniBand/RoCE; on iWARP the CM carries none (and our QPs are not the
 * handshake's), so 0 on both sides. */
uint32_t rcm_wire_qpn(const struct rcm_ep *e, uint32_t qpn)
{
    return e->mod->iwarp ? 0 : qpn;
}

/* iWARP: the handshake's connection needs a QP of its own (the iWARP CM
 * accepts no connection without one, and a refused attempt kills its
 * QP): a minimal one from librdmacm's own PD and CQs, never used for data
 * and destroyed with its cm_id. The BTL's QPs are connected after it. */
int rcm_handshake_qp(struct rdma_cm_id *id)
{
    struct ibv_qp_init_attr a = {
        .cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
        .qp_type = IBV_QPT_RC,
    };

    if (0 != rdma_create_qp(id, NULL, &a)) {
        /* librdmacm: -1 and errno, which stays set for the callers'
         * messages (the conversion leaves it alone) */
        return 0 != errno ? openib_err_from_errno(errno) : OPAL_ERROR;
    }
    return OPAL_SUCCESS;
}

/* Our receive buffers go up once, before any connection of our QPs: the
 * peer may send the moment its side is established. */
int rcm_post_recvs_once(struct rcm_ep *e)
{
    int rc;

    if (e->recvs_posted) {
        return OPAL_SUCCESS;
    }
    rc = e->cep->btl_ops->post_recvs(e->cep->btl_ep);
    e->recvs_posted = OPAL_SUCCESS == rc;
    return rc;
}

/* rdma_connect's err says the host's TCP holds the local port (iWARP). */
static bool port_error(const struct rcm_ep *e, int err)
{
    return e->mod->iwarp && (EADDRINUSE == err || EADDRNOTAVAIL == err);
}

bool rcm_port_taken(const struct rcm_ep *e, struct rdma_cm_id *id, int err, uint8_t *tries,
                    const char *what)
{
    if (!port_error(e, err) || ++*tries >= RCM_PORT_TRIES) {
        return false;
    }
    RCM_LOG(e, "%s: local port %u is in use in the host's TCP (%s); connecting from another "
            "(try %d of %d)", what, ntohs(rdma_get_src_port(id)), strerror(err), *tries + 1,
            RCM_PORT_TRIES);
    return true;
}

const char *rcm_port_hint(const struct rcm_ep *e, int err)
{
    return port_error(e, err)
               ? " (the local port was in use in the host's TCP at every try: widen "
                 "net.ipv4.ip_local_port_range or run iwpmd)"
               : "";
}

/* Initiator, QP q: a cm_id of its own, its address resolution started. */
static void qp_resolve(struct rcm_ep *e, int q)
{
    struct sockaddr_in src = { .sin_family = AF_INET }, dst = { .sin_family = AF_INET };
    struct rcm_blob b;

    if (OPAL_SUCCESS != rcm_peer_blob(e->cep, &b)) {
        rcm_fail(e, OPAL_ERR_UNREACH, "the peer's rdma_cm address in the modex is corrupt");
        return;
    }
    dst.sin_port = htons(b.port);
    dst.sin_addr.s_addr = b.ip;
    src.sin_addr.s_addr = e->mod->ip;
    if (0 != rdma_create_id(rcm.ch, &e->qid[q], e, RDMA_PS_TCP)) {
        e->qid[q] = NULL;
        rcm_fail(e, OPAL_ERR_OUT_OF_RESOURCE, "rdma_create_id for QP %d failed: %s", q,
                 strerror(errno));
        return;
    }
    if (0 != rdma_resolve_addr(e->qid[q], (struct sockaddr *) &src, (struct sockaddr *) &dst,
                               (int) rcm_step_timeout_ms())) {
        rcm_fail(e, OPAL_ERR_UNREACH, "rdma_resolve_addr for QP %d failed: %s", q,
                 strerror(errno));
    }
}

/* Initiator: a cm_id per QP, each resolved and connected with the QP's
 * number (the CM moves the QP to RTS). */
void rcm_qps_connect(struct rcm_ep *e)
{
    int q;

    e->iw_initiator = true;
    e->st = RS_QPS;
    e->step_ms = openib_now_ms() + rcm_step_timeout_ms();
    for (q = 0; q < e->nq && RS_QPS == e->st; ++q) {
        qp_resolve(e, q);
    }
    if (RS_QPS == e->st) {
        RCM_LOG(e, "handshake done; connecting %d QPs, one iWARP connection each", e->nq);
    }
}

static void qp_send_req(struct rcm_ep *e, int q)
{
    struct openib_cpc_endpoint *cep = e->cep;
    struct openib_cpc_qp_info mine;
    struct rdma_conn_param p;
    uint8_t pd[RCM_QP_FRAME_LEN];
    struct rcm_blob b;
    int rc;

    rc = cep->btl_ops->local_qp_info(cep->btl_ep, &mine);
    if (OPAL_SUCCESS != rc || q >= mine.num_qps || OPAL_SUCCESS != rcm_peer_blob(cep, &b)) {
        rcm_fail(e, OPAL_SUCCESS == rc ? OPAL_ERR_BAD_PARAM : rc, "no queue pair %d to connect", q);
        return;
    }
    (void) rcm_qp_frame_encode(pd, RCM_QREQ, cep->local_id, cep->peer_id, b.token, e->nonce,
                               (unsigned) q);
    rcm_conn_param(e, NULL, &p);
    p.private_data = pd;
    p.private_data_len = (uint8_t) sizeof(pd);
    p.qp_num = mine.qpn[q];
    if (0 != rdma_connect(e->qid[q], &p)) {
        int err = errno;
        char what[16];

        snprintf(what, sizeof(what), "QP %d", q);
        if (rcm_port_taken(e, e->qid[q], err, &e->qport_busy[q], what)) {
            rcm_drop_id(&e->qid[q]);
            e->step_ms = openib_now_ms() + rcm_step_timeout_ms();
            qp_resolve(e, q);
            return;
        }
        rcm_fail(e, OPAL_ERR_UNREACH, "rdma_connect for QP %d failed: %s%s", q, strerror(err),
                 rcm_port_hint(e, err));
        return;
    }
    RCM_LOG(e, "QP %d: request sent", q);
}

/* QP q's connection is up on our side. */
static void qp_up(struct rcm_ep *e, int q)
{
    e->qup |= (uint8_t) (1u << q);
    rcm_alive(e);
    RCM_LOG(e, "QP %d connected", q);
    if (e->qup == (1u << e->nq) - 1) {
        rcm_done(e);
    }
}

void rcm_on_qp_event(struct rcm_ep *e, int q, const struct rcm_event *ev)
{
    struct openib_cpc_endpoint *cep = e->cep;
    uint8_t src[RCM_ID_LEN], nonce[OPENIB_AUTH_NONCE_LEN];
    enum openib_refusal r;
    unsigned qq;

    if (RS_QPS != e->st) {
        return; /* DISCONNECTED once connected: the peer is leaving */
    }
    rcm_alive(e);
    switch (ev->type) {
    case RDMA_CM_EVENT_ADDR_RESOLVED:
        if (0 != rdma_resolve_route(e->qid[q], (int) rcm_step_timeout_ms())) {
            rcm_fail(e, OPAL_ERR_UNREACH, "rdma_resolve_route for QP %d failed: %s", q,
                     strerror(errno));
        }
        return;
    case RDMA_CM_EVENT_ROUTE_RESOLVED:
        qp_send_req(e, q);
        return;
    case RDMA_CM_EVENT_ESTABLISHED:
        if (e->iw_initiator) {
            r = rcm_qp_frame_verify(ev->priv, ev->priv_len, RCM_QREP, cep->local_id,
                                    openib_auth_local_token(), src, nonce, &qq);
            if (REFUSAL_OK == r &&
                (0 != memcmp(src, cep->peer_id, RCM_ID_LEN) ||
                 0 != memcmp(nonce, e->nonce, sizeof(nonce)) || qq != (unsigned) q)) {
                r = REFUSAL_WRONG_SRC;
            }
            if (REFUSAL_OK != r) {
                rcm_refused(ev->id, r, "QP reply", cep->peer_desc);
                rcm_fail(e, OPAL_ERR_UNREACH, "the answer for QP %d was refused (%s)", q,
                         openib_refusal_name(r));
                return;
            }
        }
        qp_up(e, q);
        return;
    default:
        /* A refused or failed connection has left its QP in error: the
         * connection cannot be made again with it. */
        rcm_fail(e, OPAL_ERR_UNREACH, "the connection of QP %d failed: %s (status %d)", q,
                 rdma_event_str(ev->type), ev->status);
        return;
    }
}

/* iWARP: the peer connects one of our QPs, for the handshake we accepted:
 * the frame's MAC (our token), the sender's endpoint, the handshake's
 * nonce, the address it published, and a QP not connected yet. */
void rcm_on_qp_request(struct rcm_module *mod, const struct rcm_event *ev)
{
    struct openib_cpc_endpoint *cep;
    struct openib_cpc_qp_info mine;
    struct rdma_conn_param p;
    uint8_t src[RCM_ID_LEN], nonce[OPENIB_AUTH_NONCE_LEN], pd[RCM_QP_FRAME_LEN];
    enum openib_refusal bad;
    struct rcm_blob b;
    struct rcm_ep *e;
    char why[128] = "";
    unsigned q;

    bad = rcm_qp_frame_verify(ev->priv, ev->priv_len, RCM_QREQ, rcm.local_id,
                              openib_auth_local_token(), src, nonce, &q);
    if (REFUSAL_OK != bad) {
        rcm_refuse_request(ev, bad, "QP request");
        return;
    }
    cep = mod->btl_ops->endpoint_for_peer(mod->btl, src, RCM_ID_LEN, why, sizeof(why));
    e = rcm_own_ep(cep);
    if (NULL == e || (RS_RESPONDING != e->st && RS_QPS != e->st) || e->iw_initiator ||
        !e->qps_rtr || q >= e->peer_q.num_qps ||
        NULL != e->qid[q] || 0 != memcmp(nonce, e->rx.nonce, sizeof(nonce))) {
        rcm_refuse_request(ev, REFUSAL_REPLAY, "QP request for no handshake under way");
        return;
    }
    if (OPAL_SUCCESS != rcm_peer_blob(cep, &b) ||
        !rcm_sockaddr_is(rdma_get_peer_addr(ev->id), b.ip)) {
        rcm_refuse_request(ev, REFUSAL_BAD_SOURCE_ADDR, e->cep->peer_desc);
        return;
    }
    if (OPAL_SUCCESS != cep->btl_ops->local_qp_info(cep->btl_ep, &mine) || q >= mine.num_qps) {
        rcm_refuse_request(ev, REFUSAL_MALFORMED, "no such queue pair here");
        rcm_fail(e, OPAL_ERR_BAD_PARAM, "the peer asked for queue pair %u, which we lack", q);
        return;
    }
    (void) rcm_qp_frame_encode(pd, RCM_QREP, cep->local_id, cep->peer_id, b.token, nonce, q);
    rcm_conn_param(e, ev, &p);
    p.private_data = pd;
    p.private_data_len = (uint8_t) sizeof(pd);
    p.qp_num = mine.qpn[q];
    ev->id->context = e;
    if (0 != rdma_migrate_id(ev->id, rcm.ch) || 0 != rdma_accept(ev->id, &p)) {
        RCM_LOG(e, "rdma_accept for QP %u failed: %s", q, strerror(errno));
        rcm_reject(ev->id, cep->local_id, RCM_REJ_BAD);
        rcm_fail(e, OPAL_ERR_UNREACH, "accepting the connection of QP %u failed", q);
        return;
    }
    e->qid[q] = ev->id;
    e->nq = e->peer_q.num_qps;
    e->st = RS_QPS; /* the handshake's own connection is of no more interest */
    rcm_alive(e);
    RCM_LOG(e, "QP %u: request accepted", q);
}

/*
 * cpc_xoob_initiator.c - xoob's initiator: the endpoint that drives a node's
 * handshake makes the shared send QP, sends the REQ and connects the QP to
 * the target QP the REP names; the end of the handshake, success or not,
 * reaches every endpoint waiting on the node (cpc_xoob.c has the overview).
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <stdio.h>
#include <string.h>

#include "connect/cpc_auth.h"
#include "connect/cpc_oob_channel.h"
#include "connect/cpc_xoob_int.h"

/* ---- the end of a node's handshake: every waiting endpoint hears it ---- */

/* The endpoint starts sending on the node's send QP, with its share of the
 * QP's send WQEs: a fair share for every endpoint that uses the QP, so the
 * first ones cannot take all of it. The BTL may take fewer (its own
 * per-endpoint limit); the rest goes back at once. */
static int attach(struct xoob_ep *e, char *why, size_t why_len)
{
    struct openib_xrc_node *n = e->node;
    int nq = e->peer.nsrq, rc;
    uint32_t want, per_q, taken;

    want = n->wqe_cap / ((uint32_t) nq * (uint32_t) (n->refcount > 0 ? n->refcount : 1));
    rc = openib_xrc_node_reserve(n, want ? want : 1, nq, &per_q);
    if (OPAL_SUCCESS != rc) {
        snprintf(why, why_len, "the shared XRC send QP to this node has no send WQEs left "
                 "(%u of %u in use by %d endpoints)", n->wqe_used, n->wqe_cap, n->refcount);
        return rc;
    }
    taken = per_q;
    rc = e->mod->xrc->ep_attach(e->cep->btl_ep, n->qp, e->peer.srqn, nq, &taken, why, why_len);
    if (OPAL_SUCCESS != rc) {
        openib_xrc_node_unreserve(n, per_q, nq);
        return rc;
    }
    openib_xrc_node_unreserve(n, per_q - taken, nq);
    e->per_q = taken;
    e->nq = nq;
    return OPAL_SUCCESS;
}

static void waiter_done(void *waiter, int rc, const char *why, void *arg)
{
    struct xoob_ep *e = waiter;
    struct openib_cpc_endpoint *cep = e->cep;
    char buf[256], err[128];

    (void) arg;
    e->waiting = false;
    if (OPAL_SUCCESS == rc) {
        rc = attach(e, err, sizeof(err));
        if (OPAL_SUCCESS == rc) {
            e->attached = true;
            cep->btl_ops->connect_complete(cep->btl_ep);
            return;
        }
        why = err;
    }
    e->failed = true;
    snprintf(buf, sizeof(buf), "xoob: %s", why ? why : "connection failed");
    cep->btl_ops->connect_failed(cep->btl_ep, rc, buf);
}

void xoob_node_end(struct xoob_ep *driver, int rc, const char *why)
{
    (void) openib_cpc_active_set(&xoob_active, driver, false);
    if (driver->sid >= 0) {
        oob_chan_close(driver->sid);
        driver->sid = -1;
    }
    openib_xrc_node_complete(driver->node, rc, why, waiter_done, NULL);
}

void xoob_node_finish(struct xoob_ep *driver, int rc, const char *why)
{
    if (why) {
        XOOB_LOG(driver, "failed: %s", why);
    }
    xoob_node_end(driver, rc, why);
}

/* ---- initiator ---- */

int xoob_send_req(struct xoob_ep *e)
{
    struct openib_cpc_endpoint *c = e->cep;
    struct xoob_msg m = { .env.type = XOOB_REQ };
    uint8_t buf[OOB_MSG_SIZE];
    int rc;

    memcpy(m.env.src, c->local_id, XOOB_ID_LEN);
    memcpy(m.env.dst, c->peer_id, XOOB_ID_LEN);
    m.qpn = e->qpn;
    m.psn = e->psn;
    m.mtu = e->mod->mtu;
    memcpy(m.gid, e->mod->gid, 16);
    m.lid = e->mod->lid;
    m.rq_layout = e->mod->rq_layout;
    m.node_id = e->mod->node_id;
    if (OPAL_SUCCESS != openib_auth_nonce(m.env.nonce) ||
        OPAL_SUCCESS != xoob_msg_encode(&m, buf, sizeof(buf), e->peer.token)) {
        return OPAL_ERROR;
    }
    memcpy(e->asked, m.env.nonce, OPENIB_AUTH_NONCE_LEN);
    rc = oob_chan_connect(e->peer.addrs, e->peer.naddr, e->peer.port, buf, &xoob_owner, &e->sid);
    if (OPAL_SUCCESS != rc) {
        e->sid = -1;
        return rc;
    }
    e->attempts++;
    XOOB_LOG(e, "REQ sent (attempt %d, session %d, send QP %u)", e->attempts, e->sid, e->qpn);
    return OPAL_SUCCESS;
}

/* This endpoint connects the node's send QP. */
static int drive(struct xoob_ep *e)
{
    struct openib_xrc_node *n = e->node;
    int rc;

    rc = e->mod->xrc->send_qp_create(e->mod->btl, n->refcount, &n->qp, &e->qpn, &e->psn,
                                     &n->wqe_cap);
    if (OPAL_SUCCESS != rc) {
        xoob_node_finish(e, rc, "creating the XRC send queue pair failed");
        return rc;
    }
    e->looked_ms = openib_now_ms();
    e->deadline_ms = 0;
    xoob_alive(e, e->looked_ms); /* the bound starts with the attempt */
    e->sid = -1;
    (void) openib_cpc_active_set(&xoob_active, e, true);
    rc = xoob_send_req(e);
    if (OPAL_SUCCESS != rc) {
        xoob_node_finish(e, rc, "cannot open a side-channel connection");
    }
    return rc;
}

int xoob_start_connect(struct openib_cpc_module *m, struct openib_cpc_endpoint *cep)
{
    struct xoob_ep *e = cep->cpc_private;
    int rc;

    (void) m;
    if (e->attached || e->waiting) {
        return OPAL_SUCCESS;
    }
    if (e->failed) {
        return OPAL_ERR_UNREACH;
    }
    rc = openib_xrc_node_join(e->node, e);
    switch (rc) {
    case OPENIB_XRC_JOIN_READY:
        waiter_done(e, OPAL_SUCCESS, NULL, NULL);
        return e->failed ? OPAL_ERR_UNREACH : OPAL_SUCCESS;
    case OPENIB_XRC_JOIN_WAIT:
        e->waiting = true;
        XOOB_LOG(e, "waits for the send QP another endpoint connects to this node");
        return OPAL_SUCCESS;
    case OPENIB_XRC_JOIN_DRIVE:
        e->waiting = true;
        rc = drive(e);
        /* drive() failing already told every waiter, this one included */
        return OPAL_SUCCESS == rc ? OPAL_SUCCESS : OPAL_ERR_UNREACH;
    default: {
        char why[200];
        e->failed = true;
        snprintf(why, sizeof(why), "xoob: the send queue pair to this node failed earlier: %s",
                 e->node->why[0] ? e->node->why : "unknown reason");
        cep->btl_ops->connect_failed(cep->btl_ep, rc, why);
        return rc;
    }
    }
}

void xoob_on_reply(struct xoob_ep *e, const struct xoob_msg *in)
{
    struct openib_cpc_xrc_peer tgt = OPENIB_CPC_XRC_PEER_INITIALIZER;
    char why[160];
    int rc;

    XOOB_LOG(e, "%s received (reason %u, target QP %u)", in->env.type == XOOB_REP ? "REP" : "REJ",
             in->env.reason, in->qpn);
    if (in->env.type == XOOB_REJ) {
        snprintf(why, sizeof(why), "the peer rejected the XRC connection: %s",
                 in->why[0] ? in->why : "no reason given");
        xoob_node_finish(e,
                         in->env.reason == XOOB_REJ_LAYOUT ? OPAL_ERR_BAD_PARAM : OPAL_ERR_UNREACH,
                         why);
        return;
    }
    tgt.qpn = in->qpn;
    tgt.mtu = in->mtu;
    tgt.lid = in->lid;
    memcpy(tgt.gid, in->gid, 16);
    rc = e->mod->xrc->send_qp_connect(e->mod->btl, e->node->qp, e->psn, &tgt, why, sizeof(why));
    if (OPAL_SUCCESS == rc) {
        e->node->tgt_qpn = in->qpn;
    }
    xoob_node_finish(e, rc, OPAL_SUCCESS == rc ? NULL : why);
}

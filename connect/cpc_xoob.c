/*
 * cpc_xoob.c - the "xoob" CPC: XRC connections over oob's side channel.
 *
 * XRC sends are one-way: a process's XRC send QP to a remote node delivers,
 * through one XRC target QP there, into any XRC SRQ of that node's XRC
 * domain (the SRQ number in each work request picks the process). So each
 * process connects its own send direction:
 *
 *   initiator                            responder (any process on the node)
 *   REQ (send QPN, PSN, GID, LID, MTU) -> target QP made (or found) -> RTR
 *                                    <-  REP (target QPN) | REJ (reason)
 *   send QP -> RTR -> RTS, complete
 *
 * The send QP is shared by all endpoints to processes on that node (the
 * node table, cpc_xoob_node.h): the first endpoint drives
 * the handshake with its own peer; the others wait, and need only their
 * peer's SRQ numbers, which every port publishes in its modex blob. No
 * crossing to resolve: the two directions are separate handshakes.
 *
 * The side channel (connect/cpc_oob_channel.c) is oob's: xoob's messages
 * carry their own magic and its sessions their own owner, and oob's
 * progress hands them over (openib_cpc_xoob_dispatch).
 *
 * A busy responder is not a dead one: the channel's threads keep the
 * session alive with keepalives while the responder's process computes
 * outside MPI, so btl_openib_connect_xoob_timeout bounds silence only, as
 * for oob (cpc_oob.c). A connection refused at every published address
 * (nothing listens: the process is gone) ends the handshake at once.
 *
 * Authentication (cpc_auth.h; layouts in wire/xoob_wire.c): as for oob
 * (cpc_oob.c). The REQ is sealed with the responder's token, REP and REJ
 * with the initiator's, echoing the REQ's nonce. The responder checks, in
 * order: layout, dst is us, src is of the job, MAC, freshness
 * (xoob_msg_view and oob_check_request_frame), then the session's source
 * address among the sender's published ones; a refused REQ gets no answer,
 * touches nothing and is logged at verbose 1 with its reason token. Only
 * then is a target QP made, and within caps (tgt_allowed). The driver
 * checks answers the same way (xoob_msg_view and oob_check_answer_frame)
 * before it uses them.
 *
 * This file holds the component and module (parameters, query, endpoints)
 * and the events and timers that oob's progress hands over; the
 * initiator's half of the handshake is in cpc_xoob_initiator.c, the
 * responder's in cpc_xoob_responder.c (what they share: cpc_xoob_int.h).
 *
 * Default priority 60: the highest, because where XRC is set up it is the
 * method that shares receive queues across peers; a port without XRC never
 * offers it, so it cannot shadow oob there. Overridable with
 * btl_openib_connect_xoob_priority.
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "connect/cpc_auth.h"
#include "connect/cpc_internal.h"
#include "connect/cpc_oob.h"
#include "connect/cpc_oob_channel.h"
#include "connect/cpc_xoob.h"
#include "connect/cpc_xoob_int.h"
#include "wire/xoob_wire.h"
#include "connect/cpc_active.h"
#include "connect/openib_connect.h"

static int xoob_timeout_s = 30;
static int xoob_retries = 50;
/* The owner of every session xoob opens: tells its events from oob's. */
char xoob_owner;

/* drivers with a handshake under way (for timers) */
struct openib_cpc_active xoob_active = OPENIB_CPC_ACTIVE_INIT(struct xoob_ep, active_index);

static long timeout_ms(void)
{
    return openib_cpc_timeout_ms(xoob_timeout_s);
}

void xoob_alive(struct xoob_ep *e, long t)
{
    openib_cpc_alive(&e->deadline_ms, t, timeout_ms());
}

/* ---- events and timers, from oob's progress ---- */

static struct xoob_ep *driver_of(int sid)
{
    int i;

    for (i = 0; i < xoob_active.n; ++i) {
        if (((struct xoob_ep *) xoob_active.v[i])->sid == sid) {
            return xoob_active.v[i];
        }
    }
    return NULL;
}

static void retry_or_fail(struct xoob_ep *e, const char *why)
{
    char buf[200];

    if (e->attempts < xoob_retries) {
        e->retry_ms = openib_cpc_retry_at_ms(e->attempts);
        return; /* check_timers sends the REQ again */
    }
    snprintf(buf, sizeof(buf), "%s; gave up after %d attempts (btl_openib_connect_xoob_retries)",
             why, e->attempts);
    xoob_node_finish(e, OPAL_ERR_UNREACH, buf);
}

bool openib_cpc_xoob_dispatch(const struct oob_event *ev)
{
    const struct openib_cpc_module *lm = ev->listen_owner;
    struct xoob_msg in;
    struct xoob_ep *e;
    enum openib_refusal r;

    if (ev->owner != &xoob_owner &&
        !(NULL == ev->owner && NULL != lm && lm->component == &openib_cpc_xoob_component)) {
        return false; /* oob's (every listen owner is a CPC module) */
    }
    e = ev->owner ? driver_of(ev->sid) : NULL;
    if (ev->type == OOB_EV_ERROR) {
        if (e) {
            e->sid = -1;
            XOOB_LOG(e, "side channel error: %s", ev->why);
            if (OOB_ERR_REFUSED == ev->error) {
                /* nothing listens where the peer's modex says: it is gone */
                xoob_node_finish(e, OPAL_ERR_UNREACH, "connection refused at every address the "
                                 "peer published: the peer process has exited");
            } else {
                retry_or_fail(e, ev->why);
            }
        }
        return true;
    }
    if (NULL == ev->owner) {
        xoob_on_req((struct xoob_module *) lm, ev);
        return true;
    }
    if (NULL == e) {
        oob_chan_close(ev->sid); /* an abandoned session */
        return true;
    }
    r = oob_check_answer_frame(xoob_msg_view(ev->msg, OOB_MSG_SIZE, XOOB_REP, XOOB_REJ, &in),
                               e->cep->local_id, e->cep->peer_id, openib_auth_local_token(),
                               e->asked);
    if (REFUSAL_OK != r) {
        char why[96];

        openib_cpc_oob_refused("xoob", "answer", e->cep->peer_desc, r,
                               REFUSAL_WRONG_DST == r || REFUSAL_WRONG_SRC == r
                                   ? "another process answers at the peer's address"
                                   : REFUSAL_BAD_MAC == r ? "not keyed with our token"
                                                          : "not an answer to our request");
        oob_chan_close(ev->sid);
        e->sid = -1;
        snprintf(why, sizeof(why), "the peer's answer was refused (%s)", openib_refusal_name(r));
        retry_or_fail(e, why);
        return true;
    }
    xoob_on_reply(e, &in);
    return true;
}

/* One handshake's timers (openib_cpc_active_scan). */
static void check_timer(void *p, long t)
{
    struct xoob_ep *e = p;
    bool say_busy;
    long alive;

    openib_cpc_discount_absence(&e->deadline_ms, &e->looked_ms, t);
    alive = openib_cpc_oob_news(e->sid, t, &e->heard_ms, &e->busy_logged, &say_busy);
    if (alive) {
        xoob_alive(e, alive);
    }
    if (say_busy) {
        XOOB_LOG(e, "the responder is alive but its process has not taken our request yet "
                 "(busy outside MPI?): waiting for it, with no deadline while it answers");
    }
    if (t > e->deadline_ms) {
        char why[160];
        snprintf(why, sizeof(why), "no answer at all within %d s "
                 "(btl_openib_connect_xoob_timeout), not even from the peer's side-channel "
                 "thread", xoob_timeout_s);
        xoob_node_finish(e, OPAL_ERR_TIMEOUT, why);
    } else if (e->sid < 0 && t >= e->retry_ms && OPAL_SUCCESS != xoob_send_req(e)) {
        retry_or_fail(e, "cannot open a side-channel connection");
    }
}

static void check_timers(void)
{
    openib_cpc_active_scan(&xoob_active, check_timer);
}

/* ---- module and component ---- */

static int xoob_endpoint_init(struct openib_cpc_module *m, struct openib_cpc_endpoint *cep)
{
    struct xoob_module *mod = (struct xoob_module *) m;
    struct openib_xrc_node_key key;
    struct xoob_ep *e;
    int rc;

    if (cep->id_len != XOOB_ID_LEN || NULL == cep->peer_port) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    e = openib_cpc_ep_alloc(sizeof(*e), XOOB_EP_MAGIC);
    if (NULL == e) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    rc = xoob_blob_decode(cep->peer_blob, cep->peer_blob_len, &e->peer);
    if (OPAL_ERR_NOT_SUPPORTED == rc) {
        openib_cpc_log(1, "openib: xoob: %s runs another openib-ng version (xoob modex version "
                       "%d, this process speaks %d)", cep->peer_desc,
                       cep->peer_blob_len ? cep->peer_blob[0] : -1, XOOB_BLOB_VERSION);
        free(e);
        return rc;
    }
    if (OPAL_SUCCESS != rc) {
        openib_cpc_log(10, "openib: xoob: %s published a blob xoob cannot read (%d)",
                       cep->peer_desc, rc);
        free(e);
        return rc;
    }
    memset(&key, 0, sizeof(key));
    key.node_id = e->peer.node_id;
    memcpy(key.gid, cep->peer_port->gid, 16);
    key.lid = cep->peer_port->lid;
    key.port_num = cep->peer_port->port_num;
    e->node = openib_xrc_node_get(&mod->nodes, &key);
    if (NULL == e->node) {
        free(e);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    e->cep = cep;
    e->mod = mod;
    e->sid = -1;
    e->active_index = -1;
    openib_cpc_ep_attach(cep, e, &mod->btl_ops, mod->self, &mod->have_self);
    return OPAL_SUCCESS;
}

static int xoob_endpoint_finalize(struct openib_cpc_module *m, struct openib_cpc_endpoint *cep)
{
    struct xoob_module *mod = (struct xoob_module *) m;
    struct xoob_ep *e = cep->cpc_private;
    void *qp;

    if (NULL == e) {
        return OPAL_SUCCESS;
    }
    if (e->attached) {
        mod->xrc->ep_detach(cep->btl_ep);
        openib_xrc_node_unreserve(e->node, e->per_q, e->nq);
    }
    if (openib_xrc_node_leave(e->node, e)) {
        /* we drove the handshake: the others must not wait for it forever */
        xoob_node_end(e, OPAL_ERR_UNREACH,
                      "the endpoint connecting the node's send queue pair was closed");
    }
    (void) openib_cpc_active_set(&xoob_active, e, false);
    qp = openib_xrc_node_put(&mod->nodes, e->node);
    if (qp) {
        mod->xrc->send_qp_destroy(mod->btl, qp);
    }
    return openib_cpc_ep_free(cep, e);
}

static int xoob_module_finalize(struct openib_cpc_module *m)
{
    struct xoob_module *mod = (struct xoob_module *) m;
    int leaked;

    oob_chan_unlisten(mod->listen_id);
    oob_chan_stop();
    leaked = openib_xrc_node_table_fini(&mod->nodes);
    if (leaked) {
        openib_cpc_log(10, "openib: xoob: %d remote node entries still referenced at finalize",
                       leaked);
    }
    free(mod->tgts);
    openib_cpc_module_destroy(&mod->base);
    free(mod);
    return OPAL_SUCCESS;
}

static int xoob_describe(const struct openib_cpc_module *m, char *buf, size_t len)
{
    struct xoob_blob b;

    if (OPAL_SUCCESS != xoob_blob_decode(m->blob, m->blob_len, &b)) {
        snprintf(buf, len, "XRC over a TCP side channel");
        return OPAL_SUCCESS;
    }
    snprintf(buf, len, "XRC over a TCP side channel on port %u, %u XRC SRQ(s)", (unsigned) b.port,
             (unsigned) b.nsrq);
    return OPAL_SUCCESS;
}

/* The BTL sets OPENIB_PORT_CAP_XRC only when the device has XRC *and* the
 * receive queues ask for it; ask the device so the reason names the right
 * one of the two. */
static bool device_has_xrc(const struct openib_cpc_port *port)
{
    struct ibv_device_attr attr;

    return NULL != port->ctx && 0 == ibv_query_device(port->ctx, &attr) &&
           (attr.device_cap_flags & IBV_DEVICE_XRC);
}

static int xoob_query(const struct openib_cpc_port *port, int priority,
                      struct openib_cpc_module **out, char *why, size_t why_len)
{
    const char *dev = port->dev_name ? port->dev_name : "(unknown)";
    const struct openib_cpc_xrc_ops *xrc;
    struct xoob_module *mod;
    struct xoob_blob b;
    size_t len;
    int n = 0, rc;

    if (openib_cpc_decline_iwarp(port, "xoob", why, why_len)) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    if (!(port->caps & OPENIB_PORT_CAP_XRC)) {
        if (device_has_xrc(port)) {
            snprintf(why, why_len, "XRC needs X receive queues in btl_openib_receive_queues "
                                   "(device %s has XRC)", dev);
        } else {
            snprintf(why, why_len, "device %s does not support XRC", dev);
        }
        return OPAL_ERR_NOT_SUPPORTED;
    }
    memset(&b, 0, sizeof(b));
    xrc = OPENIB_HAS_FIELD(port, struct openib_cpc_port, xrc) ? port->xrc : NULL;
    if (NULL == xrc || NULL == port->btl ||
        OPAL_SUCCESS != xrc->port_srqs(port->btl, b.srqn, XOOB_MAX_SRQS, &n, NULL) || n < 1) {
        snprintf(why, why_len, "no XRC receive queues were set up on %s:%u", dev,
                 (unsigned) port->port_num);
        return OPAL_ERR_NOT_SUPPORTED;
    }
    b.nsrq = (uint8_t) n;
    b.naddr = (uint8_t) oob_local_addrs(b.addrs, XOOB_MAX_ADDRS);
    if (0 == b.naddr) {
        snprintf(why, why_len, "this host has no IPv4 address for the side channel");
        return OPAL_ERR_NOT_SUPPORTED;
    }
    if (NULL == openib_auth_local_token()) {
        snprintf(why, why_len, "no random bytes from the kernel for the handshake token");
        return OPAL_ERR_NOT_SUPPORTED;
    }
    memcpy(b.token, openib_auth_local_token(), OPENIB_AUTH_TOKEN_LEN);
    b.node_id = xoob_node_id(openib_cpc_hostname());
    mod = calloc(1, sizeof(*mod));
    if (NULL == mod) {
        snprintf(why, why_len, "out of memory");
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    openib_cpc_module_init(&mod->base);
    mod->xrc = xrc;
    (void) xrc->port_srqs(port->btl, NULL, 0, NULL, &mod->rq_layout);
    rc = oob_chan_start();
    if (OPAL_SUCCESS != rc) {
        snprintf(why, why_len, "cannot start the side-channel thread");
        goto err_free;
    }
    oob_chan_set_ping_ms((int) (timeout_ms() / 4));
    rc = oob_chan_listen(mod, &b.port, &mod->listen_id);
    if (OPAL_SUCCESS != rc) {
        snprintf(why, why_len, "cannot listen on a TCP port for the side channel");
        rc = OPAL_ERR_NOT_SUPPORTED;
        goto err_stop;
    }
    rc = xoob_blob_encode(&b, mod->base.blob, sizeof(mod->base.blob), &len);
    if (OPAL_SUCCESS != rc) {
        snprintf(why, why_len, "the XRC modex blob does not fit (%d)", rc);
        goto err_unlisten;
    }
    mod->base.blob_len = (uint8_t) len;
    mod->base.component = &openib_cpc_xoob_component;
    mod->base.priority = (uint8_t) priority;
    mod->base.endpoint_init = xoob_endpoint_init;
    mod->base.start_connect = xoob_start_connect;
    mod->base.endpoint_finalize = xoob_endpoint_finalize;
    mod->base.finalize = xoob_module_finalize;
    mod->base.uses_cts = false;
    mod->base.describe = xoob_describe;
    mod->btl = port->btl;
    mod->node_id = b.node_id;
    memcpy(mod->gid, port->gid, 16);
    mod->lid = port->lid;
    mod->mtu = port->mtu;
    openib_xrc_node_table_init(&mod->nodes);
    *out = &mod->base;
    return OPAL_SUCCESS;

err_unlisten:
    oob_chan_unlisten(mod->listen_id);
err_stop:
    oob_chan_stop();
err_free:
    free(mod);
    return rc;
}

static void xoob_register(const struct openib_cpc_component *self)
{
    (void) self;
    openib_cpc_register_int("connect_xoob_timeout",
                            "Seconds of silence after which the xoob CPC gives up on an XRC "
                            "handshake: no answer at all from the peer, not even from its "
                            "side-channel thread, which answers keepalives while the peer "
                            "computes outside MPI. A busy peer is waited for however long "
                            "it takes; a peer whose process exited fails at once "
                            "(connection refused)",
                            &xoob_timeout_s);
    openib_cpc_register_int("connect_xoob_retries",
                            "Times the xoob CPC retries a handshake whose side channel "
                            "failed, with a back-off of up to 2 s; waiting for a busy peer "
                            "is no retry",
                            &xoob_retries);
}

int openib_cpc_xoob_progress(bool urgent)
{
    static unsigned tick;

    (void) urgent; /* the side channel is looked at on every call anyway */
    return openib_cpc_side_channel_progress_with(&tick, check_timers);
}

static int xoob_finalize(void)
{
    openib_cpc_active_fini(&xoob_active);
    return OPAL_SUCCESS;
}

const struct openib_cpc_component openib_cpc_xoob_component = {
    .size = sizeof(struct openib_cpc_component),
    .abi_version = OPENIB_CPC_ABI_VERSION,
    .name = "xoob",
    .id = OPENIB_CPC_ID_XOOB,
    .default_priority = 60,
    .register_params = xoob_register,
    .query = xoob_query,
    .finalize = xoob_finalize,
    .progress = openib_cpc_xoob_progress,
};

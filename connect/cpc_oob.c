/*
 * cpc_oob.c - the "oob" CPC: QP data exchanged over a TCP side channel.
 *
 * Each port's module listens on a TCP port and publishes {addresses, port}
 * as its modex blob. A connection is a three-message handshake on one TCP
 * session, all handled from progress without blocking:
 *
 *   initiator                          responder
 *   REQ (its QP data)  ------------->  QPs to RTR, post receives
 *                      <-------------  REP (its QP data)
 *   QPs to RTR+RTS, post receives
 *   RTU                ------------->  QPs to RTS
 *   complete                           complete
 *
 * Crossing connects (both sides send REQ): the side whose process name
 * compares lower keeps initiating and answers the other's REQ with
 * REJ(CROSS); the other abandons its REQ and responds. Both sides decide
 * from the same two names, so exactly one handshake completes.
 *
 * A busy peer is not a dead one. The REQ waits in the peer's side-channel
 * queue for as long as its process computes outside MPI; meanwhile the two
 * side-channel threads keep the session alive (PING/PONG, see
 * cpc_oob_channel.h), without touching any endpoint, so the waiting side
 * knows the peer is there and waits without a deadline.
 * btl_openib_connect_oob_timeout bounds silence only: no frame at all on
 * the session (not even a PONG) for that long, counted while this process
 * looks (cpc_active.h). A peer that is really gone ends the handshake
 * sooner: its closed listener refuses the connection, or its side of the
 * session closes. Failed attempts (side channel lost, no endpoint for us
 * yet) are retried with a back-off up to btl_openib_connect_oob_retries
 * times.
 *
 * Default priority 50: above rdma_cm (40) so that oob is the default today,
 * below xoob (60) so that XRC wins where a port offers it. Overridable with
 * btl_openib_connect_oob_priority.
 */
#include "opal_config.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opal/constants.h"
#include "opal/mca/base/mca_base_var.h"

#include "connect/cpc_oob.h"
#include "connect/cpc_oob_channel.h"
#include "connect/cpc_oob_params.h"
#include "connect/cpc_oob_wire.h"
#include "connect/cpc_internal.h"
#include "connect/cpc_xoob.h"
#include "connect/cpc_active.h"
#include "connect/openib_connect.h"

#define RETRY_BACKOFF_MAX_MS 2000 /* a retry at least every 2 s */

enum oob_state {
    ST_IDLE = 0,
    ST_REQ_SENT,     /* we initiated, waiting for REP */
    ST_WAIT_PEER,    /* lost a crossing: waiting for the peer's REQ */
    ST_RETRY,        /* will send REQ again at retry_ms */
    ST_RESPONDING,   /* REP sent, waiting for RTU */
    ST_DONE,
    ST_FAILED,
};

struct oob_module {
    struct openib_cpc_module base;   /* first: the framework sees this */
    int listen_id;
    const struct openib_cpc_btl_ops *btl_ops; /* learned at endpoint_init */
    void *btl;
};

struct oob_ep {
    enum oob_state st;
    struct openib_cpc_endpoint *cep;
    struct oob_module *mod;
    int sid;              /* our outgoing session, -1 if none */
    int resp_sid;         /* the session we answer on, -1 if none */
    long deadline_ms;     /* the last sign of life + the timeout */
    long looked_ms;       /* the timer's last look (cpc_active.h) */
    long heard_ms;        /* the newest frame the channel reported */
    long retry_ms;
    int attempts;
    bool busy_logged;     /* "alive but not taken yet" said once */
    char last_why[96];    /* the last failed attempt, for the final reason */
    int active_index;
};

static int oob_timeout_s = 30;
static int oob_retries = 50;

/* endpoints with a handshake in progress (for timers) */
static struct openib_cpc_active active = OPENIB_CPC_ACTIVE_INIT(struct oob_ep, active_index);

/* ---- handshake ---- */

#define OOB_LOG(e, fmt, ...) \
    openib_cpc_log(100, "openib: oob %s: " fmt, (e)->cep->peer_desc, ##__VA_ARGS__)

static void encode(uint8_t *m, enum oob_type type, uint16_t reason, const void *src,
                   const void *dst, const struct openib_cpc_qp_info *q)
{
    /* cannot fail: the frame is big enough and q comes from the BTL */
    (void) oob_msg_encode(m, OOB_MSG_SIZE, type, reason, src, dst, q);
}

static long timeout_ms(void)
{
    return openib_cpc_timeout_ms(oob_timeout_s);
}

static void alive(struct oob_ep *e, long t)
{
    openib_cpc_alive(&e->deadline_ms, t, timeout_ms());
}

/* Timers on (the handshake is under way). */
static void arm(struct oob_ep *e)
{
    if (e->active_index < 0) {
        e->looked_ms = openib_cpc_now_ms();
    }
    (void) openib_cpc_active_set(&active, e, true);
}

static long backoff_ms(int attempts)
{
    long ms = 100L * attempts;

    return ms > RETRY_BACKOFF_MAX_MS ? RETRY_BACKOFF_MAX_MS : ms;
}

static void fail(struct oob_ep *e, int rc, const char *why)
{
    char buf[256];

    if (e->st == ST_FAILED || e->st == ST_DONE) {
        return;
    }
    OOB_LOG(e, "failed: %s", why);
    e->st = ST_FAILED;
    (void) openib_cpc_active_set(&active, e, false);
    if (e->sid >= 0) {
        oob_chan_close(e->sid);
        e->sid = -1;
    }
    if (e->resp_sid >= 0) {
        oob_chan_close(e->resp_sid);
        e->resp_sid = -1;
    }
    snprintf(buf, sizeof(buf), "oob: %s", why);
    e->cep->btl_ops->connect_failed(e->cep->btl_ep, rc, buf);
}

static void done(struct oob_ep *e)
{
    e->st = ST_DONE;
    (void) openib_cpc_active_set(&active, e, false);
    e->cep->btl_ops->connect_complete(e->cep->btl_ep);
}

static int send_req(struct oob_ep *e)
{
    struct openib_cpc_endpoint *c = e->cep;
    struct openib_cpc_qp_info q;
    uint8_t msg[OOB_MSG_SIZE];
    uint32_t addrs[OOB_MAX_ADDRS];
    uint16_t port;
    int naddr, rc, version = 0;

    rc = oob_blob_decode(c->peer_blob, c->peer_blob_len, addrs, &naddr, &port, &version);
    if (OPAL_ERR_NOT_SUPPORTED == rc) {
        char why[128];
        snprintf(why, sizeof(why), "the peer runs another openib-ng version (oob modex "
                 "version %d, this process speaks %d)", version, OOB_BLOB_VERSION);
        fail(e, OPAL_ERR_UNREACH, why);
        return rc;
    }
    if (OPAL_SUCCESS != rc) {
        fail(e, OPAL_ERR_UNREACH, "the peer's side-channel address in the modex is corrupt");
        return rc;
    }
    rc = c->btl_ops->local_qp_info(c->btl_ep, &q);
    if (OPAL_SUCCESS != rc) {
        fail(e, rc, "creating the queue pairs failed");
        return rc;
    }
    encode(msg, OOB_REQ, 0, c->local_id, c->peer_id, &q);
    rc = oob_chan_connect(addrs, naddr, port, msg, e, &e->sid);
    if (OPAL_SUCCESS != rc) {
        fail(e, rc, "cannot open a side-channel connection");
        return rc;
    }
    e->st = ST_REQ_SENT;
    e->attempts++;
    OOB_LOG(e, "REQ sent (attempt %d, session %d)", e->attempts, e->sid);
    arm(e);
    return OPAL_SUCCESS;
}

static int oob_start_connect(struct openib_cpc_module *m, struct openib_cpc_endpoint *cep)
{
    struct oob_ep *e = cep->cpc_private;

    switch (e->st) {
    case ST_IDLE:
        e->deadline_ms = 0;
        alive(e, openib_cpc_now_ms()); /* the bound starts with the attempt */
        return send_req(e);
    case ST_FAILED:
        return OPAL_ERR_UNREACH;
    default:
        return OPAL_SUCCESS; /* already under way (e.g. the peer initiated) */
    }
}

static void reply_reject(int sid, const struct oob_msg *in, uint16_t reason)
{
    uint8_t msg[OOB_MSG_SIZE];

    encode(msg, OOB_REJ, reason, in->dst, in->src, NULL);
    oob_chan_send(sid, msg);
    oob_chan_close(sid);
}

static void on_req(struct oob_module *mod, int sid, const struct oob_msg *in)
{
    struct openib_cpc_endpoint *cep;
    struct openib_cpc_qp_info q;
    struct oob_ep *e;
    uint8_t msg[OOB_MSG_SIZE];
    char why[128] = "";
    int rc;

    cep = mod->btl_ops ? mod->btl_ops->endpoint_for_peer(mod->btl, in->src, OOB_ID_LEN, why,
                                                          sizeof(why))
                       : NULL;
    if (NULL == cep || NULL == cep->cpc_private) {
        reply_reject(sid, in, OOB_REJ_NO_ENDPOINT); /* the peer retries */
        return;
    }
    e = cep->cpc_private;
    OOB_LOG(e, "REQ received on session %d in state %d", sid, e->st);
    if (e->st == ST_REQ_SENT || e->st == ST_RETRY) {
        if (memcmp(cep->local_id, cep->peer_id, OOB_ID_LEN) < 0) {
            reply_reject(sid, in, OOB_REJ_CROSS); /* we keep initiating */
            return;
        }
        if (e->sid >= 0) {
            oob_chan_close(e->sid); /* we lose the crossing: answer theirs */
            e->sid = -1;
        }
    } else if (e->st == ST_DONE || e->st == ST_FAILED || e->st == ST_RESPONDING) {
        reply_reject(sid, in, OOB_REJ_BAD);
        return;
    }
    if (e->st == ST_IDLE) {
        e->deadline_ms = 0;
    }
    alive(e, openib_cpc_now_ms()); /* its REQ: the peer is alive */
    rc = cep->btl_ops->connect_qps(cep->btl_ep, &in->q, false);
    if (OPAL_SUCCESS == rc) {
        rc = cep->btl_ops->post_recvs(cep->btl_ep);
    }
    if (OPAL_SUCCESS == rc) {
        rc = cep->btl_ops->local_qp_info(cep->btl_ep, &q);
    }
    if (OPAL_SUCCESS != rc) {
        reply_reject(sid, in, OOB_REJ_BAD);
        fail(e, rc, "setting up the queue pairs for the peer's request failed");
        return;
    }
    encode(msg, OOB_REP, 0, cep->local_id, cep->peer_id, &q);
    if (OPAL_SUCCESS != oob_chan_send(sid, msg)) {
        fail(e, OPAL_ERR_UNREACH, "the side channel closed before the reply");
        return;
    }
    e->resp_sid = sid;
    e->st = ST_RESPONDING;
    arm(e);
}

static void on_rtu(struct oob_module *mod, int sid, const struct oob_msg *in)
{
    struct openib_cpc_endpoint *cep;
    struct oob_ep *e;
    char why[128];

    cep = mod->btl_ops ? mod->btl_ops->endpoint_for_peer(mod->btl, in->src, OOB_ID_LEN, why,
                                                          sizeof(why))
                       : NULL;
    oob_chan_close(sid);
    if (NULL == cep || NULL == (e = cep->cpc_private) || e->st != ST_RESPONDING ||
        e->resp_sid != sid) {
        return;
    }
    e->resp_sid = -1;
    if (OPAL_SUCCESS != cep->btl_ops->qps_to_rts(cep->btl_ep)) {
        fail(e, OPAL_ERROR, "moving the queue pairs to RTS failed");
        return;
    }
    done(e);
}

static void on_initiator_msg(struct oob_ep *e, int sid, const struct oob_msg *in)
{
    struct openib_cpc_endpoint *cep = e->cep;
    uint8_t msg[OOB_MSG_SIZE];
    int rc;

    if (sid != e->sid) {
        return; /* an abandoned session */
    }
    OOB_LOG(e, "%s received (reason %u) in state %d", in->type == OOB_REJ ? "REJ" : "REP",
            in->reason, e->st);
    alive(e, openib_cpc_now_ms());
    if (in->type == OOB_REJ) {
        oob_chan_close(sid);
        e->sid = -1;
        if (e->st != ST_REQ_SENT) {
            return;
        }
        if (in->reason == OOB_REJ_CROSS) {
            e->st = ST_WAIT_PEER; /* their REQ comes (or came) on our listener */
        } else if (in->reason == OOB_REJ_NO_ENDPOINT && e->attempts < oob_retries) {
            snprintf(e->last_why, sizeof(e->last_why), "the peer has no endpoint for us yet");
            e->st = ST_RETRY;
            e->retry_ms = openib_cpc_now_ms() + backoff_ms(e->attempts);
        } else if (in->reason == OOB_REJ_NO_ENDPOINT) {
            char why[160];
            snprintf(why, sizeof(why), "the peer still had no endpoint for us after %d attempts "
                     "(btl_openib_connect_oob_retries)", e->attempts);
            fail(e, OPAL_ERR_UNREACH, why);
        } else {
            fail(e, OPAL_ERR_UNREACH, "the peer rejected the connection request");
        }
        return;
    }
    if (in->type != OOB_REP || e->st != ST_REQ_SENT) {
        return;
    }
    rc = cep->btl_ops->connect_qps(cep->btl_ep, &in->q, true);
    if (OPAL_SUCCESS == rc) {
        rc = cep->btl_ops->post_recvs(cep->btl_ep);
    }
    if (OPAL_SUCCESS != rc) {
        fail(e, rc, "connecting the queue pairs with the peer's reply failed");
        return;
    }
    encode(msg, OOB_RTU, 0, cep->local_id, cep->peer_id, NULL);
    oob_chan_send(sid, msg);
    oob_chan_close(sid); /* after the RTU is flushed */
    e->sid = -1;
    done(e);
}

/* The session we answer on ended before the RTU: the initiator is gone
 * (a live one that gave up would have told us; it never does mid-way). */
static void on_responder_error(const struct oob_event *ev)
{
    char why[256];
    int i;

    for (i = 0; i < active.n; ++i) {
        struct oob_ep *e = active.v[i];
        if (e->st == ST_RESPONDING && e->resp_sid == ev->sid) {
            e->resp_sid = -1;
            snprintf(why, sizeof(why), "the peer's side channel ended before it confirmed the "
                     "connection (%s): the peer process has exited?", ev->why);
            fail(e, OPAL_ERR_UNREACH, why);
            return;
        }
    }
}

static void on_error(const struct oob_event *ev)
{
    struct oob_ep *e = ev->owner;

    if (NULL == e) {
        on_responder_error(ev);
        return;
    }
    if (ev->sid != e->sid) {
        return; /* an abandoned session */
    }
    e->sid = -1;
    OOB_LOG(e, "side channel error in state %d: %s", e->st, ev->why);
    if (e->st != ST_REQ_SENT) {
        return;
    }
    snprintf(e->last_why, sizeof(e->last_why), "%s", ev->why);
    if (OOB_ERR_REFUSED == ev->error) {
        /* nothing listens where the peer's modex says: it is gone */
        fail(e, OPAL_ERR_UNREACH, "connection refused at every address the peer published: "
             "the peer process has exited");
    } else if (e->attempts < oob_retries) {
        e->st = ST_RETRY;
        e->retry_ms = openib_cpc_now_ms() + backoff_ms(e->attempts);
    } else {
        char why[256];
        snprintf(why, sizeof(why), "%s; gave up after %d attempts "
                 "(btl_openib_connect_oob_retries)", ev->why, e->attempts);
        fail(e, OPAL_ERR_UNREACH, why);
    }
}

/* What the side channel knows of the session this handshake waits on. */
static void take_liveness(struct oob_ep *e, long t)
{
    int sid = e->st == ST_REQ_SENT ? e->sid : e->st == ST_RESPONDING ? e->resp_sid : -1;
    long heard;
    int pending;

    if (sid < 0 || OPAL_SUCCESS != oob_chan_liveness(sid, &heard, &pending)) {
        return;
    }
    if (heard > e->heard_ms) {
        e->heard_ms = heard;
        alive(e, heard < t ? heard : t);
    }
    if (pending > 0 && !e->busy_logged) {
        e->busy_logged = true;
        OOB_LOG(e, "the peer is alive but its process has not taken our message yet (busy "
                "outside MPI?): waiting for it, with no deadline while it answers");
    }
}

static void check_timers(void)
{
    long t = openib_cpc_now_ms();
    int i;

    for (i = active.n - 1; i >= 0; --i) {
        struct oob_ep *e;

        if (i >= active.n) {
            continue; /* the set shrank under a handler */
        }
        e = active.v[i];
        openib_cpc_discount_absence(&e->deadline_ms, &e->looked_ms, t);
        take_liveness(e, t);
        if (t > e->deadline_ms) {
            char why[256];
            snprintf(why, sizeof(why), "no answer at all within %d s "
                     "(btl_openib_connect_oob_timeout), not even from the peer's side-channel "
                     "thread%s%s", oob_timeout_s, e->last_why[0] ? "; last attempt: " : "",
                     e->last_why);
            fail(e, OPAL_ERR_TIMEOUT, why);
        } else if (e->st == ST_RETRY && t >= e->retry_ms) {
            send_req(e);
        }
    }
}

int openib_cpc_oob_progress(void)
{
    static unsigned tick;
    struct oob_event ev;
    int n = 0;

    while (oob_chan_poll(&ev)) {
        struct oob_msg in;

        n++;
        if (openib_cpc_xoob_dispatch(&ev)) {
            continue; /* xoob shares the side channel */
        }
        if (ev.type == OOB_EV_ERROR) {
            on_error(&ev);
            continue;
        }
        if (OPAL_SUCCESS != oob_msg_decode(ev.msg, OOB_MSG_SIZE, &in)) {
            oob_chan_close(ev.sid);
            continue;
        }
        if (ev.owner) {
            on_initiator_msg(ev.owner, ev.sid, &in);
        } else if (ev.listen_owner && in.type == OOB_REQ) {
            on_req(ev.listen_owner, ev.sid, &in);
        } else if (ev.listen_owner && in.type == OOB_RTU) {
            on_rtu(ev.listen_owner, ev.sid, &in);
        }
    }
    if (0 == (++tick & 63)) {
        if (OPAL_UNLIKELY(active.n > 0)) {
            check_timers();
        }
        openib_cpc_xoob_check_timers();
    }
    return n;
}

/* ---- module and component ---- */

static int oob_endpoint_init(struct openib_cpc_module *m, struct openib_cpc_endpoint *cep)
{
    struct oob_module *mod = (struct oob_module *) m;
    struct oob_ep *e = calloc(1, sizeof(*e));

    if (NULL == e) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    if (cep->id_len != OOB_ID_LEN) {
        free(e);
        return OPAL_ERR_NOT_SUPPORTED;
    }
    e->cep = cep;
    e->mod = mod;
    e->sid = e->resp_sid = -1;
    e->active_index = -1;
    cep->cpc_private = e;
    mod->btl_ops = cep->btl_ops;
    return OPAL_SUCCESS;
}

static int oob_endpoint_finalize(struct openib_cpc_module *m, struct openib_cpc_endpoint *cep)
{
    struct oob_ep *e = cep->cpc_private;

    if (e) {
        (void) openib_cpc_active_set(&active, e, false);
        if (e->sid >= 0) {
            oob_chan_close(e->sid);
        }
        if (e->resp_sid >= 0) {
            oob_chan_close(e->resp_sid);
        }
        free(e);
        cep->cpc_private = NULL;
    }
    return OPAL_SUCCESS;
}

static int oob_module_finalize(struct openib_cpc_module *m)
{
    struct oob_module *mod = (struct oob_module *) m;

    oob_chan_unlisten(mod->listen_id);
    oob_chan_stop();
    openib_cpc_module_destroy(&mod->base);
    free(mod);
    return OPAL_SUCCESS;
}

static int oob_describe(const struct openib_cpc_module *m, char *buf, size_t len)
{
    uint32_t addrs[OOB_MAX_ADDRS];
    uint16_t port = 0;
    int naddr = 0;

    (void) oob_blob_decode(m->blob, m->blob_len, addrs, &naddr, &port, NULL);
    snprintf(buf, len, "TCP side channel on port %u, %d address(es)", (unsigned) port, naddr);
    return OPAL_SUCCESS;
}

static int oob_query(const struct openib_cpc_port *port, int priority,
                     struct openib_cpc_module **out, char *why, size_t why_len)
{
    struct oob_module *mod;
    uint32_t addrs[OOB_MAX_ADDRS];
    uint16_t tcp_port;
    size_t blob_len = 0;
    int naddr, rc;

    naddr = oob_local_addrs(addrs, OOB_MAX_ADDRS);
    if (naddr == 0) {
        snprintf(why, why_len, "this host has no IPv4 address for the side channel");
        return OPAL_ERR_NOT_SUPPORTED;
    }
    mod = calloc(1, sizeof(*mod));
    if (NULL == mod) {
        snprintf(why, why_len, "out of memory");
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    rc = oob_chan_start();
    if (OPAL_SUCCESS != rc) {
        snprintf(why, why_len, "cannot start the side-channel thread");
        free(mod);
        return rc;
    }
    rc = oob_chan_listen(mod, &tcp_port, &mod->listen_id);
    if (OPAL_SUCCESS != rc) {
        snprintf(why, why_len, "cannot listen on a TCP port for the side channel");
        oob_chan_stop();
        free(mod);
        return OPAL_ERR_NOT_SUPPORTED;
    }
    /* a PING after a quarter of the silence bound: three more chances */
    oob_chan_set_ping_ms((int) (timeout_ms() / 4));
    openib_cpc_module_init(&mod->base);
    mod->base.component = &openib_cpc_oob_component;
    mod->base.priority = (uint8_t) priority;
    (void) oob_blob_encode(mod->base.blob, sizeof(mod->base.blob), addrs, naddr, tcp_port,
                           &blob_len);
    mod->base.blob_len = (uint8_t) blob_len;
    mod->base.endpoint_init = oob_endpoint_init;
    mod->base.start_connect = oob_start_connect;
    mod->base.endpoint_finalize = oob_endpoint_finalize;
    mod->base.finalize = oob_module_finalize;
    mod->base.uses_cts = false;
    mod->base.describe = oob_describe;
    mod->btl = port->btl;
    *out = &mod->base;
    return OPAL_SUCCESS;
}

static void oob_register(const struct openib_cpc_component *self)
{
    (void) self;
    oob_params_register(); /* the side channel's, shared with xoob */
    (void) mca_base_var_register("opal", "btl", "openib", "connect_oob_timeout",
                                 "Seconds of silence after which the oob CPC gives up on a "
                                 "handshake: no answer at all from the peer, not even from its "
                                 "side-channel thread, which answers keepalives while the peer "
                                 "computes outside MPI. A busy peer is waited for however long "
                                 "it takes; a peer whose process exited fails at once "
                                 "(connection refused)",
                                 MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
                                 MCA_BASE_VAR_SCOPE_READONLY, &oob_timeout_s);
    (void) mca_base_var_register("opal", "btl", "openib", "connect_oob_retries",
                                 "Times the oob CPC retries a handshake that failed (side "
                                 "channel lost, the peer had no endpoint for us yet), with a "
                                 "back-off of up to 2 s; waiting for a busy peer is no retry",
                                 MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
                                 MCA_BASE_VAR_SCOPE_READONLY, &oob_retries);
}

static int oob_finalize(void)
{
    openib_cpc_active_fini(&active);
    return OPAL_SUCCESS;
}

const struct openib_cpc_component openib_cpc_oob_component = {
    .size = sizeof(struct openib_cpc_component),
    .abi_version = OPENIB_CPC_ABI_VERSION,
    .name = "oob",
    .id = OPENIB_CPC_ID_OOB,
    .default_priority = 50,
    .register_params = oob_register,
    .query = oob_query,
    .finalize = oob_finalize,
};

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
 * Authentication (cpc_auth.h; layouts in cpc_xoob_wire.c): as for oob
 * (cpc_oob.c). The REQ is sealed with the responder's token, REP and REJ
 * with the initiator's, echoing the REQ's nonce. The responder checks, in
 * order: layout, dst is us, src is of the job, MAC, freshness
 * (xoob_check_request), then the session's source address among the
 * sender's published ones; a refused REQ gets no answer, touches nothing
 * and is logged at verbose 1 with its reason token. Only then is a target
 * QP made, and within caps (tgt_allowed). The driver checks answers the
 * same way (xoob_check_answer) before it uses them.
 *
 * Default priority 60: the highest, because where XRC is set up it is the
 * method that shares receive queues across peers; a port without XRC never
 * offers it, so it cannot shadow oob there. Overridable with
 * btl_openib_connect_xoob_priority.
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <arpa/inet.h>
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
#include "connect/cpc_xoob_wire.h"
#include "connect/cpc_active.h"
#include "connect/openib_connect.h"

struct xoob_module {
    struct openib_cpc_module base;   /* first: the framework sees this */
    int listen_id;
    void *btl;
    uint32_t rq_layout;
    uint64_t node_id;
    uint8_t gid[16];                 /* our port, sent in REQ */
    uint16_t lid;
    uint32_t mtu;
    struct openib_xrc_node_table nodes;
    const struct openib_cpc_btl_ops *btl_ops; /* learned at endpoint_init */
    uint8_t self[XOOB_ID_LEN];       /* our process name, learned there too */
    bool have_self;
    struct xoob_tgt *tgts;           /* target QPs made for remote send QPs */
    int ntgt, tgt_room;
};

/* A target QP made for (a remote process, its send QP). */
struct xoob_tgt {
    uint8_t src[XOOB_ID_LEN];
    uint32_t qpn;
};

/* Caps on target QPs, per listening port, so that no member can make this
 * process create QPs without bound. A process sends to this node on one
 * send QP per port of its own that reaches us, so a few per process cover
 * multi-rail senders; more is a member misbehaving. The total is that share
 * for every process of the job, plus headroom for processes of jobs
 * connected later (MPI_Comm_spawn), whose names the job size does not
 * cover. Unknown job size: a fixed bound. */
#define XOOB_TGT_PER_PROCESS 4
#define XOOB_TGT_SPAWN_HEADROOM 256
#define XOOB_TGT_UNKNOWN_JOB 4096

#define XOOB_EP_MAGIC 0x786f6f62u /* tells our cpc_private from another CPC's */

struct xoob_ep {
    uint32_t magic;                  /* first: XOOB_EP_MAGIC */
    struct openib_cpc_endpoint *cep;
    struct xoob_module *mod;
    struct xoob_blob peer;           /* decoded peer blob */
    struct openib_xrc_node *node;    /* referenced from endpoint_init on */
    bool waiting, attached, failed;
    /* driver only: the handshake */
    int sid;
    uint32_t qpn, psn;               /* our new send QP */
    uint8_t asked[OPENIB_AUTH_NONCE_LEN]; /* our REQ's nonce */
    long deadline_ms;                /* the last sign of life + the timeout */
    long looked_ms;                  /* the timer's last look (cpc_active.h) */
    long heard_ms;                   /* the newest frame the channel reported */
    long retry_ms;
    int attempts;
    bool busy_logged;
    int active_index;
};

static const struct openib_xoob_btl_ops *xops;
static int xoob_timeout_s = 30;
static int xoob_retries = 50;
/* The owner of every session xoob opens: tells its events from oob's. */
static char xoob_owner;

/* drivers with a handshake under way (for timers) */
static struct openib_cpc_active active = OPENIB_CPC_ACTIVE_INIT(struct xoob_ep, active_index);

void openib_cpc_xoob_set_btl_ops(const struct openib_xoob_btl_ops *ops)
{
    xops = ops;
}

#define XOOB_LOG(e, fmt, ...) \
    openib_cpc_log(100, "openib: xoob %s: " fmt, (e)->cep->peer_desc, ##__VA_ARGS__)

#define RETRY_BACKOFF_MAX_MS 2000 /* a retry at least every 2 s */

static long timeout_ms(void)
{
    return openib_cpc_timeout_ms(xoob_timeout_s);
}

static void alive(struct xoob_ep *e, long t)
{
    openib_cpc_alive(&e->deadline_ms, t, timeout_ms());
}

/* ---- the end of a node's handshake: every waiting endpoint hears it ---- */

static void waiter_done(void *waiter, int rc, const char *why, void *arg)
{
    struct xoob_ep *e = waiter;
    struct openib_cpc_endpoint *cep = e->cep;
    char buf[256], err[128];

    (void) arg;
    e->waiting = false;
    if (OPAL_SUCCESS == rc) {
        rc = xops->ep_attach(cep->btl_ep, e->node, e->peer.srqn, e->peer.nsrq, err, sizeof(err));
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

static void node_finish(struct xoob_ep *driver, int rc, const char *why)
{
    if (why) {
        XOOB_LOG(driver, "failed: %s", why);
    }
    (void) openib_cpc_active_set(&active, driver, false);
    if (driver->sid >= 0) {
        oob_chan_close(driver->sid);
        driver->sid = -1;
    }
    openib_xrc_node_complete(driver->node, rc, why, waiter_done, NULL);
}

/* ---- initiator ---- */

static int send_req(struct xoob_ep *e)
{
    struct openib_cpc_endpoint *c = e->cep;
    struct xoob_msg m = { .type = XOOB_REQ };
    uint8_t buf[OOB_MSG_SIZE];
    int rc;

    memcpy(m.src, c->local_id, XOOB_ID_LEN);
    memcpy(m.dst, c->peer_id, XOOB_ID_LEN);
    m.qpn = e->qpn;
    m.psn = e->psn;
    m.mtu = e->mod->mtu;
    memcpy(m.gid, e->mod->gid, 16);
    m.lid = e->mod->lid;
    m.rq_layout = e->mod->rq_layout;
    m.node_id = e->mod->node_id;
    if (OPAL_SUCCESS != openib_auth_nonce(m.nonce) ||
        OPAL_SUCCESS != xoob_msg_encode(&m, buf, sizeof(buf), e->peer.token)) {
        return OPAL_ERROR;
    }
    memcpy(e->asked, m.nonce, OPENIB_AUTH_NONCE_LEN);
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

    rc = xops->send_qp_create(e->mod->btl, n->refcount, &n->qp, &e->qpn, &e->psn, &n->wqe_cap);
    if (OPAL_SUCCESS != rc) {
        node_finish(e, rc, "creating the XRC send queue pair failed");
        return rc;
    }
    e->looked_ms = openib_cpc_now_ms();
    e->deadline_ms = 0;
    alive(e, e->looked_ms); /* the bound starts with the attempt */
    e->sid = -1;
    (void) openib_cpc_active_set(&active, e, true);
    rc = send_req(e);
    if (OPAL_SUCCESS != rc) {
        node_finish(e, rc, "cannot open a side-channel connection");
    }
    return rc;
}

static int xoob_start_connect(struct openib_cpc_module *m, struct openib_cpc_endpoint *cep)
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

static struct xoob_ep *driver_of(int sid)
{
    int i;

    for (i = 0; i < active.n; ++i) {
        if (((struct xoob_ep *) active.v[i])->sid == sid) {
            return active.v[i];
        }
    }
    return NULL;
}

static void on_reply(struct xoob_ep *e, const struct xoob_msg *in)
{
    struct openib_xoob_peer tgt = { .qpn = in->qpn, .mtu = in->mtu, .lid = in->lid };
    char why[160];
    int rc;

    XOOB_LOG(e, "%s received (reason %u, target QP %u)", in->type == XOOB_REP ? "REP" : "REJ",
             in->reason, in->qpn);
    if (in->type == XOOB_REJ) {
        snprintf(why, sizeof(why), "the peer rejected the XRC connection: %s",
                 in->why[0] ? in->why : "no reason given");
        node_finish(e, in->reason == XOOB_REJ_LAYOUT ? OPAL_ERR_BAD_PARAM : OPAL_ERR_UNREACH, why);
        return;
    }
    memcpy(tgt.gid, in->gid, 16);
    rc = xops->send_qp_connect(e->mod->btl, e->node->qp, e->psn, &tgt, why, sizeof(why));
    if (OPAL_SUCCESS == rc) {
        e->node->tgt_qpn = in->qpn;
    }
    node_finish(e, rc, OPAL_SUCCESS == rc ? NULL : why);
}

/* ---- responder: the port's XRC domain, and the sender's endpoint for its
 * published addresses and token ---- */

/* Our endpoint state for a peer, if the BTL chose xoob for it. */
static struct xoob_ep *own_ep(struct openib_cpc_endpoint *cep)
{
    struct xoob_ep *e = cep ? cep->cpc_private : NULL;

    return e && XOOB_EP_MAGIC == e->magic ? e : NULL;
}

static void refuse(const struct oob_event *ev, enum oob_refusal r, const char *detail)
{
    char from[INET_ADDRSTRLEN];

    openib_cpc_oob_refused("xoob", OOB_MALFORMED == r ? "frame" : "request",
                           openib_cpc_oob_addr(ev->peer_addr, from, sizeof(from)), r, detail);
    oob_chan_close(ev->sid); /* a stranger gets no answer */
}

/* An answer to a verified request, sealed with the initiator's token. */
static void reply(int sid, const struct xoob_msg *in, const struct xoob_module *mod,
                  const uint8_t *key, uint8_t type, uint16_t reason, uint32_t qpn,
                  const char *why)
{
    struct xoob_msg m = { .type = type, .reason = reason, .qpn = qpn, .mtu = mod->mtu,
                          .lid = mod->lid, .node_id = mod->node_id };
    uint8_t buf[OOB_MSG_SIZE];

    memcpy(m.src, in->dst, XOOB_ID_LEN);
    memcpy(m.dst, in->src, XOOB_ID_LEN);
    memcpy(m.gid, mod->gid, 16);
    memcpy(m.echo, in->nonce, OPENIB_AUTH_NONCE_LEN);
    snprintf(m.why, sizeof(m.why), "%s", why ? why : "");
    if (OPAL_SUCCESS == openib_auth_nonce(m.nonce) &&
        OPAL_SUCCESS == xoob_msg_encode(&m, buf, sizeof(buf), key)) {
        oob_chan_send(sid, buf);
    }
    oob_chan_close(sid); /* after the reply is flushed */
}

static int tgt_find(const struct xoob_module *mod, const uint8_t *src, uint32_t qpn, int *mine)
{
    int i, found = -1;

    *mine = 0;
    for (i = 0; i < mod->ntgt; ++i) {
        if (0 == memcmp(mod->tgts[i].src, src, XOOB_ID_LEN)) {
            ++*mine;
            if (mod->tgts[i].qpn == qpn) {
                found = i;
            }
        }
    }
    return found;
}

static int tgt_cap(const struct xoob_module *mod)
{
    uint32_t n = openib_cpc_oob_job_size(mod->self);

    return 0 == n ? XOOB_TGT_UNKNOWN_JOB
                  : (int) (n < 65536 ? n : 65536) * XOOB_TGT_PER_PROCESS + XOOB_TGT_SPAWN_HEADROOM;
}

/* May this sender get a (new) target QP for this send QP? A repeated
 * request (same send QP) always may: the BTL finds the same one again. */
static bool tgt_allowed(const struct xoob_module *mod, const struct xoob_msg *in, char *why,
                        size_t len)
{
    int mine;

    if (tgt_find(mod, in->src, in->qpn, &mine) >= 0) {
        return true;
    }
    if (mine >= XOOB_TGT_PER_PROCESS) {
        snprintf(why, len, "%d XRC target QPs for this process already (at most %d)", mine,
                 XOOB_TGT_PER_PROCESS);
        return false;
    }
    if (mod->ntgt >= tgt_cap(mod)) {
        snprintf(why, len, "%d XRC target QPs on this port already (at most %d for this job)",
                 mod->ntgt, tgt_cap(mod));
        return false;
    }
    return true;
}

static void tgt_remember(struct xoob_module *mod, const struct xoob_msg *in)
{
    int mine;

    if (tgt_find(mod, in->src, in->qpn, &mine) >= 0) {
        return;
    }
    if (mod->ntgt == mod->tgt_room) {
        int room = mod->tgt_room ? 2 * mod->tgt_room : 16;
        struct xoob_tgt *t = realloc(mod->tgts, sizeof(*t) * (size_t) room);
        if (NULL == t) {
            return; /* the cap only loosens: the QP itself exists */
        }
        mod->tgts = t;
        mod->tgt_room = room;
    }
    memcpy(mod->tgts[mod->ntgt].src, in->src, XOOB_ID_LEN);
    mod->tgts[mod->ntgt].qpn = in->qpn;
    mod->ntgt++;
}

static void on_req(struct xoob_module *mod, const struct oob_event *ev)
{
    struct openib_xoob_peer ini;
    struct openib_cpc_endpoint *cep;
    struct xoob_msg in;
    struct xoob_ep *e;
    enum oob_refusal r;
    char why[128] = "";
    uint32_t tgt = 0;
    int sid = ev->sid;
    int rc;

    if (!mod->have_self || NULL == mod->btl_ops) {
        /* no endpoint set up yet, so we do not know our name yet: closed
         * without an answer, an honest initiator retries */
        openib_cpc_log(100, "openib: xoob: a request before any endpoint: closing its session");
        oob_chan_close(sid);
        return;
    }
    r = xoob_check_request(ev->msg, OOB_MSG_SIZE, mod->self, openib_cpc_oob_job_size(mod->self),
                           openib_auth_local_token(), openib_cpc_oob_replay(), &in);
    if (OOB_OK != r) {
        refuse(ev, r, OOB_MALFORMED == r ? "not an xoob frame of this version"
                      : OOB_WRONG_DST == r ? "meant for another process: a duplicate or "
                                             "loopback address?"
                      : OOB_NOT_MEMBER == r ? "the claimed sender is not a process of this job"
                      : OOB_BAD_MAC == r ? "not keyed with our token: not a job member, or "
                                           "forged"
                                         : "a nonce seen before");
        return;
    }
    cep = mod->btl_ops->endpoint_for_peer(mod->btl, in.src, XOOB_ID_LEN, why, sizeof(why));
    e = own_ep(cep);
    if (NULL == e) {
        /* a member with no xoob endpoint here (yet): no sealed answer is
         * possible without its blob; the closed session makes it retry */
        openib_cpc_log(10, "openib: xoob: no endpoint yet for a verified request (%s): the "
                       "peer retries", why[0] ? why : "another CPC was chosen for it");
        oob_chan_close(sid);
        return;
    }
    r = oob_check_source(e->peer.addrs, e->peer.naddr, ev->peer_addr);
    if (OOB_OK != r) {
        refuse(ev, r, cep->peer_desc);
        return;
    }
    oob_chan_trust(sid);
    if (in.rq_layout != mod->rq_layout) {
        reply(sid, &in, mod, e->peer.token, XOOB_REJ, XOOB_REJ_LAYOUT, 0,
              "btl_openib_receive_queues differs between the two processes");
        return;
    }
    if (!tgt_allowed(mod, &in, why, sizeof(why))) {
        char from[INET_ADDRSTRLEN];
        openib_cpc_oob_refused("xoob", "request", openib_cpc_oob_addr(ev->peer_addr, from,
                                                                      sizeof(from)),
                               OOB_CAP, why);
        reply(sid, &in, mod, e->peer.token, XOOB_REJ, XOOB_REJ_RESOURCE, 0,
              "too many XRC target QPs (cap)");
        return;
    }
    ini = (struct openib_xoob_peer) { .qpn = in.qpn, .psn = in.psn, .mtu = in.mtu,
                                      .lid = in.lid };
    memcpy(ini.gid, in.gid, 16);
    rc = xops->tgt_qp_get(mod->btl, &ini, &tgt, why, sizeof(why));
    if (OPAL_SUCCESS != rc) {
        reply(sid, &in, mod, e->peer.token, XOOB_REJ, XOOB_REJ_RESOURCE, 0, why);
        return;
    }
    tgt_remember(mod, &in);
    openib_cpc_log(100, "openib: xoob: target QP %u for send QP %u of %s", tgt, in.qpn,
                   cep->peer_desc);
    reply(sid, &in, mod, e->peer.token, XOOB_REP, 0, tgt, NULL);
}

/* ---- events and timers, from oob's progress ---- */

static void retry_or_fail(struct xoob_ep *e, const char *why)
{
    char buf[200];
    long backoff = 100L * e->attempts;

    if (e->attempts < xoob_retries) {
        e->retry_ms = openib_cpc_now_ms() +
                      (backoff > RETRY_BACKOFF_MAX_MS ? RETRY_BACKOFF_MAX_MS : backoff);
        return; /* check_timers sends the REQ again */
    }
    snprintf(buf, sizeof(buf), "%s; gave up after %d attempts (btl_openib_connect_xoob_retries)",
             why, e->attempts);
    node_finish(e, OPAL_ERR_UNREACH, buf);
}

bool openib_cpc_xoob_dispatch(const struct oob_event *ev)
{
    const struct openib_cpc_module *lm = ev->listen_owner;
    struct xoob_msg in;
    struct xoob_ep *e;
    enum oob_refusal r;

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
                node_finish(e, OPAL_ERR_UNREACH, "connection refused at every address the peer "
                            "published: the peer process has exited");
            } else {
                retry_or_fail(e, ev->why);
            }
        }
        return true;
    }
    if (NULL == ev->owner) {
        on_req((struct xoob_module *) lm, ev);
        return true;
    }
    if (NULL == e) {
        oob_chan_close(ev->sid); /* an abandoned session */
        return true;
    }
    r = xoob_check_answer(ev->msg, OOB_MSG_SIZE, e->cep->local_id, e->cep->peer_id,
                          openib_auth_local_token(), e->asked, &in);
    if (OOB_OK != r) {
        char why[96];

        openib_cpc_oob_refused("xoob", "answer", e->cep->peer_desc, r,
                               OOB_WRONG_DST == r || OOB_WRONG_SRC == r
                                   ? "another process answers at the peer's address"
                                   : OOB_BAD_MAC == r ? "not keyed with our token"
                                                      : "not an answer to our request");
        oob_chan_close(ev->sid);
        e->sid = -1;
        snprintf(why, sizeof(why), "the peer's answer was refused (%s)", oob_refusal_name(r));
        retry_or_fail(e, why);
        return true;
    }
    on_reply(e, &in);
    return true;
}

static void check_timers(void)
{
    long t;
    int i;

    if (OPAL_LIKELY(0 == active.n)) {
        return;
    }
    t = openib_cpc_now_ms();
    for (i = active.n - 1; i >= 0; --i) {
        struct xoob_ep *e;
        long heard;
        int pending;

        if (i >= active.n) {
            continue; /* the set shrank under a handler */
        }
        e = active.v[i];
        openib_cpc_discount_absence(&e->deadline_ms, &e->looked_ms, t);
        if (e->sid >= 0 && OPAL_SUCCESS == oob_chan_liveness(e->sid, &heard, &pending)) {
            if (heard > e->heard_ms) {
                e->heard_ms = heard;
                alive(e, heard < t ? heard : t);
            }
            if (pending > 0 && !e->busy_logged) {
                e->busy_logged = true;
                XOOB_LOG(e, "the responder is alive but its process has not taken our request "
                         "yet (busy outside MPI?): waiting for it, with no deadline while it "
                         "answers");
            }
        }
        if (t > e->deadline_ms) {
            char why[160];
            snprintf(why, sizeof(why), "no answer at all within %d s "
                     "(btl_openib_connect_xoob_timeout), not even from the peer's side-channel "
                     "thread", xoob_timeout_s);
            node_finish(e, OPAL_ERR_TIMEOUT, why);
        } else if (e->sid < 0 && t >= e->retry_ms && OPAL_SUCCESS != send_req(e)) {
            retry_or_fail(e, "cannot open a side-channel connection");
        }
    }
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
    e = calloc(1, sizeof(*e));
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
    e->magic = XOOB_EP_MAGIC;
    e->cep = cep;
    e->mod = mod;
    e->sid = -1;
    e->active_index = -1;
    cep->cpc_private = e;
    mod->btl_ops = cep->btl_ops;
    memcpy(mod->self, cep->local_id, XOOB_ID_LEN); /* the BTL names us the same each time */
    mod->have_self = true;
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
        xops->ep_detach(cep->btl_ep, e->node);
    }
    if (openib_xrc_node_leave(e->node, e)) {
        /* we drove the handshake: the others must not wait for it forever */
        (void) openib_cpc_active_set(&active, e, false);
        if (e->sid >= 0) {
            oob_chan_close(e->sid);
            e->sid = -1;
        }
        openib_xrc_node_complete(e->node, OPAL_ERR_UNREACH,
                                 "the endpoint connecting the node's send queue pair was closed",
                                 waiter_done, NULL);
    }
    (void) openib_cpc_active_set(&active, e, false);
    qp = openib_xrc_node_put(&mod->nodes, e->node);
    if (qp && xops) {
        xops->send_qp_destroy(mod->btl, qp);
    }
    e->magic = 0;
    free(e);
    cep->cpc_private = NULL;
    return OPAL_SUCCESS;
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
    if (NULL == xops || NULL == port->btl ||
        OPAL_SUCCESS != xops->port_srqs(port->btl, b.srqn, XOOB_MAX_SRQS, &n, NULL) || n < 1) {
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
    (void) xops->port_srqs(port->btl, NULL, 0, NULL, &mod->rq_layout);
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

    return openib_cpc_side_channel_progress_with(urgent, &tick, check_timers);
}

static int xoob_finalize(void)
{
    openib_cpc_active_fini(&active);
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

/*
 * cpc_rdma_cm_conn.c - the rdma_cm CPC's handshake, driven from progress.
 *
 *   initiator                                 responder (the peer's listener)
 *   resolve address, then route
 *   rdma_connect: REQ (our QP data) ------->  CONNECT_REQUEST: find the
 *                                            endpoint, QPs to RTR, post
 *                                   <------  receives, rdma_accept: REP (its QP data)
 *   CONNECT_RESPONSE: QPs to RTR and RTS,
 *   post receives, rdma_establish: RTU ->    ESTABLISHED: QPs to RTS
 *   complete                                 complete
 *
 * The BTL owns the QPs: every cm_id is QP-less, the QP numbers travel in
 * conn_param.qp_num and the rest in private data (cpc_rdma_cm_wire.c). The
 * initiator sends RTU only after its QPs are RTS and its receives posted, and
 * the responder sends nothing before ESTABLISHED, so the first message always
 * finds a posted receive.
 *
 * iWARP (the port has OPENIB_PORT_CAP_IWARP): the iWARP CM moves QPs to
 * RTS itself, makes no connection without a QP, and a refused connection
 * leaves its QP in error. So the handshake above (REQ chunks, REP, every
 * REJ, crossing, busy, retries; private data in MPA's, at most 196 of its
 * 256 bytes) runs unchanged on a connection of its own with a throw-away
 * QP (handshake_qp: librdmacm's PD and CQs, never used for data); the
 * reply arrives with ESTABLISHED instead of CONNECT_RESPONSE, and the QP
 * number the MACs cover is 0 (the iWARP CM carries none). Then the
 * initiator connects each of the BTL's QPs on a QP-less cm_id of its own,
 * handing the QP over by number (conn_param.qp_num: the QP stays the
 * BTL's, on its PD, CQ and SRQ; the CM attaches and moves it):
 *
 *   initiator (per QP q)                       responder
 *   rdma_connect(qp_num = our QP q): QREQ -->  the handshake's nonce, q;
 *                                     <-----   rdma_accept(qp_num = its QP q): QREP
 *   ESTABLISHED                                ESTABLISHED
 *
 * QREQ/QREP (cpc_rdma_cm_wire.c) carry the handshake's nonce and a MAC like
 * REQ/REP. Receives are posted before any QP is handed over. RDMA read
 * depths come from the device's limits (the responder's no more than the
 * initiator offers). When every QP is up, the handshake's connection goes
 * and the BTL hears connect_established: the initiator sends first on
 * every QP (MPA's rule, module uses_cts; btl_openib_cts.h). Limits: a
 * refused or failed QP connection fails the endpoint (no retry: its QP is
 * in error), and a responder whose listener thread answers a QREQ with
 * BUSY (it left MPI right after accepting the handshake) fails it too.
 *
 * Authentication (issue 15; layout in cpc_rdma_cm_wire.c): each REQ chunk
 * carries the attempt's nonce and a MAC keyed with the responder's token
 * (from its modex blob); the REP echoes the nonce and is keyed with the
 * initiator's. The responder checks a chunk before it looks at anything
 * else: layout and MAC (a stranger, or a frame for another process, stops
 * here: no endpoint is even looked up), the claimed sender is a job member,
 * the request came from the address the sender published, and (sender,
 * chunk, nonce) is fresh. A chunk that fails is rejected with no private
 * data and dropped: no endpoint state changes, so an honest handshake under
 * way is not disturbed. Only verified chunks are assembled, per (sender,
 * nonce). Each refusal is logged at verbose 1 ("refused", the source
 * address, the reason), the first 10 per reason and then one in 100.
 *
 * Crossing connects (both sides send a REQ): the side whose process name
 * compares lower (memcmp of the 8 name bytes, the same answer on both sides)
 * keeps initiating and answers the other's REQ with REJ(CROSS); the higher
 * side drops its own attempt, answers the lower side's REQ, and after a
 * REJ(CROSS) waits for it (asking again after a step without news). Exactly
 * one handshake completes; the 4-rank storm test (every rank sends to every
 * other first thing) checks it: 6 initiators and 6 responders.
 *
 * A busy peer is not a dead one. A responder that is computing outside MPI
 * does not take a request within a short grace; its listener thread then
 * answers REJ(BUSY) for it (cpc_rdma_cm_listen.c), which proves the peer
 * alive: the initiator asks again after a back-off growing to 2 s, as long
 * as it takes, without counting it as a failed attempt.
 *
 * Bounds: btl_openib_connect_rdma_cm_timeout bounds silence only: no
 * answer at all from the peer's CPC (REP, or a REJ of ours: BUSY, CROSS,
 * LATER, MORE; or its own REQ) for that long, counted while this process
 * looks (cpc_active.h). Each step (address, route, waiting for the reply
 * to one REQ) gets a sixth of it (at least 1 s); a failed, refused ("try
 * later", or the kernel CM's own refusals) or timed-out attempt is retried
 * with a growing back-off up to btl_openib_connect_rdma_cm_retries times,
 * on a fresh cm_id. A peer that is really gone fails sooner: its kernel
 * refuses a request for a service nobody listens on (reject reason 8).
 * A request the responder already answered and sees again gets the same
 * answer (same QPs), so a REP lost with an abandoned attempt costs nothing
 * but the retry.
 *
 * Limit: the other way round is not covered. An initiator that leaves MPI
 * between its REQ and the REP (e.g. MPI_Test, then minutes of compute)
 * sends its RTU only when it is back, because the RTU must follow its QPs'
 * move to RTS (BTL state, the MPI thread's); the responder's silence bound
 * and the IB CM's own REP retries (about a minute) run out first.
 *
 * Events: the endpoints' cm_ids use one non-blocking event channel per
 * process (the listeners have their own, cpc_rdma_cm_listen.c). The BTL's
 * progress runs openib_cpc_rdma_cm_progress() (the component's progress
 * hook), which looks at the channel (one poll() system call with a zero
 * timeout) and at the queued requests only every RCM_IDLE_EVERY calls, so
 * an idle process pays a counter increment per call, or every
 * RCM_BUSY_EVERY calls while a handshake of ours is under way. Each event
 * is copied and acknowledged before it is handled, so any handler may
 * destroy any cm_id.
 */
#include "opal_config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opal/constants.h"
#include "opal/prefetch.h"

#include "connect/cpc_active.h"
#include "connect/cpc_rdma_cm.h"
#include "connect/openib_connect.h"

#define RCM_IDLE_EVERY 256      /* progress calls between looks, nothing under way */
#define RCM_BUSY_EVERY 4        /* ... while one of our handshakes is under way */
#define RCM_EVENTS_PER_CALL 64  /* bound the work one progress call does */
#define RCM_BACKOFF_MAX_MS 2000 /* retries (and questions to a busy peer) */
#define RCM_BUSY_BACKOFF_MS 250 /* the first question again to a busy peer */
/* The kernel CM's reject reason when nothing listens on the service (IB
 * spec "invalid service ID"; rdma_cm reports it as the event status). */
#define RCM_IB_REJ_INVALID_SERVICE_ID 8

enum rcm_state {
    RS_IDLE = 0,
    RS_ADDR,       /* resolving the peer's address (act_id) */
    RS_ROUTE,      /* resolving the route (act_id) */
    RS_REQ_SENT,   /* REQ out, waiting for REP or REJ (act_id) */
    RS_RETRY,      /* next attempt at retry_ms */
    RS_WAIT_PEER,  /* lost a crossing, or our REP went unanswered: the peer's REQ comes */
    RS_RECEIVING,  /* stored part of the peer's REQ, the rest comes */
    RS_RESPONDING, /* accepted (pas_id), waiting for ESTABLISHED */
    RS_QPS,        /* iWARP: the handshake is done, each QP's connection under way */
    RS_DONE,
    RS_FAILED,
};

static const char *const state_names[] = {
    [RS_IDLE] = "idle",
    [RS_ADDR] = "resolving address",
    [RS_ROUTE] = "resolving route",
    [RS_REQ_SENT] = "request sent",
    [RS_RETRY] = "waiting to retry",
    [RS_WAIT_PEER] = "waiting for the peer",
    [RS_RECEIVING] = "receiving the request",
    [RS_RESPONDING] = "accepted",
    [RS_QPS] = "connecting the queue pairs (iWARP)",
    [RS_DONE] = "connected",
    [RS_FAILED] = "failed",
};

struct rcm_ep {
    uint32_t tag;                /* RCM_TAG_EP: first, see cpc_rdma_cm.h */
    enum rcm_state st;
    struct openib_cpc_endpoint *cep;
    struct rcm_module *mod;
    struct rdma_cm_id *act_id;   /* our own attempt */
    struct rdma_cm_id *pas_id;   /* the peer's request we accepted */
    long deadline_ms;            /* the peer's last sign of life + the timeout */
    long looked_ms;              /* the timer's last look (cpc_active.h) */
    long step_ms;                /* the current step */
    long retry_ms;
    int attempts;                /* REQs of ours, busy answers included */
    int failures;                /* attempts that failed: bounded by retries */
    int busy;                    /* REJ(BUSY) answers heard */
    int next_chunk;              /* initiator: the chunk of our REQ to send next */
    uint8_t nonce[OPENIB_AUTH_NONCE_LEN]; /* initiator: this attempt's, in every chunk */
    bool qps_rtr;                /* responder: our QPs are set up for peer_q (RTR;
                                    iWARP: its data kept, receives posted) */
    struct openib_cpc_qp_info peer_q;
    struct rcm_rx rx;            /* responder: the peer's REQ, verified chunks only */
    /* iWARP: one connection per QP after the handshake (see the top) */
    struct rdma_cm_id *qid[OPENIB_CPC_MAX_QPS];
    uint8_t nq;                  /* QPs to connect */
    uint8_t qup;                 /* bit q: QP q's connection is established */
    bool iw_initiator;           /* we sent the QP requests: we send first */
    bool recvs_posted;
    int active_index;            /* in rcm.active while a handshake is under way, else -1 */
    int all_index;               /* in rcm.all while the endpoint exists */
};

static struct {
    struct rdma_event_channel *ch;
    int refs;
    unsigned tick;
    struct openib_cpc_active active; /* handshakes under way (timers) */
    struct openib_cpc_active all;    /* our endpoints: is a BTL endpoint ours? */
    uint8_t local_id[RCM_ID_LEN];
    bool have_local_id;
    struct openib_auth_replay replay;          /* (sender, chunk, nonce) of accepted chunks */
    unsigned long refused[RCM_REFUSAL_COUNT];  /* for the log's rate limit */
} rcm = {
    .active = OPENIB_CPC_ACTIVE_INIT(struct rcm_ep, active_index),
    .all = OPENIB_CPC_ACTIVE_INIT(struct rcm_ep, all_index),
};

/* The parameters as used: a timeout below 1 s or negative retries would
 * end every connection before it starts. */
static int timeout_s(void)
{
    return rcm_params.timeout_s < 1 ? 1 : rcm_params.timeout_s;
}

static int max_retries(void)
{
    return rcm_params.retries < 0 ? 0 : rcm_params.retries;
}

static long step_timeout_ms(void)
{
    long ms = 1000L * timeout_s() / 6;

    return ms < 1000 ? 1000 : ms;
}

#define RCM_LOG(e, fmt, ...) \
    openib_cpc_log(100, "openib: rdma_cm %s: " fmt, (e)->cep->peer_desc, ##__VA_ARGS__)

/* ---- the event channel ---- */

struct rdma_event_channel *rcm_channel_get(char *why, size_t why_len)
{
    struct rdma_event_channel *ch;
    int flags;

    if (NULL != rcm.ch) {
        rcm.refs++;
        return rcm.ch;
    }
    ch = rdma_create_event_channel();
    if (NULL == ch) {
        snprintf(why, why_len, "cannot open the rdma_cm event channel: %s (rdma_ucm not loaded?)",
                 strerror(errno));
        return NULL;
    }
    flags = fcntl(ch->fd, F_GETFL);
    if (flags < 0 || fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        snprintf(why, why_len, "cannot make the rdma_cm event channel non-blocking: %s",
                 strerror(errno));
        rdma_destroy_event_channel(ch);
        return NULL;
    }
    if (NULL == rcm_listen_get(why, why_len)) {
        rdma_destroy_event_channel(ch);
        return NULL;
    }
    rcm.ch = ch;
    rcm.refs = 1;
    return ch;
}

void rcm_channel_put(void)
{
    if (rcm.refs > 0 && 0 == --rcm.refs) {
        rcm_listen_put();
        rdma_destroy_event_channel(rcm.ch);
        rcm.ch = NULL;
    }
}

/* ---- bookkeeping ---- */

static void set_active(struct rcm_ep *e, bool on)
{
    if (on && e->active_index < 0) {
        e->looked_ms = openib_cpc_now_ms();
    }
    /* Out of memory: this handshake runs without our timers, bounded by
     * the IB CM's own timeouts only. */
    (void) openib_cpc_active_set(&rcm.active, e, on);
}

/* The peer's CPC answered (or asked): it is alive, the silence bound
 * starts again. */
static void alive(struct rcm_ep *e)
{
    long d = openib_cpc_now_ms() + 1000L * timeout_s();

    if (d > e->deadline_ms) {
        e->deadline_ms = d;
    }
}

/* The endpoint_for_peer answer is ours only if this CPC was chosen for it. */
static struct rcm_ep *own_ep(const struct openib_cpc_endpoint *cep)
{
    int i;

    for (i = 0; NULL != cep && i < rcm.all.n; ++i) {
        struct rcm_ep *e = rcm.all.v[i];

        if (e->cep == cep) {
            return e;
        }
    }
    return NULL;
}

static void drop_id(struct rdma_cm_id **id)
{
    if (NULL != *id) {
        if (NULL != (*id)->qp) {
            rdma_destroy_qp(*id); /* iWARP handshake's own QP: before its id */
        }
        rdma_destroy_id(*id);
        *id = NULL;
    }
}

static void drop_qids(struct rcm_ep *e)
{
    int q;

    for (q = 0; q < OPENIB_CPC_MAX_QPS; ++q) {
        drop_id(&e->qid[q]);
    }
    e->qup = 0;
}

static void fail(struct rcm_ep *e, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fail(struct rcm_ep *e, int rc, const char *fmt, ...)
{
    char why[OPENIB_CPC_WHY_MAX], buf[OPENIB_CPC_WHY_MAX + 16];
    va_list ap;

    if (RS_FAILED == e->st || RS_DONE == e->st) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    RCM_LOG(e, "failed: %s", why);
    e->st = RS_FAILED;
    set_active(e, false);
    drop_id(&e->act_id);
    drop_id(&e->pas_id);
    drop_qids(e);
    snprintf(buf, sizeof(buf), "rdma_cm: %s", why);
    e->cep->btl_ops->connect_failed(e->cep->btl_ep, rc, buf);
}

static void done(struct rcm_ep *e)
{
    RCM_LOG(e, "connected (%s, %d attempt(s))", e->pas_id ? "responder" : "initiator",
            e->attempts);
    e->st = RS_DONE;
    set_active(e, false);
    if (e->mod->iwarp) {
        /* Every QP has its own connection now: the handshake's own one
         * (and its QP) is of no more use. */
        drop_id(&e->act_id);
        drop_id(&e->pas_id);
        e->cep->btl_ops->connect_established(e->cep->btl_ep, e->iw_initiator);
        return;
    }
    /* The cm_ids stay until the endpoint goes: destroying one now would send
     * a DREQ that could overtake the RTU. */
    e->cep->btl_ops->connect_complete(e->cep->btl_ep);
}

/* A request's or reply's source address, for the log. */
static const char *peer_addr_str(struct rdma_cm_id *id, char *buf, size_t len)
{
    const struct sockaddr *sa = rdma_get_peer_addr(id);

    snprintf(buf, len, "?");
    if (NULL != sa && AF_INET == sa->sa_family) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *) sa)->sin_addr, buf, (socklen_t) len);
    } else if (NULL != sa && AF_INET6 == sa->sa_family) {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *) sa)->sin6_addr, buf,
                  (socklen_t) len);
    }
    return buf;
}

/* Log a refusal at verbose 1, rate-limited per reason so a flood cannot
 * fill the log: the first 10 of each, then one in 100. */
static void refused(struct rdma_cm_id *id, enum rcm_refusal r, const char *what,
                    const char *detail)
{
    unsigned long n = ++rcm.refused[r];
    char ip[INET6_ADDRSTRLEN];

    if (n <= 10 || 0 == n % 100) {
        openib_cpc_log(1, "openib: rdma_cm: refused %s from %s: %s (%s; %lu refused for this "
                       "reason so far)", what, peer_addr_str(id, ip, sizeof(ip)),
                       rcm_refusal_name(r), detail, n);
    }
}

/* The peer's path data from its modex port (the BTL builds the address
 * vector from it); the route rdma_cm resolved is the fallback. */
static void peer_path(const struct rcm_ep *e, const struct rdma_cm_id *id,
                      struct openib_cpc_qp_info *q)
{
    const struct openib_cpc_port *pp = e->cep->peer_port;

    if (NULL != pp) {
        memcpy(q->gid, pp->gid, 16);
        q->lid = pp->lid;
        q->mtu = pp->mtu;
    } else {
        memcpy(q->gid, id->route.addr.addr.ibaddr.dgid.raw, 16);
        q->lid = 0;
        q->mtu = 1024;
    }
}

/* ---- initiator ---- */

static int blob_decode(const struct openib_cpc_endpoint *cep, struct rcm_blob *b)
{
    return rcm_blob_decode(cep->peer_blob, cep->peer_blob_len, b);
}

/* ---- iWARP ---- */

/* The connection parameters: on InfiniBand/RoCE as librdmacm resolves its
 * maxima; on iWARP the device's limits, and when answering a request no
 * more than the initiator can use (its initiator depth bounds our
 * responder resources, and the other way round). */
static void conn_param(const struct rcm_ep *e, const struct rcm_event *req,
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
static uint32_t wire_qpn(const struct rcm_ep *e, uint32_t qpn)
{
    return e->mod->iwarp ? 0 : qpn;
}

/* iWARP: the handshake's connection needs a QP of its own (the iWARP CM
 * accepts no connection without one, and a refused attempt kills its
 * QP): a minimal one from librdmacm's own PD and CQs, never used for data
 * and destroyed with its cm_id. The BTL's QPs are connected after it. */
static int handshake_qp(struct rdma_cm_id *id)
{
    struct ibv_qp_init_attr a = {
        .cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
        .qp_type = IBV_QPT_RC,
    };

    return rdma_create_qp(id, NULL, &a);
}

/* Our receive buffers go up once, before any connection of our QPs: the
 * peer may send the moment its side is established. */
static int post_recvs_once(struct rcm_ep *e)
{
    int rc;

    if (e->recvs_posted) {
        return OPAL_SUCCESS;
    }
    rc = e->cep->btl_ops->post_recvs(e->cep->btl_ep);
    e->recvs_posted = OPAL_SUCCESS == rc;
    return rc;
}

/* Initiator: a cm_id per QP, each resolved and connected with the QP's
 * number (the CM moves the QP to RTS). */
static void qps_connect(struct rcm_ep *e)
{
    struct sockaddr_in src = { .sin_family = AF_INET }, dst = { .sin_family = AF_INET };
    struct rcm_blob b;
    int q;

    if (OPAL_SUCCESS != blob_decode(e->cep, &b)) {
        fail(e, OPAL_ERR_UNREACH, "the peer's rdma_cm address in the modex is corrupt");
        return;
    }
    dst.sin_port = htons(b.port);
    dst.sin_addr.s_addr = b.ip;
    src.sin_addr.s_addr = e->mod->ip;
    e->iw_initiator = true;
    e->st = RS_QPS;
    e->step_ms = openib_cpc_now_ms() + step_timeout_ms();
    for (q = 0; q < e->nq; ++q) {
        if (0 != rdma_create_id(rcm.ch, &e->qid[q], e, RDMA_PS_TCP)) {
            e->qid[q] = NULL;
            fail(e, OPAL_ERR_OUT_OF_RESOURCE, "rdma_create_id for QP %d failed: %s", q,
                 strerror(errno));
            return;
        }
        if (0 != rdma_resolve_addr(e->qid[q], (struct sockaddr *) &src, (struct sockaddr *) &dst,
                                   (int) step_timeout_ms())) {
            fail(e, OPAL_ERR_UNREACH, "rdma_resolve_addr for QP %d failed: %s", q,
                 strerror(errno));
            return;
        }
    }
    RCM_LOG(e, "handshake done; connecting %d QPs, one iWARP connection each", e->nq);
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
    if (OPAL_SUCCESS != rc || q >= mine.num_qps || OPAL_SUCCESS != blob_decode(cep, &b)) {
        fail(e, OPAL_SUCCESS == rc ? OPAL_ERR_BAD_PARAM : rc, "no queue pair %d to connect", q);
        return;
    }
    (void) rcm_qp_frame_encode(pd, RCM_QREQ, cep->local_id, cep->peer_id, b.token, e->nonce,
                               (unsigned) q);
    conn_param(e, NULL, &p);
    p.private_data = pd;
    p.private_data_len = (uint8_t) sizeof(pd);
    p.qp_num = mine.qpn[q];
    if (0 != rdma_connect(e->qid[q], &p)) {
        fail(e, OPAL_ERR_UNREACH, "rdma_connect for QP %d failed: %s", q, strerror(errno));
        return;
    }
    RCM_LOG(e, "QP %d: request sent", q);
}

/* QP q's connection is up on our side. */
static void qp_up(struct rcm_ep *e, int q)
{
    e->qup |= (uint8_t) (1u << q);
    alive(e);
    RCM_LOG(e, "QP %d connected", q);
    if (e->qup == (1u << e->nq) - 1) {
        done(e);
    }
}

static void on_qp_event(struct rcm_ep *e, int q, const struct rcm_event *ev)
{
    struct openib_cpc_endpoint *cep = e->cep;
    uint8_t src[RCM_ID_LEN], nonce[OPENIB_AUTH_NONCE_LEN];
    enum rcm_refusal r;
    unsigned qq;

    if (RS_QPS != e->st) {
        return; /* DISCONNECTED once connected: the peer is leaving */
    }
    alive(e);
    switch (ev->type) {
    case RDMA_CM_EVENT_ADDR_RESOLVED:
        if (0 != rdma_resolve_route(e->qid[q], (int) step_timeout_ms())) {
            fail(e, OPAL_ERR_UNREACH, "rdma_resolve_route for QP %d failed: %s", q,
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
            if (RCM_OK == r && (0 != memcmp(src, cep->peer_id, RCM_ID_LEN) ||
                                0 != memcmp(nonce, e->nonce, sizeof(nonce)) || qq != (unsigned) q)) {
                r = RCM_WRONG_SRC;
            }
            if (RCM_OK != r) {
                refused(ev->id, r, "QP reply", cep->peer_desc);
                fail(e, OPAL_ERR_UNREACH, "the answer for QP %d was refused (%s)", q,
                     rcm_refusal_name(r));
                return;
            }
        }
        qp_up(e, q);
        return;
    default:
        /* A refused or failed connection has left its QP in error: the
         * connection cannot be made again with it. */
        fail(e, OPAL_ERR_UNREACH, "the connection of QP %d failed: %s (status %d)", q,
             rdma_event_str(ev->type), ev->status);
        return;
    }
}

static void start_attempt(struct rcm_ep *e);

static void retry(struct rcm_ep *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void retry(struct rcm_ep *e, const char *fmt, ...)
{
    char why[OPENIB_CPC_WHY_MAX];
    long backoff;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    drop_id(&e->act_id);
    e->next_chunk = 0;
    if (++e->failures > max_retries()) {
        fail(e, OPAL_ERR_UNREACH, "%s; gave up after %d failed attempts "
             "(btl_openib_connect_rdma_cm_retries)", why, e->failures);
        return;
    }
    /* Grows past the IB CM's time-wait (about a second on RoCE), after
     * which a stale-connection refusal clears. */
    backoff = 100L * e->failures;
    e->st = RS_RETRY;
    e->retry_ms = openib_cpc_now_ms() +
                  (backoff > RCM_BACKOFF_MAX_MS ? RCM_BACKOFF_MAX_MS : backoff);
    RCM_LOG(e, "attempt %d: %s; retrying", e->attempts, why);
}

/* REJ(BUSY) from the peer's listener thread: alive, not in MPI. Ask again
 * after a back-off growing to RCM_BACKOFF_MAX_MS, for as long as it answers;
 * this is no failed attempt. */
static void busy_retry(struct rcm_ep *e)
{
    long backoff = (long) RCM_BUSY_BACKOFF_MS << (e->busy < 4 ? e->busy : 4);

    if (backoff > RCM_BACKOFF_MAX_MS) {
        backoff = RCM_BACKOFF_MAX_MS;
    }
    e->busy++;
    drop_id(&e->act_id);
    e->next_chunk = 0;
    e->st = RS_RETRY;
    e->retry_ms = openib_cpc_now_ms() + backoff;
    if (1 == e->busy || 0 == e->busy % 10) {
        RCM_LOG(e, "attempt %d: the peer is alive but its process is not in MPI (busy answer %d "
                "from its listener thread); asking again in %ld ms, with no deadline while it "
                "answers", e->attempts, e->busy, backoff);
    }
}

static void start_attempt(struct rcm_ep *e)
{
    struct sockaddr_in src = { .sin_family = AF_INET }, dst = { .sin_family = AF_INET };
    struct rdma_cm_id *id;
    struct rcm_blob b;

    switch (blob_decode(e->cep, &b)) {
    case OPAL_SUCCESS:
        break;
    case OPAL_ERR_NOT_SUPPORTED:
        fail(e, OPAL_ERR_UNREACH, "the peer runs another openib-ng version (rdma_cm modex "
             "version %u, this process speaks %d)", (unsigned) e->cep->peer_blob[0],
             RCM_BLOB_VERSION);
        return;
    default:
        fail(e, OPAL_ERR_UNREACH, "the peer's rdma_cm address in the modex is corrupt");
        return;
    }
    dst.sin_port = htons(b.port);
    dst.sin_addr.s_addr = b.ip;
    e->attempts++;
    /* A new handshake (not the next chunk of this one): a new nonce, so
     * the responder's replay memory takes it and no reply to an earlier
     * attempt can pass for the answer to this one. */
    if (0 == e->next_chunk && OPAL_SUCCESS != openib_auth_nonce(e->nonce)) {
        retry(e, "no random bytes for the handshake nonce");
        return;
    }
    if (0 != rdma_create_id(rcm.ch, &id, e, RDMA_PS_TCP)) {
        retry(e, "rdma_create_id failed: %s", strerror(errno));
        return;
    }
    e->act_id = id;
    /* Our port's own address as the source: the handshake stays on this
     * device (and on rxe, loopback between two processes works). */
    src.sin_addr.s_addr = e->mod->ip;
    if (0 != rdma_resolve_addr(id, (struct sockaddr *) &src, (struct sockaddr *) &dst,
                               (int) step_timeout_ms())) {
        retry(e, "rdma_resolve_addr failed: %s", strerror(errno));
        return;
    }
    e->st = RS_ADDR;
    e->step_ms = openib_cpc_now_ms() + step_timeout_ms();
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
        fail(e, rc, "creating the queue pairs failed");
        return;
    }
    len = rcm_body_encode(&q, body);
    n = (int) RCM_CHUNKS(len);
    /* start_attempt decoded the blob already */
    len = 0 == len || OPAL_SUCCESS != blob_decode(cep, &b)
              ? 0
              : rcm_req_encode(pd, cep->local_id, cep->peer_id, b.token, e->nonce,
                               wire_qpn(e, q.qpn[0]), body, len, (unsigned) e->next_chunk);
    if (0 == len) {
        fail(e, OPAL_ERR_BAD_PARAM, "our QP data cannot be carried (%u QPs)",
             (unsigned) q.num_qps);
        return;
    }
    if (e->mod->iwarp && NULL == e->act_id->qp && 0 != handshake_qp(e->act_id)) {
        retry(e, "creating the handshake's QP failed: %s", strerror(errno));
        return;
    }
    conn_param(e, NULL, &p);
    p.private_data = pd;
    p.private_data_len = (uint8_t) len;
    p.qp_num = q.qpn[0];
    if (0 != rdma_connect(e->act_id, &p)) {
        retry(e, "rdma_connect failed: %s", strerror(errno));
        return;
    }
    e->st = RS_REQ_SENT;
    e->step_ms = openib_cpc_now_ms() + step_timeout_ms();
    RCM_LOG(e, "REQ chunk %d/%d sent (%u bytes)", e->next_chunk + 1, n,
            (unsigned) p.private_data_len);
}

static void on_reply(struct rcm_ep *e, const struct rcm_event *ev)
{
    struct openib_cpc_endpoint *cep = e->cep;
    struct openib_cpc_qp_info peer;
    enum rcm_refusal r;
    const uint8_t *body;
    size_t body_len;
    int rc;

    openib_cpc_qp_info_init(&peer);
    r = rcm_rep_verify(ev->priv, ev->priv_len, wire_qpn(e, ev->qp_num), cep->local_id,
                       openib_auth_local_token(), cep->peer_id, e->nonce, &body, &body_len);
    if (RCM_OK == r &&
        OPAL_SUCCESS != rcm_body_decode(body, body_len, wire_qpn(e, ev->qp_num), &peer)) {
        r = RCM_MALFORMED;
    }
    if (RCM_OK != r) {
        /* Nothing of it is used: this attempt is dropped like one that
         * got no answer, and the next has a new nonce. */
        refused(ev->id, r, "reply", e->cep->peer_desc);
        retry(e, "the reply was refused (%s)", rcm_refusal_name(r));
        return;
    }
    if (e->mod->iwarp) {
        /* The handshake is done (its connection is up); now each of our
         * QPs gets a connection of its own, which the CM moves to RTS. */
        rc = cep->btl_ops->peer_qp_info(cep->btl_ep, &peer);
        if (OPAL_SUCCESS == rc) {
            rc = post_recvs_once(e);
        }
        if (OPAL_SUCCESS != rc) {
            fail(e, rc, "setting up the queue pairs with the peer's reply failed");
            return;
        }
        e->nq = peer.num_qps;
        qps_connect(e);
        return;
    }
    peer_path(e, ev->id, &peer);
    rc = cep->btl_ops->connect_qps(cep->btl_ep, &peer, true);
    if (OPAL_SUCCESS == rc) {
        rc = cep->btl_ops->post_recvs(cep->btl_ep);
    }
    if (OPAL_SUCCESS != rc) {
        fail(e, rc, "connecting the queue pairs with the peer's reply failed");
        return;
    }
    /* QP-less: librdmacm leaves the RTU to us. */
    if (0 != rdma_establish(e->act_id)) {
        fail(e, OPAL_ERR_UNREACH, "rdma_establish failed: %s", strerror(errno));
        return;
    }
    done(e);
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
            fail(e, OPAL_ERR_UNREACH, "nothing listens at the peer's rdma_cm address any more "
                 "(IB CM reject reason %d, invalid service ID): the peer process has exited",
                 ev->status);
            return;
        }
        retry(e, "the request was refused (IB CM reason %d)", ev->status);
        return;
    }
    alive(e);
    switch (m.arg) {
    case RCM_REJ_CROSS:
        drop_id(&e->act_id);
        e->next_chunk = 0;
        e->st = RS_WAIT_PEER;
        e->step_ms = openib_cpc_now_ms() + step_timeout_ms();
        RCM_LOG(e, "crossing connects: the peer initiates, waiting for its request");
        break;
    case RCM_REJ_MORE:
        drop_id(&e->act_id);
        e->next_chunk++;
        start_attempt(e);
        break;
    case RCM_REJ_LATER:
        retry(e, "the peer asks us to try again later (no endpoint for us yet?)");
        break;
    case RCM_REJ_BUSY:
        switch (rcm_busy_decode(&m)) {
        case OPAL_SUCCESS:
            busy_retry(e);
            break;
        case OPAL_ERR_NOT_SUPPORTED:
            fail(e, OPAL_ERR_UNREACH, "the peer answered 'busy' with a marker of version %u "
                 "(this process reads %d): mixed openib-ng versions", (unsigned) m.rest[0],
                 RCM_BUSY_VERSION);
            break;
        default:
            fail(e, OPAL_ERR_UNREACH, "the peer's 'busy' answer is cut short (%zu bytes)",
                 ev->priv_len);
            break;
        }
        break;
    default:
        fail(e, OPAL_ERR_UNREACH, "the peer refused the connection");
        break;
    }
}

static void on_active_event(struct rcm_ep *e, const struct rcm_event *ev)
{
    switch (ev->type) {
    case RDMA_CM_EVENT_ADDR_RESOLVED:
        if (RS_ADDR != e->st) {
            return;
        }
        if (0 != rdma_resolve_route(e->act_id, (int) step_timeout_ms())) {
            retry(e, "rdma_resolve_route failed: %s", strerror(errno));
            return;
        }
        e->st = RS_ROUTE;
        e->step_ms = openib_cpc_now_ms() + step_timeout_ms();
        return;
    case RDMA_CM_EVENT_ROUTE_RESOLVED:
        if (RS_ROUTE == e->st) {
            send_req(e);
        }
        return;
    case RDMA_CM_EVENT_CONNECT_RESPONSE:
        if (RS_REQ_SENT == e->st) {
            on_reply(e, ev);
        }
        return;
    case RDMA_CM_EVENT_ESTABLISHED:
        /* iWARP: the handshake's connection (with its own QP) is up, the
         * reply in its private data */
        if (RS_REQ_SENT == e->st && e->mod->iwarp) {
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
            retry(e, "%s (status %d)", rdma_event_str(ev->type), ev->status);
        }
        return;
    default:
        return; /* DISCONNECTED once connected: the peer is leaving */
    }
}

/* ---- responder ---- */

static void reject(struct rdma_cm_id *id, const void *local_id, enum rcm_reason why)
{
    uint8_t pd[RCM_HDR_LEN];

    rcm_hdr_encode(pd, RCM_REJ, local_id, (uint8_t) why);
    (void) rdma_reject(id, pd, sizeof(pd));
    drop_id(&id);
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
    uint32_t qpn0 = wire_qpn(e, ev->qp_num);
    struct openib_cpc_qp_info peer, mine;
    struct rdma_conn_param p;
    uint8_t pd[RCM_REP_PRIV_MAX], body[RCM_BODY_MAX];
    struct rcm_blob b;
    size_t len;
    int rc;

    openib_cpc_qp_info_init(&peer);
    if (OPAL_SUCCESS != blob_decode(cep, &b) ||
        OPAL_SUCCESS != rcm_body_decode(e->rx.data, e->rx.len, qpn0, &peer)) {
        reject(id, cep->local_id, RCM_REJ_BAD);
        fail(e, OPAL_ERR_UNREACH, "the peer's request is corrupt");
        return;
    }
    peer_path(e, id, &peer);
    if (e->qps_rtr) {
        /* The peer gave up on an attempt we had answered and asks again:
         * same QPs, so the answer stands. */
        rc = same_peer_qps(&peer, &e->peer_q) ? OPAL_SUCCESS : OPAL_ERR_BAD_PARAM;
    } else if (e->mod->iwarp) {
        /* the CM moves our QPs when the peer connects each of them */
        rc = cep->btl_ops->peer_qp_info(cep->btl_ep, &peer);
        if (OPAL_SUCCESS == rc) {
            rc = post_recvs_once(e);
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
                             wire_qpn(e, mine.qpn[0]), body, len);
    }
    if (0 == len) {
        reject(id, cep->local_id, RCM_REJ_BAD);
        fail(e, OPAL_SUCCESS == rc ? OPAL_ERR_BAD_PARAM : rc,
             "setting up the queue pairs for the peer's request failed");
        return;
    }
    if (e->mod->iwarp && NULL == id->qp && 0 != handshake_qp(id)) {
        RCM_LOG(e, "creating the handshake's QP failed: %s; waiting for the peer's next "
                "request", strerror(errno));
        reject(id, cep->local_id, RCM_REJ_LATER);
        e->st = RS_WAIT_PEER;
        return;
    }
    conn_param(e, ev, &p);
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
        reject(id, cep->local_id, RCM_REJ_LATER);
        drop_id(&e->pas_id);
        e->st = RS_WAIT_PEER;
        return;
    }
    drop_id(&e->pas_id); /* an earlier answer the peer gave up on */
    e->pas_id = id;
    e->st = RS_RESPONDING;
    RCM_LOG(e, "REP sent");
}

/* A request that failed a check: rejected with no private data (a stranger
 * learns nothing), its cm_id destroyed, nothing else touched. */
static void refuse_request(const struct rcm_event *ev, enum rcm_refusal r, const char *detail)
{
    refused(ev->id, r, "request", detail);
    (void) rdma_reject(ev->id, NULL, 0);
    rdma_destroy_id(ev->id);
}

/* iWARP: the peer connects one of our QPs, for the handshake we accepted:
 * the frame's MAC (our token), the sender's endpoint, the handshake's
 * nonce, the address it published, and a QP not connected yet. */
static void on_qp_request(struct rcm_module *mod, const struct rcm_event *ev)
{
    struct openib_cpc_endpoint *cep;
    struct openib_cpc_qp_info mine;
    struct rdma_conn_param p;
    uint8_t src[RCM_ID_LEN], nonce[OPENIB_AUTH_NONCE_LEN], pd[RCM_QP_FRAME_LEN];
    enum rcm_refusal bad;
    struct rcm_blob b;
    struct rcm_ep *e;
    char why[128] = "";
    unsigned q;

    bad = rcm_qp_frame_verify(ev->priv, ev->priv_len, RCM_QREQ, rcm.local_id,
                              openib_auth_local_token(), src, nonce, &q);
    if (RCM_OK != bad) {
        refuse_request(ev, bad, "QP request");
        return;
    }
    cep = mod->btl_ops->endpoint_for_peer(mod->btl, src, RCM_ID_LEN, why, sizeof(why));
    e = own_ep(cep);
    if (NULL == e || (RS_RESPONDING != e->st && RS_QPS != e->st) || e->iw_initiator ||
        !e->qps_rtr || q >= e->peer_q.num_qps ||
        NULL != e->qid[q] || 0 != memcmp(nonce, e->rx.nonce, sizeof(nonce))) {
        refuse_request(ev, RCM_REPLAY, "QP request for no handshake under way");
        return;
    }
    if (OPAL_SUCCESS != blob_decode(cep, &b) ||
        !rcm_sockaddr_is(rdma_get_peer_addr(ev->id), b.ip)) {
        refuse_request(ev, RCM_BAD_SOURCE_ADDR, e->cep->peer_desc);
        return;
    }
    if (OPAL_SUCCESS != cep->btl_ops->local_qp_info(cep->btl_ep, &mine) || q >= mine.num_qps) {
        refuse_request(ev, RCM_MALFORMED, "no such queue pair here");
        fail(e, OPAL_ERR_BAD_PARAM, "the peer asked for queue pair %u, which we lack", q);
        return;
    }
    (void) rcm_qp_frame_encode(pd, RCM_QREP, cep->local_id, cep->peer_id, b.token, nonce, q);
    conn_param(e, ev, &p);
    p.private_data = pd;
    p.private_data_len = (uint8_t) sizeof(pd);
    p.qp_num = mine.qpn[q];
    ev->id->context = e;
    if (0 != rdma_migrate_id(ev->id, rcm.ch) || 0 != rdma_accept(ev->id, &p)) {
        RCM_LOG(e, "rdma_accept for QP %u failed: %s", q, strerror(errno));
        reject(ev->id, cep->local_id, RCM_REJ_BAD);
        fail(e, OPAL_ERR_UNREACH, "accepting the connection of QP %u failed", q);
        return;
    }
    e->qid[q] = ev->id;
    e->nq = e->peer_q.num_qps;
    e->st = RS_QPS; /* the handshake's own connection is of no more interest */
    alive(e);
    RCM_LOG(e, "QP %u: request accepted", q);
}

static void on_request(struct rcm_module *mod, const struct rcm_event *ev)
{
    struct openib_cpc_endpoint *cep = NULL;
    struct rcm_ep *e;
    struct rcm_msg m;
    struct rcm_req r;
    struct rcm_blob b;
    enum rcm_refusal bad;
    uint8_t sender[RCM_ID_LEN + 1];
    char why[128] = "";

    if (!rcm.have_local_id || NULL == mod->btl_ops) {
        reject(ev->id, rcm.local_id, RCM_REJ_LATER); /* no endpoint yet: the peer retries */
        return;
    }
    /* Every check before anything is touched: the frame (lengths, layout,
     * MAC under our token, which also proves the sender knows it), the
     * sender's membership, its address, freshness. */
    if (mod->iwarp && OPAL_SUCCESS == rcm_msg_decode(ev->priv, ev->priv_len, &m) &&
        RCM_QREQ == m.type) {
        on_qp_request(mod, ev);
        return;
    }
    bad = rcm_req_verify(ev->priv, ev->priv_len, mod->iwarp ? 0 : ev->qp_num, rcm.local_id,
                         openib_auth_local_token(), &r);
    if (RCM_OK != bad) {
        refuse_request(ev, bad, RCM_BAD_MAC == bad ? "not keyed with our token: not a job "
                                                     "member, or meant for another process"
                                                   : "not an openib-ng request of this version");
        return;
    }
    cep = mod->btl_ops->endpoint_for_peer(mod->btl, r.src, RCM_ID_LEN, why, sizeof(why));
    if (NULL == cep) {
        /* It knows our token, so it is of the job; the endpoint may come
         * later: it is told to retry. */
        refused(ev->id, RCM_NOT_MEMBER, "request", why);
        reject(ev->id, rcm.local_id, RCM_REJ_LATER);
        return;
    }
    e = own_ep(cep);
    if (NULL == e || RS_DONE == e->st || RS_FAILED == e->st) {
        reject(ev->id, cep->local_id, RCM_REJ_BAD);
        return;
    }
    if (RS_QPS == e->st) {
        /* iWARP: a late request of a crossing we already settled */
        reject(ev->id, cep->local_id, RCM_REJ_CROSS);
        return;
    }
    if (OPAL_SUCCESS != blob_decode(cep, &b)) {
        refuse_request(ev, RCM_NOT_MEMBER, "the claimed sender published no rdma_cm address "
                                           "of this version");
        return;
    }
    if (!rcm_sockaddr_is(rdma_get_peer_addr(ev->id), b.ip)) {
        refuse_request(ev, RCM_BAD_SOURCE_ADDR, e->cep->peer_desc);
        return;
    }
    memcpy(sender, r.src, RCM_ID_LEN);
    sender[RCM_ID_LEN] = (uint8_t) r.idx; /* each chunk is good once */
    if (!openib_auth_replay_fresh(&rcm.replay, sender, sizeof(sender), r.nonce)) {
        refuse_request(ev, RCM_REPLAY, e->cep->peer_desc);
        return;
    }
    RCM_LOG(e, "REQ chunk %u/%u received in state '%s'", r.idx + 1, r.count,
            state_names[e->st]);
    if (initiating(e)) {
        if (openib_cpc_keeps_initiating(cep)) {
            RCM_LOG(e, "crossing connects: we keep initiating, refusing the peer's request");
            reject(ev->id, cep->local_id, RCM_REJ_CROSS);
            return;
        }
        RCM_LOG(e, "crossing connects: dropping our attempt to answer the peer's request");
        drop_id(&e->act_id);
        e->next_chunk = 0;
    }
    if (e->active_index < 0) {
        e->deadline_ms = 0;
        set_active(e, true);
    }
    alive(e); /* its REQ */
    if (!rcm_rx_store(&e->rx, &r)) {
        e->st = RS_RECEIVING;
        reject(ev->id, cep->local_id, RCM_REJ_MORE);
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

static void on_passive_event(struct rcm_ep *e, const struct rcm_event *ev)
{
    switch (ev->type) {
    case RDMA_CM_EVENT_ESTABLISHED:
        if (RS_RESPONDING != e->st || e->mod->iwarp) {
            return; /* iWARP: the handshake's connection; the QPs' follow */
        }
        if (OPAL_SUCCESS != e->cep->btl_ops->qps_to_rts(e->cep->btl_ep)) {
            fail(e, OPAL_ERROR, "moving the queue pairs to RTS failed");
            return;
        }
        done(e);
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
            drop_id(&e->pas_id);
            e->st = RS_WAIT_PEER;
        }
        return;
    default:
        return;
    }
}

/* ---- events and timers ---- */

static void dispatch(const struct rcm_event *ev)
{
    const uint32_t *tag = ev->id->context;
    struct rcm_ep *e;

    /* Address changes and device removal (listeners get those too) need
     * nothing from us: the BTL hears of device loss through async events. */
    if (NULL == tag || RCM_TAG_EP != *tag) {
        return;
    }
    e = (struct rcm_ep *) tag;
    if (ev->id == e->act_id) {
        on_active_event(e, ev);
    } else if (ev->id == e->pas_id) {
        on_passive_event(e, ev);
    } else {
        int q;

        for (q = 0; q < OPENIB_CPC_MAX_QPS; ++q) {
            if (ev->id == e->qid[q]) {
                on_qp_event(e, q, ev);
                break;
            }
        }
    }
}

static int drain_events(void)
{
    struct pollfd pfd = { .fd = rcm.ch->fd, .events = POLLIN };
    struct rcm_event ev;
    int n = 0;

    if (poll(&pfd, 1, 0) <= 0) {
        return 0;
    }
    while (n < RCM_EVENTS_PER_CALL && NULL != rcm.ch) {
        struct rdma_cm_event *raw;
        const struct rdma_conn_param *c;

        if (0 != rdma_get_cm_event(rcm.ch, &raw)) {
            break; /* EAGAIN: drained */
        }
        c = &raw->param.conn;
        ev.type = raw->event;
        ev.status = raw->status;
        ev.id = raw->id;
        ev.listen_id = raw->listen_id;
        ev.qp_num = c->qp_num;
        ev.responder_resources = c->responder_resources;
        ev.initiator_depth = c->initiator_depth;
        ev.priv_len = 0;
        if (NULL != c->private_data && c->private_data_len > 0) {
            ev.priv_len = c->private_data_len; /* uint8_t: fits ev.priv */
            memcpy(ev.priv, c->private_data, ev.priv_len);
        }
        /* Before handling: a handler may destroy the id, which waits for
         * its events to be acknowledged. */
        rdma_ack_cm_event(raw);
        dispatch(&ev);
        n++;
    }
    return n;
}

static void check_timers(void)
{
    long t = openib_cpc_now_ms();
    int i;

    for (i = rcm.active.n - 1; i >= 0; --i) {
        struct rcm_ep *e = rcm.active.v[i];

        if (i >= rcm.active.n) {
            continue; /* the list shrank under a handler */
        }
        openib_cpc_discount_absence(&e->deadline_ms, &e->looked_ms, t);
        if (t > e->deadline_ms) {
            fail(e, OPAL_ERR_TIMEOUT, "no answer at all within %d s (btl_openib_connect_rdma_cm_"
                 "timeout), not even 'busy' from the peer's listener; %d attempt(s) of ours, "
                 "the handshake was at: %s", timeout_s(), e->attempts, state_names[e->st]);
            continue;
        }
        switch (e->st) {
        case RS_RETRY:
            if (t >= e->retry_ms) {
                start_attempt(e);
            }
            break;
        case RS_ADDR:
        case RS_ROUTE:
        case RS_REQ_SENT:
            if (t > e->step_ms) {
                retry(e, "no answer within %ld ms while %s", step_timeout_ms(),
                      state_names[e->st]);
            }
            break;
        case RS_WAIT_PEER:
            /* Still nothing from the side that won the crossing: ask again
             * (it refuses again while its own attempt runs). */
            if (!e->qps_rtr && t > e->step_ms) {
                start_attempt(e);
            }
            break;
        default:
            break;
        }
    }
}

/* Connection requests the listener thread queued for us. */
static int take_requests(void)
{
    struct rcm_event ev;
    int n = 0;

    while (n < RCM_EVENTS_PER_CALL && rcm_listen_take(&ev)) {
        on_request(ev.mod, &ev);
        n++;
    }
    return n;
}

int openib_cpc_rdma_cm_progress(bool now)
{
    unsigned every;
    int n;

    if (OPAL_LIKELY(NULL == rcm.ch)) {
        return 0;
    }
    every = rcm.active.n > 0 ? RCM_BUSY_EVERY : RCM_IDLE_EVERY; /* powers of two */
    if (OPAL_LIKELY(0 != (++rcm.tick & (every - 1))) && !now) {
        return 0;
    }
    n = drain_events();
    n += take_requests();
    if (rcm.active.n > 0) {
        check_timers();
    }
    return n;
}

/* ---- endpoints ---- */

int rcm_endpoint_init(struct openib_cpc_module *m, struct openib_cpc_endpoint *cep)
{
    struct rcm_module *mod = (struct rcm_module *) m;
    struct rcm_ep *e;

    if (RCM_ID_LEN != cep->id_len) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    /* iWARP needs the BTL calls of a CM that moves the QPs itself */
    if (mod->iwarp && (!OPENIB_HAS_FIELD(cep->btl_ops, struct openib_cpc_btl_ops,
                                         connect_established) ||
                       NULL == cep->btl_ops->peer_qp_info ||
                       NULL == cep->btl_ops->connect_established)) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    e = calloc(1, sizeof(*e));
    if (NULL == e) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    e->tag = RCM_TAG_EP;
    e->cep = cep;
    e->mod = mod;
    e->active_index = -1;
    e->all_index = -1;
    if (!openib_cpc_active_set(&rcm.all, e, true)) {
        free(e);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    cep->cpc_private = e;
    mod->btl_ops = cep->btl_ops;
    memcpy(rcm.local_id, cep->local_id, RCM_ID_LEN);
    rcm.have_local_id = true;
    rcm_listen_set_local_id(cep->local_id);
    return OPAL_SUCCESS;
}

int rcm_start_connect(struct openib_cpc_module *m, struct openib_cpc_endpoint *cep)
{
    struct rcm_ep *e = cep->cpc_private;

    (void) m;
    switch (e->st) {
    case RS_IDLE:
        e->deadline_ms = 0;
        alive(e); /* the bound starts with the attempt */
        set_active(e, true);
        start_attempt(e);
        return RS_FAILED == e->st ? OPAL_ERR_UNREACH : OPAL_SUCCESS;
    case RS_FAILED:
        return OPAL_ERR_UNREACH;
    default:
        return OPAL_SUCCESS; /* under way (the peer may have started it) */
    }
}

int rcm_endpoint_finalize(struct openib_cpc_module *m, struct openib_cpc_endpoint *cep)
{
    struct rcm_ep *e = cep->cpc_private;

    (void) m;
    if (NULL == e) {
        return OPAL_SUCCESS;
    }
    set_active(e, false);
    drop_id(&e->act_id);
    drop_id(&e->pas_id);
    drop_qids(e);
    (void) openib_cpc_active_set(&rcm.all, e, false);
    free(e);
    cep->cpc_private = NULL;
    return OPAL_SUCCESS;
}

void rcm_conn_finalize(void)
{
    openib_cpc_active_fini(&rcm.active);
    openib_cpc_active_fini(&rcm.all);
    /* Every module dropped its reference; this only guards a BTL that
     * skipped a module's finalize. */
    if (NULL != rcm.ch) {
        rcm_listen_put();
        rdma_destroy_event_channel(rcm.ch);
        rcm.ch = NULL;
        rcm.refs = 0;
    }
}

/*
 * cpc_oob.c - the "oob" CPC: QP data exchanged over a side channel.
 *
 * Each port's module has a UD side channel (one UD QP for every peer) and
 * a TCP listener, as btl_openib_oob_side_channel says, and publishes both
 * as its modex blob. A handshake runs on a UD session where both ports
 * have UD, else on a TCP connection (cpc_oob_channel.h: the same session
 * semantics either way); a peer whose UD side channel never answers while
 * its TCP listener does is tried over TCP from then on. A connection is a
 * three-message handshake on one session, all handled from progress
 * without blocking:
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
 * knows the peer is there and waits without a deadline (over UD the
 * peer's thread acknowledges every frame, keepalives included).
 * btl_openib_connect_oob_timeout bounds silence only: no frame at all on
 * the session (not even a PONG) for that long, counted while this process
 * looks (cpc_active.h). A peer that is really gone ends the handshake
 * sooner: its closed listener refuses the connection (over UD: a TCP
 * connect probes it when the UD QP stays silent), or its side of the
 * session closes. Failed attempts (side channel lost, no endpoint for us
 * yet) are retried with a back-off up to btl_openib_connect_oob_retries
 * times.
 *
 * Authentication (cpc_auth.h; layouts in cpc_oob_wire.c): the blob carries
 * the process token; REQ and RTU are sealed with the responder's token, REP
 * and REJ with the initiator's, each echoing the nonce it answers. A
 * responder checks a frame on an accepted session in a fixed order: layout,
 * dst is us, src is of the job, MAC, freshness (oob_check_incoming), then
 * the session's source among the sender's published ones (its IPv4
 * addresses, or its UD QP and port GID or LID); only
 * then is the session trusted (oob_chan_trust) and anything touched. A
 * refused frame gets no answer (its session is closed) and changes nothing;
 * it is logged at verbose 1 with its reason token. The initiator checks
 * answers the same way (oob_check_answer) before it uses them.
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

#include <infiniband/verbs.h>

#include "opal/constants.h"
#include "opal/mca/pmix/pmix.h"

#include "connect/cpc_auth.h"
#include "connect/cpc_oob.h"
#include "connect/cpc_oob_channel.h"
#include "connect/cpc_oob_params.h"
#include "connect/cpc_oob_ud.h"
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
    int listen_id;                   /* TCP listener, -1 none */
    int ud_id;                       /* UD side channel (cpc_oob_channel.h), -1 none */
    bool ethernet;                   /* RoCE: every UD datagram needs a GRH */
    uint64_t subnet_prefix;          /* ours, host order: IB needs a GRH across subnets */
    const struct openib_cpc_btl_ops *btl_ops; /* learned at endpoint_init */
    void *btl;
    uint8_t self[OOB_ID_LEN];        /* our process name, learned there too */
    bool have_self;
};

#define OOB_EP_MAGIC 0x6f6f6265u /* tells our cpc_private from another CPC's */

struct oob_ep {
    uint32_t magic;       /* first: OOB_EP_MAGIC */
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
    bool tcp_only;        /* the peer's UD side channel never answered: TCP from now on */
    char last_why[96];    /* the last failed attempt, for the final reason */
    int active_index;
    uint8_t peer_token[OPENIB_AUTH_TOKEN_LEN]; /* from the peer's blob: keys what we send */
    uint8_t asked[OPENIB_AUTH_NONCE_LEN];      /* initiator: our REQ's nonce */
    uint8_t answered[OPENIB_AUTH_NONCE_LEN];   /* responder: our REP's nonce */
};

static int oob_timeout_s = 30;
static int oob_retries = 50;

/* endpoints with a handshake in progress (for timers) */
static struct openib_cpc_active active = OPENIB_CPC_ACTIVE_INIT(struct oob_ep, active_index);

/* ---- what oob and xoob share to judge side-channel frames ---- */

static struct openib_auth_replay replay;
static unsigned refusals[OOB_REFUSAL_MAX];

uint32_t openib_cpc_oob_job_size(const uint8_t *self)
{
    static bool asked;
    static uint32_t size;

    if (!asked && NULL != self && NULL != opal_pmix.get) {
        opal_process_name_t job;
        uint32_t *u32 = &size;
        int rc;

        asked = true;
        memcpy(&job, self, sizeof(job));
        job.vpid = OPAL_VPID_WILDCARD;
        OPAL_MODEX_RECV_VALUE_OPTIONAL(rc, OPAL_PMIX_JOB_SIZE, &job, &u32, OPAL_UINT32);
        if (OPAL_SUCCESS != rc) {
            size = 0; /* unknown: the MAC alone tells members */
        }
    }
    return size;
}

struct openib_auth_replay *openib_cpc_oob_replay(void)
{
    return &replay;
}

const char *openib_cpc_oob_addr(uint32_t addr, char *buf, size_t len)
{
    if (NULL == inet_ntop(AF_INET, &addr, buf, (socklen_t) len)) {
        snprintf(buf, len, "?");
    }
    return buf;
}

void openib_cpc_oob_refused(const char *cpc, const char *what, const char *from, int reason,
                            const char *detail)
{
    unsigned n;

    if (reason <= OOB_OK || reason >= OOB_REFUSAL_MAX) {
        reason = OOB_MALFORMED;
    }
    n = ++refusals[reason];
    /* a flood must not fill the log: the first few, then a sample */
    if (n <= 10 || 0 == n % 100) {
        openib_cpc_log(1, "openib: %s: refused %s from %s: %s (%s)%s", cpc, what, from,
                       oob_refusal_name((enum oob_refusal) reason), detail ? detail : "",
                       n > 10 ? " [sampled: 1 line per 100]" : "");
    }
}

/* ---- handshake ---- */

#define OOB_LOG(e, fmt, ...) \
    openib_cpc_log(100, "openib: oob %s: " fmt, (e)->cep->peer_desc, ##__VA_ARGS__)

/* A frame from e's local process to its peer, sealed with the peer's
 * token, with a fresh nonce (into nonce_out when non-NULL) answering
 * `echo` (NULL: none). Fails only when no random source answers. */
static int encode(uint8_t *buf, struct oob_ep *e, enum oob_type type, uint16_t reason,
                  const struct openib_cpc_qp_info *q, const uint8_t *echo, uint8_t *nonce_out)
{
    struct oob_msg m = { .type = type, .reason = reason };

    memcpy(m.src, e->cep->local_id, OOB_ID_LEN);
    memcpy(m.dst, e->cep->peer_id, OOB_ID_LEN);
    if (q) {
        m.q = *q;
    }
    if (echo) {
        memcpy(m.echo, echo, OPENIB_AUTH_NONCE_LEN);
    }
    if (OPAL_SUCCESS != openib_auth_nonce(m.nonce)) {
        return OPAL_ERROR;
    }
    if (nonce_out) {
        memcpy(nonce_out, m.nonce, OPENIB_AUTH_NONCE_LEN);
    }
    return oob_msg_encode(buf, OOB_MSG_SIZE, &m, e->peer_token);
}

/* The peer's side-channel addresses and token from its blob. */
static int peer_blob(struct oob_ep *e, struct oob_blob *b, int *version)
{
    const struct openib_cpc_endpoint *c = e->cep;
    int rc = oob_blob_decode(c->peer_blob, c->peer_blob_len, b, version);

    if (OPAL_SUCCESS == rc) {
        memcpy(e->peer_token, b->token, sizeof(e->peer_token));
    }
    return rc;
}

/* The peer port's UD side channel as our port reaches it: with a GRH on
 * RoCE and between IB subnets, by LID within one IB subnet. */
static bool peer_ud_addr(const struct oob_ep *e, const struct oob_blob *b,
                         struct oob_ud_addr *to)
{
    const struct openib_cpc_port *pp = e->cep->peer_port;

    if (0 == b->ud_qpn || e->mod->ud_id < 0 || NULL == pp) {
        return false;
    }
    memset(to, 0, sizeof(*to));
    memcpy(to->gid, pp->gid, 16);
    to->lid = pp->lid;
    to->qpn = b->ud_qpn;
    to->global = e->mod->ethernet || pp->subnet_prefix != e->mod->subnet_prefix;
    return true;
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

/* Open a session for the request: UD where both have it (TCP addresses,
 * when we may use TCP, only to probe a silent peer), else TCP. */
static int open_session(struct oob_ep *e, const struct oob_blob *b, const uint8_t *msg)
{
    bool tcp_ok = OOB_SIDE_UD != oob_params_side_channel() && b->naddr > 0;
    struct oob_ud_addr to;

    if (!e->tcp_only && peer_ud_addr(e, b, &to)) {
        return oob_chan_connect_ud(e->mod->ud_id, &to, b->addrs, tcp_ok ? b->naddr : 0, b->port,
                                   msg, e, &e->sid);
    }
    if (tcp_ok) {
        return oob_chan_connect(b->addrs, b->naddr, b->port, msg, e, &e->sid);
    }
    return OPAL_ERR_NOT_SUPPORTED;
}

static int send_req(struct oob_ep *e)
{
    struct openib_cpc_endpoint *c = e->cep;
    struct openib_cpc_qp_info q;
    uint8_t msg[OOB_MSG_SIZE];
    struct oob_blob b;
    int rc, version = 0;

    rc = peer_blob(e, &b, &version);
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
    if (OPAL_SUCCESS != encode(msg, e, OOB_REQ, 0, &q, NULL, e->asked)) {
        fail(e, OPAL_ERROR, "no random bytes for the handshake's nonce");
        return OPAL_ERROR;
    }
    rc = open_session(e, &b, msg);
    if (OPAL_ERR_NOT_SUPPORTED == rc) {
        char why[192];
        snprintf(why, sizeof(why), "no side channel in common: the peer publishes %s%s%s, this "
                 "process may use %s (btl_openib_oob_side_channel)",
                 b.ud_qpn ? "UD" : "", b.ud_qpn && b.naddr ? " and " : "", b.naddr ? "TCP" : "",
                 OOB_SIDE_UD == oob_params_side_channel() ? "UD only"
                 : e->mod->ud_id < 0 || e->tcp_only       ? "TCP only"
                                                          : "UD and TCP");
        fail(e, OPAL_ERR_UNREACH, why);
        return rc;
    }
    if (OPAL_SUCCESS != rc) {
        fail(e, rc, "cannot open a side-channel session");
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

/* An answer to a verified request: sealed with the initiator's token. */
static void reply_reject(struct oob_ep *e, int sid, const struct oob_msg *in, uint16_t reason)
{
    uint8_t msg[OOB_MSG_SIZE];

    if (OPAL_SUCCESS == encode(msg, e, OOB_REJ, reason, NULL, in->nonce, NULL)) {
        oob_chan_send(sid, msg);
    }
    oob_chan_close(sid);
}

/* Our endpoint state for a peer, if the BTL chose oob for it. */
static struct oob_ep *own_ep(struct openib_cpc_endpoint *cep)
{
    struct oob_ep *e = cep ? cep->cpc_private : NULL;

    return e && OOB_EP_MAGIC == e->magic ? e : NULL;
}

static void refuse(const struct oob_event *ev, const char *what, enum oob_refusal r,
                   const char *detail)
{
    char from[INET6_ADDRSTRLEN + 32];

    if (ev->via_ud) {
        char gid[INET6_ADDRSTRLEN];
        inet_ntop(AF_INET6, ev->ud_from.gid, gid, sizeof(gid));
        snprintf(from, sizeof(from), "%s (LID %u) UD QP 0x%x", gid, (unsigned) ev->ud_from.lid,
                 (unsigned) ev->ud_from.qpn);
    } else {
        openib_cpc_oob_addr(ev->peer_addr, from, sizeof(from));
    }
    openib_cpc_oob_refused("oob", what, from, r, detail);
    oob_chan_close(ev->sid); /* a stranger gets no answer */
}

static const char *refusal_detail(enum oob_refusal r)
{
    switch (r) {
    case OOB_MALFORMED:
        return "not an oob frame of this version";
    case OOB_WRONG_DST:
        return "meant for another process: a duplicate or loopback address?";
    case OOB_NOT_MEMBER:
        return "the claimed sender is not a process of this job";
    case OOB_BAD_MAC:
        return "not keyed with our token: not a job member, or forged";
    case OOB_REPLAY:
        return "a nonce seen before";
    default:
        return "";
    }
}

/* The last check before anything is touched: the session comes from an
 * address the sender published (its blob, which also gives its token; its
 * port's GID and LID for UD). */
static bool source_ok(struct oob_ep *e, const struct oob_event *ev, const char *what)
{
    static const uint8_t no_gid[16];
    const struct openib_cpc_port *pp = e->cep->peer_port;
    struct oob_blob b;
    enum oob_refusal r;

    if (OPAL_SUCCESS != peer_blob(e, &b, NULL)) {
        refuse(ev, what, OOB_NOT_MEMBER, "the claimed sender published no oob address of this "
                                         "version");
        return false;
    }
    r = ev->via_ud ? oob_check_ud_source(b.ud_qpn, pp ? pp->gid : no_gid, pp ? pp->lid : 0,
                                         &ev->ud_from)
                   : oob_check_source(b.addrs, b.naddr, ev->peer_addr);
    if (OOB_OK != r) {
        refuse(ev, what, r, e->cep->peer_desc);
        return false;
    }
    return true;
}

/* The peer's receive queues differ from ours: a setting of the job, not an
 * attack (the request verified). Said once; the peer fails its endpoint
 * with the reason, nothing here is touched, nothing aborts. */
static void layout_mismatch(struct oob_ep *e, const struct openib_cpc_qp_info *mine,
                            const struct openib_cpc_qp_info *theirs)
{
    static bool told;
    char a[16], b[16];

    OOB_LOG(e, "refusing the peer's request: btl_openib_receive_queues differs");
    if (told) {
        return;
    }
    told = true;
    snprintf(a, sizeof(a), "%u", (unsigned) mine->num_qps);
    snprintf(b, sizeof(b), "%u", (unsigned) theirs->num_qps);
    openib_cpc_help("receive queues differ", 4, openib_cpc_hostname(), e->cep->peer_desc, a, b);
}

static void on_req(struct oob_module *mod, const struct oob_event *ev, const struct oob_msg *in)
{
    struct openib_cpc_endpoint *cep;
    struct openib_cpc_qp_info q;
    struct oob_ep *e;
    uint8_t msg[OOB_MSG_SIZE];
    char why[128] = "";
    int sid = ev->sid;
    int rc;

    cep = mod->btl_ops->endpoint_for_peer(mod->btl, in->src, OOB_ID_LEN, why, sizeof(why));
    e = own_ep(cep);
    if (NULL == e) {
        /* a member (it knows our token) we have no oob endpoint for yet:
         * no sealed answer is possible without its blob; the closed
         * session makes it retry after a back-off */
        openib_cpc_log(10, "openib: oob: no endpoint yet for a verified request (%s): the "
                       "peer retries", why[0] ? why : "another CPC was chosen for it");
        oob_chan_close(sid);
        return;
    }
    if (!source_ok(e, ev, "request")) {
        return;
    }
    oob_chan_trust(sid);
    OOB_LOG(e, "REQ received on session %d in state %d", sid, e->st);
    if (e->st == ST_DONE || e->st == ST_FAILED || e->st == ST_RESPONDING) {
        reply_reject(e, sid, in, OOB_REJ_BAD);
        return;
    }
    rc = cep->btl_ops->local_qp_info(cep->btl_ep, &q);
    if (OPAL_SUCCESS != rc) {
        reply_reject(e, sid, in, OOB_REJ_BAD);
        fail(e, rc, "creating the queue pairs for the peer's request failed");
        return;
    }
    if (q.num_qps != in->q.num_qps || q.rq_layout != in->q.rq_layout) {
        layout_mismatch(e, &q, &in->q);
        reply_reject(e, sid, in, OOB_REJ_LAYOUT);
        return;
    }
    if (e->st == ST_REQ_SENT || e->st == ST_RETRY) {
        if (openib_cpc_keeps_initiating(cep)) {
            reply_reject(e, sid, in, OOB_REJ_CROSS);
            return;
        }
        if (e->sid >= 0) {
            oob_chan_close(e->sid); /* we lose the crossing: answer theirs */
            e->sid = -1;
        }
    }
    if (e->st == ST_IDLE) {
        e->deadline_ms = 0;
    }
    alive(e, openib_cpc_now_ms()); /* its REQ: the peer is alive */
    rc = cep->btl_ops->connect_qps(cep->btl_ep, &in->q, false);
    if (OPAL_SUCCESS == rc) {
        rc = cep->btl_ops->post_recvs(cep->btl_ep);
    }
    if (OPAL_SUCCESS != rc) {
        reply_reject(e, sid, in, OOB_REJ_BAD);
        fail(e, rc, "setting up the queue pairs for the peer's request failed");
        return;
    }
    if (OPAL_SUCCESS != encode(msg, e, OOB_REP, 0, &q, in->nonce, e->answered) ||
        OPAL_SUCCESS != oob_chan_send(sid, msg)) {
        oob_chan_close(sid);
        fail(e, OPAL_ERR_UNREACH, "the side channel closed before the reply");
        return;
    }
    e->resp_sid = sid;
    e->st = ST_RESPONDING;
    arm(e);
}

static void on_rtu(struct oob_module *mod, const struct oob_event *ev, const struct oob_msg *in)
{
    struct openib_cpc_endpoint *cep;
    struct oob_ep *e;
    char why[128];

    cep = mod->btl_ops->endpoint_for_peer(mod->btl, in->src, OOB_ID_LEN, why, sizeof(why));
    e = own_ep(cep);
    if (NULL == e || e->st != ST_RESPONDING || e->resp_sid != ev->sid) {
        oob_chan_close(ev->sid); /* no handshake of ours waits for it */
        return;
    }
    if (0 != memcmp(in->echo, e->answered, OPENIB_AUTH_NONCE_LEN)) {
        refuse(ev, "RTU", OOB_REPLAY, "it answers another reply than ours");
        e->resp_sid = -1; /* the session is closed; the timer or the peer ends it */
        return;
    }
    oob_chan_close(ev->sid);
    e->resp_sid = -1;
    if (OPAL_SUCCESS != cep->btl_ops->qps_to_rts(cep->btl_ep)) {
        fail(e, OPAL_ERROR, "moving the queue pairs to RTS failed");
        return;
    }
    done(e);
}

/* A frame on a session someone opened to our listener. */
static void on_incoming(struct oob_module *mod, const struct oob_event *ev)
{
    struct oob_msg in = { .type = OOB_REQ };
    enum oob_refusal r;

    if (!mod->have_self || NULL == mod->btl_ops) {
        /* no endpoint set up yet, so we do not know our name yet: closed
         * without an answer, an honest initiator retries */
        openib_cpc_log(100, "openib: oob: a request before any endpoint: closing its session");
        oob_chan_close(ev->sid);
        return;
    }
    r = oob_check_incoming(ev->msg, OOB_MSG_SIZE, mod->self, openib_cpc_oob_job_size(mod->self),
                           openib_auth_local_token(), &replay, &in);
    if (OOB_OK != r) {
        refuse(ev, OOB_MALFORMED == r ? "frame" : OOB_RTU == in.type ? "RTU" : "request", r,
               refusal_detail(r));
        return;
    }
    if (in.type == OOB_REQ) {
        on_req(mod, ev, &in);
    } else {
        on_rtu(mod, ev, &in);
    }
}

/* The session we opened ends without a usable answer: retried like a lost
 * side channel. */
static void lost_session(struct oob_ep *e, const char *why)
{
    char buf[256];

    snprintf(e->last_why, sizeof(e->last_why), "%s", why);
    if (e->attempts < oob_retries) {
        e->st = ST_RETRY;
        e->retry_ms = openib_cpc_now_ms() + backoff_ms(e->attempts);
        return;
    }
    snprintf(buf, sizeof(buf), "%s; gave up after %d attempts "
             "(btl_openib_connect_oob_retries)", why, e->attempts);
    fail(e, OPAL_ERR_UNREACH, buf);
}

static void on_initiator_msg(struct oob_ep *e, const struct oob_event *ev)
{
    struct openib_cpc_endpoint *cep = e->cep;
    uint8_t msg[OOB_MSG_SIZE];
    struct oob_msg in;
    enum oob_refusal r;
    int sid = ev->sid;
    int rc;

    if (sid != e->sid) {
        return; /* an abandoned session */
    }
    r = oob_check_answer(ev->msg, OOB_MSG_SIZE, cep->local_id, cep->peer_id,
                         openib_auth_local_token(), e->asked, &in);
    if (OOB_OK != r) {
        char why[96];

        openib_cpc_oob_refused("oob", "answer", cep->peer_desc, r,
                               OOB_WRONG_DST == r || OOB_WRONG_SRC == r
                                   ? "another process answers at the peer's address"
                                   : refusal_detail(r));
        oob_chan_close(sid);
        e->sid = -1;
        if (e->st == ST_REQ_SENT) {
            snprintf(why, sizeof(why), "the peer's answer was refused (%s)",
                     oob_refusal_name(r));
            lost_session(e, why);
        }
        return;
    }
    OOB_LOG(e, "%s received (reason %u) in state %d", in.type == OOB_REJ ? "REJ" : "REP",
            in.reason, e->st);
    alive(e, openib_cpc_now_ms());
    if (in.type == OOB_REJ) {
        oob_chan_close(sid);
        e->sid = -1;
        if (e->st != ST_REQ_SENT) {
            return;
        }
        if (in.reason == OOB_REJ_CROSS) {
            e->st = ST_WAIT_PEER; /* their REQ comes (or came) on our listener */
        } else if (in.reason == OOB_REJ_NO_ENDPOINT && e->attempts < oob_retries) {
            snprintf(e->last_why, sizeof(e->last_why), "the peer has no endpoint for us yet");
            e->st = ST_RETRY;
            e->retry_ms = openib_cpc_now_ms() + backoff_ms(e->attempts);
        } else if (in.reason == OOB_REJ_NO_ENDPOINT) {
            char why[160];
            snprintf(why, sizeof(why), "the peer still had no endpoint for us after %d attempts "
                     "(btl_openib_connect_oob_retries)", e->attempts);
            fail(e, OPAL_ERR_UNREACH, why);
        } else if (in.reason == OOB_REJ_LAYOUT) {
            fail(e, OPAL_ERR_BAD_PARAM, "btl_openib_receive_queues differs between the two "
                 "processes: set it the same for every process");
        } else {
            fail(e, OPAL_ERR_UNREACH, "the peer rejected the connection request");
        }
        return;
    }
    if (e->st != ST_REQ_SENT) {
        return;
    }
    rc = cep->btl_ops->connect_qps(cep->btl_ep, &in.q, true);
    if (OPAL_SUCCESS == rc) {
        rc = cep->btl_ops->post_recvs(cep->btl_ep);
    }
    if (OPAL_SUCCESS != rc) {
        fail(e, rc, "connecting the queue pairs with the peer's reply failed");
        return;
    }
    if (OPAL_SUCCESS == encode(msg, e, OOB_RTU, 0, NULL, in.nonce, NULL)) {
        oob_chan_send(sid, msg);
    }
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
    if (OOB_ERR_REFUSED == ev->error) {
        /* nothing listens where the peer's modex says: it is gone */
        fail(e, OPAL_ERR_UNREACH, "connection refused at every address the peer published: "
             "the peer process has exited");
    } else if (OOB_ERR_UD_SILENT == ev->error) {
        struct oob_blob b;
        if (OOB_SIDE_UD != oob_params_side_channel() && OPAL_SUCCESS == peer_blob(e, &b, NULL) &&
            b.naddr > 0) {
            e->tcp_only = true; /* UD does not get through; TCP may */
            openib_cpc_log(10, "openib: oob %s: %s: trying TCP from now on", e->cep->peer_desc,
                           ev->why);
        }
        lost_session(e, ev->why);
    } else {
        lost_session(e, ev->why);
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

int openib_cpc_side_channel_progress(void)
{
    struct oob_event ev;
    int n = 0;

    while (oob_chan_poll(&ev)) {
        n++;
        if (openib_cpc_xoob_dispatch(&ev)) {
            continue; /* xoob shares the side channel */
        }
        if (ev.type == OOB_EV_ERROR) {
            on_error(&ev);
            continue;
        }
        if (ev.owner) {
            on_initiator_msg(ev.owner, &ev);
        } else if (ev.listen_owner) {
            on_incoming(ev.listen_owner, &ev);
        } else {
            oob_chan_close(ev.sid);
        }
    }
    return n;
}

/* The component's progress hook: the side channel, and the timers every
 * 64th call (they count in seconds). */
static int oob_progress(bool urgent)
{
    static unsigned tick;
    int n = openib_cpc_side_channel_progress();

    (void) urgent; /* the side channel is looked at on every call anyway */
    if (OPAL_UNLIKELY(0 == (++tick & 63) && active.n > 0)) {
        check_timers();
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
    e->magic = OOB_EP_MAGIC;
    e->cep = cep;
    e->mod = mod;
    e->sid = e->resp_sid = -1;
    e->active_index = -1;
    cep->cpc_private = e;
    mod->btl_ops = cep->btl_ops;
    memcpy(mod->self, cep->local_id, OOB_ID_LEN); /* the BTL names us the same each time */
    mod->have_self = true;
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
        e->magic = 0;
        free(e);
        cep->cpc_private = NULL;
    }
    return OPAL_SUCCESS;
}

static int oob_module_finalize(struct openib_cpc_module *m)
{
    struct oob_module *mod = (struct oob_module *) m;

    if (mod->listen_id >= 0) {
        oob_chan_unlisten(mod->listen_id);
    }
    if (mod->ud_id >= 0) {
        oob_chan_unlisten_ud(mod->ud_id); /* its QP is on the BTL's PD: gone now */
    }
    oob_chan_stop();
    openib_cpc_module_destroy(&mod->base);
    free(mod);
    return OPAL_SUCCESS;
}

static int oob_describe(const struct openib_cpc_module *m, char *buf, size_t len)
{
    struct oob_blob b = { .naddr = 0 };

    (void) oob_blob_decode(m->blob, m->blob_len, &b, NULL);
    buf[0] = '\0';
    if (b.ud_qpn) {
        openib_cpc_strcatf(buf, len, "UD side channel on QP 0x%x", (unsigned) b.ud_qpn);
    }
    if (b.naddr) {
        openib_cpc_strcatf(buf, len, "%sTCP side channel on port %u, %d address(es)",
                           b.ud_qpn ? "; " : "", (unsigned) b.port, b.naddr);
    }
    return OPAL_SUCCESS;
}

/* The port's side channels as btl_openib_oob_side_channel asks: a UD QP
 * (auto, ud) and TCP addresses (auto, tcp). Either may be missing in auto;
 * NOT_SUPPORTED with why when none is left. */
static int side_channels(const struct openib_cpc_port *port, int side, struct oob_blob *b,
                         struct oob_ud_port **udp, char *why, size_t why_len)
{
    char ud_why[OPENIB_CPC_WHY_MAX] = "";

    *udp = NULL;
    if (OOB_SIDE_TCP != side &&
        OPAL_SUCCESS != oob_ud_port_create(port, udp, &b->ud_qpn, ud_why, sizeof(ud_why))) {
        if (OOB_SIDE_UD == side) {
            snprintf(why, why_len, "%s (btl_openib_oob_side_channel ud)", ud_why);
            return OPAL_ERR_NOT_SUPPORTED;
        }
        openib_cpc_log(10, "openib: oob: %s: TCP only", ud_why);
    }
    if (OOB_SIDE_UD != side) {
        b->naddr = oob_local_addrs(b->addrs, OOB_MAX_ADDRS);
    }
    if (NULL == *udp && 0 == b->naddr) {
        snprintf(why, why_len, "this host has no IPv4 address for the side channel%s%s",
                 ud_why[0] ? ", and " : "", ud_why);
        return OPAL_ERR_NOT_SUPPORTED;
    }
    return OPAL_SUCCESS;
}

static int oob_query(const struct openib_cpc_port *port, int priority,
                     struct openib_cpc_module **out, char *why, size_t why_len)
{
    int side = oob_params_side_channel(), rc;
    struct oob_blob b = { .naddr = 0 };
    struct oob_ud_port *udp = NULL;
    struct oob_module *mod;
    size_t blob_len = 0;

    if (openib_cpc_decline_iwarp(port, "oob", why, why_len)) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    if (OOB_SIDE_BAD == side) {
        snprintf(why, why_len, "btl_openib_oob_side_channel is none of auto, ud, tcp");
        return OPAL_ERR_NOT_SUPPORTED;
    }
    if (NULL == openib_auth_local_token()) {
        snprintf(why, why_len, "no random bytes from the kernel for the handshake token");
        return OPAL_ERR_NOT_SUPPORTED;
    }
    rc = side_channels(port, side, &b, &udp, why, why_len);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    mod = calloc(1, sizeof(*mod));
    if (NULL == mod) {
        snprintf(why, why_len, "out of memory");
        rc = OPAL_ERR_OUT_OF_RESOURCE;
        goto fail_udp;
    }
    mod->listen_id = mod->ud_id = -1;
    rc = oob_chan_start();
    if (OPAL_SUCCESS != rc) {
        snprintf(why, why_len, "cannot start the side-channel thread");
        goto fail_mod;
    }
    if (b.naddr > 0 && OPAL_SUCCESS != oob_chan_listen(mod, &b.port, &mod->listen_id)) {
        b.naddr = 0;
        if (NULL == udp) {
            snprintf(why, why_len, "cannot listen on a TCP port for the side channel");
            rc = OPAL_ERR_NOT_SUPPORTED;
            goto fail_chan;
        }
        openib_cpc_log(10, "openib: oob: cannot listen on a TCP port: UD side channel only");
    }
    if (udp) {
        rc = oob_chan_listen_ud(mod, &oob_ud_verbs_ops, udp, &mod->ud_id);
        if (OPAL_SUCCESS != rc) {
            snprintf(why, why_len, "too many UD side channels in this process");
            goto fail_listen;
        }
        udp = NULL; /* the channel's now */
        openib_cpc_log(5, "openib: oob UD side channel on %s:%u QP 0x%x", port->dev_name,
                       (unsigned) port->port_num, (unsigned) b.ud_qpn);
    }
    /* a PING after a quarter of the silence bound: three more chances */
    oob_chan_set_ping_ms((int) (timeout_ms() / 4));
    openib_cpc_module_init(&mod->base);
    mod->base.component = &openib_cpc_oob_component;
    mod->base.priority = (uint8_t) priority;
    memcpy(b.token, openib_auth_local_token(), sizeof(b.token));
    (void) oob_blob_encode(mod->base.blob, sizeof(mod->base.blob), &b, &blob_len);
    mod->base.blob_len = (uint8_t) blob_len;
    mod->base.endpoint_init = oob_endpoint_init;
    mod->base.start_connect = oob_start_connect;
    mod->base.endpoint_finalize = oob_endpoint_finalize;
    mod->base.finalize = oob_module_finalize;
    mod->base.uses_cts = false;
    mod->base.describe = oob_describe;
    mod->btl = port->btl;
    mod->ethernet = IBV_LINK_LAYER_ETHERNET == port->link_layer;
    mod->subnet_prefix = port->subnet_prefix;
    *out = &mod->base;
    return OPAL_SUCCESS;

fail_listen:
    if (mod->listen_id >= 0) {
        oob_chan_unlisten(mod->listen_id);
    }
fail_chan:
    oob_chan_stop();
fail_mod:
    free(mod);
fail_udp:
    if (udp) {
        oob_ud_verbs_ops.destroy(udp);
    }
    return rc;
}

static void oob_register(const struct openib_cpc_component *self)
{
    (void) self;
    oob_params_register(); /* the side channel's, shared with xoob */
    openib_cpc_register_int("connect_oob_timeout",
                            "Seconds of silence after which the oob CPC gives up on a "
                            "handshake: no answer at all from the peer, not even from its "
                            "side-channel thread, which answers keepalives while the peer "
                            "computes outside MPI. A busy peer is waited for however long "
                            "it takes; a peer whose process exited fails at once "
                            "(connection refused)",
                            &oob_timeout_s);
    openib_cpc_register_int("connect_oob_retries",
                            "Times the oob CPC retries a handshake that failed (side "
                            "channel lost, the peer had no endpoint for us yet), with a "
                            "back-off of up to 2 s; waiting for a busy peer is no retry",
                            &oob_retries);
}

void openib_connect_side_channel_counts(unsigned long long *ud_sessions,
                                        unsigned long long *tcp_connections)
{
    struct oob_chan_counts c;

    oob_chan_counts(&c);
    *ud_sessions = c.ud_opened + c.ud_accepted;
    *tcp_connections = c.tcp_opened + c.tcp_accepted;
}

static int oob_finalize(void)
{
    struct oob_chan_counts c;

    oob_chan_counts(&c);
    if (c.ud_opened + c.ud_accepted + c.tcp_opened + c.tcp_accepted) {
        openib_cpc_log(10, "openib: oob side channel: %lu sessions over UD (%lu opened, %lu "
                       "accepted; %lu datagrams with a frame, %lu sent again, %lu TCP probes), "
                       "%lu TCP connections (%lu opened, %lu accepted)",
                       c.ud_opened + c.ud_accepted, c.ud_opened, c.ud_accepted, c.ud_frames,
                       c.ud_resent, c.probes, c.tcp_opened + c.tcp_accepted, c.tcp_opened,
                       c.tcp_accepted);
    }
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
    .progress = oob_progress,
};

/*
 * cpc_oob_events.c - the side channel's events: each is handed to xoob
 * (its frames) or to oob's handlers here - a request or RTU on a session
 * someone opened to us (checked in the order cpc_oob.c's overview gives
 * before anything is touched), an answer or an error on a session we
 * opened. Also what oob and xoob share to judge frames (the job's size,
 * the nonces seen, the refusals' log) and the progress hooks' common body.
 */
#include "opal_config.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal/constants.h"
#include "opal/mca/pmix/pmix.h"
#include "opal/prefetch.h"

#include "connect/cpc_oob.h"
#include "connect/cpc_oob_int.h"
#include "connect/cpc_oob_params.h"
#include "connect/cpc_xoob.h"
#include "connect/openib_connect.h"

/* ---- what oob and xoob share to judge side-channel frames ---- */

static struct openib_auth_replay replay;
static unsigned refusals[REFUSAL_COUNT];

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

    if (reason <= REFUSAL_OK || reason >= REFUSAL_COUNT) {
        reason = REFUSAL_MALFORMED;
    }
    n = ++refusals[reason];
    /* a flood must not fill the log: the first few, then a sample */
    if (n <= 10 || 0 == n % 100) {
        openib_cpc_log(1, "openib: %s: refused %s from %s: %s (%s)%s", cpc, what, from,
                       openib_refusal_name((enum openib_refusal) reason), detail ? detail : "",
                       n > 10 ? " [sampled: 1 line per 100]" : "");
    }
}

long openib_cpc_oob_news(int sid, long now, long *heard_ms, bool *busy_said, bool *say_busy)
{
    long heard, alive = 0;
    int pending;

    *say_busy = false;
    if (sid < 0 || OPAL_SUCCESS != oob_chan_liveness(sid, &heard, &pending)) {
        return 0;
    }
    if (heard > *heard_ms) {
        *heard_ms = heard;
        alive = heard < now ? heard : now;
    }
    if (pending > 0 && !*busy_said) {
        *busy_said = *say_busy = true;
    }
    return alive;
}

void openib_cpc_oob_no_endpoint(const char *cpc, int sid, const char *why)
{
    openib_cpc_log(10, "openib: %s: no endpoint yet for a verified request (%s): the peer "
                   "retries", cpc, why[0] ? why : "another CPC was chosen for it");
    oob_chan_close(sid);
}

/* ---- oob's handlers ---- */

/* An answer to a verified request: sealed with the initiator's token. */
static void reply_reject(struct oob_ep *e, int sid, const struct oob_msg *in, uint16_t reason)
{
    uint8_t msg[OOB_MSG_SIZE];

    if (OPAL_SUCCESS == oob_cpc_encode(msg, e, OOB_REJ, reason, NULL, in->env.nonce, NULL)) {
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

static void refuse(const struct oob_event *ev, const char *what, enum openib_refusal r,
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

static const char *refusal_detail(enum openib_refusal r)
{
    switch (r) {
    case REFUSAL_MALFORMED:
        return "not an oob frame of this version";
    case REFUSAL_WRONG_DST:
        return "meant for another process: a duplicate or loopback address?";
    case REFUSAL_NOT_MEMBER:
        return "the claimed sender is not a process of this job";
    case REFUSAL_BAD_MAC:
        return "not keyed with our token: not a job member, or forged";
    case REFUSAL_REPLAY:
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
    enum openib_refusal r;

    if (OPAL_SUCCESS != oob_cpc_peer_blob(e, &b, NULL)) {
        refuse(ev, what, REFUSAL_NOT_MEMBER,
               "the claimed sender published no oob address of this version");
        return false;
    }
    r = ev->via_ud ? oob_check_ud_source(b.ud_qpn, pp ? pp->gid : no_gid, pp ? pp->lid : 0,
                                         &ev->ud_from)
                   : oob_check_source(b.addrs, b.naddr, ev->peer_addr);
    if (REFUSAL_OK != r) {
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

    cep = mod->btl_ops->endpoint_for_peer(mod->btl, in->env.src, OOB_ID_LEN, why, sizeof(why));
    e = own_ep(cep);
    if (NULL == e) {
        openib_cpc_oob_no_endpoint("oob", sid, why);
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
        oob_cpc_fail(e, rc, "creating the queue pairs for the peer's request failed");
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
    oob_cpc_alive(e, openib_now_ms()); /* its REQ: the peer is alive */
    rc = cep->btl_ops->connect_qps(cep->btl_ep, &in->q, false);
    if (OPAL_SUCCESS == rc) {
        rc = cep->btl_ops->post_recvs(cep->btl_ep);
    }
    if (OPAL_SUCCESS != rc) {
        reply_reject(e, sid, in, OOB_REJ_BAD);
        oob_cpc_fail(e, rc, "setting up the queue pairs for the peer's request failed");
        return;
    }
    if (OPAL_SUCCESS != oob_cpc_encode(msg, e, OOB_REP, 0, &q, in->env.nonce, e->answered) ||
        OPAL_SUCCESS != oob_chan_send(sid, msg)) {
        oob_chan_close(sid);
        oob_cpc_fail(e, OPAL_ERR_UNREACH, "the side channel closed before the reply");
        return;
    }
    e->resp_sid = sid;
    e->st = ST_RESPONDING;
    oob_cpc_arm(e);
}

static void on_rtu(struct oob_module *mod, const struct oob_event *ev, const struct oob_msg *in)
{
    struct openib_cpc_endpoint *cep;
    struct oob_ep *e;
    char why[128];

    cep = mod->btl_ops->endpoint_for_peer(mod->btl, in->env.src, OOB_ID_LEN, why, sizeof(why));
    e = own_ep(cep);
    if (NULL == e || e->st != ST_RESPONDING || e->resp_sid != ev->sid) {
        oob_chan_close(ev->sid); /* no handshake of ours waits for it */
        return;
    }
    if (0 != memcmp(in->env.echo, e->answered, OPENIB_AUTH_NONCE_LEN)) {
        refuse(ev, "RTU", REFUSAL_REPLAY, "it answers another reply than ours");
        e->resp_sid = -1; /* the session is closed; the timer or the peer ends it */
        return;
    }
    oob_chan_close(ev->sid);
    e->resp_sid = -1;
    if (OPAL_SUCCESS != cep->btl_ops->qps_to_rts(cep->btl_ep)) {
        oob_cpc_fail(e, OPAL_ERROR, "moving the queue pairs to RTS failed");
        return;
    }
    oob_cpc_done(e);
}

/* A frame on a session someone opened to our listener. */
static void on_incoming(struct oob_module *mod, const struct oob_event *ev)
{
    struct oob_msg in = { .env.type = OOB_REQ };
    enum openib_refusal r;

    if (!mod->have_self || NULL == mod->btl_ops) {
        /* no endpoint set up yet, so we do not know our name yet: closed
         * without an answer, an honest initiator retries */
        openib_cpc_log(100, "openib: oob: a request before any endpoint: closing its session");
        oob_chan_close(ev->sid);
        return;
    }
    r = oob_check_request_frame(oob_msg_view(ev->msg, OOB_MSG_SIZE, OOB_REQ, OOB_RTU, &in),
                                mod->self, openib_cpc_oob_job_size(mod->self),
                                openib_auth_local_token(), &replay);
    if (REFUSAL_OK != r) {
        refuse(ev, REFUSAL_MALFORMED == r ? "frame" : OOB_RTU == in.env.type ? "RTU" : "request", r,
               refusal_detail(r));
        return;
    }
    if (in.env.type == OOB_REQ) {
        on_req(mod, ev, &in);
    } else {
        on_rtu(mod, ev, &in);
    }
}


static void on_initiator_msg(struct oob_ep *e, const struct oob_event *ev)
{
    struct openib_cpc_endpoint *cep = e->cep;
    uint8_t msg[OOB_MSG_SIZE];
    struct oob_msg in;
    enum openib_refusal r;
    int sid = ev->sid;
    int rc;

    if (sid != e->sid) {
        return; /* an abandoned session */
    }
    r = oob_check_answer_frame(oob_msg_view(ev->msg, OOB_MSG_SIZE, OOB_REP, OOB_REJ, &in),
                               cep->local_id, cep->peer_id, openib_auth_local_token(), e->asked);
    if (REFUSAL_OK != r) {
        char why[96];

        openib_cpc_oob_refused("oob", "answer", cep->peer_desc, r,
                               REFUSAL_WRONG_DST == r || REFUSAL_WRONG_SRC == r
                                   ? "another process answers at the peer's address"
                                   : refusal_detail(r));
        oob_chan_close(sid);
        e->sid = -1;
        if (e->st == ST_REQ_SENT) {
            snprintf(why, sizeof(why), "the peer's answer was refused (%s)",
                     openib_refusal_name(r));
            oob_cpc_lost_session(e, why);
        }
        return;
    }
    OOB_LOG(e, "%s received (reason %u) in state %d", in.env.type == OOB_REJ ? "REJ" : "REP",
            in.env.reason, e->st);
    oob_cpc_alive(e, openib_now_ms());
    if (in.env.type == OOB_REJ) {
        oob_chan_close(sid);
        e->sid = -1;
        if (e->st != ST_REQ_SENT) {
            return;
        }
        if (in.env.reason == OOB_REJ_CROSS) {
            e->st = ST_WAIT_PEER; /* their REQ comes (or came) on our listener */
        } else if (in.env.reason == OOB_REJ_NO_ENDPOINT && e->attempts < oob_cpc_retries) {
            snprintf(e->last_why, sizeof(e->last_why), "the peer has no endpoint for us yet");
            e->st = ST_RETRY;
            e->retry_ms = openib_cpc_retry_at_ms(e->attempts);
        } else if (in.env.reason == OOB_REJ_NO_ENDPOINT) {
            char why[160];
            snprintf(why, sizeof(why), "the peer still had no endpoint for us after %d attempts "
                     "(btl_openib_connect_oob_retries)", e->attempts);
            oob_cpc_fail(e, OPAL_ERR_UNREACH, why);
        } else if (in.env.reason == OOB_REJ_LAYOUT) {
            oob_cpc_fail(e, OPAL_ERR_BAD_PARAM, "btl_openib_receive_queues differs between "
                         "the two processes: set it the same for every process");
        } else {
            oob_cpc_fail(e, OPAL_ERR_UNREACH, "the peer rejected the connection request");
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
        oob_cpc_fail(e, rc, "connecting the queue pairs with the peer's reply failed");
        return;
    }
    if (OPAL_SUCCESS == oob_cpc_encode(msg, e, OOB_RTU, 0, NULL, in.env.nonce, NULL)) {
        oob_chan_send(sid, msg);
    }
    oob_chan_close(sid); /* after the RTU is flushed */
    e->sid = -1;
    oob_cpc_done(e);
}

/* The session we answer on ended before the RTU: the initiator is gone
 * (a live one that gave up would have told us; it never does mid-way). */
static void on_responder_error(const struct oob_event *ev)
{
    char why[256];
    int i;

    for (i = 0; i < oob_cpc_active.n; ++i) {
        struct oob_ep *e = oob_cpc_active.v[i];
        if (e->st == ST_RESPONDING && e->resp_sid == ev->sid) {
            e->resp_sid = -1;
            snprintf(why, sizeof(why), "the peer's side channel ended before it confirmed the "
                     "connection (%s): the peer process has exited?", ev->why);
            oob_cpc_fail(e, OPAL_ERR_UNREACH, why);
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
        oob_cpc_fail(e, OPAL_ERR_UNREACH, "connection refused at every address the peer "
                     "published: the peer process has exited");
    } else if (OOB_ERR_UD_SILENT == ev->error) {
        struct oob_blob b;
        if (OOB_SIDE_UD != oob_params_side_channel() &&
            OPAL_SUCCESS == oob_cpc_peer_blob(e, &b, NULL) && b.naddr > 0) {
            e->tcp_only = true; /* UD does not get through; TCP may */
            openib_cpc_log(10, "openib: oob %s: %s: trying TCP from now on", e->cep->peer_desc,
                           ev->why);
        }
        oob_cpc_lost_session(e, ev->why);
    } else {
        oob_cpc_lost_session(e, ev->why);
    }
}

/* ---- dispatch ---- */

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

int openib_cpc_side_channel_progress_with(unsigned *tick, void (*timers)(void))
{
    int n = openib_cpc_side_channel_progress();

    if (OPAL_UNLIKELY(0 == (++*tick & 63))) {
        timers(); /* they count in seconds */
    }
    return n;
}

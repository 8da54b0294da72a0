/*
 * cpc_oob_conn.c - the state of one oob connection: its REQ (over UD or
 * TCP, as cpc_oob.c's overview says), retries with a back-off, failure or
 * completion, and the timers that bound its silence. The frames that move
 * it on are handled in cpc_oob_events.c.
 */
#include "opal_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal/constants.h"

#include "connect/cpc_oob.h"
#include "connect/cpc_oob_int.h"
#include "connect/cpc_oob_params.h"
#include "connect/openib_connect.h"


struct openib_cpc_active oob_cpc_active = OPENIB_CPC_ACTIVE_INIT(struct oob_ep, active_index);

/* A frame from e's local process to its peer, sealed with the peer's
 * token, with a fresh nonce (into nonce_out when non-NULL) answering
 * `echo` (NULL: none). Fails only when no random source answers. */
int oob_cpc_encode(uint8_t *buf, struct oob_ep *e, enum oob_type type, uint16_t reason,
                   const struct openib_cpc_qp_info *q, const uint8_t *echo, uint8_t *nonce_out)
{
    struct oob_msg m = { .env.type = type, .env.reason = reason };

    memcpy(m.env.src, e->cep->local_id, OOB_ID_LEN);
    memcpy(m.env.dst, e->cep->peer_id, OOB_ID_LEN);
    if (q) {
        m.q = *q;
    }
    if (echo) {
        memcpy(m.env.echo, echo, OPENIB_AUTH_NONCE_LEN);
    }
    if (OPAL_SUCCESS != openib_auth_nonce(m.env.nonce)) {
        return OPAL_ERROR;
    }
    if (nonce_out) {
        memcpy(nonce_out, m.env.nonce, OPENIB_AUTH_NONCE_LEN);
    }
    return oob_msg_encode(buf, OOB_MSG_SIZE, &m, e->peer_token);
}

/* The peer's side-channel addresses and token from its blob. */
int oob_cpc_peer_blob(struct oob_ep *e, struct oob_blob *b, int *version)
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

long oob_cpc_timeout_ms(void)
{
    return openib_cpc_timeout_ms(oob_cpc_timeout_s);
}

void oob_cpc_alive(struct oob_ep *e, long t)
{
    openib_cpc_alive(&e->deadline_ms, t, oob_cpc_timeout_ms());
}

/* Timers on (the handshake is under way). */
void oob_cpc_arm(struct oob_ep *e)
{
    if (e->active_index < 0) {
        e->looked_ms = openib_now_ms();
    }
    (void) openib_cpc_active_set(&oob_cpc_active, e, true);
}

void oob_cpc_fail(struct oob_ep *e, int rc, const char *why)
{
    char buf[256];

    if (e->st == ST_FAILED || e->st == ST_DONE) {
        return;
    }
    OOB_LOG(e, "failed: %s", why);
    e->st = ST_FAILED;
    (void) openib_cpc_active_set(&oob_cpc_active, e, false);
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

void oob_cpc_done(struct oob_ep *e)
{
    e->st = ST_DONE;
    (void) openib_cpc_active_set(&oob_cpc_active, e, false);
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

    rc = oob_cpc_peer_blob(e, &b, &version);
    if (OPAL_ERR_NOT_SUPPORTED == rc) {
        char why[128];
        snprintf(why, sizeof(why), "the peer runs another openib-ng version (oob modex "
                 "version %d, this process speaks %d)", version, OOB_BLOB_VERSION);
        oob_cpc_fail(e, OPAL_ERR_UNREACH, why);
        return rc;
    }
    if (OPAL_SUCCESS != rc) {
        oob_cpc_fail(e, OPAL_ERR_UNREACH,
                     "the peer's side-channel address in the modex is corrupt");
        return rc;
    }
    rc = c->btl_ops->local_qp_info(c->btl_ep, &q);
    if (OPAL_SUCCESS != rc) {
        oob_cpc_fail(e, rc, "creating the queue pairs failed");
        return rc;
    }
    if (OPAL_SUCCESS != oob_cpc_encode(msg, e, OOB_REQ, 0, &q, NULL, e->asked)) {
        oob_cpc_fail(e, OPAL_ERROR, "no random bytes for the handshake's nonce");
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
        oob_cpc_fail(e, OPAL_ERR_UNREACH, why);
        return rc;
    }
    if (OPAL_SUCCESS != rc) {
        oob_cpc_fail(e, rc, "cannot open a side-channel session");
        return rc;
    }
    e->st = ST_REQ_SENT;
    e->attempts++;
    OOB_LOG(e, "REQ sent (attempt %d, session %d)", e->attempts, e->sid);
    oob_cpc_arm(e);
    return OPAL_SUCCESS;
}

int oob_cpc_start_connect(struct openib_cpc_module *m, struct openib_cpc_endpoint *cep)
{
    struct oob_ep *e = cep->cpc_private;

    switch (e->st) {
    case ST_IDLE:
        e->deadline_ms = 0;
        oob_cpc_alive(e, openib_now_ms()); /* the bound starts with the attempt */
        return send_req(e);
    case ST_FAILED:
        return OPAL_ERR_UNREACH;
    default:
        return OPAL_SUCCESS; /* already under way (e.g. the peer initiated) */
    }
}

/* The session we opened ends without a usable answer: retried like a lost
 * side channel. */
void oob_cpc_lost_session(struct oob_ep *e, const char *why)
{
    char buf[256];

    snprintf(e->last_why, sizeof(e->last_why), "%s", why);
    if (e->attempts < oob_cpc_retries) {
        e->st = ST_RETRY;
        e->retry_ms = openib_cpc_retry_at_ms(e->attempts);
        return;
    }
    snprintf(buf, sizeof(buf), "%s; gave up after %d attempts "
             "(btl_openib_connect_oob_retries)", why, e->attempts);
    oob_cpc_fail(e, OPAL_ERR_UNREACH, buf);
}

/* What the side channel knows of the session this handshake waits on. */
static void take_liveness(struct oob_ep *e, long t)
{
    int sid = e->st == ST_REQ_SENT ? e->sid : e->st == ST_RESPONDING ? e->resp_sid : -1;
    bool say_busy;
    long alive = openib_cpc_oob_news(sid, t, &e->heard_ms, &e->busy_logged, &say_busy);

    if (alive) {
        oob_cpc_alive(e, alive);
    }
    if (say_busy) {
        OOB_LOG(e, "the peer is alive but its process has not taken our message yet (busy "
                "outside MPI?): waiting for it, with no deadline while it answers");
    }
}

/* One handshake's timers (openib_cpc_active_scan). */
static void check_timer(void *p, long t)
{
    struct oob_ep *e = p;

    openib_cpc_discount_absence(&e->deadline_ms, &e->looked_ms, t);
    take_liveness(e, t);
    if (t > e->deadline_ms) {
        char why[256];
        snprintf(why, sizeof(why), "no answer at all within %d s "
                 "(btl_openib_connect_oob_timeout), not even from the peer's side-channel "
                 "thread%s%s", oob_cpc_timeout_s, e->last_why[0] ? "; last attempt: " : "",
                 e->last_why);
        oob_cpc_fail(e, OPAL_ERR_TIMEOUT, why);
    } else if (e->st == ST_RETRY && t >= e->retry_ms) {
        send_req(e);
    }
}

void oob_cpc_check_timers(void)
{
    openib_cpc_active_scan(&oob_cpc_active, check_timer);
}

/*
 * cpc_rdma_cm_conn.c - the rdma_cm CPC's handshake, driven from progress.
 * This file holds its bookkeeping (the module-wide state, timeouts, the
 * event channel, failure and completion, the refusal log) and the
 * endpoints' CPC calls; the two sides, iWARP's part and the event loop are
 * in the files cpc_rdma_cm_conn.h lists. The whole handshake is described
 * here, once:
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
 * conn_param.qp_num and the rest in private data (wire/rdma_cm_wire.c). The
 * initiator sends RTU only after its QPs are RTS and its receives posted, and
 * the responder sends nothing before ESTABLISHED, so the first message always
 * finds a posted receive.
 *
 * iWARP (the port has OPENIB_PORT_CAP_IWARP): the iWARP CM moves QPs to
 * RTS itself, makes no connection without a QP, and a refused connection
 * leaves its QP in error. So the handshake above (REQ chunks, REP, every
 * REJ, crossing, busy, retries; private data in MPA's, at most 196 of its
 * 256 bytes) runs unchanged on a connection of its own with a throw-away
 * QP (rcm_handshake_qp: librdmacm's PD and CQs, never used for data); the
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
 * QREQ/QREP (wire/rdma_cm_wire.c) carry the handshake's nonce and a MAC like
 * REQ/REP. Receives are posted before any QP is handed over. RDMA read
 * depths come from the device's limits (the responder's no more than the
 * initiator offers). When every QP is up, the handshake's connection goes
 * and the BTL hears connect_established: the initiator sends first on
 * every QP (MPA's rule, module uses_cts; btl_openib_cts.h). A connect
 * (the handshake's or a QP's) whose local port the host's TCP holds fails
 * at once with nothing sent and is tried again from another port
 * (RCM_PORT_TRIES, cpc_rdma_cm.h). Limits: a
 * refused or failed QP connection fails the endpoint (no retry: its QP is
 * in error), and a responder whose listener thread answers a QREQ with
 * BUSY (it left MPI right after accepting the handshake) fails it too.
 *
 * Authentication (issue 15; layout in wire/rdma_cm_wire.c): each REQ chunk
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
#include <rdma/rdma_cma.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal/constants.h"

#include "connect/cpc_active.h"
#include "connect/cpc_rdma_cm_conn.h"
#include "connect/openib_connect.h"

const char *const rcm_state_names[] = {
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

struct rcm_conn rcm = {
    .active = OPENIB_CPC_ACTIVE_INIT(struct rcm_ep, active_index),
    .all = OPENIB_CPC_ACTIVE_INIT(struct rcm_ep, all_index),
};

/* The parameters as used: a timeout below 1 s or negative retries would
 * end every connection before it starts. */
int rcm_timeout_s(void)
{
    return rcm_params.timeout_s < 1 ? 1 : rcm_params.timeout_s;
}

int rcm_max_retries(void)
{
    return rcm_params.retries < 0 ? 0 : rcm_params.retries;
}

long rcm_step_timeout_ms(void)
{
    long ms = 1000L * rcm_timeout_s() / 6;

    return ms < 1000 ? 1000 : ms;
}

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

void rcm_set_active(struct rcm_ep *e, bool on)
{
    if (on && e->active_index < 0) {
        e->looked_ms = openib_now_ms();
    }
    /* Out of memory: this handshake runs without our timers, bounded by
     * the IB CM's own timeouts only. */
    (void) openib_cpc_active_set(&rcm.active, e, on);
}

/* The peer's CPC answered (or asked): it is alive, the silence bound
 * starts again. */
void rcm_alive(struct rcm_ep *e)
{
    long d = openib_now_ms() + 1000L * rcm_timeout_s();

    if (d > e->deadline_ms) {
        e->deadline_ms = d;
    }
}

/* The endpoint_for_peer answer is ours only if this CPC was chosen for it. */
struct rcm_ep *rcm_own_ep(const struct openib_cpc_endpoint *cep)
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

void rcm_drop_id(struct rdma_cm_id **id)
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
        rcm_drop_id(&e->qid[q]);
    }
    e->qup = 0;
}

void rcm_fail(struct rcm_ep *e, int rc, const char *fmt, ...)
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
    rcm_set_active(e, false);
    rcm_drop_id(&e->act_id);
    rcm_drop_id(&e->pas_id);
    drop_qids(e);
    snprintf(buf, sizeof(buf), "rdma_cm: %s", why);
    e->cep->btl_ops->connect_failed(e->cep->btl_ep, rc, buf);
}

void rcm_done(struct rcm_ep *e)
{
    RCM_LOG(e, "connected (%s, %d attempt(s))", e->pas_id ? "responder" : "initiator",
            e->attempts);
    e->st = RS_DONE;
    rcm_set_active(e, false);
    if (e->mod->iwarp) {
        /* Every QP has its own connection now: the handshake's own one
         * (and its QP) is of no more use. */
        rcm_drop_id(&e->act_id);
        rcm_drop_id(&e->pas_id);
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
void rcm_refused(struct rdma_cm_id *id, enum openib_refusal r, const char *what,
                 const char *detail)
{
    unsigned long n = ++rcm.refused[r];
    char ip[INET6_ADDRSTRLEN];

    if (n <= 10 || 0 == n % 100) {
        openib_cpc_log(1, "openib: rdma_cm: refused %s from %s: %s (%s; %lu refused for this "
                       "reason so far)", what, peer_addr_str(id, ip, sizeof(ip)),
                       openib_refusal_name(r), detail, n);
    }
}

/* The peer's path data from its modex port (the BTL builds the address
 * vector from it); the route rdma_cm resolved is the fallback. */
void rcm_peer_path(const struct rcm_ep *e, const struct rdma_cm_id *id,
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

int rcm_peer_blob(const struct openib_cpc_endpoint *cep, struct rcm_blob *b)
{
    return rcm_blob_decode(cep->peer_blob, cep->peer_blob_len, b);
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
    e = openib_cpc_ep_alloc(sizeof(*e), RCM_TAG_EP);
    if (NULL == e) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    e->cep = cep;
    e->mod = mod;
    e->active_index = -1;
    e->all_index = -1;
    if (!openib_cpc_active_set(&rcm.all, e, true)) {
        free(e);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    openib_cpc_ep_attach(cep, e, &mod->btl_ops, rcm.local_id, &rcm.have_local_id);
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
        rcm_alive(e); /* the bound starts with the attempt */
        rcm_set_active(e, true);
        rcm_start_attempt(e);
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
    rcm_set_active(e, false);
    rcm_drop_id(&e->act_id);
    rcm_drop_id(&e->pas_id);
    drop_qids(e);
    (void) openib_cpc_active_set(&rcm.all, e, false);
    return openib_cpc_ep_free(cep, e);
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

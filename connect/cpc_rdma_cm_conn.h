/*
 * cpc_rdma_cm_conn.h - the rdma_cm handshake's endpoint state and what its
 * files share; private to them. The handshake itself (both sides, iWARP,
 * authentication, crossing, busy peers, bounds, events) is described at
 * the top of cpc_rdma_cm_conn.c.
 *   cpc_rdma_cm_conn.c       bookkeeping (state, timeouts, the event channel,
 *                            failure and completion, the refusal log) and
 *                            the endpoints' CPC calls
 *   cpc_rdma_cm_initiator.c  our attempts: REQ chunks, the reply, the
 *                            peer's refusals, retries, busy peers
 *   cpc_rdma_cm_responder.c  the peer's requests: checks, crossing rule,
 *                            the answer, and the accepted connection's events
 *   cpc_rdma_cm_iwarp.c      what differs on iWARP: connection parameters,
 *                            the handshake's own QP, one connection per QP
 *   cpc_rdma_cm_events.c     the event loop, the timers, the progress hook
 */
#ifndef CPC_RDMA_CM_CONN_H
#define CPC_RDMA_CM_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include "connect/cpc_active.h"
#include "connect/cpc_rdma_cm.h"

struct rdma_cm_id;
struct rdma_conn_param;
struct rdma_event_channel;

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
/* Their names, for the log. */
extern const char *const rcm_state_names[] CPC_HIDDEN;

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
    /* iWARP: one connection per QP after the handshake (cpc_rdma_cm_conn.c) */
    struct rdma_cm_id *qid[OPENIB_CPC_MAX_QPS];
    uint8_t nq;                  /* QPs to connect */
    uint8_t qup;                 /* bit q: QP q's connection is established */
    bool iw_initiator;           /* we sent the QP requests: we send first */
    uint8_t qport_busy[OPENIB_CPC_MAX_QPS]; /* initiator: QP q's connects that met a
                                               local port in use (rcm_port_taken) */
    uint8_t hport_busy;          /* the same, for the handshake's own connection */
    bool recvs_posted;
    int active_index;            /* in rcm.active while a handshake is under way, else -1 */
    int all_index;               /* in rcm.all while the endpoint exists */
};

/* The module-wide state: one event channel, timers, endpoints, replay
 * memory (defined in cpc_rdma_cm_conn.c). */
struct rcm_conn {
    struct rdma_event_channel *ch;
    int refs;
    unsigned tick;
    struct openib_cpc_active active; /* handshakes under way (timers) */
    struct openib_cpc_active all;    /* our endpoints: is a BTL endpoint ours? */
    uint8_t local_id[RCM_ID_LEN];
    bool have_local_id;
    struct openib_auth_replay replay;          /* (sender, chunk, nonce) of accepted chunks */
    unsigned long refused[REFUSAL_COUNT];  /* for the log's rate limit */
};
extern struct rcm_conn rcm CPC_HIDDEN;

#define RCM_LOG(e, fmt, ...) \
    openib_cpc_log(100, "openib: rdma_cm %s: " fmt, (e)->cep->peer_desc, ##__VA_ARGS__)

/* ---- bookkeeping (cpc_rdma_cm_conn.c) ---- */

/* The parameters as used (never below 1 s, never negative). */
int rcm_timeout_s(void) CPC_HIDDEN;
int rcm_max_retries(void) CPC_HIDDEN;
/* What one step (address, route, the reply to one REQ) may take. */
long rcm_step_timeout_ms(void) CPC_HIDDEN;
/* In rcm.active (the timers look at it) while a handshake is under way. */
void rcm_set_active(struct rcm_ep *e, bool on) CPC_HIDDEN;
/* The peer's CPC answered (or asked): the silence bound starts again. */
void rcm_alive(struct rcm_ep *e) CPC_HIDDEN;
/* Our state for a BTL endpoint; NULL when another CPC was chosen for it. */
struct rcm_ep *rcm_own_ep(const struct openib_cpc_endpoint *cep) CPC_HIDDEN;
/* Destroy *id (and a handshake QP of its own) if any; *id = NULL. */
void rcm_drop_id(struct rdma_cm_id **id) CPC_HIDDEN;
/* The endpoint fails (once): logged, ids dropped, the BTL told why. */
void rcm_fail(struct rcm_ep *e, int rc, const char *fmt, ...) CPC_HIDDEN
    __attribute__((format(printf, 3, 4)));
/* The handshake is complete: the BTL is told. */
void rcm_done(struct rcm_ep *e) CPC_HIDDEN;
/* Log a refused request or reply (verbose 1, rate-limited per reason). */
void rcm_refused(struct rdma_cm_id *id, enum openib_refusal r, const char *what,
                 const char *detail) CPC_HIDDEN;
/* The peer's GID, LID and MTU into q. */
void rcm_peer_path(const struct rcm_ep *e, const struct rdma_cm_id *id,
                   struct openib_cpc_qp_info *q) CPC_HIDDEN;
/* The peer's modex blob (rcm_blob_decode's answers). */
int rcm_peer_blob(const struct openib_cpc_endpoint *cep, struct rcm_blob *b) CPC_HIDDEN;

/* ---- initiator (cpc_rdma_cm_initiator.c) ---- */

/* A new attempt (or the next REQ chunk): a fresh cm_id, address resolution. */
void rcm_start_attempt(struct rcm_ep *e) CPC_HIDDEN;
/* This attempt failed: another after a back-off, or fail past the retries. */
void rcm_retry(struct rcm_ep *e, const char *fmt, ...) CPC_HIDDEN
    __attribute__((format(printf, 2, 3)));
/* An event on our attempt's cm_id (act_id). */
void rcm_on_active_event(struct rcm_ep *e, const struct rcm_event *ev) CPC_HIDDEN;

/* ---- responder (cpc_rdma_cm_responder.c) ---- */

/* Reject id with our header and reason, and destroy it. */
void rcm_reject(struct rdma_cm_id *id, const void *local_id, enum rcm_reason why) CPC_HIDDEN;
/* Reject a request that failed a check with no private data, destroy it. */
void rcm_refuse_request(const struct rcm_event *ev, enum openib_refusal r,
                        const char *detail) CPC_HIDDEN;
/* A connection request the listener thread queued for mod. */
void rcm_on_request(struct rcm_module *mod, const struct rcm_event *ev) CPC_HIDDEN;
/* An event on the accepted request's cm_id (pas_id). */
void rcm_on_passive_event(struct rcm_ep *e, const struct rcm_event *ev) CPC_HIDDEN;

/* ---- iWARP and the connection parameters (cpc_rdma_cm_iwarp.c) ---- */

/* The connection parameters; req: the request being answered, or NULL. */
void rcm_conn_param(const struct rcm_ep *e, const struct rcm_event *req,
                    struct rdma_conn_param *p) CPC_HIDDEN;
/* The QP number the handshake's MACs cover (0 on iWARP). */
uint32_t rcm_wire_qpn(const struct rcm_ep *e, uint32_t qpn) CPC_HIDDEN;
/* iWARP: the handshake connection's own QP on id. OPAL_SUCCESS, or an
 * OPAL code with librdmacm's reason left in errno. */
int rcm_handshake_qp(struct rdma_cm_id *id) CPC_HIDDEN;
/* iWARP: rdma_connect on e failed with err. True when the local port was
 * taken in the host's TCP and another may be tried (*tries counts them);
 * the caller then drops its cm_id and starts again on a fresh one. */
bool rcm_port_taken(const struct rcm_ep *e, struct rdma_cm_id *id, int err, uint8_t *tries,
                    const char *what) CPC_HIDDEN;
/* For rdma_connect's failure: "" or why a port taken every time is the
 * host's port range, not the peer. */
const char *rcm_port_hint(const struct rcm_ep *e, int err) CPC_HIDDEN;
/* Our receives, posted once. */
int rcm_post_recvs_once(struct rcm_ep *e) CPC_HIDDEN;
/* iWARP initiator, handshake done: connect each QP. */
void rcm_qps_connect(struct rcm_ep *e) CPC_HIDDEN;
/* iWARP: an event on QP q's cm_id (either side). */
void rcm_on_qp_event(struct rcm_ep *e, int q, const struct rcm_event *ev) CPC_HIDDEN;
/* iWARP responder: the peer connects one of our QPs (a QREQ). */
void rcm_on_qp_request(struct rcm_module *mod, const struct rcm_event *ev) CPC_HIDDEN;

#endif

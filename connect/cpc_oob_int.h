/*
 * cpc_oob_int.h - the oob CPC's pieces, shared by its files only:
 *   cpc_oob.c         component and module: parameters, query, the ports'
 *                     side channels, endpoints, the progress hook
 *   cpc_oob_conn.c    one connection's handshake: REQ, retries, failure,
 *                     completion, timers
 *   cpc_oob_events.c  the side channel's events: oob's handlers of REQ,
 *                     REP, REJ, RTU and errors, the dispatch to oob or
 *                     xoob, and what both CPCs share to judge frames
 * (the side channel itself: cpc_oob_channel.h; the frames: wire/oob_wire.h)
 */
#ifndef CPC_OOB_INT_H
#define CPC_OOB_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "openib/openib_cpc.h"
#include "connect/cpc_active.h"
#include "connect/cpc_auth.h"
#include "connect/cpc_internal.h"
#include "connect/cpc_oob_channel.h"
#include "wire/oob_wire.h"

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

#define OOB_LOG(e, fmt, ...) \
    openib_cpc_log(100, "openib: oob %s: " fmt, (e)->cep->peer_desc, ##__VA_ARGS__)

/* ---- cpc_oob.c: the parameters ---- */

extern int oob_cpc_timeout_s CPC_HIDDEN; /* btl_openib_connect_oob_timeout */
extern int oob_cpc_retries CPC_HIDDEN;   /* btl_openib_connect_oob_retries */

/* ---- cpc_oob_conn.c: one connection's handshake ---- */

/* endpoints with a handshake in progress (for timers) */
extern struct openib_cpc_active oob_cpc_active CPC_HIDDEN;

/* A frame to e's peer, sealed with its token, answering echo (NULL: none). */
int oob_cpc_encode(uint8_t *buf, struct oob_ep *e, enum oob_type type, uint16_t reason,
                   const struct openib_cpc_qp_info *q, const uint8_t *echo,
                   uint8_t *nonce_out) CPC_HIDDEN;
/* The peer's side-channel addresses and token, from its blob. */
int oob_cpc_peer_blob(struct oob_ep *e, struct oob_blob *b, int *version) CPC_HIDDEN;
long oob_cpc_timeout_ms(void) CPC_HIDDEN; /* the silence bound, in ms */
/* A sign of life at t: the silence bound starts again. */
void oob_cpc_alive(struct oob_ep *e, long t) CPC_HIDDEN;
/* Timers on (the handshake is under way). */
void oob_cpc_arm(struct oob_ep *e) CPC_HIDDEN;
/* The handshake ends: failed (the BTL is told why), or complete. */
void oob_cpc_fail(struct oob_ep *e, int rc, const char *why) CPC_HIDDEN;
void oob_cpc_done(struct oob_ep *e) CPC_HIDDEN;
int oob_cpc_start_connect(struct openib_cpc_module *m, struct openib_cpc_endpoint *cep) CPC_HIDDEN;
/* The session we opened ends without a usable answer: retried like a lost
 * side channel. */
void oob_cpc_lost_session(struct oob_ep *e, const char *why) CPC_HIDDEN;
/* Deadlines and retries of every handshake under way. */
void oob_cpc_check_timers(void) CPC_HIDDEN;

#endif

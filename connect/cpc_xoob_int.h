/*
 * cpc_xoob_int.h - what the xoob CPC's files share, and only they:
 *   cpc_xoob.c            component and module: parameters, query, endpoints,
 *                         and the side-channel events and timers that oob's
 *                         progress hands over
 *   cpc_xoob_initiator.c  the handshake that connects a node's send QP, and
 *                         its end, which every waiting endpoint hears
 *   cpc_xoob_responder.c  a request answered with a target QP, within caps
 *   wire/xoob_wire.c      the modex blob and messages (pure; unit-tested)
 *   cpc_xoob_node.c       the per-remote-node table of shared send QPs
 * What the BTL and oob see is cpc_xoob.h.
 */
#ifndef CPC_XOOB_INT_H
#define CPC_XOOB_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "connect/cpc_active.h"
#include "connect/cpc_internal.h"
#include "connect/cpc_xoob.h"
#include "connect/cpc_xoob_node.h"
#include "wire/xoob_wire.h"

struct oob_event;
struct xoob_tgt; /* cpc_xoob_responder.c */

struct xoob_module {
    struct openib_cpc_module base;   /* first: the framework sees this */
    int listen_id;
    void *btl;
    const struct openib_cpc_xrc_ops *xrc; /* the BTL's XRC objects (the port's) */
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

#define XOOB_EP_MAGIC 0x786f6f62u /* tells our cpc_private from another CPC's */

struct xoob_ep {
    uint32_t magic;                  /* first: XOOB_EP_MAGIC */
    struct openib_cpc_endpoint *cep;
    struct xoob_module *mod;
    struct xoob_blob peer;           /* decoded peer blob */
    struct openib_xrc_node *node;    /* referenced from endpoint_init on */
    bool waiting, attached, failed;
    uint32_t per_q;                  /* send WQEs per queue set aside on the node's QP */
    int nq;                          /* for this many queues (while attached) */
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

#define XOOB_LOG(e, fmt, ...) \
    openib_cpc_log(100, "openib: xoob %s: " fmt, (e)->cep->peer_desc, ##__VA_ARGS__)

/* ---- cpc_xoob.c ---- */
/* The owner of every session xoob opens: tells its events from oob's. */
extern char xoob_owner CPC_HIDDEN;
/* drivers with a handshake under way (for timers) */
extern struct openib_cpc_active xoob_active CPC_HIDDEN;
/* The peer showed it was alive at t: e's deadline is t plus
 * btl_openib_connect_xoob_timeout, never earlier than it was. */
void xoob_alive(struct xoob_ep *e, long t) CPC_HIDDEN;

/* ---- cpc_xoob_initiator.c ---- */
int xoob_start_connect(struct openib_cpc_module *m, struct openib_cpc_endpoint *cep) CPC_HIDDEN;
int xoob_send_req(struct xoob_ep *e) CPC_HIDDEN;
/* A REP or REJ that passed oob_check_answer_frame. */
void xoob_on_reply(struct xoob_ep *e, const struct xoob_msg *in) CPC_HIDDEN;
/* The driver's handshake is over (rc, why): logged when why is set, then
 * xoob_node_end. */
void xoob_node_finish(struct xoob_ep *driver, int rc, const char *why) CPC_HIDDEN;
/* The same, silently: off the timers, its session closed, and every
 * endpoint waiting on the node told, the driver too. */
void xoob_node_end(struct xoob_ep *driver, int rc, const char *why) CPC_HIDDEN;

/* ---- cpc_xoob_responder.c ---- */
/* A request on a session some process opened to mod's listener. */
void xoob_on_req(struct xoob_module *mod, const struct oob_event *ev) CPC_HIDDEN;

#endif

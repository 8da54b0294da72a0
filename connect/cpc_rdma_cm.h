/*
 * cpc_rdma_cm.h - the rdma_cm CPC's pieces, shared by its files only:
 *   cpc_rdma_cm.c       component and module: parameters, query, listener
 *   cpc_rdma_cm_addr.c  which IPv4 address a port answers on
 *   cpc_rdma_cm_wire.c  the private-data format (pure; unit-tested)
 *   cpc_rdma_cm_conn.c  the handshake: events, crossing rule, timers
 *   cpc_rdma_cm_listen.c  the listeners' channel and the thread that says
 *                       "busy" for a process that is not in MPI
 */
#ifndef CPC_RDMA_CM_H
#define CPC_RDMA_CM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "openib/openib_cpc.h"
#include "connect/cpc_internal.h"

struct rdma_cm_id;

#define RCM_ID_LEN 8 /* opal_process_name_t */

/* ---- modex blob: version, 0, TCP port (big-endian), IPv4 (network order) ----
 * Version 2: the listener answers REJ(BUSY) for a process outside MPI. A
 * version-1 peer would take BUSY for a final refusal, so blobs of another
 * version are refused up front, with the reason. */
#define RCM_BLOB_VERSION 2
#define RCM_BLOB_LEN 8

/* ---- private data (cpc_rdma_cm_wire.c has the layout and the reasons) ---- */

/* What librdmacm lets a consumer carry on the IB CM (InfiniBand and RoCE):
 * a REQ has 92 bytes, of which rdma_cm's own header takes 36. */
#define RCM_REQ_PRIV_MAX 56
#define RCM_REP_PRIV_MAX 196
#define RCM_REJ_PRIV_MAX 148

#define RCM_HDR_LEN 11
#define RCM_BODY_LEN(nqps) (14 + 6 * (nqps))
#define RCM_BODY_MAX RCM_BODY_LEN(OPENIB_CPC_MAX_QPS)
#define RCM_CHUNK_MAX (RCM_REQ_PRIV_MAX - RCM_HDR_LEN)
#define RCM_CHUNKS(len) (((len) + RCM_CHUNK_MAX - 1) / RCM_CHUNK_MAX)
#define RCM_MAX_CHUNKS RCM_CHUNKS(RCM_BODY_MAX)

enum rcm_type { RCM_REQ = 1, RCM_REP = 2, RCM_REJ = 3 };
enum rcm_reason {
    RCM_REJ_CROSS = 1,       /* crossing connects: the sender keeps initiating */
    RCM_REJ_LATER = 2,       /* not now (no endpoint for you yet, or our answer
                                failed): try again after a back-off */
    RCM_REJ_MORE = 3,        /* chunk stored: send the next one */
    RCM_REJ_BAD = 4,         /* refused for good */
    RCM_REJ_BUSY = 5,        /* the listener thread, for a process that did not
                                take the request in time (it is outside MPI):
                                alive, ask again. Carries a marker version. */
};

struct rcm_msg {
    enum rcm_type type;
    uint8_t src[RCM_ID_LEN];     /* the sender's process name bytes */
    uint8_t arg;                 /* REQ: chunk << 4 | count; REP: 0; REJ: reason */
    const uint8_t *rest;         /* what follows the header */
    size_t rest_len;
};

size_t rcm_hdr_encode(uint8_t *p, enum rcm_type type, const void *src, uint8_t arg) CPC_HIDDEN;
int rcm_msg_decode(const uint8_t *p, size_t len, struct rcm_msg *out) CPC_HIDDEN;
/* The QP data without qpn[0] (that one rides in conn_param.qp_num), nor the
 * GID, LID and MTU (the peer's modex already has them). Returns the length,
 * RCM_BODY_LEN(num_qps), or 0 when q cannot be carried. */
size_t rcm_body_encode(const struct openib_cpc_qp_info *q, uint8_t *body) CPC_HIDDEN;
/* Fills num_qps, qpn, psn, rq_layout and the mailbox; len must cover
 * RCM_BODY_LEN(num_qps). */
int rcm_body_decode(const uint8_t *body, size_t len, uint32_t qpn0,
                    struct openib_cpc_qp_info *q) CPC_HIDDEN;

/* REJ(BUSY): the header, then u8 marker version, u8 0 (reserved). */
#define RCM_BUSY_VERSION 1
#define RCM_BUSY_LEN (RCM_HDR_LEN + 2)
/* Fills RCM_BUSY_LEN bytes; src is our process name (zeros if not known). */
size_t rcm_busy_encode(uint8_t *p, const void *src) CPC_HIDDEN;
/* For a decoded REJ(BUSY): SUCCESS for our marker version, BAD_PARAM when
 * truncated (or not a BUSY), NOT_SUPPORTED for another marker version. */
int rcm_busy_decode(const struct rcm_msg *m) CPC_HIDDEN;

/* ---- addresses (cpc_rdma_cm_addr.c) ---- */

/* The port's IPv4 address (network order): port->ipv4, else its
 * IPv4-mapped GID, else its network interface's address. */
int rcm_port_ipv4(const struct openib_cpc_port *port, uint32_t *ip, char *why,
                  size_t why_len) CPC_HIDDEN;

/* ---- the module and the handshake (cpc_rdma_cm_conn.c) ---- */

/* Every cm_id's context starts with one of these, so an event handler can
 * tell a listener (and the ids born from it, which inherit its context)
 * from an endpoint's id. */
enum rcm_tag { RCM_TAG_LISTENER = 0x4c697374, RCM_TAG_EP = 0x45706e74 };

#define RCM_PRIV_MAX 256        /* librdmacm's RDMA_MAX_PRIVATE_DATA */

struct rcm_module;

/* A copy of what we need from one event (it is acknowledged before use). */
struct rcm_event {
    int type;                    /* enum rdma_cm_event_type */
    int status;
    struct rdma_cm_id *id;
    struct rdma_cm_id *listen_id;
    struct rcm_module *mod;      /* CONNECT_REQUEST: the listener's module */
    uint32_t qp_num;
    uint8_t priv[RCM_PRIV_MAX];
    size_t priv_len;
};

struct rcm_listen_ctx {
    uint32_t tag;                             /* RCM_TAG_LISTENER */
    struct rcm_module *mod;
};

struct rcm_module {
    struct openib_cpc_module base;            /* first: the framework sees this */
    struct rdma_cm_id *listen_id;
    struct rcm_listen_ctx lctx;               /* listen_id's context */
    uint32_t ip;                              /* network order */
    uint16_t tcp_port;                        /* host order */
    void *btl;                                /* for endpoint_for_peer */
    const struct openib_cpc_btl_ops *btl_ops; /* learned at endpoint_init */
};

struct rcm_params {
    int port;      /* listening port, 0 = ephemeral */
    int timeout_s; /* silence bound: no answer at all from the peer */
    int retries;
};
extern struct rcm_params rcm_params CPC_HIDDEN;

/* The process's one event channel (non-blocking), shared by every module,
 * for the endpoints' cm_ids. Each reference also holds the listeners'
 * channel and its thread (cpc_rdma_cm_listen.c). */
struct rdma_event_channel *rcm_channel_get(char *why, size_t why_len) CPC_HIDDEN;
void rcm_channel_put(void) CPC_HIDDEN;

/* ---- the listeners' channel (cpc_rdma_cm_listen.c) ---- */

/* Start (first reference) or reference the listeners' channel and its
 * thread; NULL with why filled on failure. */
struct rdma_event_channel *rcm_listen_get(char *why, size_t why_len) CPC_HIDDEN;
void rcm_listen_put(void) CPC_HIDDEN;
/* The channel every listener is created on (after rcm_listen_get). */
struct rdma_event_channel *rcm_listen_channel(void) CPC_HIDDEN;
/* After destroying mod's listener: drop (destroy) its requests still
 * queued, which point at mod. */
void rcm_listen_forget(const struct rcm_module *mod) CPC_HIDDEN;
/* The oldest connection request the thread queued and has not answered
 * "busy"; false when none (one atomic load). The caller owns ev->id: it
 * must answer it, and move it to the main channel before accepting it. */
bool rcm_listen_take(struct rcm_event *ev) CPC_HIDDEN;
/* Our process name, for the thread's REJ(BUSY) header. */
void rcm_listen_set_local_id(const void *id) CPC_HIDDEN;

int rcm_endpoint_init(struct openib_cpc_module *m, struct openib_cpc_endpoint *cep) CPC_HIDDEN;
int rcm_start_connect(struct openib_cpc_module *m, struct openib_cpc_endpoint *cep) CPC_HIDDEN;
int rcm_endpoint_finalize(struct openib_cpc_module *m, struct openib_cpc_endpoint *cep) CPC_HIDDEN;
void rcm_conn_finalize(void) CPC_HIDDEN;

#endif

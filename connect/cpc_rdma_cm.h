/*
 * cpc_rdma_cm.h - the rdma_cm CPC's pieces, shared by its files only:
 *   cpc_rdma_cm.c       component and module: parameters, query, listener
 *   cpc_rdma_cm_addr.c  which IPv4 address a port answers on
 *   wire/rdma_cm_wire.c the private-data format (pure; unit-tested)
 *   cpc_rdma_cm_conn.c  the handshake (described there): bookkeeping and the
 *                       endpoints; its other files (initiator, responder,
 *                       iwarp, events) are listed in cpc_rdma_cm_conn.h
 *   cpc_rdma_cm_listen.c  the listeners' channel and the thread that says
 *                       "busy" for a process that is not in MPI
 */
#ifndef CPC_RDMA_CM_H
#define CPC_RDMA_CM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "openib/openib_cpc.h"
#include "connect/cpc_auth.h"
#include "connect/cpc_internal.h"

struct rdma_cm_id;
struct sockaddr;

#define RCM_ID_LEN 8 /* opal_process_name_t */

/* ---- modex blob (wire/rdma_cm_wire.c) ----
 *   [0] version, [1] 0, [2..3] TCP port (big-endian), [4..7] IPv4 (network
 *   order), [8..23] the process token (cpc_auth.h: PMIx gives it only to
 *   the job).
 * Version 3: requests and replies are authenticated with the token; a
 * version-2 peer would send requests we refuse. Version 2: the listener
 * answers REJ(BUSY) for a process outside MPI. Blobs of another version are
 * refused up front, with the reason. */
#define RCM_BLOB_VERSION 3
#define RCM_BLOB_LEN (8 + OPENIB_AUTH_TOKEN_LEN)

struct rcm_blob {
    uint16_t port;                          /* host order */
    uint32_t ip;                            /* network order */
    uint8_t token[OPENIB_AUTH_TOKEN_LEN];
};

void rcm_blob_encode(uint8_t *b, uint16_t port, uint32_t ip, const uint8_t *token) CPC_HIDDEN;
/* SUCCESS; NOT_SUPPORTED for another version; BAD_PARAM when short or
 * without an address. */
int rcm_blob_decode(const uint8_t *b, size_t len, struct rcm_blob *out) CPC_HIDDEN;
/* Is sa (AF_INET, or AF_INET6 IPv4-mapped) the IPv4 address ip? */
bool rcm_sockaddr_is(const struct sockaddr *sa, uint32_t ip) CPC_HIDDEN;

/* ---- private data (wire/rdma_cm_wire.c has the layout and the reasons) ---- */

/* What librdmacm lets a consumer carry on the IB CM (InfiniBand and RoCE):
 * a REQ has 92 bytes, of which rdma_cm's own header takes 36. */
#define RCM_REQ_PRIV_MAX 56
#define RCM_REP_PRIV_MAX 196
#define RCM_REJ_PRIV_MAX 148

#define RCM_HDR_LEN 11
/* REQ chunk: header, nonce, MAC, a part of the body */
#define RCM_REQ_NONCE_OFF RCM_HDR_LEN
#define RCM_REQ_MAC_OFF (RCM_REQ_NONCE_OFF + OPENIB_AUTH_NONCE_LEN)
#define RCM_REQ_HDR_LEN (RCM_REQ_MAC_OFF + OPENIB_AUTH_MAC_LEN)
/* REP: header, the receiver's name, the request's nonce, MAC, the body */
#define RCM_REP_DST_OFF RCM_HDR_LEN
#define RCM_REP_NONCE_OFF (RCM_REP_DST_OFF + RCM_ID_LEN)
#define RCM_REP_MAC_OFF (RCM_REP_NONCE_OFF + OPENIB_AUTH_NONCE_LEN)
#define RCM_REP_HDR_LEN (RCM_REP_MAC_OFF + OPENIB_AUTH_MAC_LEN)

#define RCM_BODY_LEN(nqps) (14 + 6 * (nqps))
#define RCM_BODY_MAX RCM_BODY_LEN(OPENIB_CPC_MAX_QPS)
#define RCM_CHUNK_MAX (RCM_REQ_PRIV_MAX - RCM_REQ_HDR_LEN)
#define RCM_CHUNKS(len) (((len) + RCM_CHUNK_MAX - 1) / RCM_CHUNK_MAX)
#define RCM_MAX_CHUNKS RCM_CHUNKS(RCM_BODY_MAX)

enum rcm_type {
    RCM_REQ = 1, RCM_REP = 2, RCM_REJ = 3,
    RCM_QREQ = 4, /* iWARP: connect one QP of an accepted handshake */
    RCM_QREP = 5, /* iWARP: its answer */
};
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

/* Why a request or reply was refused: the token in the verbose log. */
enum rcm_refusal {
    RCM_OK = 0,
    RCM_MALFORMED,       /* not ours, truncated, impossible chunking */
    RCM_BAD_MAC,         /* not keyed with our token: a stranger, or a frame
                            meant for another process, or altered */
    RCM_NOT_MEMBER,      /* the claimed sender is not in the job */
    RCM_WRONG_DST,       /* (reply) names another receiver */
    RCM_WRONG_SRC,       /* (reply) not from the process we asked */
    RCM_REPLAY,          /* (src, nonce, chunk) seen before; or a reply that
                            echoes another request's nonce */
    RCM_BAD_SOURCE_ADDR, /* sent from an address the claimed sender did not publish */
    RCM_REFUSAL_COUNT
};
const char *rcm_refusal_name(enum rcm_refusal r) CPC_HIDDEN;

/* Chunk idx of the REQ for body[0..body_len), MAC keyed with the
 * responder's token (key) and covering dst and qpn0 too (not carried:
 * wire/rdma_cm_wire.c). Returns its length (RCM_REQ_PRIV_MAX: always the
 * whole area), 0 when idx is out of range. */
size_t rcm_req_encode(uint8_t *pd, const void *src, const void *dst,
                      const uint8_t *key, const uint8_t *nonce, uint32_t qpn0,
                      const uint8_t *body, size_t body_len, unsigned idx) CPC_HIDDEN;

/* A REQ chunk that passed rcm_req_verify. */
struct rcm_req {
    uint8_t src[RCM_ID_LEN];
    uint8_t nonce[OPENIB_AUTH_NONCE_LEN];
    unsigned idx, count;
    const uint8_t *part;         /* into the frame: RCM_CHUNK_MAX bytes */
    size_t part_len;
};
/* The responder's checks that need nothing but the frame, our name and our
 * token: lengths and layout (MALFORMED), then the MAC (BAD_MAC). Membership,
 * freshness and the source address are the caller's
 * (cpc_rdma_cm_responder.c). */
enum rcm_refusal rcm_req_verify(const uint8_t *pd, size_t len, uint32_t qpn0,
                                const void *own_id, const uint8_t *own_token,
                                struct rcm_req *out) CPC_HIDDEN;

/* The peer's request, assembled from verified chunks of one handshake,
 * (src, nonce): the src is the endpoint's, the nonce kept here. A verified
 * chunk of another nonce (the peer started over) restarts it. */
struct rcm_rx {
    uint8_t nonce[OPENIB_AUTH_NONCE_LEN];
    uint8_t count, mask;
    size_t len;                  /* count * RCM_CHUNK_MAX: the body says what is used */
    uint8_t data[RCM_MAX_CHUNKS * RCM_CHUNK_MAX];
};
/* Store a verified chunk; true once the body is complete (rx->len bytes). */
bool rcm_rx_store(struct rcm_rx *rx, const struct rcm_req *r) CPC_HIDDEN;

/* The REP: MAC keyed with the initiator's token (key), echoing the
 * request's nonce, naming the initiator (dst), covering qpn0. Returns its
 * length (RCM_REP_PRIV_MAX: always the whole area), 0 when the body does
 * not fit. */
size_t rcm_rep_encode(uint8_t *pd, const void *src, const void *dst, const uint8_t *key,
                      const uint8_t *nonce, uint32_t qpn0, const uint8_t *body,
                      size_t body_len) CPC_HIDDEN;
/* The initiator's checks of a REP: ours and complete (MALFORMED), from the
 * peer (WRONG_SRC), to us (WRONG_DST), the answer to our request nonce
 * (REPLAY), keyed with our token (BAD_MAC). The body goes to *body. */
enum rcm_refusal rcm_rep_verify(const uint8_t *pd, size_t len, uint32_t qpn0,
                                const void *own_id, const uint8_t *own_token,
                                const void *peer_id, const uint8_t *nonce,
                                const uint8_t **body, size_t *body_len) CPC_HIDDEN;

/* REJ(BUSY): the header, then u8 marker version, u8 0 (reserved). */
#define RCM_BUSY_VERSION 1
#define RCM_BUSY_LEN (RCM_HDR_LEN + 2)
/* Fills RCM_BUSY_LEN bytes; src is our process name (zeros if not known). */
size_t rcm_busy_encode(uint8_t *p, const void *src) CPC_HIDDEN;
/* For a decoded REJ(BUSY): SUCCESS for our marker version, BAD_PARAM when
 * truncated (or not a BUSY), NOT_SUPPORTED for another marker version. */
int rcm_busy_decode(const struct rcm_msg *m) CPC_HIDDEN;

/* iWARP only (cpc_rdma_cm_iwarp.c): after the handshake above, every QP is
 * connected on a cm_id of its own (MPA: one stream per QP), each request
 * and answer a QP frame: the header (arg: the QP's index), the nonce of the
 * handshake it belongs to, and a MAC keyed with the receiver's token that
 * also covers the receiver's name (as REQ/REP do; qp_num is 0 on iWARP,
 * where the CM does not carry it). */
#define RCM_QP_NONCE_OFF RCM_HDR_LEN
#define RCM_QP_MAC_OFF (RCM_QP_NONCE_OFF + OPENIB_AUTH_NONCE_LEN)
#define RCM_QP_FRAME_LEN (RCM_QP_MAC_OFF + OPENIB_AUTH_MAC_LEN)
size_t rcm_qp_frame_encode(uint8_t *pd, enum rcm_type type, const void *src, const void *dst,
                           const uint8_t *key, const uint8_t *nonce, unsigned q) CPC_HIDDEN;
/* Layout and type (MALFORMED), then the MAC under our token (BAD_MAC);
 * src, nonce and the QP index go to the caller, which checks them. */
enum rcm_refusal rcm_qp_frame_verify(const uint8_t *pd, size_t len, enum rcm_type type,
                                     const void *own_id, const uint8_t *own_token,
                                     uint8_t *src, uint8_t *nonce, unsigned *q) CPC_HIDDEN;

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
    uint8_t responder_resources; /* CONNECT_REQUEST: what the initiator offers */
    uint8_t initiator_depth;
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
    /* iWARP: the CM moves the QPs; each QP gets a connection of its own.
     * The RDMA read depths we offer: the device's limits. */
    bool iwarp;
    uint8_t max_rd_atom;                      /* responder resources */
    uint8_t max_init_rd_atom;                 /* initiator depth */
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

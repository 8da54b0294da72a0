/*
 * rdma_cm_wire.h - the rdma_cm CPC's modex blob and IB CM private data:
 * encoders, decoders and the checks a receiver makes (pure, unit-tested:
 * tests/unit/connect/test_rdma_cm_wire.c). Layouts in rdma_cm_wire.c;
 * versioning rules for every format in wire/README.md.
 */
#ifndef OPENIB_WIRE_RDMA_CM_WIRE_H
#define OPENIB_WIRE_RDMA_CM_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "openib/openib_cpc.h"
#include "connect/cpc_auth.h"
#include "connect/cpc_internal.h" /* CPC_HIDDEN */
#include "wire/wire_refusal.h"

struct sockaddr;

#define RCM_ID_LEN 8 /* opal_process_name_t */

/* ---- modex blob ----
 *   [0] version, [1] 0, [2..3] TCP port (big-endian), [4..7] IPv4 (network
 *   order), [8..23] the process token (cpc_auth.h: PMIx gives it only to
 *   the job).
 * Version 3: requests and replies are authenticated with the token; a
 * version-2 peer would send requests we refuse. Version 2: the listener
 * answers REJ(BUSY) for a process outside MPI. Another version:
 * wire/README.md. */
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

/* ---- private data (rdma_cm_wire.c has the layout and the reasons) ---- */

/* What librdmacm lets a consumer carry on the IB CM (InfiniBand and RoCE):
 * a REQ has 92 bytes, of which rdma_cm's own header takes 36. */
#define RCM_REQ_PRIV_MAX 56
#define RCM_REP_PRIV_MAX 196
#define RCM_REJ_PRIV_MAX 148
/* The most an rdma_cm event can carry (room for any of the above). */
#define RCM_PRIV_MAX 256 /* librdmacm's RDMA_MAX_PRIVATE_DATA */

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

/* Why a request or reply was refused: enum openib_refusal (wire_refusal.h). */

/* Chunk idx of the REQ for body[0..body_len), MAC keyed with the
 * responder's token (key) and covering dst and qpn0 too (not carried:
 * rdma_cm_wire.c). Returns its length (RCM_REQ_PRIV_MAX: always the
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
enum openib_refusal rcm_req_verify(const uint8_t *pd, size_t len, uint32_t qpn0,
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
enum openib_refusal rcm_rep_verify(const uint8_t *pd, size_t len, uint32_t qpn0,
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
enum openib_refusal rcm_qp_frame_verify(const uint8_t *pd, size_t len, enum rcm_type type,
                                        const void *own_id, const uint8_t *own_token,
                                        uint8_t *src, uint8_t *nonce, unsigned *q) CPC_HIDDEN;

#endif

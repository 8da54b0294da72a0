/*
 * xoob_wire.h - xoob's modex blob and side-channel messages.
 * Device-free, unit-tested (tests/unit/connect/test_xoob_wire.c). Layouts
 * in xoob_wire.c; versioning rules for every format in wire/README.md.
 */
#ifndef OPENIB_WIRE_XOOB_WIRE_H
#define OPENIB_WIRE_XOOB_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "connect/cpc_auth.h"
#include "wire/oob_wire.h" /* the envelope and the checks, shared */

/* Blob 3 carries the process token (cpc_auth.h); 2 could not
 * authenticate, 1 lacked keepalives. Message 2 carries a nonce, the nonce
 * it answers and a MAC. What a reader does with another version:
 * wire/README.md. */
#define XOOB_BLOB_VERSION 3
#define XOOB_MSG_VERSION 2
#define XOOB_MAX_ADDRS 8
#define XOOB_MAX_SRQS 8
#define XOOB_ID_LEN OOB_ID_LEN /* the ids of the envelope (oob_wire.h) */

/* What a port publishes: where its side channel listens, which node it is
 * on (so endpoints to one node share a send QP) and its XRC SRQ numbers (so
 * endpoints after the first to a node need no exchange). */
struct xoob_blob {
    uint8_t naddr;
    uint16_t port;                    /* TCP port, host order */
    uint32_t addrs[XOOB_MAX_ADDRS];   /* IPv4, network order (as published) */
    uint8_t token[OPENIB_AUTH_TOKEN_LEN]; /* keys what is sent to this process */
    uint64_t node_id;
    uint8_t nsrq;
    uint32_t srqn[XOOB_MAX_SRQS];
};

/* Encode into buf (cap bytes); *len gets the size. BAD_PARAM on counts out
 * of range, OUT_OF_RESOURCE when cap is too small. */
int xoob_blob_encode(const struct xoob_blob *b, uint8_t *buf, size_t cap, size_t *len);
/* Decode; BAD_PARAM on truncation, trailing bytes or counts out of range,
 * NOT_SUPPORTED on another version. Never reads past buf + len. */
int xoob_blob_decode(const uint8_t *buf, size_t len, struct xoob_blob *b);

enum xoob_msg_type { XOOB_REQ = 1, XOOB_REP = 2, XOOB_REJ = 3 };
enum xoob_reject { XOOB_REJ_LAYOUT = 1, XOOB_REJ_RESOURCE = 2, XOOB_REJ_BAD = 3 };

/* REQ: the initiator's send QP; REP: the responder's target QP number in
 * qpn; REJ: reason and a short text (at most XOOB_WHY_LEN bytes travel).
 * A REQ is sealed with the responder's token, REP and REJ with the
 * initiator's, echoing the REQ's nonce. */
#define XOOB_WHY_LEN 62
struct xoob_msg {
    struct oob_envelope env; /* env.type: an enum xoob_msg_type */
    uint32_t qpn, psn, mtu, rq_layout;
    uint8_t gid[16];
    uint16_t lid;
    uint64_t node_id;
    char why[64];
};

/* Fixed-size (size = OOB_MSG_SIZE of the channel) big-endian messages.
 * Encode seals with key (the receiver's token); decode checks the layout
 * only. */
int xoob_msg_encode(const struct xoob_msg *m, uint8_t *buf, size_t size,
                    const uint8_t key[OPENIB_AUTH_TOKEN_LEN]);
int xoob_msg_decode(const uint8_t *buf, size_t size, struct xoob_msg *m);

/* Decodes buf into *out (xoob_msg_decode) and views it for the shared
 * checks (oob_check_request_frame for a REQ, oob_check_answer_frame for a
 * REP or REJ) when it is an xoob message of type a or b; oob_frame_none
 * when not. */
struct oob_frame_view xoob_msg_view(const uint8_t *buf, size_t size, enum xoob_msg_type a,
                                    enum xoob_msg_type b, struct xoob_msg *out);

/* Does this channel message carry xoob's magic? */
int xoob_msg_is_xoob(const uint8_t *buf, size_t size);

/* The node id published in the blob: FNV-1a of the host name. */
uint64_t xoob_node_id(const char *hostname);

#endif

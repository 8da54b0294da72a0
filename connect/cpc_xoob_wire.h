/*
 * cpc_xoob_wire.h - xoob's modex blob and side-channel messages.
 * Device-free, unit-tested (tests/unit/connect/test_xoob_wire.c).
 */
#ifndef CPC_XOOB_WIRE_H
#define CPC_XOOB_WIRE_H

#include <stddef.h>
#include <stdint.h>

/* Blob 2: the listener's side-channel thread answers keepalives (cpc_oob_
 * channel.h); a version-1 peer would close a session on our first one, so
 * blobs of another version are refused up front. Messages are unchanged. */
#define XOOB_BLOB_VERSION 2
#define XOOB_MSG_VERSION 1
#define XOOB_MAX_ADDRS 8
#define XOOB_MAX_SRQS 8
#define XOOB_ID_LEN 8

/* What a port publishes: where its side channel listens, which node it is
 * on (so endpoints to one node share a send QP) and its XRC SRQ numbers (so
 * endpoints after the first to a node need no exchange). */
struct xoob_blob {
    uint8_t naddr;
    uint16_t port;                    /* TCP port, host order */
    uint32_t addrs[XOOB_MAX_ADDRS];   /* IPv4, network order (as published) */
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
 * qpn; REJ: reason and a short text. */
struct xoob_msg {
    uint8_t type;
    uint16_t reason;
    uint8_t src[XOOB_ID_LEN], dst[XOOB_ID_LEN];
    uint32_t qpn, psn, mtu, rq_layout;
    uint8_t gid[16];
    uint16_t lid;
    uint64_t node_id;
    char why[64];
};

/* Fixed-size (size = OOB_MSG_SIZE of the channel) big-endian messages. */
int xoob_msg_encode(const struct xoob_msg *m, uint8_t *buf, size_t size);
int xoob_msg_decode(const uint8_t *buf, size_t size, struct xoob_msg *m);
/* Does this channel message carry xoob's magic? */
int xoob_msg_is_xoob(const uint8_t *buf, size_t size);

/* The node id published in the blob: FNV-1a of the host name. */
uint64_t xoob_node_id(const char *hostname);

#endif

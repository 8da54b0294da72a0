/*
 * cpc_oob_wire.h - what oob's side channel carries: the oob modex blob, the
 * oob handshake messages, and the channel's own keepalive frames (on every
 * session, xoob's too). Device-free, unit-tested
 * (tests/unit/connect/test_oob_wire.c). Layouts in cpc_oob_wire.c.
 */
#ifndef CPC_OOB_WIRE_H
#define CPC_OOB_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "openib/openib_cpc.h"
#include "connect/cpc_oob_channel.h"

/* 2: the listener's side-channel thread answers keepalives (a process that
 * computes outside MPI still proves it is alive). A version-1 peer would
 * close a session on our first keepalive, so it is refused up front, at
 * its blob, with the reason. */
#define OOB_BLOB_VERSION 2
#define OOB_MSG_VERSION 1
#define OOB_ID_LEN 8

/* ---- modex blob: u8 version, u8 naddr (1..8), u16 port, naddr IPv4 ---- */

int oob_blob_encode(uint8_t *buf, size_t cap, const uint32_t *addrs, int naddr, uint16_t port,
                    size_t *len);
/* BAD_PARAM on truncation or counts out of range, NOT_SUPPORTED on another
 * version (*version_out says which, when non-NULL). */
int oob_blob_decode(const uint8_t *buf, size_t len, uint32_t *addrs, int *naddr, uint16_t *port,
                    int *version_out);

/* ---- handshake messages (one channel frame each) ---- */

enum oob_type { OOB_REQ = 1, OOB_REP = 2, OOB_RTU = 3, OOB_REJ = 4 };
enum oob_reject {
    OOB_REJ_CROSS = 1,       /* crossing connects: the sender keeps initiating */
    OOB_REJ_NO_ENDPOINT = 2, /* no endpoint for you yet: retry after a back-off */
    OOB_REJ_BAD = 3,         /* refused for good */
};

struct oob_msg {
    enum oob_type type;
    uint16_t reason;
    uint8_t src[OOB_ID_LEN], dst[OOB_ID_LEN];
    struct openib_cpc_qp_info q;     /* REQ and REP; zeros otherwise */
};

/* q may be NULL (RTU, REJ). size must hold a frame (OOB_MSG_SIZE). */
int oob_msg_encode(uint8_t *buf, size_t size, enum oob_type type, uint16_t reason,
                   const void *src, const void *dst, const struct openib_cpc_qp_info *q);
/* BAD_PARAM: not an oob message, truncated or malformed; NOT_SUPPORTED:
 * oob's magic with another version. */
int oob_msg_decode(const uint8_t *buf, size_t size, struct oob_msg *out);

/* ---- the channel's keepalive frames ---- */

enum oob_ka_type {
    OOB_KA_PING = 1, /* "are you there?": sent on a session silent for a while */
    OOB_KA_PONG = 2, /* "alive": answered by the peer's side-channel thread */
};

struct oob_ka {
    uint8_t type;
    /* PONG: how many of the session's messages still wait for the
     * answering process to take them (it is not in MPI: busy). */
    uint16_t pending;
};

int oob_ka_encode(uint8_t *buf, size_t size, const struct oob_ka *k);
/* NOT_FOUND: not a keepalive (a CPC's message: pass it on); BAD_PARAM:
 * truncated or unknown type; NOT_SUPPORTED: a keepalive of another version. */
int oob_ka_decode(const uint8_t *buf, size_t size, struct oob_ka *k);

#endif

/*
 * data_hdr.h - the wire header in front of every send.
 *
 * 8 bytes, so the upper layer's header that follows stays 8-byte aligned.
 * Host byte order and no version field: why that holds, and what it asks of
 * a change, in wire/README.md.
 */
#ifndef OPENIB_WIRE_DATA_HDR_H
#define OPENIB_WIRE_DATA_HDR_H

#include <stdint.h>

/* Tags below MCA_BTL_TAG_PML (0x40) are ours and never reach the PML. */
#define OPENIB_TAG_CREDIT 0       /* only carries credits */
#define OPENIB_TAG_EAGER_RDMA 1   /* an eager-RDMA ring offer */
/* Closing an idle connection (btl_openib_peer_limit.c); no payload. */
#define OPENIB_TAG_CLOSE_REQ 2    /* may we close? */
#define OPENIB_TAG_CLOSE_ACK 3    /* yes: nothing more from us */
#define OPENIB_TAG_CLOSE_NACK 4   /* not now: busy with you */
#define OPENIB_TAG_PML_FIRST 0x40 /* MCA_BTL_TAG_PML */
#define OPENIB_NO_CREDIT_QP 0xff
#define OPENIB_EAGER_CR_QP 0xfe   /* credits are eager-RDMA ring slots */

struct openib_hdr {
    uint8_t tag;          /* PML tag, or OPENIB_TAG_CREDIT */
    uint8_t cr_qp;        /* per-peer queue the credits refer to, OPENIB_EAGER_CR_QP
                             or OPENIB_NO_CREDIT_QP */
    uint16_t credits;     /* low 16 bits of the sender's cumulative reposted
                             count for cr_qp (serial arithmetic on receipt) */
    uint16_t seq;         /* the message's place in the sender's stream to this
                             peer (btl_openib_order.c), modulo 2^16 */
    uint16_t reserved;    /* zero */
};

_Static_assert(sizeof(struct openib_hdr) == 8, "wire header must stay 8 bytes");

/* The upper layer's bytes in a receive of `length` bytes (what follows our
 * header), or -1 when it is too short to hold the header. The length comes
 * from the peer: subtracting without this check would hand the PML a
 * length near 2^64. */
static inline int64_t openib_recv_payload_len(uint32_t length)
{
    return length < sizeof(struct openib_hdr) ? -1 : (int64_t) (length - sizeof(struct openib_hdr));
}

#endif

/*
 * btl_openib_hdr.h - the wire header in front of every send.
 *
 * 8 bytes, so the upper layer's header that follows stays 8-byte aligned.
 * Host byte order: openib connects homogeneous nodes only (the modex carries
 * no endianness, as with Open MPI's own verbs BTLs).
 */
#ifndef BTL_OPENIB_HDR_H
#define BTL_OPENIB_HDR_H

#include <stdint.h>

/* Tag of a message that only carries credits (never given to the PML). */
#define OPENIB_TAG_CREDIT 0
#define OPENIB_NO_CREDIT_QP 0xff

/* wr_id of a credit RDMA write: the endpoint pointer with this bit set
 * (fragments and endpoints are at least 8-byte aligned). */
#define OPENIB_WRID_CREDIT 1u

struct openib_hdr {
    uint8_t tag;          /* PML tag, or OPENIB_TAG_CREDIT */
    uint8_t cr_qp;        /* per-peer queue the credits refer to, or OPENIB_NO_CREDIT_QP */
    uint16_t credits;     /* low 16 bits of the sender's cumulative reposted
                             count for cr_qp (serial arithmetic on receipt) */
    uint32_t reserved;    /* zero */
};

_Static_assert(sizeof(struct openib_hdr) == 8, "wire header must stay 8 bytes");

#endif

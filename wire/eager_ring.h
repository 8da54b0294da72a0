/*
 * eager_ring.h - where an eager-RDMA message sits in its ring slot, and
 * the two wire structs of eager RDMA. Device-free, so the layout rules are
 * unit-tested without hardware (tests/unit/test_eager_layout.c). Byte order
 * and versioning: wire/README.md.
 *
 * A slot is `slot_size` bytes. A message (the PML's header and payload,
 * `size` bytes) is written so that it ends at the slot's end:
 *
 *   | unused ... | message | pad to 8 | footer (16 bytes) |
 *                ^ offset                                ^ slot end
 *
 * One RDMA write carries message, pad and footer; the footer lands last, so
 * a footer with the expected sequence number means the whole message is
 * there (devices place the bytes of one write in increasing address order).
 * The message starts 8-byte aligned because the PML's headers expect it.
 */
#ifndef OPENIB_WIRE_EAGER_RING_H
#define OPENIB_WIRE_EAGER_RING_H

#include <stddef.h>
#include <stdint.h>

#include "wire/data_hdr.h"

/* At the end of every slot, in host byte order like struct openib_hdr. */
struct openib_eager_footer {
    struct openib_hdr hdr;  /* tag and piggy-backed credits, as on a send */
    uint32_t size;          /* message bytes (PML header + payload), unpadded */
    uint32_t seq;           /* 1 + the message's number in this ring, mod 2^32:
                               the receiver waits for exactly this value, so a
                               slot's previous contents never look new */
};
_Static_assert(sizeof(struct openib_eager_footer) == 16, "eager footer is 16 bytes");

/* The ring offer, sent once per direction as an OPENIB_TAG_EAGER_RDMA
 * message. Fields are only ever appended (wire/README.md); size tells how
 * much was sent. */
#define OPENIB_EAGER_OFFER_VERSION 1
struct openib_eager_offer {
    uint16_t version;       /* v1 */
    uint16_t size;          /* sizeof(struct openib_eager_offer) of the sender */
    uint32_t rkey;          /* v1: the ring's rkey */
    uint64_t addr;          /* v1: the ring's first slot */
    uint32_t slots;         /* v1: number of slots */
    uint32_t slot_size;     /* v1: bytes per slot, a multiple of 8 */
};

#define OPENIB_EAGER_MIN_SLOT 64u
#define OPENIB_EAGER_MAX_SLOT 65536u
#define OPENIB_EAGER_MIN_SLOTS 2u
#define OPENIB_EAGER_MAX_SLOTS 4096u   /* < 2^15: credits travel as 16-bit serials */

static inline uint32_t openib_eager_padded(uint32_t size)
{
    return (size + 7u) & ~7u;
}

/* Offset in the slot where a message of `size` bytes starts, or -1 when
 * message, pad and footer do not fit in the slot. */
static inline int64_t openib_eager_msg_offset(uint32_t slot_size, uint32_t size)
{
    uint64_t need = (uint64_t) openib_eager_padded(size) + sizeof(struct openib_eager_footer);

    if (size > slot_size || need > slot_size) {
        return -1;
    }
    return (int64_t) (slot_size - need);
}

/* Offset of the slot that message number n (0, 1, ...) uses. */
static inline uint64_t openib_eager_slot_offset(uint32_t slots, uint32_t slot_size, uint32_t n)
{
    return (uint64_t) (n % slots) * slot_size;
}

/* Whether an offer describes a ring we can write into. */
static inline int openib_eager_offer_valid(const struct openib_eager_offer *o, size_t len)
{
    return len >= sizeof(*o) && o->version >= 1 && o->size >= sizeof(*o) && o->rkey != 0 &&
           o->addr != 0 && o->slots >= OPENIB_EAGER_MIN_SLOTS &&
           o->slots <= OPENIB_EAGER_MAX_SLOTS && o->slot_size >= OPENIB_EAGER_MIN_SLOT &&
           o->slot_size <= OPENIB_EAGER_MAX_SLOT && o->slot_size % 8 == 0;
}

#endif

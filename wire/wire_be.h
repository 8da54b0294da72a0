/*
 * wire_be.h - big-endian integers of 1 to 8 bytes: the one codec of every
 * connection-setup format (the modex blob, the oob, xoob and rdma_cm blobs
 * and messages). Callers check room before they write or read. What is
 * big-endian and what is not, and why: wire/README.md.
 */
#ifndef OPENIB_WIRE_BE_H
#define OPENIB_WIRE_BE_H

#include <stdint.h>

/* Writes the low n bytes of v at p, most significant first; returns p + n. */
static inline uint8_t *cpc_be_put(uint8_t *p, uint64_t v, int n)
{
    for (int i = n - 1; i >= 0; --i) {
        p[i] = (uint8_t) v;
        v >>= 8;
    }
    return p + n;
}

/* Reads n bytes at p, most significant first, into *v; returns p + n. */
static inline const uint8_t *cpc_be_get(const uint8_t *p, uint64_t *v, int n)
{
    *v = 0;
    for (int i = 0; i < n; ++i) {
        *v = *v << 8 | p[i];
    }
    return p + n;
}

/* cpc_be_get of a u16 or u32 field straight into its struct member, so a
 * decoder needs no 64-bit temporary to narrow. */
static inline const uint8_t *cpc_be_get16(const uint8_t *p, uint16_t *v)
{
    uint64_t x;

    p = cpc_be_get(p, &x, 2);
    *v = (uint16_t) x;
    return p;
}

static inline const uint8_t *cpc_be_get32(const uint8_t *p, uint32_t *v)
{
    uint64_t x;

    p = cpc_be_get(p, &x, 4);
    *v = (uint32_t) x;
    return p;
}

#endif

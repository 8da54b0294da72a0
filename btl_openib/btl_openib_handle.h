/*
 * btl_openib_handle.h - the registration handle: what a PML or osc ships to
 * a peer so it can RDMA into this process (btl_registration_handle_size
 * bytes, copied as they are; both ends run the same openib-ng).
 *
 * Device-free so the coverage rule is unit-tested.
 */
#ifndef BTL_OPENIB_HANDLE_H
#define BTL_OPENIB_HANDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mca_btl_base_registration_handle_t {
    uint32_t rkey;
    uint32_t lkey;
    uint32_t flags;        /* OPENIB_HANDLE_*; 0 for verbs-registered memory */
    uint32_t reserved;     /* zero */
    /* The registered range, so an operation the handle does not cover is
     * refused before it is posted: posted, it would be a remote access
     * error, which on RC takes the queue pair down with everything else
     * on it. */
    uint64_t base;
    uint64_t len;
};

/* Memory the NIC cannot register (HMEM without peer-direct): RDMA on it is
 * staged through a registered host bounce buffer. Local use only. */
#define OPENIB_HANDLE_BOUNCE 1u

/* Whether h registers [addr, addr + size), without overflow. */
static inline bool openib_handle_covers(const struct mca_btl_base_registration_handle_t *h,
                                        uint64_t addr, size_t size)
{
    return addr >= h->base && size <= h->len && addr - h->base <= h->len - size;
}

#endif

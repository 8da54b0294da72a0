/*
 * btl_openib_handle.h - the registration handle: what a PML or osc ships to
 * a peer so it can RDMA into this process (btl_registration_handle_size
 * bytes, copied as they are; both ends run the same openib-ng).
 *
 * Device-free so the coverage rule and the check word are unit-tested.
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
    uint32_t check;        /* openib_handle_check() of rkey, flags, base, len */
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

/* The check word of a handle. A peer's handle may be read while its source
 * changes: Open MPI 4.1's osc/rdma hands the BTL a pointer into a peer's
 * region table in shared memory, which a concurrent MPI_Win_attach moves
 * entry by entry. A copy taken then mixes two handles (one region's range
 * with the next one's rkey passes the range check, and the rkey is a remote
 * access error that takes the queue pair down); with the check word it
 * matches only by a 1 in 2^32 chance. A 64-bit mix of the four fields. */
static inline uint32_t openib_handle_check(const struct mca_btl_base_registration_handle_t *h)
{
    uint64_t x = 0x9e3779b97f4a7c15ull ^ ((uint64_t) h->rkey << 32 | h->flags);

    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull ^ h->base;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull ^ h->len;
    x = (x ^ (x >> 31)) * 0xbf58476d1ce4e5b9ull;
    return (uint32_t) (x ^ (x >> 32));
}

static inline void openib_handle_seal(struct mca_btl_base_registration_handle_t *h)
{
    h->check = openib_handle_check(h);
}

/* Copies a peer's handle once, each field read once (its source may be
 * changing), and tells whether the copy is one whole handle. Everything
 * after uses only the copy. */
static inline bool openib_handle_take(const struct mca_btl_base_registration_handle_t *src,
                                      struct mca_btl_base_registration_handle_t *dst)
{
    const volatile struct mca_btl_base_registration_handle_t *v = src;

    dst->rkey = v->rkey;
    dst->lkey = v->lkey;
    dst->flags = v->flags;
    dst->check = v->check;
    dst->base = v->base;
    dst->len = v->len;
    return dst->check == openib_handle_check(dst);
}

/* Whether h registers [addr, addr + size), without overflow. */
static inline bool openib_handle_covers(const struct mca_btl_base_registration_handle_t *h,
                                        uint64_t addr, size_t size)
{
    return addr >= h->base && size <= h->len && addr - h->base <= h->len - size;
}

/* How often in a row a caller may retry the very same refused operation
 * before openib ends the job rather than let it spin: Open MPI 4.1's
 * osc/rdma retries a contiguous put or get whatever the error
 * (ompi_osc_rdma_master), so a handle it got wrong would hang the job. A
 * caller that handles the error does not retry it unchanged 1000 times,
 * and osc's loop gets there within one progress call per retry. */
#define OPENIB_REFUSED_RETRIES 1000

/* The last refused operation of an endpoint: the handle's address (where
 * the caller keeps it) and the target address. */
struct openib_refusal {
    const void *handle;
    uint64_t remote;
    uint32_t repeats; /* retries of it unchanged, so far */
};

/* Notes a refusal; returns how many times in a row it repeats the last one
 * unchanged (0: a new one). */
static inline uint32_t openib_refusal_note(struct openib_refusal *r, const void *handle,
                                           uint64_t remote)
{
    if (r->handle != handle || r->remote != remote) {
        r->handle = handle;
        r->remote = remote;
        r->repeats = 0;
        return 0;
    }
    if (r->repeats < UINT32_MAX) {
        r->repeats++;
    }
    return r->repeats;
}

#endif

/*
 * hmem_private.h - what the files of hmem/ share and nothing else sees:
 * the object behind the public head, the iovec walker, the CUDA loader.
 */
#ifndef OPENIB_HMEM_PRIVATE_H
#define OPENIB_HMEM_PRIVATE_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "hmem/openib_hmem_btl.h"

#define HMEM_LIKELY(x) __builtin_expect(!!(x), 1)
#define HMEM_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Op types this build knows: 0 .. HMEM_OP_NUM - 1. */
#define HMEM_OP_NUM 2
/* Interfaces this build knows: 0 .. HMEM_IFACE_NUM - 1. */
#define HMEM_IFACE_NUM 4

struct hmem_obj {
    struct openib_hmem_object pub;     /* first: callers hold &pub */
    union openib_hmem_op ovr[HMEM_OP_NUM]; /* NULL member: built-in default;
                                              atomic loads/stores only */
    /* The tree and the list of all objects: under hmem_tree_lock. */
    struct hmem_obj *parent;
    struct hmem_obj *first_child;
    struct hmem_obj *next_sibling;
    struct hmem_obj *all_prev, *all_next;
    char *name;
    /* Counters: statistics, relaxed atomic load+store (see hmem_copy.c):
     * exact unless two threads copy through this object at once. */
    uint64_t calls[HMEM_OP_NUM];
    uint64_t bytes[HMEM_OP_NUM];
    uint64_t ovr_calls[HMEM_OP_NUM];
    uint64_t errors;
};

extern const struct openib_hmem_object_ops openib_hmem_obj_ops;

/* The private object behind a public head, or NULL if it is not ours. */
static inline struct hmem_obj *hmem_obj_of(const struct openib_hmem_object *o)
{
    if (HMEM_UNLIKELY(NULL == o || o->ops != &openib_hmem_obj_ops)) {
        return NULL;
    }
    return (struct hmem_obj *) o;
}

/* Remove every operation whose code lies in the shared object loaded at
 * `base` (a dladdr dli_fbase) from all live objects. Returns how many. */
int hmem_obj_forget_library(const void *base);

/*
 * Walk an iovec from byte `off` and hand each contiguous piece to `seg`
 * (hmem side, host side, length). The rules every copy shares:
 *   - off counts across all entries; zero-length entries are skipped;
 *   - off == total length copies nothing and returns 0;
 *   - off > total length is a caller bug: -EINVAL (even when len is 0);
 *   - at most len bytes; fewer when the iovec ends first (partial last entry);
 *   - a NULL base is -EFAULT only where bytes would be copied.
 * Static inline so each caller's constant `seg` is inlined (memcpy stays a
 * memcpy on the system path).
 */
typedef int (*hmem_seg_fn)(void *hmem, void *host, size_t n, uint64_t device);

static inline ssize_t hmem_iov_walk(const struct iovec *iov, size_t cnt, uint64_t off,
                                    void *host, size_t len, uint64_t device, hmem_seg_fn seg)
{
    size_t i = 0, done = 0;
    int rc;

    if (HMEM_UNLIKELY(len > (size_t) SSIZE_MAX || (NULL == iov && cnt > 0) ||
                      (NULL == host && len > 0))) {
        return -EINVAL;
    }
    /* Fast case: one entry that holds the whole range. */
    if (HMEM_LIKELY(1 == cnt && off <= iov[0].iov_len && len <= iov[0].iov_len - off)) {
        if (0 == len) {
            return 0;
        }
        if (HMEM_UNLIKELY(NULL == iov[0].iov_base)) {
            return -EFAULT;
        }
        rc = seg((char *) iov[0].iov_base + off, host, len, device);
        return rc < 0 ? rc : (ssize_t) len;
    }
    while (i < cnt && off >= iov[i].iov_len) {
        off -= iov[i].iov_len;
        ++i;
    }
    if (i == cnt) {
        return 0 == off ? 0 : -EINVAL;
    }
    for (; i < cnt && done < len; ++i, off = 0) {
        size_t n = iov[i].iov_len - off;

        if (n > len - done) {
            n = len - done;
        }
        if (0 == n) {
            continue;
        }
        if (HMEM_UNLIKELY(NULL == iov[i].iov_base)) {
            return -EFAULT;
        }
        rc = seg((char *) iov[i].iov_base + off, (char *) host + done, n, device);
        if (rc < 0) {
            return rc;
        }
        done += n;
    }
    return (ssize_t) done;
}

/* ---- CUDA (hmem_cuda.c): the driver library loaded at run time ---- */

/* Load the driver (env OPENIB_HMEM_CUDA_LIBRARY overrides "libcuda.so.1";
 * empty disables), cuInit, count devices. 0 when usable; why says what was
 * found either way. Called once, from the interface probe. */
int hmem_cuda_probe(char *why, size_t why_len);
/* True when addr is CUDA device or managed memory; *device = its ordinal. */
bool hmem_cuda_is_device_ptr(const void *addr, uint64_t *device);
/* Copy pieces for hmem_iov_walk: -EIO when the driver's copy fails. */
int hmem_cuda_seg_from(void *hmem, void *host, size_t n, uint64_t device);
int hmem_cuda_seg_to(void *hmem, void *host, size_t n, uint64_t device);

#endif /* OPENIB_HMEM_PRIVATE_H */

/*
 * hmem_private.h - what the files of hmem/ share and nothing else sees:
 * the object behind the public head, the iovec walker, the CUDA loader.
 *
 * Errors: everything declared here returns OPAL_* codes (as the rest of the
 * component does). The negative errno values of the HMEM ABI exist only at
 * its edge - the functions of openib/openib_hmem.h and hmem/openib_hmem_btl.h
 * - which convert once with openib_err_to_abi_errno (openib_errno.h).
 */
#ifndef OPENIB_HMEM_PRIVATE_H
#define OPENIB_HMEM_PRIVATE_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "opal/constants.h"

#include "common/openib_errno.h"
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
 *   - off > total length is a caller bug: OPAL_ERR_BAD_PARAM (even when len
 *     is 0);
 *   - at most len bytes; fewer when the iovec ends first (partial last entry);
 *   - a NULL base is OPAL_ERR_BUFFER only where bytes would be copied.
 * Returns the bytes copied or an OPAL code (seg's own, when it fails); the
 * ABI's -EINVAL / -EFAULT are what the edge makes of these two.
 * Static inline so each caller's constant `seg` is inlined (memcpy stays a
 * memcpy on the system path).
 */
/* One piece: OPAL_SUCCESS or an OPAL code. */
typedef int (*hmem_seg_fn)(void *hmem, void *host, size_t n, uint64_t device);

static inline ssize_t hmem_iov_walk(const struct iovec *iov, size_t cnt, uint64_t off,
                                    void *host, size_t len, uint64_t device, hmem_seg_fn seg)
{
    size_t i = 0, done = 0;
    int rc;

    if (HMEM_UNLIKELY(len > (size_t) SSIZE_MAX || (NULL == iov && cnt > 0) ||
                      (NULL == host && len > 0))) {
        return OPAL_ERR_BAD_PARAM;
    }
    /* Fast case: one entry that holds the whole range. */
    if (HMEM_LIKELY(1 == cnt && off <= iov[0].iov_len && len <= iov[0].iov_len - off)) {
        if (0 == len) {
            return 0;
        }
        if (HMEM_UNLIKELY(NULL == iov[0].iov_base)) {
            return OPAL_ERR_BUFFER;
        }
        rc = seg((char *) iov[0].iov_base + off, host, len, device);
        return rc < 0 ? rc : (ssize_t) len;
    }
    while (i < cnt && off >= iov[i].iov_len) {
        off -= iov[i].iov_len;
        ++i;
    }
    if (i == cnt) {
        return 0 == off ? 0 : OPAL_ERR_BAD_PARAM;
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
            return OPAL_ERR_BUFFER;
        }
        rc = seg((char *) iov[i].iov_base + off, (char *) host + done, n, device);
        if (rc < 0) {
            return rc;
        }
        done += n;
    }
    return (ssize_t) done;
}

/* ---- the memory-type cache (hmem_mtcache.c) ---- */

/* What a cached range is. HOST: ordinary host memory, cached a page at a
 * time and valid until the memory hooks report it released. The CUDA kinds
 * come from the driver with the allocation's range and buffer id; an entry
 * is used only after the driver confirms the id at the address (the driver
 * can free and re-create an allocation without any munmap we could see). */
enum hmem_mt_type {
    HMEM_MT_HOST = 0,
    HMEM_MT_CUDA_DEVICE = 1,
    HMEM_MT_CUDA_MANAGED = 2,
    HMEM_MT_CUDA_PINNED = 3, /* host memory the driver knows: memcpy is fine */
    /* Was a driver allocation, now freed: the driver's address space, not
     * host memory, though the driver does not know it any more. Every
     * lookup asks the driver; no host page is cached there (a dangling
     * pointer must not make a later allocation look like host memory). */
    HMEM_MT_CUDA_FREED = 4,
};

struct hmem_mt_entry {
    uintptr_t start, end; /* [start, end) */
    uint64_t buffer_id;   /* the driver's CU_POINTER_ATTRIBUTE_BUFFER_ID; 0 for HOST */
    uint32_t device;      /* CUDA ordinal */
    uint32_t type;        /* enum hmem_mt_type */
};

/* The entry holding addr, if any (lock-free, no allocation, no syscall). */
bool hmem_mt_lookup(uintptr_t addr, struct hmem_mt_entry *out);
/* True when the entry that answered last is a host range holding addr: the
 * send path's question for the buffer it sends again and again, answered
 * from one entry (three loads) without copying it out. False says nothing:
 * ask hmem_mt_lookup. */
bool hmem_mt_hint_is_host(uintptr_t addr);
/* Bumped by every release: an insert whose classification started under an
 * older generation is dropped (a release may have raced with it). */
uint64_t hmem_mt_generation(void);
/* Cache the page around addr as host memory (clipped to its neighbours),
 * if host caching is on and gen is still current. */
void hmem_mt_insert_host(uintptr_t addr, uint64_t gen);
/* Cache a driver allocation; entries it overlaps are stale and go. */
void hmem_mt_insert(const struct hmem_mt_entry *e, uint64_t gen);
/* e was found stale by the driver (its buffer id changed or vanished):
 * turn it into HMEM_MT_CUDA_FREED, if it is still there. */
void hmem_mt_mark_freed(const struct hmem_mt_entry *e);

/* ---- CUDA (hmem_cuda.c): the driver library loaded at run time ---- */

/* Load the driver library `lib` (dlopen + dlsym; no driver call), cuInit,
 * count devices. OPAL_SUCCESS when usable, else OPAL_ERR_NOT_AVAILABLE; why
 * says what was found either way. */
int hmem_cuda_start(const char *lib, char *why, size_t why_len);
/* True when `lib` is already loaded in this process (by the application or
 * its CUDA runtime): dlopen(RTLD_NOLOAD), which never loads it. */
bool hmem_cuda_lib_loaded(const char *lib);
/* Classify addr with the driver (started). HOST when the driver does not
 * know it; else the allocation's kind, range, buffer id and ordinal. */
void hmem_cuda_classify(const void *addr, struct hmem_mt_entry *e);
/* The buffer id of the allocation at addr: OPAL_SUCCESS, or
 * OPAL_ERR_NOT_FOUND when the driver does not know addr (any more). */
int hmem_cuda_buffer_id(const void *addr, uint64_t *id);
/* Copy pieces for hmem_iov_walk: OPAL_ERROR when the driver's copy fails
 * (the ABI's -EIO), OPAL_ERR_NOT_AVAILABLE without a driver (-ENODEV). */
int hmem_cuda_seg_from(void *hmem, void *host, size_t n, uint64_t device);
int hmem_cuda_seg_to(void *hmem, void *host, size_t n, uint64_t device);

#endif /* OPENIB_HMEM_PRIVATE_H */

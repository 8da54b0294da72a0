/*
 * hmem_copy.c - the copy entry points of the fragment path: dispatch to an
 * object's override or to the built-in default for the memory interface,
 * and count what was copied.
 *
 * The built-in copies work in OPAL codes; the exported copies (the defaults
 * get_op hands out, openib_hmem_copy_*) are the ABI edge and return bytes or
 * a negative errno. An override's result is already an ABI value and passes
 * through as it is (it may be any errno, which the table need not know).
 */
#include <string.h>

#include "hmem/hmem_private.h"

static int hmem_sys_seg_from(void *hmem, void *host, size_t n, uint64_t device)
{
    (void) device;
    memcpy(host, hmem, n);
    return OPAL_SUCCESS;
}

static int hmem_sys_seg_to(void *hmem, void *host, size_t n, uint64_t device)
{
    (void) device;
    memcpy(hmem, host, n);
    return OPAL_SUCCESS;
}

/* Built-in copies per interface. NULL: no built-in copy (-ENOSYS at the
 * edge; an override may still handle the interface). CUDA's pieces check
 * for themselves that the driver was loaded. */
static const struct hmem_iface_copy {
    hmem_seg_fn from;
    hmem_seg_fn to;
} hmem_iface_copy[HMEM_IFACE_NUM] = {
    [OPENIB_HMEM_SYSTEM] = { .from = hmem_sys_seg_from, .to = hmem_sys_seg_to },
    [OPENIB_HMEM_CUDA] = { .from = hmem_cuda_seg_from, .to = hmem_cuda_seg_to },
    [OPENIB_HMEM_ROCM] = { .from = NULL, .to = NULL },
    [OPENIB_HMEM_ZE] = { .from = NULL, .to = NULL },
};

/* OPAL_SUCCESS when iface can be copied by the defaults, else the error. */
static int hmem_iface_check(enum openib_hmem_iface iface)
{
    if ((unsigned) iface >= HMEM_IFACE_NUM) {
        return OPAL_ERR_BAD_PARAM;       /* -EINVAL */
    }
    if (NULL == hmem_iface_copy[iface].from) {
        return OPAL_ERR_NOT_IMPLEMENTED; /* -ENOSYS */
    }
    if (!openib_hmem_iface_has_copy(iface)) {
        return OPAL_ERR_NOT_AVAILABLE;   /* -ENODEV */
    }
    return OPAL_SUCCESS;
}

/* The built-in copy, both directions: bytes or an OPAL code. `buf` is the
 * host side. */
static inline ssize_t hmem_default_copy(bool to_hmem, enum openib_hmem_iface iface,
                                        uint64_t device, const struct iovec *iov, size_t cnt,
                                        uint64_t off, void *buf, size_t len)
{
    int rc;

    if (HMEM_LIKELY(OPENIB_HMEM_SYSTEM == iface)) {
        return hmem_iov_walk(iov, cnt, off, buf, len, device,
                             to_hmem ? hmem_sys_seg_to : hmem_sys_seg_from);
    }
    rc = hmem_iface_check(iface);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    return hmem_iov_walk(iov, cnt, off, buf, len, device,
                         to_hmem ? hmem_iface_copy[iface].to : hmem_iface_copy[iface].from);
}

/* The ABI edge of a copy result: bytes pass, an OPAL code becomes -errno. */
static inline ssize_t hmem_copy_abi(ssize_t rc)
{
    return HMEM_UNLIKELY(rc < 0) ? openib_err_to_abi_errno((int) rc) : rc;
}

ssize_t openib_hmem_default_copy_from_hmem_iov(void *dst, size_t len,
                                               enum openib_hmem_iface iface, uint64_t device,
                                               const struct iovec *iov, size_t cnt, uint64_t off)
{
    return hmem_copy_abi(hmem_default_copy(false, iface, device, iov, cnt, off, dst, len));
}

ssize_t openib_hmem_default_copy_to_hmem_iov(enum openib_hmem_iface iface, uint64_t device,
                                             const struct iovec *iov, size_t cnt, uint64_t off,
                                             const void *src, size_t len)
{
    return hmem_copy_abi(hmem_default_copy(true, iface, device, iov, cnt, off, (void *) src, len));
}

/* Statistics add: a relaxed load and store, not a locked add. It keeps the
 * system fast path at a few ns (a locked add costs more than a small
 * memcpy); two threads copying through the SAME object at the same instant
 * may lose an update. Exact counts across threads: count in an override
 * (see hmem/examples/openib_hmem_counting.c). */
static inline void hmem_stat_add(uint64_t *c, uint64_t v)
{
    __atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
}

/* Count one call; rc is an ABI result (bytes or -errno). An override that
 * claims more than it was asked for is a broken plug-in; the BTL must not
 * trust the count, so it becomes a failed copy (-EIO). */
static ssize_t hmem_account(const struct hmem_obj *co, int t, ssize_t rc, size_t len,
                            bool overridden)
{
    struct hmem_obj *o = (struct hmem_obj *) co; /* counters are mutable */

    if (HMEM_UNLIKELY(rc > 0 && (size_t) rc > len)) {
        rc = openib_err_to_abi_errno(OPAL_ERROR);
    }
    if (HMEM_UNLIKELY(rc < 0)) {
        hmem_stat_add(&o->errors, 1);
        return rc;
    }
    hmem_stat_add(&o->calls[t], 1);
    hmem_stat_add(&o->bytes[t], (uint64_t) rc);
    if (overridden) {
        hmem_stat_add(&o->ovr_calls[t], 1);
    }
    return rc;
}

/* Both directions: the object's override of the operation when it has one,
 * else the built-in copy (host memory: a walk of the iovec; device memory:
 * the interface's default), counted either way. `buf` is the host side. */
static ssize_t hmem_copy_iov(const struct openib_hmem_object *obj, bool to_hmem,
                             enum openib_hmem_iface iface, uint64_t device,
                             const struct iovec *iov, size_t cnt, uint64_t off, void *buf,
                             size_t len)
{
    const int t = to_hmem ? OPENIB_HMEM_OP_COPY_TO_HMEM_IOV : OPENIB_HMEM_OP_COPY_FROM_HMEM_IOV;
    const struct hmem_obj *o = hmem_obj_of(obj);
    union openib_hmem_op op;
    ssize_t rc;

    if (HMEM_UNLIKELY(NULL == o)) {
        return hmem_copy_abi(OPAL_ERR_BAD_PARAM);
    }
    __atomic_load(&o->ovr[t], &op, __ATOMIC_ACQUIRE);
    if (HMEM_LIKELY(to_hmem ? NULL == op.copy_to_hmem_iov : NULL == op.copy_from_hmem_iov)) {
        rc = hmem_default_copy(to_hmem, iface, device, iov, cnt, off, buf, len);
        return hmem_account(o, t, hmem_copy_abi(rc), len, false);
    }
    /* An override answers in the ABI's terms already. */
    rc = to_hmem ? op.copy_to_hmem_iov(iface, device, iov, cnt, off, buf, len)
                 : op.copy_from_hmem_iov(buf, len, iface, device, iov, cnt, off);
    return hmem_account(o, t, rc, len, true);
}

ssize_t openib_hmem_copy_from_iov(const struct openib_hmem_object *obj,
                                  enum openib_hmem_iface iface, uint64_t device, void *dst,
                                  size_t len, const struct iovec *iov, size_t cnt, uint64_t off)
{
    return hmem_copy_iov(obj, false, iface, device, iov, cnt, off, dst, len);
}

ssize_t openib_hmem_copy_to_iov(const struct openib_hmem_object *obj,
                                enum openib_hmem_iface iface, uint64_t device,
                                const struct iovec *iov, size_t cnt, uint64_t off,
                                const void *src, size_t len)
{
    return hmem_copy_iov(obj, true, iface, device, iov, cnt, off, (void *) src, len);
}

ssize_t openib_hmem_copy_from_buf(const struct openib_hmem_object *obj,
                                  enum openib_hmem_iface iface, uint64_t device, void *dst,
                                  const void *hmem_src, size_t len)
{
    const struct iovec iov = { .iov_base = (void *) hmem_src, .iov_len = len };
    const struct hmem_obj *o = hmem_obj_of(obj);
    union openib_hmem_op op;

    /* The eager send path: host memory, no override. One memcpy, no walk. */
    if (HMEM_LIKELY(NULL != o && OPENIB_HMEM_SYSTEM == iface)) {
        __atomic_load(&o->ovr[OPENIB_HMEM_OP_COPY_FROM_HMEM_IOV], &op, __ATOMIC_ACQUIRE);
        if (HMEM_LIKELY(NULL == op.copy_from_hmem_iov)) {
            memcpy(dst, hmem_src, len);
            return hmem_account(o, OPENIB_HMEM_OP_COPY_FROM_HMEM_IOV, (ssize_t) len, len, false);
        }
    }
    return openib_hmem_copy_from_iov(obj, iface, device, dst, len, &iov, 1, 0);
}

bool openib_hmem_is_plain_host(const struct openib_hmem_object *obj, const void *addr)
{
    const struct hmem_obj *o = hmem_obj_of(obj);
    enum openib_hmem_iface iface;
    union openib_hmem_op op;
    uint64_t dev;

    if (HMEM_UNLIKELY(NULL == o)) {
        return false;
    }
    __atomic_load(&o->ovr[OPENIB_HMEM_OP_COPY_FROM_HMEM_IOV], &op, __ATOMIC_ACQUIRE);
    if (NULL != op.copy_from_hmem_iov) {
        return false;
    }
    /* The small-send path asks this for every message: the last answer's
     * cache entry first, without the detection's state checks (measured:
     * 47 instructions a call instead of 83, bench/profile-lat.sh). */
    if (HMEM_LIKELY(hmem_mt_hint_is_host((uintptr_t) addr))) {
        return true;
    }
    openib_hmem_detect(addr, &iface, &dev);
    return OPENIB_HMEM_SYSTEM == iface;
}

ssize_t openib_hmem_copy_to_buf(const struct openib_hmem_object *obj,
                                enum openib_hmem_iface iface, uint64_t device, void *hmem_dst,
                                const void *src, size_t len)
{
    const struct iovec iov = { .iov_base = hmem_dst, .iov_len = len };

    return openib_hmem_copy_to_iov(obj, iface, device, &iov, 1, 0, src, len);
}

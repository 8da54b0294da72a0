/*
 * hmem_test_plugin.c - override plug-ins for test_hmem_plugin, compiled
 * against the FROZEN v1 header (tests/abi/hmem_v1 comes first on the include
 * path), as a plug-in built for the first release would be. One source,
 * several libraries, picked by macros:
 *   (none)          overrides copy_from_hmem_iov with set_op, counting and
 *                   chaining to the previous op; copy_to stays the default
 *   TP_SET_OPS      overrides copy_to_hmem_iov only, through set_ops with a
 *                   v1 struct (copy_from left NULL = default)
 *   TP_ABI=N        claims to be built against HMEM ABI version N
 *   TP_NO_INFO      exports no openib_hmem_plugin_info
 *   TP_INIT_FAILS   installs its op, then fails init with a reason
 *   TP_BIG_INFO     info larger than v1 with a non-zero unknown field
 *   TP_SMALL_INFO   info whose size is too small to hold a version
 */
#include <errno.h>
#include <stdio.h>

#include "openib/openib_hmem.h"

/* Read by the test through dlsym on a RTLD_NOLOAD handle. */
struct hmem_tp_counters {
    uint64_t from_calls, from_bytes, to_calls, to_bytes, fini_calls, abi_version;
};
__attribute__((visibility("default"))) struct hmem_tp_counters hmem_tp_counters = {
    .abi_version = OPENIB_HMEM_ABI_VERSION,
};

static union openib_hmem_op tp_next_from, tp_next_to;

static ssize_t tp_from(void *dst, size_t len, enum openib_hmem_iface iface, uint64_t device,
                       const struct iovec *iov, size_t cnt, uint64_t off)
{
    ssize_t rc = tp_next_from.copy_from_hmem_iov(dst, len, iface, device, iov, cnt, off);

    if (rc >= 0) {
        __atomic_fetch_add(&hmem_tp_counters.from_calls, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&hmem_tp_counters.from_bytes, (uint64_t) rc, __ATOMIC_RELAXED);
    }
    return rc;
}

static ssize_t tp_to(enum openib_hmem_iface iface, uint64_t device, const struct iovec *iov,
                     size_t cnt, uint64_t off, const void *src, size_t len)
{
    ssize_t rc = tp_next_to.copy_to_hmem_iov(iface, device, iov, cnt, off, src, len);

    if (rc >= 0) {
        __atomic_fetch_add(&hmem_tp_counters.to_calls, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&hmem_tp_counters.to_bytes, (uint64_t) rc, __ATOMIC_RELAXED);
    }
    return rc;
}

static int tp_init(struct openib_hmem_object *root, char *why, size_t why_len)
{
    int rc;

#ifdef TP_SET_OPS
    struct openib_hmem_override_ops ops = OPENIB_HMEM_OVERRIDE_OPS_INITIALIZER;

    (void) tp_from;
    rc = openib_hmem_get_op(root, OPENIB_HMEM_OP_COPY_TO_HMEM_IOV, &tp_next_to, 0);
    if (0 != rc) {
        snprintf(why, why_len, "get_op(copy_to_hmem_iov) returned %d", rc);
        return rc;
    }
    ops.copy_to_hmem_iov = tp_to;
    rc = openib_hmem_set_ops(root, &ops);
    if (0 != rc) {
        snprintf(why, why_len, "set_ops returned %d", rc);
        return rc;
    }
#else
    union openib_hmem_op op = { .copy_from_hmem_iov = tp_from };

    (void) tp_to;
    rc = openib_hmem_get_op(root, OPENIB_HMEM_OP_COPY_FROM_HMEM_IOV, &tp_next_from, 0);
    if (0 != rc) {
        snprintf(why, why_len, "get_op(copy_from_hmem_iov) returned %d", rc);
        return rc;
    }
    rc = openib_hmem_set_op(root, OPENIB_HMEM_OP_COPY_FROM_HMEM_IOV, &op, 0);
    if (0 != rc) {
        snprintf(why, why_len, "set_op(copy_from_hmem_iov) returned %d", rc);
        return rc;
    }
#endif
#ifdef TP_INIT_FAILS
    snprintf(why, why_len, "the test plug-in refuses on purpose");
    return -EPERM;
#endif
    return 0;
}

static void tp_fini(void)
{
    hmem_tp_counters.fini_calls++;
}

#if defined(TP_NO_INFO)
/* Nothing exported under the plug-in symbol. */
__attribute__((visibility("default"))) int (*hmem_tp_not_info)(struct openib_hmem_object *,
                                                               char *, size_t) = tp_init;
void *hmem_tp_keep_fini = (void *) tp_fini;
#elif defined(TP_BIG_INFO)
/* A "future" plug-in: v1 info followed by a field this component lacks. */
struct tp_info_v9 {
    struct openib_hmem_plugin_info v1;
    uint64_t future_field;
};
__attribute__((visibility("default"))) const struct tp_info_v9 openib_hmem_plugin_info = {
    .v1 = { .size = sizeof(struct tp_info_v9), .abi_version = OPENIB_HMEM_ABI_VERSION,
            .name = "tp-big", .init = tp_init, .fini = tp_fini },
    .future_field = 1,
};
#elif defined(TP_SMALL_INFO)
__attribute__((visibility("default"))) const struct openib_hmem_plugin_info
    openib_hmem_plugin_info = { .size = 4, .abi_version = OPENIB_HMEM_ABI_VERSION,
                                .name = "tp-small", .init = tp_init, .fini = tp_fini };
#elif defined(TP_ABI)
__attribute__((visibility("default"))) const struct openib_hmem_plugin_info
    openib_hmem_plugin_info = { .size = sizeof(struct openib_hmem_plugin_info),
                                .abi_version = TP_ABI, .name = "tp-abi", .init = tp_init,
                                .fini = tp_fini };
#else
OPENIB_HMEM_PLUGIN_DEFINE("tp-v1", tp_init, tp_fini);
#endif

/*
 * openib_hmem.h - HMEM copy hooks of the openib-ng BTL (installed header).
 *
 * Every time the BTL copies message payload between user memory and its own
 * host buffers (packing eager/inline sends, staging RDMA through registered
 * bounce buffers) it calls one of two copy operations:
 *
 *   copy_from_hmem_iov  user memory (an iovec in some memory interface,
 *                       starting `hmem_iov_offset` bytes in) -> host buffer
 *   copy_to_hmem_iov    host buffer -> user memory (iovec + offset)
 *
 * Each has a built-in default per memory interface (memcpy for system memory,
 * the CUDA driver's copy for CUDA memory). Either can be overridden, one
 * operation at a time, on an HMEM object:
 *
 *   openib_hmem_set_op(obj, OPENIB_HMEM_OP_COPY_FROM_HMEM_IOV, &op, 0);
 *
 * Objects form a tree: the component has one root object and creates one
 * object per BTL module from it. An override set on an object applies to it
 * and to every object created from it afterwards (a child copies its
 * parent's table when it is created); pass OPENIB_HMEM_FLAG_DESCENDANTS to
 * also reach the objects created before.
 *
 * How to reach the root object:
 *   - from a plug-in library named by the MCA parameter
 *     btl_openib_hmem_override=/path/lib.so: the library exports
 *     `openib_hmem_plugin_info` (OPENIB_HMEM_PLUGIN_DEFINE); its init function
 *     receives the root and calls set_op. The component checks the ABI
 *     version the plug-in was built against before calling it.
 *   - from an application, after MPI_Init: openib_hmem_find_root() looks the
 *     root up in the loaded component. Modules exist by then, so an
 *     application passes OPENIB_HMEM_FLAG_DESCENDANTS.
 *
 * Everything below is reached through function pointers and static inline
 * helpers, so neither an application nor a plug-in links against the
 * component.
 *
 * Not-supported results (-ENOSYS: the object has no override support at all;
 * -EOPNOTSUPP: not this operation) are NOT fatal: the BTL then keeps using
 * its default for that operation. Test with openib_hmem_not_supported().
 *
 * Versioning: every struct starts with `uint32_t size`, set by its
 * _INITIALIZER or _init() from the header the caller compiled against, and
 * follows the rules of openib_abi.h (fields never move, structs only grow, a
 * reader checks the caller's size before touching a newer field, a larger
 * struct is accepted only when its unknown tail is zero, else -E2BIG; one
 * smaller than v1 is -EINVAL). Enum values and op-type numbers are never
 * renumbered or reused. Version history:
 *   v1  first release.
 */
#ifndef OPENIB_HMEM_H
#define OPENIB_HMEM_H

#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "openib/openib_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI this header describes. A plug-in records it (through
 * OPENIB_HMEM_PLUGIN_DEFINE) and the component checks it at load: plug-ins
 * built against OPENIB_HMEM_ABI_VERSION_MIN .. OPENIB_HMEM_ABI_VERSION of
 * the component's own header are accepted. */
#define OPENIB_HMEM_ABI_VERSION 1
#define OPENIB_HMEM_ABI_VERSION_MIN 1

/* Memory interfaces. Stable numbers: never renumbered or reused. */
enum openib_hmem_iface {
    OPENIB_HMEM_SYSTEM = 0, /* host memory; always available */
    OPENIB_HMEM_CUDA = 1,   /* NVIDIA CUDA device or managed memory */
    OPENIB_HMEM_ROCM = 2,   /* AMD ROCm */
    OPENIB_HMEM_ZE = 3,     /* Intel oneAPI Level Zero */
};

static inline const char *openib_hmem_iface_name(enum openib_hmem_iface iface)
{
    switch (iface) {
    case OPENIB_HMEM_SYSTEM: return "system";
    case OPENIB_HMEM_CUDA: return "cuda";
    case OPENIB_HMEM_ROCM: return "rocm";
    case OPENIB_HMEM_ZE: return "ze";
    }
    return "unknown";
}

/*
 * The two copy operations. `device` is the interface's device id (CUDA:
 * the device ordinal; system: 0). The iovec is walked from byte
 * `hmem_iov_offset` (counted across all entries; zero-length entries are
 * skipped); at most `len` bytes are copied, fewer when the iovec ends first.
 * Returns the bytes copied (0 when the offset is exactly the iovec's end) or
 * a negative errno: -EINVAL for an offset past the end or bad arguments,
 * -EFAULT for a NULL base in a non-empty entry that would be touched,
 * -ENOSYS when there is no copy for the interface, -ENODEV when its runtime
 * is absent, -EIO when the runtime's copy failed.
 * An override is called for every interface and must handle them all; it can
 * get the previous (or built-in) operation with openib_hmem_get_op() and
 * call it for the interfaces it does not care about.
 */
typedef ssize_t (*openib_hmem_copy_from_hmem_iov_fn)(void *dst, size_t len,
                                                     enum openib_hmem_iface iface, uint64_t device,
                                                     const struct iovec *hmem_iov,
                                                     size_t hmem_iov_count,
                                                     uint64_t hmem_iov_offset);
typedef ssize_t (*openib_hmem_copy_to_hmem_iov_fn)(enum openib_hmem_iface iface, uint64_t device,
                                                   const struct iovec *hmem_iov,
                                                   size_t hmem_iov_count,
                                                   uint64_t hmem_iov_offset, const void *src,
                                                   size_t len);

/* Operation types for set_op/get_op. Stable numbers: never renumbered or
 * reused; a component that does not know a type returns -EOPNOTSUPP. */
enum openib_hmem_op_type {
    OPENIB_HMEM_OP_COPY_FROM_HMEM_IOV = 0, /* v1 */
    OPENIB_HMEM_OP_COPY_TO_HMEM_IOV = 1,   /* v1 */
};

/* One operation, by type. Every member is a function pointer, so the union
 * never changes size when members are added. A NULL member (or a NULL union
 * pointer) given to set_op means "back to the built-in default". */
union openib_hmem_op {
    openib_hmem_copy_from_hmem_iov_fn copy_from_hmem_iov; /* OPENIB_HMEM_OP_COPY_FROM_HMEM_IOV */
    openib_hmem_copy_to_hmem_iov_fn copy_to_hmem_iov;     /* OPENIB_HMEM_OP_COPY_TO_HMEM_IOV */
};
#define OPENIB_HMEM_OP_INITIALIZER { .copy_from_hmem_iov = NULL }
static inline int openib_hmem_op_init(union openib_hmem_op *op)
{
    memset(op, 0, sizeof(*op));
    return 0;
}
static inline void openib_hmem_op_destroy(union openib_hmem_op *op)
{
    (void) op;
}

/* Flags. A function given a flag it does not know returns -EINVAL. */
/* set_op / set_ops: also apply to every object already created from this one
 * (recursively), not only to the ones created afterwards. */
#define OPENIB_HMEM_FLAG_DESCENDANTS (1ull << 0)
/* get_op: return the built-in default even when the object has an override. */
#define OPENIB_HMEM_FLAG_DEFAULT (1ull << 1)

/*
 * The whole override table in one call (openib_hmem_set_ops), for callers
 * that prefer a struct. It replaces the object's table: an op is used only if
 * `size` covers it and it is non-NULL; every other op goes back to the
 * built-in default. Rules: openib_abi.h (smaller than v1: -EINVAL; larger
 * with a non-zero unknown tail: -E2BIG; on any error nothing changes).
 */
struct openib_hmem_override_ops {
    uint32_t size;                                      /* v1: sizeof as the caller compiled */
    uint32_t flags;                                     /* v1: OPENIB_HMEM_FLAG_DESCENDANTS or 0 */
    openib_hmem_copy_from_hmem_iov_fn copy_from_hmem_iov; /* v1 */
    openib_hmem_copy_to_hmem_iov_fn copy_to_hmem_iov;     /* v1 */
};
#define OPENIB_HMEM_OVERRIDE_OPS_V1_SIZE \
    OPENIB_SIZE_THROUGH(struct openib_hmem_override_ops, copy_to_hmem_iov)
#define OPENIB_HMEM_OVERRIDE_OPS_INITIALIZER { .size = sizeof(struct openib_hmem_override_ops) }
/* int openib_hmem_override_ops_init(struct openib_hmem_override_ops *) and
 * void openib_hmem_override_ops_destroy(...) (openib_abi.h) */
OPENIB_ABI_SIZED_FUNCTIONS(openib_hmem_override_ops)

/*
 * Counters of one object (output of openib_hmem_get_stats). The component
 * fills the fields the caller's `size` covers and zeroes any bytes between
 * the end of what it knows and `size`. Counts are since the object was
 * created; a call is counted under its op whether it went to the default or
 * to an override. They are statistics kept cheaply: exact while one thread
 * at a time copies through the object, possibly short by a few calls when
 * several do at the same instant (count in an override for exact totals).
 */
struct openib_hmem_stats {
    uint32_t size;                     /* v1 */
    uint32_t pad;                      /* v1: zero */
    uint64_t from_hmem_calls;          /* v1: copy_from_hmem_iov calls that succeeded */
    uint64_t from_hmem_bytes;          /* v1: bytes they copied */
    uint64_t from_hmem_override_calls; /* v1: of those calls, how many an override did */
    uint64_t to_hmem_calls;            /* v1 */
    uint64_t to_hmem_bytes;            /* v1 */
    uint64_t to_hmem_override_calls;   /* v1 */
    uint64_t errors;                   /* v1: calls of either op that failed */
};
#define OPENIB_HMEM_STATS_V1_SIZE OPENIB_SIZE_THROUGH(struct openib_hmem_stats, errors)
#define OPENIB_HMEM_STATS_INITIALIZER { .size = sizeof(struct openib_hmem_stats) }
/* int openib_hmem_stats_init(struct openib_hmem_stats *) and
 * void openib_hmem_stats_destroy(...) (openib_abi.h) */
OPENIB_ABI_SIZED_FUNCTIONS(openib_hmem_stats)

struct openib_hmem_object;

/*
 * What an object supports (component -> caller, read-only). A missing or NULL
 * member means "not supported by this object": the inline wrappers below
 * return -ENOSYS. Rules: openib_abi.h. v1: all members below.
 */
struct openib_hmem_object_ops {
    uint32_t size; /* v1 */
    uint32_t pad;  /* v1: zero */
    int (*set_op)(struct openib_hmem_object *obj, enum openib_hmem_op_type type,
                  const union openib_hmem_op *op, uint64_t flags);              /* v1 */
    int (*get_op)(const struct openib_hmem_object *obj, enum openib_hmem_op_type type,
                  union openib_hmem_op *op, uint64_t flags);                    /* v1 */
    int (*set_ops)(struct openib_hmem_object *obj,
                   const struct openib_hmem_override_ops *ops);                 /* v1 */
    int (*get_stats)(const struct openib_hmem_object *obj,
                     struct openib_hmem_stats *stats);                          /* v1 */
};
#define OPENIB_HMEM_OBJECT_OPS_INITIALIZER { .size = sizeof(struct openib_hmem_object_ops) }
/* int openib_hmem_object_ops_init(struct openib_hmem_object_ops *) and
 * void openib_hmem_object_ops_destroy(...) (openib_abi.h) */
OPENIB_ABI_SIZED_FUNCTIONS(openib_hmem_object_ops)

/*
 * The public head of an HMEM object. The component allocates its objects
 * (with private state after this head); callers only read the head. The
 * initializer, _init and _destroy exist for code that implements an object
 * of its own (tests, wrappers); they never create or free a component
 * object. Rules: openib_abi.h. v1: all members below.
 */
struct openib_hmem_object {
    uint32_t size;                            /* v1: sizeof this head as its creator compiled */
    uint32_t abi_version;                     /* v1: OPENIB_HMEM_ABI_VERSION of its creator */
    const struct openib_hmem_object_ops *ops; /* v1: NULL = supports nothing */
    const char *name;                         /* v1: for messages, e.g. "btl_openib" */
};
#define OPENIB_HMEM_OBJECT_V1_SIZE OPENIB_SIZE_THROUGH(struct openib_hmem_object, name)
#define OPENIB_HMEM_OBJECT_INITIALIZER \
    { .size = sizeof(struct openib_hmem_object), .abi_version = OPENIB_HMEM_ABI_VERSION }
/* int openib_hmem_object_init(struct openib_hmem_object *) (abi_version set
 * too) and void openib_hmem_object_destroy(...) (openib_abi.h) */
OPENIB_ABI_VERSIONED_FUNCTIONS(openib_hmem_object, OPENIB_HMEM_ABI_VERSION)

/* True for the results callers must treat as "not supported, carry on". */
static inline int openib_hmem_not_supported(int rc)
{
    return -ENOSYS == rc || -EOPNOTSUPP == rc;
}

/* The object's ops table, or NULL when the object offers none. */
static inline const struct openib_hmem_object_ops *
openib_hmem_object_ops_of(const struct openib_hmem_object *obj)
{
    if (NULL == obj || obj->size < OPENIB_SIZE_THROUGH(struct openib_hmem_object, ops) ||
        NULL == obj->ops || obj->ops->size < OPENIB_SIZE_THROUGH(struct openib_hmem_object_ops, pad)) {
        return NULL;
    }
    return obj->ops;
}

/*
 * Override one operation on obj (and on objects created from it afterwards;
 * with OPENIB_HMEM_FLAG_DESCENDANTS also on those created before).
 * op NULL or its member NULL restores the built-in default.
 * Returns 0, -ENOSYS (object without override support), -EOPNOTSUPP
 * (operation type unknown to this object) - both non-fatal - or -EINVAL
 * (unknown flag).
 */
static inline int openib_hmem_set_op(struct openib_hmem_object *obj,
                                     enum openib_hmem_op_type type,
                                     const union openib_hmem_op *op, uint64_t flags)
{
    const struct openib_hmem_object_ops *ops = openib_hmem_object_ops_of(obj);

    if (NULL == ops || !OPENIB_HAS_FIELD(ops, struct openib_hmem_object_ops, set_op) ||
        NULL == ops->set_op) {
        return -ENOSYS;
    }
    return ops->set_op(obj, type, op, flags);
}

/* The operation obj currently uses: its override, else the built-in default
 * (always non-NULL on success; with OPENIB_HMEM_FLAG_DEFAULT: the default).
 * An override may save it and call it to chain. Same error codes as set_op. */
static inline int openib_hmem_get_op(const struct openib_hmem_object *obj,
                                     enum openib_hmem_op_type type, union openib_hmem_op *op,
                                     uint64_t flags)
{
    const struct openib_hmem_object_ops *ops = openib_hmem_object_ops_of(obj);

    if (NULL == ops || !OPENIB_HAS_FIELD(ops, struct openib_hmem_object_ops, get_op) ||
        NULL == ops->get_op) {
        return -ENOSYS;
    }
    return ops->get_op(obj, type, op, flags);
}

/* Replace obj's whole override table (see struct openib_hmem_override_ops).
 * Returns 0, -ENOSYS, -EINVAL (NULL, smaller than v1, unknown flag) or
 * -E2BIG (non-zero bytes past what the component knows). */
static inline int openib_hmem_set_ops(struct openib_hmem_object *obj,
                                      const struct openib_hmem_override_ops *ops)
{
    const struct openib_hmem_object_ops *oops = openib_hmem_object_ops_of(obj);

    if (NULL == oops || !OPENIB_HAS_FIELD(oops, struct openib_hmem_object_ops, set_ops) ||
        NULL == oops->set_ops) {
        return -ENOSYS;
    }
    return oops->set_ops(obj, ops);
}

/* Read obj's counters into *stats (stats->size set by its initializer). */
static inline int openib_hmem_get_stats(const struct openib_hmem_object *obj,
                                        struct openib_hmem_stats *stats)
{
    const struct openib_hmem_object_ops *ops = openib_hmem_object_ops_of(obj);

    if (NULL == ops || !OPENIB_HAS_FIELD(ops, struct openib_hmem_object_ops, get_stats) ||
        NULL == ops->get_stats) {
        return -ENOSYS;
    }
    return ops->get_stats(obj, stats);
}

/* ---- plug-ins (btl_openib_hmem_override=/path/lib.so) ---------------- */

/* The plug-in's init: called once with the component's root object, before
 * any BTL module exists. Return 0, or a negative errno with a reason in
 * `why` (shown to the user); on failure the component forgets every
 * operation the plug-in had installed. */
typedef int (*openib_hmem_plugin_init_fn)(struct openib_hmem_object *root, char *why,
                                          size_t why_len);
/* Optional: called before the component unloads the plug-in; by then the
 * component has removed the plug-in's operations from every object. */
typedef void (*openib_hmem_plugin_fini_fn)(void);

/*
 * What a plug-in exports under the name OPENIB_HMEM_PLUGIN_SYMBOL. The
 * component checks `size` by the rules of openib_abi.h and refuses an
 * `abi_version` outside OPENIB_HMEM_ABI_VERSION_MIN..OPENIB_HMEM_ABI_VERSION
 * of its own header, with a message naming both versions.
 */
struct openib_hmem_plugin_info {
    uint32_t size;                   /* v1: sizeof as the plug-in compiled */
    uint32_t abi_version;            /* v1: OPENIB_HMEM_ABI_VERSION as the plug-in compiled */
    const char *name;                /* v1: for messages */
    openib_hmem_plugin_init_fn init; /* v1: required */
    openib_hmem_plugin_fini_fn fini; /* v1: optional */
};
#define OPENIB_HMEM_PLUGIN_SYMBOL "openib_hmem_plugin_info"
#define OPENIB_HMEM_PLUGIN_INFO_V1_SIZE OPENIB_SIZE_THROUGH(struct openib_hmem_plugin_info, fini)
#define OPENIB_HMEM_PLUGIN_INFO_INITIALIZER(name_, init_, fini_)                                  \
    {                                                                                            \
        .size = sizeof(struct openib_hmem_plugin_info), .abi_version = OPENIB_HMEM_ABI_VERSION,  \
        .name = (name_), .init = (init_), .fini = (fini_)                                        \
    }
/* int openib_hmem_plugin_info_init(struct openib_hmem_plugin_info *) (abi_version
 * set too) and void openib_hmem_plugin_info_destroy(...) (openib_abi.h) */
OPENIB_ABI_VERSIONED_FUNCTIONS(openib_hmem_plugin_info, OPENIB_HMEM_ABI_VERSION)

/* In a plug-in's source, at file scope:
 *   OPENIB_HMEM_PLUGIN_DEFINE("my-plugin", my_init, my_fini);          */
#ifdef __cplusplus
#define OPENIB_HMEM_PLUGIN_LINKAGE extern "C"
#else
#define OPENIB_HMEM_PLUGIN_LINKAGE
#endif
#define OPENIB_HMEM_PLUGIN_DEFINE(name_, init_, fini_)                                  \
    OPENIB_HMEM_PLUGIN_LINKAGE __attribute__((visibility("default")))                  \
    const struct openib_hmem_plugin_info openib_hmem_plugin_info =                      \
        OPENIB_HMEM_PLUGIN_INFO_INITIALIZER(name_, init_, fini_)

/* ---- applications: finding the root object ---------------------------- */

/* The component exports `struct openib_hmem_object *openib_hmem_root(void)`. */
#define OPENIB_HMEM_ROOT_SYMBOL "openib_hmem_root"
typedef struct openib_hmem_object *(*openib_hmem_root_fn)(void);
/* The component's file name, tried when Open MPI loaded it privately
 * (RTLD_LOCAL); define before including this header to look elsewhere. */
#ifndef OPENIB_HMEM_COMPONENT_SONAME
#define OPENIB_HMEM_COMPONENT_SONAME "mca_btl_openib.so"
#endif

/*
 * Find the component's root object (call after MPI_Init). Returns 0 and sets
 * *root; -ENOSYS when the component is not loaded; -ENODEV when it is loaded
 * but has no root (not initialized, or disqualified itself); -EPROTO when the
 * root's head is older than v1. Link with -ldl on glibc older than 2.34.
 * The global scope is searched with RTLD_DEFAULT where the C library has it
 * (define OPENIB_HMEM_FIND_ROOT_NO_RTLD_DEFAULT to use dlopen(NULL)).
 */
static inline int openib_hmem_find_root(struct openib_hmem_object **root)
{
    void *sym = NULL;
    void *h;
    openib_hmem_root_fn fn;
    struct openib_hmem_object *r;

    if (NULL == root) {
        return -EINVAL;
    }
    *root = NULL;
#if defined(RTLD_DEFAULT) && !defined(OPENIB_HMEM_FIND_ROOT_NO_RTLD_DEFAULT)
    sym = dlsym(RTLD_DEFAULT, OPENIB_HMEM_ROOT_SYMBOL);
#else
    /* No RTLD_DEFAULT (older C libraries): the global scope, as POSIX
     * defines dlopen(NULL). */
    h = dlopen(NULL, RTLD_LAZY);
    if (NULL != h) {
        sym = dlsym(h, OPENIB_HMEM_ROOT_SYMBOL);
        dlclose(h);
    }
#endif
#ifdef RTLD_NOLOAD
    if (NULL == sym) {
        /* Not in the global scope: the component may be loaded RTLD_LOCAL. */
        h = dlopen(OPENIB_HMEM_COMPONENT_SONAME, RTLD_LAZY | RTLD_NOLOAD);
        if (NULL != h) {
            sym = dlsym(h, OPENIB_HMEM_ROOT_SYMBOL);
            dlclose(h); /* Open MPI still holds its own reference */
        }
    }
#endif
    if (NULL == sym) {
        return -ENOSYS;
    }
    memcpy(&fn, &sym, sizeof(fn));
    r = fn();
    if (NULL == r) {
        return -ENODEV;
    }
    if (r->size < OPENIB_HMEM_OBJECT_V1_SIZE || r->abi_version < 1) {
        return -EPROTO;
    }
    *root = r;
    return 0;
}

#ifdef __cplusplus
}
#endif
#endif /* OPENIB_HMEM_H */

/*
 * openib_hmem_btl.h - the HMEM copy hooks as the BTL sees them.
 *
 * Lifecycle (component open/close are single-threaded):
 *   openib_hmem_register_params()   component register: btl_openib_hmem_override,
 *                                   btl_openib_hmem_cuda
 *   openib_hmem_component_init()    component init: check btl_openib_hmem_cuda,
 *                                   probe memory interfaces, hook the
 *                                   memory-type cache to Open MPI's memory
 *                                   hooks, create and publish the root
 *                                   object, load the override plug-in the
 *                                   parameter names (errors shown through
 *                                   opal_show_help)
 *   openib_hmem_object_create()     per BTL module, from the root
 *   openib_hmem_copy_*()            the fragment path: every payload copy
 *   openib_hmem_object_free()       per module, at module finalize
 *   openib_hmem_component_fini()    component close: root, then plug-ins
 *
 * Copy functions return bytes copied or a negative errno (see the op
 * signatures in openib/openib_hmem.h); lifecycle functions return OPAL_*
 * codes; object functions return 0 or a negative errno. The negative errno
 * functions are the HMEM ABI's edge: behind them hmem/ works in OPAL codes
 * (hmem_private.h) and each converts once (common/openib_errno.h).
 */
#ifndef OPENIB_HMEM_BTL_H
#define OPENIB_HMEM_BTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "openib/openib_hmem.h"

/* ---- component lifecycle (OPAL_* return codes) ---- */

struct mca_base_component_2_1_0_t;
/* Registers <type>_<component>_hmem_override (btl_openib_hmem_override), a
 * string: path of an override plug-in, empty = none; and
 * <type>_<component>_hmem_cuda: auto, never or always (when CUDA starts). */
int openib_hmem_register_params(const struct mca_base_component_2_1_0_t *btl_component);

/* Probe memory interfaces, create the root object (published for
 * openib_hmem_root()), load the plug-in named by the parameter. On a plug-in
 * failure the reason has been shown with opal_show_help, nothing is left
 * behind, and OPAL_ERR_BAD_PARAM is returned: the user asked for an override
 * that cannot be honoured, so the component should not run without it. */
int openib_hmem_component_init(struct openib_hmem_object **root);

/* Free the root (after every module object), then unload plug-ins. */
void openib_hmem_component_fini(void);

/* Load the plug-in `value` into root; on failure show the help text naming
 * `param_name` and return OPAL_ERR_BAD_PARAM. Empty/NULL value: nothing. */
int openib_hmem_apply_override(struct openib_hmem_object *root, const char *param_name,
                               const char *value);

/* ---- objects (0 or negative errno) ---- */

/* A new object: parent NULL makes a root; otherwise the child starts with a
 * copy of the parent's override table. `name` is copied. */
int openib_hmem_object_create(struct openib_hmem_object *parent, const char *name,
                              struct openib_hmem_object **out);
/* Free an object (NULL: no-op). Its children stay valid and become roots. */
void openib_hmem_object_free(struct openib_hmem_object *obj);

/* Make obj the object openib_hmem_root() returns (NULL: none). */
void openib_hmem_publish_root(struct openib_hmem_object *obj);

/* The component's exported lookup symbol (OPENIB_HMEM_ROOT_SYMBOL). */
struct openib_hmem_object *openib_hmem_root(void);

/* Counters (also reachable through openib_hmem_get_stats). */
int openib_hmem_object_stats(const struct openib_hmem_object *obj, struct openib_hmem_stats *st);
void openib_hmem_object_reset_stats(struct openib_hmem_object *obj);

/* True when obj has an override for `type` (the BTL may log it). */
bool openib_hmem_object_overridden(const struct openib_hmem_object *obj,
                                   enum openib_hmem_op_type type);

/* ---- the fragment path ---- */

/* HMEM iovec (from byte `off`) -> host dst, at most len bytes. Goes to obj's
 * override for the op if there is one, else to the built-in default; system
 * memory without override is one branch and memcpy. */
ssize_t openib_hmem_copy_from_iov(const struct openib_hmem_object *obj,
                                  enum openib_hmem_iface iface, uint64_t device, void *dst,
                                  size_t len, const struct iovec *iov, size_t cnt, uint64_t off);

/* Host src -> HMEM iovec (from byte `off`), at most len bytes. */
ssize_t openib_hmem_copy_to_iov(const struct openib_hmem_object *obj,
                                enum openib_hmem_iface iface, uint64_t device,
                                const struct iovec *iov, size_t cnt, uint64_t off,
                                const void *src, size_t len);

/* One contiguous user buffer: the common case of prepare_src/sendi. */
ssize_t openib_hmem_copy_from_buf(const struct openib_hmem_object *obj,
                                  enum openib_hmem_iface iface, uint64_t device, void *dst,
                                  const void *hmem_src, size_t len);
ssize_t openib_hmem_copy_to_buf(const struct openib_hmem_object *obj,
                                enum openib_hmem_iface iface, uint64_t device, void *hmem_dst,
                                const void *src, size_t len);

/* The built-in defaults (what get_op returns when there is no override). */
ssize_t openib_hmem_default_copy_from_hmem_iov(void *dst, size_t len,
                                               enum openib_hmem_iface iface, uint64_t device,
                                               const struct iovec *iov, size_t cnt,
                                               uint64_t off);
ssize_t openib_hmem_default_copy_to_hmem_iov(enum openib_hmem_iface iface, uint64_t device,
                                             const struct iovec *iov, size_t cnt, uint64_t off,
                                             const void *src, size_t len);

/* ---- memory interfaces ---- */

/* Probe every interface once (later calls return at once). */
void openib_hmem_iface_probe(void);
/* The interface's runtime was found (system: always). */
bool openib_hmem_iface_available(enum openib_hmem_iface iface);
/* The interface has a built-in copy (system, and CUDA when available). */
bool openib_hmem_iface_has_copy(enum openib_hmem_iface iface);
/* One line for logs: "cuda: not available: libcuda.so.1 not found (...)". */
const char *openib_hmem_iface_status(enum openib_hmem_iface iface);

/* True when copying from addr with obj would be a plain memcpy: host memory
 * and no copy_from override. Lets the send path hand such bytes straight to
 * the NIC (inline) instead of staging them, without bypassing an override. */
bool openib_hmem_is_plain_host(const struct openib_hmem_object *obj, const void *addr);

/* Which interface addr belongs to, and its device id. addr is a byte the
 * caller is about to copy or register (live memory: its page is cached as
 * host memory when the driver does not know it). With CUDA not used (never,
 * or not usable) this is one branch returning SYSTEM; otherwise a lookup in
 * the memory-type cache: host memory costs no driver call once its page is
 * cached, a cached CUDA allocation one (its buffer id is checked), a miss
 * classifies (and may start CUDA, see openib_hmem_set_cuda_mode). Returns 0. */
int openib_hmem_detect(const void *addr, enum openib_hmem_iface *iface, uint64_t *device);

/* ---- when CUDA is started (btl_openib_hmem_cuda) ---- */

enum openib_hmem_cuda_mode {
    /* Start CUDA (cuInit) when a buffer is looked up and the CUDA driver
     * library is loaded in the process: without it no device memory can
     * exist, so a process that never loads it never starts CUDA. */
    OPENIB_HMEM_CUDA_AUTO = 0,
    /* Never: every buffer is host memory (device memory would be copied
     * with memcpy and crash). */
    OPENIB_HMEM_CUDA_NEVER = 1,
    /* At component init, whether any buffer is device memory or not (the
     * behaviour before lazy start-up). */
    OPENIB_HMEM_CUDA_ALWAYS = 2,
};

/* Set the mode (default AUTO) and apply it now: ALWAYS starts CUDA at once;
 * a started driver stays started. 0, or -EINVAL for an unknown mode. */
int openib_hmem_set_cuda_mode(enum openib_hmem_cuda_mode mode);
enum openib_hmem_cuda_mode openib_hmem_cuda_mode(void);

/* Called once when CUDA starts (or fails to) at run time, from whatever
 * thread looked the buffer up, with the new status line (for the log). */
typedef void (*openib_hmem_status_fn)(enum openib_hmem_iface iface, const char *status);
void openib_hmem_set_status_hook(openib_hmem_status_fn fn);

/* ---- the memory-type cache (hmem/hmem_mtcache.c) ---- */

struct openib_hmem_cache_stats {
    uint64_t hits, misses;  /* lookups (statistics: exact while one thread detects) */
    uint64_t inserts;       /* ranges cached (or grown) */
    uint64_t releases;      /* memory-hook reports */
    uint64_t dropped;       /* entries cut or removed by releases */
    uint64_t stale;         /* CUDA entries whose buffer id changed or vanished */
    uint64_t flushes;       /* the cache was full and emptied */
    uint32_t entries;
    bool host_caching;
};
void openib_hmem_cache_get_stats(struct openib_hmem_cache_stats *st);
/* What Open MPI's memory hooks call: [addr, addr + len) was unmapped (or
 * may change): forget what was cached there. Async-safe enough for the
 * hooks: no allocation, one mutex. */
void openib_hmem_cache_release(const void *addr, size_t len);
/* Host ranges are cached only while something reports releases (the
 * component turns this on when Open MPI's memory hooks do). Off flushes. */
void openib_hmem_cache_set_host_caching(bool on);
void openib_hmem_cache_flush(void);
/* One line for logs: whether host ranges are cached. */
const char *openib_hmem_cache_status(void);

/* ---- plug-ins (negative errno; reason in `why`) ---- */

/* Check path against the plug-in path rule (mca/btl_openib_path_check.h),
 * dlopen it, check its openib_hmem_plugin_info (size, ABI version), call
 * its init with root. Errors: -EINVAL (arguments, info too small), -EACCES
 * (the path breaks the rule), -ENOENT (no such file, or dlopen failed), -ENOEXEC (no info symbol or no init), -EPROTO (ABI
 * version not accepted), -E2BIG (info larger with unknown non-zero fields),
 * or the init's own error. On any error the library's operations are
 * removed from every object. */
int openib_hmem_load_plugin(struct openib_hmem_object *root, const char *path, char *why,
                            size_t why_len);
/* The file the newest loaded plug-in came from (symbolic links resolved),
 * or NULL when none is loaded; valid until the plug-ins are unloaded. */
const char *openib_hmem_plugin_newest_file(void);
/* Remove every loaded plug-in's operations from all objects, call its fini,
 * dlclose it (newest first). */
void openib_hmem_unload_plugins(void);

#endif /* OPENIB_HMEM_BTL_H */

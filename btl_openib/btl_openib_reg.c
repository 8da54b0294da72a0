/*
 * btl_openib_reg.c - memory registration through Open MPI's rcache.
 */
#include "opal_config.h"

#include <errno.h>
#include <string.h>

#include "opal/constants.h"
#include "opal/mca/rcache/base/base.h"
#include "opal/memoryhooks/memory.h"

#include "btl_openib/btl_openib.h"
#include "btl_openib/btl_openib_reg.h"
#include "btl_openib/btl_openib_release_log.h"
#include "mca/btl_openib_params.h"
#include "hmem/openib_hmem_btl.h"

/* The registration handle lives inside our registration record so ob1 can
 * copy it to the peer and hand it back to deregister. */
struct openib_reg_full {
    struct openib_reg reg;
    mca_btl_base_registration_handle_t handle;
};

static int access_to_verbs(const struct openib_device *dev, int32_t access)
{
    int f = IBV_ACCESS_LOCAL_WRITE;

    if (dev->defaults.read_sink_remote_write > 0) {
        f |= IBV_ACCESS_REMOTE_WRITE; /* any buffer may be an RDMA read's sink */
    }
    if (access & MCA_RCACHE_ACCESS_REMOTE_READ) {
        f |= IBV_ACCESS_REMOTE_READ;
    }
    if (access & MCA_RCACHE_ACCESS_REMOTE_WRITE) {
        f |= IBV_ACCESS_REMOTE_WRITE;
    }
    if (access & MCA_RCACHE_ACCESS_REMOTE_ATOMIC) {
        f |= IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    }
    return f;
}

static int reg_mem(void *reg_data, void *base, size_t size, mca_rcache_base_registration_t *r)
{
    struct openib_device *dev = reg_data;
    struct openib_reg_full *reg = (struct openib_reg_full *) r;

    reg->reg.mr = ibv_reg_mr(dev->pd, base, size, access_to_verbs(dev, r->access_flags));
    if (NULL == reg->reg.mr) {
        dev->reg_errno = errno;
        dev->reg_failed_bytes = size;
        OPENIB_VERBOSE(1, "ibv_reg_mr(%p, %zu) on %s failed: %s (check `ulimit -l`)", base, size,
                       dev->name, strerror(errno));
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    reg->handle.rkey = reg->reg.mr->rkey;
    reg->handle.lkey = reg->reg.mr->lkey;
    reg->handle.flags = 0;
    reg->handle.base = (uintptr_t) base;
    reg->handle.len = size;
    openib_handle_seal(&reg->handle);
    reg->reg.handle_view = &reg->handle;
    dev->reg_misses++; /* reg_mem runs only inside our register calls, under openib_lock */
    opal_atomic_add_fetch_64(&dev->reg_pinned_bytes, (int64_t) size);
    return OPAL_SUCCESS;
}

static int dereg_mem(void *reg_data, mca_rcache_base_registration_t *r)
{
    struct openib_device *dev = reg_data;
    struct openib_reg_full *reg = (struct openib_reg_full *) r;
    size_t len = reg->reg.mr ? reg->reg.mr->length : 0;

    if (reg->reg.mr && ibv_dereg_mr(reg->reg.mr)) {
        OPENIB_VERBOSE(1, "ibv_dereg_mr failed: %s", strerror(errno));
        return OPAL_ERROR;
    }
    /* also from the cache's invalidation (memory freed by any thread) */
    opal_atomic_add_fetch_64(&dev->reg_pinned_bytes, -(int64_t) len);
    reg->reg.mr = NULL;
    return OPAL_SUCCESS;
}

/* Open MPI's memory hook: note what the process gives back. Runs in any
 * thread, maybe inside malloc, before the memory goes. */
static void note_release(void *base, size_t len, void *cbdata, bool from_alloc)
{
    (void) cbdata;
    (void) from_alloc;
    openib_release_log_note(base, len);
}

static int release_watchers; /* devices with a cache; changed at open and close only */

/* Invalidate what the cache holds of a released range. grdma refuses, and
 * stops its walk, at a registration in use that starts at the range's very
 * first byte; one byte in at each end covers the same pages (registrations
 * are whole pages) without that case. A registration in use is then marked
 * invalid and dropped at its last deregistration, as it must be: the range
 * no longer maps the pages it pins. */
static void invalidate_released(void *ctx, uintptr_t base, size_t len)
{
    mca_rcache_base_module_t *rcache = ctx;

    if (len > 2) {
        (void) rcache->rcache_invalidate_range(rcache, (void *) (base + 1), len - 2);
    }
}

/* Before a lookup: replay what was released since the last one, while
 * openib_lock keeps every other use of this cache out (grdma's own
 * invalidation may have lost some of it, btl_openib_release_log.h). */
static void openib_reg_catch_up(struct openib_device *dev)
{
    if (NULL != dev->rcache->rcache_invalidate_range) {
        (void) openib_release_log_replay(&dev->released, invalidate_released, dev->rcache);
    }
}

int openib_reg_cache_create(struct openib_device *dev)
{
    mca_rcache_base_resources_t res = {
        .cache_name = dev->name,
        .reg_data = dev,
        .sizeof_reg = sizeof(struct openib_reg_full),
        .register_mem = reg_mem,
        .deregister_mem = dereg_mem,
    };

    /* watch before the cache can hold anything */
    if (0 == release_watchers++) {
        opal_mem_hooks_register_release(note_release, NULL);
    }
    openib_release_cursor_init(&dev->released);
    dev->rcache = mca_rcache_base_module_create("grdma", dev, &res);
    if (NULL == dev->rcache) {
        OPENIB_VERBOSE(1, "%s: Open MPI's grdma registration cache is not available; device skipped",
                       dev->name);
        if (0 == --release_watchers) {
            opal_mem_hooks_unregister_release(note_release);
        }
        return OPAL_ERR_NOT_AVAILABLE;
    }
    return OPAL_SUCCESS;
}

void openib_reg_cache_destroy(struct openib_device *dev)
{
    if (dev->rcache) {
        mca_rcache_base_module_destroy(dev->rcache);
        dev->rcache = NULL;
        if (0 == --release_watchers) {
            opal_mem_hooks_unregister_release(note_release);
        }
    }
}

mca_btl_base_registration_handle_t *openib_register_mem(mca_btl_base_module_t *btl,
                                                         mca_btl_base_endpoint_t *ep,
                                                         void *base, size_t size, uint32_t flags)
{
    mca_btl_openib_module_t *m = (mca_btl_openib_module_t *) btl;
    mca_rcache_base_registration_t *r = NULL;
    int access = MCA_RCACHE_ACCESS_LOCAL_WRITE;
    enum openib_hmem_iface iface = OPENIB_HMEM_SYSTEM;
    uint64_t device = 0;
    int rc;

    openib_hmem_detect(base, &iface, &device);
    if (OPAL_UNLIKELY(iface != OPENIB_HMEM_SYSTEM)) {
        struct openib_bounce_handle *b;

        /* No peer-direct: the NIC cannot reach this memory. A peer cannot
         * either, so refuse remote access (the PML then copies through send
         * fragments); local RDMA gets a bounce handle. */
        if (flags & (MCA_BTL_REG_FLAG_REMOTE_READ | MCA_BTL_REG_FLAG_REMOTE_WRITE |
                     MCA_BTL_REG_FLAG_REMOTE_ATOMIC)) {
            OPENIB_VERBOSE(100, "%p (%s memory) cannot be registered for remote access", base,
                           openib_hmem_iface_name(iface));
            return NULL;
        }
        b = calloc(1, sizeof(*b));
        if (NULL == b) {
            return NULL;
        }
        b->h.flags = OPENIB_HANDLE_BOUNCE;
        openib_handle_seal(&b->h);
        b->iface = iface;
        b->device = device;
        return &b->h;
    }

    if (flags & MCA_BTL_REG_FLAG_REMOTE_READ) {
        access |= MCA_RCACHE_ACCESS_REMOTE_READ;
    }
    if (flags & MCA_BTL_REG_FLAG_REMOTE_WRITE) {
        access |= MCA_RCACHE_ACCESS_REMOTE_WRITE;
    }
    if (flags & MCA_BTL_REG_FLAG_REMOTE_ATOMIC) {
        access |= MCA_RCACHE_ACCESS_REMOTE_ATOMIC;
    }
    m->dev->reg_requests++;
    openib_reg_catch_up(m->dev);
    rc = m->dev->rcache->rcache_register(m->dev->rcache, base, size, 0, access, &r);
    if (OPAL_SUCCESS != rc || NULL == r) {
        return NULL;
    }
    return ((struct openib_reg_full *) r)->reg.handle_view;
}

int openib_deregister_mem(mca_btl_base_module_t *btl, mca_btl_base_registration_handle_t *h)
{
    mca_btl_openib_module_t *m = (mca_btl_openib_module_t *) btl;
    struct openib_reg_full *reg =
        (struct openib_reg_full *) ((char *) h - offsetof(struct openib_reg_full, handle));

    if (h->flags & OPENIB_HANDLE_BOUNCE) {
        free((struct openib_bounce_handle *) h);
        return OPAL_SUCCESS;
    }
    return m->dev->rcache->rcache_deregister(m->dev->rcache, &reg->reg.base);
}

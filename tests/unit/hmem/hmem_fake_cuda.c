/*
 * hmem_fake_cuda.c - a stand-in for libcuda.so.1 with the few driver entry
 * points hmem_cuda.c loads, so the CUDA code path (loading, lazy start,
 * detection, the memory-type cache, context borrowing, segment copies,
 * errors) runs on hosts without a GPU.
 *
 * "Device memory" is host memory the fake calls an allocation: two static
 * arenas (devices 0 and 1), a managed and a pinned-host arena, allocated
 * when the library loads; a test can make any other range an allocation of
 * any kind (fake_cuda_alloc) and free it again (fake_cuda_free). Each
 * allocation gets a new buffer id, as the driver's never repeat. It answers
 * pointer attributes the way the real driver does for those kinds.
 * Like the driver, copies need a current context (thread-local here), and
 * every call but cuInit and cuDriverGetVersion fails with
 * CUDA_ERROR_NOT_INITIALIZED before cuInit succeeded (counted: a caller
 * that breaks the driver API's rule shows up in uninit_calls).
 *   FAKE_CUDA_INIT_RC=N      cuInit returns N
 *   FAKE_CUDA_DEVICES=N      cuDeviceGetCount reports N (default 2)
 *   FAKE_CUDA_REPORT=path    append the call counts to path at exit
 *   -DFAKE_CUDA_OMIT_HTOD    build without cuMemcpyHtoD_v2 (an "old driver")
 * It also has the calls an application makes to get memory and streams
 * (cuDeviceGet, the primary context, cuMemAlloc/Managed/Host and their
 * frees, cuStreamCreate/Synchronize/Destroy, cuMemcpyAsync,
 * cuCtxSynchronize), so
 * test_hmem_cuda's device checks run here too. Its cuMemcpyAsync is as
 * lazy as the driver may be: the copy is queued and done only when the
 * stream is synchronized, so a caller that forgets the sync reads stale
 * bytes, here as on a GPU.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

enum { ARENA = 65536, SMALL = 4096, MAX_ALLOCS = 64 };
enum { FAKE_DEVICE = 0, FAKE_MANAGED = 1, FAKE_PINNED = 2 }; /* fake_cuda_alloc kinds */
enum { CUDA_ERROR_INVALID_VALUE = 1, CUDA_ERROR_NOT_INITIALIZED = 3,
       CUDA_ERROR_INVALID_CONTEXT = 201 };

static unsigned char dev_mem[2][ARENA], managed_mem[SMALL], pinned_mem[SMALL];
static unsigned char pool_mem[ARENA]; /* no allocation until a test makes one */
static int fake_ctx[2]; /* the contexts are their addresses */
static __thread void *ctx_stack[8];
static __thread int ctx_depth;
static int initialized;

static struct fake_alloc {
    uintptr_t base;
    size_t len;
    int kind, dev, live;
    unsigned long long id;
} allocs[MAX_ALLOCS];
static unsigned long long next_id = 0x1000;

/* Seen by the tests through dlsym. New fields go at the end (the
 * integration test hmem_device.c reads the first six). */
EXPORT struct fake_cuda_stats {
    unsigned long dtoh, htod, push, pop, attr, no_ctx_errors;
    unsigned long init;         /* cuInit calls */
    unsigned long uninit_calls; /* calls refused: made before cuInit */
    unsigned long async, syncs; /* cuMemcpyAsync calls, cuStreamSynchronize calls */
} fake_cuda_stats;

/* Make [base, base+len) an allocation of `kind` on device `dev`; returns
 * its new buffer id (0: no room). */
EXPORT unsigned long long fake_cuda_alloc(void *base, size_t len, int kind, int dev)
{
    int i;

    for (i = 0; i < MAX_ALLOCS; ++i) {
        if (!allocs[i].live) {
            allocs[i] = (struct fake_alloc) { .base = (uintptr_t) base, .len = len, .kind = kind,
                                              .dev = dev, .live = 1, .id = ++next_id };
            return allocs[i].id;
        }
    }
    return 0;
}

/* The allocation that starts at base is gone (like cuMemFree: nothing is
 * unmapped). 0, or -1 when there is none. */
EXPORT int fake_cuda_free(void *base)
{
    int i;

    for (i = 0; i < MAX_ALLOCS; ++i) {
        if (allocs[i].live && allocs[i].base == (uintptr_t) base) {
            allocs[i].live = 0;
            return 0;
        }
    }
    return -1;
}

static void fake_report(void)
{
    const char *path = getenv("FAKE_CUDA_REPORT");
    FILE *f;

    if (NULL == path || NULL == (f = fopen(path, "a"))) {
        return;
    }
    fprintf(f, "fake-cuda pid=%ld init=%lu attr=%lu dtoh=%lu htod=%lu uninit_calls=%lu\n",
            (long) getpid(), fake_cuda_stats.init, fake_cuda_stats.attr, fake_cuda_stats.dtoh,
            fake_cuda_stats.htod, fake_cuda_stats.uninit_calls);
    fclose(f);
}

__attribute__((constructor)) static void fake_load(void)
{
    fake_cuda_alloc(dev_mem[0], ARENA, FAKE_DEVICE, 0);
    fake_cuda_alloc(dev_mem[1], ARENA, FAKE_DEVICE, 1);
    fake_cuda_alloc(managed_mem, SMALL, FAKE_MANAGED, 0);
    fake_cuda_alloc(pinned_mem, SMALL, FAKE_PINNED, 0);
    atexit(fake_report);
}

/* 0, 1: device arenas; 2: managed; 3: pinned host; 4: a pool that is no
 * allocation (for fake_cuda_alloc). */
EXPORT void *fake_cuda_arena(int which, size_t *len)
{
    *len = which < 2 || 4 == which ? ARENA : SMALL;
    switch (which) {
    case 0: return dev_mem[0];
    case 1: return dev_mem[1];
    case 2: return managed_mem;
    case 3: return pinned_mem;
    default: return pool_mem;
    }
}

/* Make ctx of device `dev` current on this thread (-1: none). */
EXPORT void fake_cuda_set_current(int dev)
{
    ctx_depth = 0;
    if (dev >= 0) {
        ctx_stack[0] = &fake_ctx[dev];
        ctx_depth = 1;
    }
}

/* The live allocation holding [p, p+n), or NULL. */
static const struct fake_alloc *fake_where(uintptr_t p, size_t n)
{
    int i;

    for (i = 0; i < MAX_ALLOCS; ++i) {
        if (allocs[i].live && p >= allocs[i].base && p + n <= allocs[i].base + allocs[i].len) {
            return &allocs[i];
        }
    }
    return NULL;
}

static int fake_check_init(void)
{
    if (!initialized) {
        fake_cuda_stats.uninit_calls++;
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    return 0;
}

EXPORT int cuInit(unsigned int flags)
{
    const char *rc = getenv("FAKE_CUDA_INIT_RC");
    int r = NULL != rc ? atoi(rc) : 0;

    (void) flags;
    fake_cuda_stats.init++;
    if (0 == r) {
        initialized = 1;
    }
    return r;
}

EXPORT int cuDriverGetVersion(int *v)
{
    *v = 12040;
    return 0;
}

EXPORT int cuDeviceGetCount(int *n)
{
    const char *d = getenv("FAKE_CUDA_DEVICES");

    if (fake_check_init()) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    *n = NULL != d ? atoi(d) : 2;
    return 0;
}

EXPORT int cuPointerGetAttribute(void *data, int attr, unsigned long long ptr)
{
    const struct fake_alloc *a;

    if (fake_check_init()) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    fake_cuda_stats.attr++;
    a = fake_where((uintptr_t) ptr, 1);
    if (NULL == a) {
        return CUDA_ERROR_INVALID_VALUE; /* memory the driver never saw */
    }
    switch (attr) {
    case 1: /* CONTEXT */
        *(void **) data = FAKE_PINNED != a->kind ? (void *) &fake_ctx[a->dev & 1]
                                                 : (void *) &fake_ctx[0];
        return 0;
    case 2: /* MEMORY_TYPE: device DEVICE; managed and pinned HOST */
        *(unsigned int *) data = FAKE_DEVICE == a->kind ? 2 : 1;
        return 0;
    case 7: /* BUFFER_ID */
        *(unsigned long long *) data = a->id;
        return 0;
    case 8: /* IS_MANAGED */
        *(unsigned int *) data = FAKE_MANAGED == a->kind;
        return 0;
    case 9: /* DEVICE_ORDINAL */
        *(int *) data = FAKE_PINNED != a->kind ? a->dev : 0;
        return 0;
    case 11: /* RANGE_START_ADDR */
        *(unsigned long long *) data = a->base;
        return 0;
    case 12: /* RANGE_SIZE */
        *(size_t *) data = a->len;
        return 0;
    }
    return CUDA_ERROR_INVALID_VALUE;
}

static int fake_copy_check(uintptr_t dev, size_t n)
{
    const struct fake_alloc *a;

    if (fake_check_init()) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    if (0 == ctx_depth || NULL == ctx_stack[ctx_depth - 1]) {
        fake_cuda_stats.no_ctx_errors++;
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    a = fake_where(dev, n);
    if (NULL == a || FAKE_PINNED == a->kind) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    return 0;
}

EXPORT int cuMemcpyDtoH_v2(void *dst, unsigned long long src, size_t n)
{
    int rc = fake_copy_check((uintptr_t) src, n);

    if (0 == rc) {
        memcpy(dst, (void *) (uintptr_t) src, n);
        fake_cuda_stats.dtoh++;
    }
    return rc;
}

#ifndef FAKE_CUDA_OMIT_HTOD
EXPORT int cuMemcpyHtoD_v2(unsigned long long dst, const void *src, size_t n)
{
    int rc = fake_copy_check((uintptr_t) dst, n);

    if (0 == rc) {
        memcpy((void *) (uintptr_t) dst, src, n);
        fake_cuda_stats.htod++;
    }
    return rc;
}
#endif

EXPORT int cuCtxGetCurrent(void **ctx)
{
    if (fake_check_init()) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    *ctx = ctx_depth > 0 ? ctx_stack[ctx_depth - 1] : NULL;
    return 0;
}

EXPORT int cuCtxPushCurrent_v2(void *ctx)
{
    if (fake_check_init()) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    if (ctx_depth >= 8) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    ctx_stack[ctx_depth++] = ctx;
    fake_cuda_stats.push++;
    return 0;
}

EXPORT int cuCtxPopCurrent_v2(void **ctx)
{
    if (fake_check_init()) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    if (0 == ctx_depth) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *ctx = ctx_stack[--ctx_depth];
    fake_cuda_stats.pop++;
    return 0;
}

EXPORT int cuGetErrorString(int rc, const char **s)
{
    *s = 100 == rc ? "no CUDA-capable device is detected (fake)" : "fake CUDA error";
    return 0;
}

/* ---- what an application calls: devices, memory, streams ---------------- */

EXPORT int cuDeviceGet(int *dev, int ordinal)
{
    if (fake_check_init()) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    if (ordinal < 0 || ordinal > 1) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *dev = ordinal;
    return 0;
}

EXPORT int cuDevicePrimaryCtxRetain(void **ctx, int dev)
{
    if (fake_check_init()) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    if (dev < 0 || dev > 1) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *ctx = &fake_ctx[dev];
    return 0;
}

EXPORT int cuDevicePrimaryCtxRelease_v2(int dev)
{
    return fake_check_init() ? CUDA_ERROR_NOT_INITIALIZED : 0;
}

EXPORT int cuCtxSetCurrent(void *ctx)
{
    if (fake_check_init()) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    ctx_stack[0] = ctx;
    ctx_depth = NULL != ctx;
    return 0;
}

/* Allocations are malloc'd host memory the fake calls device, managed or
 * pinned memory (of device 0). */
static int fake_malloc(void **p, size_t n, int kind)
{
    if (fake_check_init()) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    if (0 == ctx_depth || 0 == n) {
        return 0 == n ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_CONTEXT;
    }
    *p = malloc(n);
    if (NULL == *p) {
        return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
    }
    if (0 == fake_cuda_alloc(*p, n, kind, 0)) {
        free(*p);
        return 2;
    }
    return 0;
}

static int fake_mfree(void *p)
{
    if (fake_check_init()) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    if (0 != fake_cuda_free(p)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    free(p);
    return 0;
}

EXPORT int cuMemAlloc_v2(unsigned long long *dptr, size_t n)
{
    void *p = NULL;
    int rc = fake_malloc(&p, n, FAKE_DEVICE);

    *dptr = (unsigned long long) (uintptr_t) p;
    return rc;
}

EXPORT int cuMemAllocManaged(unsigned long long *dptr, size_t n, unsigned int flags)
{
    void *p = NULL;
    int rc = fake_malloc(&p, n, FAKE_MANAGED);

    (void) flags;
    *dptr = (unsigned long long) (uintptr_t) p;
    return rc;
}

EXPORT int cuMemFree_v2(unsigned long long dptr)
{
    return fake_mfree((void *) (uintptr_t) dptr);
}

EXPORT int cuMemAllocHost_v2(void **p, size_t n)
{
    return fake_malloc(p, n, FAKE_PINNED);
}

EXPORT int cuMemFreeHost(void *p)
{
    return fake_mfree(p);
}

/* Streams: the handle is the address of a slot; its queue holds the copies
 * cuMemcpyAsync accepted and cuStreamSynchronize has not yet done. */
enum { FAKE_STREAMS = 4, FAKE_QUEUE = 64 };
static struct fake_stream {
    int used, n;
    struct { void *dst; const void *src; size_t len; } q[FAKE_QUEUE];
} fake_streams[FAKE_STREAMS];

static struct fake_stream *fake_stream_of(void *h)
{
    struct fake_stream *s = h;

    return s >= fake_streams && s < fake_streams + FAKE_STREAMS && s->used ? s : NULL;
}

static void fake_stream_run(struct fake_stream *s)
{
    int i;

    for (i = 0; i < s->n; ++i) {
        memcpy(s->q[i].dst, s->q[i].src, s->q[i].len);
    }
    s->n = 0;
}

EXPORT int cuStreamCreate(void **h, unsigned int flags)
{
    int i;

    (void) flags;
    if (fake_check_init()) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    if (0 == ctx_depth) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    for (i = 0; i < FAKE_STREAMS; ++i) {
        if (!fake_streams[i].used) {
            fake_streams[i].used = 1;
            fake_streams[i].n = 0;
            *h = &fake_streams[i];
            return 0;
        }
    }
    return 2;
}

EXPORT int cuStreamSynchronize(void *h)
{
    struct fake_stream *s = fake_stream_of(h);

    if (fake_check_init()) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    if (NULL == s) {
        return 400; /* CUDA_ERROR_INVALID_HANDLE */
    }
    fake_stream_run(s);
    fake_cuda_stats.syncs++;
    return 0;
}

EXPORT int cuStreamDestroy_v2(void *h)
{
    struct fake_stream *s = fake_stream_of(h);

    if (fake_check_init()) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    if (NULL == s) {
        return 400;
    }
    fake_stream_run(s); /* the driver finishes queued work first */
    s->used = 0;
    return 0;
}

/* Every stream's queued copies are done. */
EXPORT int cuCtxSynchronize(void)
{
    int i;

    if (fake_check_init()) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    if (0 == ctx_depth) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    for (i = 0; i < FAKE_STREAMS; ++i) {
        if (fake_streams[i].used) {
            fake_stream_run(&fake_streams[i]);
        }
    }
    return 0;
}

/* Unified addressing: either side may be host or (fake) device memory.
 * Only on a stream of our own: the default stream is not faked. */
EXPORT int cuMemcpyAsync(unsigned long long dst, unsigned long long src, size_t n, void *h)
{
    struct fake_stream *s = fake_stream_of(h);

    if (fake_check_init()) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    if (0 == ctx_depth || NULL == ctx_stack[ctx_depth - 1]) {
        fake_cuda_stats.no_ctx_errors++;
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    if (NULL == s) {
        return 400;
    }
    if (FAKE_QUEUE == s->n) {
        fake_stream_run(s); /* in order, as the stream would */
    }
    s->q[s->n].dst = (void *) (uintptr_t) dst;
    s->q[s->n].src = (const void *) (uintptr_t) src;
    s->q[s->n].len = n;
    s->n++;
    fake_cuda_stats.async++;
    return 0;
}

/*
 * hmem_fake_cuda.c - a stand-in for libcuda.so.1 with the few driver entry
 * points hmem_cuda.c loads, so the CUDA code path (loading, detection,
 * context borrowing, segment copies, errors) runs on hosts without a GPU.
 * "Device memory" is two static arenas (devices 0 and 1); a managed and a
 * pinned-host arena answer like the real driver does for those.
 * Like the driver, copies need a current context (thread-local here).
 *   FAKE_CUDA_INIT_RC=N      cuInit returns N
 *   FAKE_CUDA_DEVICES=N      cuDeviceGetCount reports N (default 2)
 *   -DFAKE_CUDA_OMIT_HTOD    build without cuMemcpyHtoD_v2 (an "old driver")
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

enum { ARENA = 65536 };
static unsigned char dev_mem[2][ARENA], managed_mem[4096], pinned_mem[4096];
static int fake_ctx[2]; /* the contexts are their addresses */
static __thread void *ctx_stack[8];
static __thread int ctx_depth;

/* Seen by the test through dlsym. */
EXPORT struct fake_cuda_stats {
    unsigned long dtoh, htod, push, pop, attr, no_ctx_errors;
} fake_cuda_stats;

EXPORT void *fake_cuda_arena(int which, size_t *len)
{
    *len = which < 2 ? ARENA : 4096;
    switch (which) {
    case 0: return dev_mem[0];
    case 1: return dev_mem[1];
    case 2: return managed_mem;
    default: return pinned_mem;
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

/* Which arena holds [p, p+n): 0/1 device, 2 managed, 3 pinned, -1 none. */
static int fake_where(uintptr_t p, size_t n)
{
    static const struct { unsigned char *base; size_t len; } arenas[4] = {
        { dev_mem[0], ARENA }, { dev_mem[1], ARENA },
        { managed_mem, sizeof(managed_mem) }, { pinned_mem, sizeof(pinned_mem) },
    };
    int i;

    for (i = 0; i < 4; ++i) {
        uintptr_t b = (uintptr_t) arenas[i].base;
        if (p >= b && p + n <= b + arenas[i].len) {
            return i;
        }
    }
    return -1;
}

EXPORT int cuInit(unsigned int flags)
{
    const char *rc = getenv("FAKE_CUDA_INIT_RC");
    (void) flags;
    return NULL != rc ? atoi(rc) : 0;
}

EXPORT int cuDriverGetVersion(int *v)
{
    *v = 12040;
    return 0;
}

EXPORT int cuDeviceGetCount(int *n)
{
    const char *d = getenv("FAKE_CUDA_DEVICES");
    *n = NULL != d ? atoi(d) : 2;
    return 0;
}

EXPORT int cuPointerGetAttribute(void *data, int attr, unsigned long long ptr)
{
    int w = fake_where((uintptr_t) ptr, 1);

    fake_cuda_stats.attr++;
    if (w < 0) {
        return 1; /* CUDA_ERROR_INVALID_VALUE: memory the driver never saw */
    }
    switch (attr) {
    case 1: /* CONTEXT */
        *(void **) data = w < 2 ? (void *) &fake_ctx[w] : (void *) &fake_ctx[0];
        return 0;
    case 2: /* MEMORY_TYPE: device arenas DEVICE; managed and pinned HOST */
        *(unsigned int *) data = w < 2 ? 2 : 1;
        return 0;
    case 8: /* IS_MANAGED */
        *(unsigned int *) data = 2 == w;
        return 0;
    case 9: /* DEVICE_ORDINAL */
        *(int *) data = w < 2 ? w : 0;
        return 0;
    }
    return 1;
}

static int fake_copy_check(uintptr_t dev, size_t n)
{
    if (0 == ctx_depth || NULL == ctx_stack[ctx_depth - 1]) {
        fake_cuda_stats.no_ctx_errors++;
        return 201; /* CUDA_ERROR_INVALID_CONTEXT */
    }
    if (fake_where(dev, n) < 0 || 3 == fake_where(dev, n)) {
        return 1;
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
    *ctx = ctx_depth > 0 ? ctx_stack[ctx_depth - 1] : NULL;
    return 0;
}

EXPORT int cuCtxPushCurrent_v2(void *ctx)
{
    if (ctx_depth >= 8) {
        return 1;
    }
    ctx_stack[ctx_depth++] = ctx;
    fake_cuda_stats.push++;
    return 0;
}

EXPORT int cuCtxPopCurrent_v2(void **ctx)
{
    if (0 == ctx_depth) {
        return 1;
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

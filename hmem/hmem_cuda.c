/*
 * hmem_cuda.c - the CUDA driver API, loaded at run time with dlopen so the
 * build needs no CUDA and a host without it loses nothing. Only the few
 * driver entry points below are used; their types and constants are
 * declared here from the driver API's documented ABI. When the driver is
 * started (cuInit) is decided in hmem_iface.c; nothing here calls the
 * driver before hmem_cuda_start has run cuInit (the driver API requires
 * cuInit before any other call).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "hmem/hmem_dl_syms.h"
#include "hmem/hmem_private.h"

typedef int hmem_cu_result;                    /* CUresult; 0 = CUDA_SUCCESS */
typedef unsigned long long hmem_cu_deviceptr;  /* CUdeviceptr (64-bit) */
typedef struct hmem_cu_ctx *hmem_cu_context;   /* CUcontext, opaque */

enum {
    HMEM_CU_POINTER_ATTRIBUTE_CONTEXT = 1,
    HMEM_CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
    HMEM_CU_POINTER_ATTRIBUTE_BUFFER_ID = 7,  /* unsigned long long, unique per allocation */
    HMEM_CU_POINTER_ATTRIBUTE_IS_MANAGED = 8,
    HMEM_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
    HMEM_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11, /* CUdeviceptr */
    HMEM_CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12,       /* size_t */
};
enum {
    HMEM_CU_MEMORYTYPE_HOST = 1,
    HMEM_CU_MEMORYTYPE_DEVICE = 2,
    HMEM_CU_MEMORYTYPE_UNIFIED = 4,
};

static struct hmem_cuda_api {
    void *handle;
    hmem_cu_result (*init)(unsigned int flags);
    hmem_cu_result (*driver_get_version)(int *version);
    hmem_cu_result (*device_get_count)(int *count);
    hmem_cu_result (*pointer_get_attribute)(void *data, int attribute, hmem_cu_deviceptr ptr);
    hmem_cu_result (*memcpy_dtoh)(void *dst, hmem_cu_deviceptr src, size_t n);
    hmem_cu_result (*memcpy_htod)(hmem_cu_deviceptr dst, const void *src, size_t n);
    hmem_cu_result (*ctx_get_current)(hmem_cu_context *ctx);
    hmem_cu_result (*ctx_push_current)(hmem_cu_context ctx);
    hmem_cu_result (*ctx_pop_current)(hmem_cu_context *ctx);
    hmem_cu_result (*get_error_string)(hmem_cu_result rc, const char **str); /* optional */
} hmem_cu;

/* Driver symbols and where they go. The _v2 names are the 64-bit entry
 * points the driver's own header maps the plain names to. */
#define HMEM_CU_SYM(field_, symbol_, required_) \
    HMEM_DL_SYM(struct hmem_cuda_api, field_, symbol_, required_)
static const struct hmem_dl_sym hmem_cu_syms[] = {
    HMEM_CU_SYM(init, "cuInit", true),
    HMEM_CU_SYM(driver_get_version, "cuDriverGetVersion", true),
    HMEM_CU_SYM(device_get_count, "cuDeviceGetCount", true),
    HMEM_CU_SYM(pointer_get_attribute, "cuPointerGetAttribute", true),
    HMEM_CU_SYM(memcpy_dtoh, "cuMemcpyDtoH_v2", true),
    HMEM_CU_SYM(memcpy_htod, "cuMemcpyHtoD_v2", true),
    HMEM_CU_SYM(ctx_get_current, "cuCtxGetCurrent", true),
    HMEM_CU_SYM(ctx_push_current, "cuCtxPushCurrent_v2", true),
    HMEM_CU_SYM(ctx_pop_current, "cuCtxPopCurrent_v2", true),
    HMEM_CU_SYM(get_error_string, "cuGetErrorString", false),
};

static const char *hmem_cu_strerror(hmem_cu_result rc)
{
    const char *s = NULL;

    if (NULL != hmem_cu.get_error_string && 0 == hmem_cu.get_error_string(rc, &s) && NULL != s) {
        return s;
    }
    return "unknown CUDA error";
}

bool hmem_cuda_lib_loaded(const char *lib)
{
    void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);

    if (NULL == h) {
        return false;
    }
    dlclose(h); /* NOLOAD took a reference; the library stays loaded */
    return true;
}

int hmem_cuda_start(const char *lib, char *why, size_t why_len)
{
    const char *err, *missing;
    hmem_cu_result rc;
    int version = 0, count = 0;

    hmem_cu.handle = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (NULL == hmem_cu.handle) {
        err = dlerror();
        snprintf(why, why_len, "CUDA driver library %s not found (%s)", lib,
                 NULL != err ? err : "dlopen failed");
        goto err_out;
    }
    missing = hmem_dl_syms_load(hmem_cu.handle, hmem_cu_syms,
                                sizeof(hmem_cu_syms) / sizeof(hmem_cu_syms[0]), &hmem_cu);
    if (NULL != missing) {
        snprintf(why, why_len, "%s lacks %s (driver too old?)", lib, missing);
        goto err_close;
    }
    rc = hmem_cu.init(0);
    if (0 != rc) {
        snprintf(why, why_len, "cuInit failed: CUDA error %d (%s)", rc, hmem_cu_strerror(rc));
        goto err_close;
    }
    rc = hmem_cu.device_get_count(&count);
    if (0 != rc || count <= 0) {
        snprintf(why, why_len, "no CUDA devices (%s)",
                 0 != rc ? hmem_cu_strerror(rc) : "count is 0");
        goto err_close;
    }
    (void) hmem_cu.driver_get_version(&version);
    snprintf(why, why_len, "%s, driver API %d.%d, %d device(s)", lib, version / 1000,
             (version % 1000) / 10, count);
    return OPAL_SUCCESS;

err_close:
    dlclose(hmem_cu.handle);
err_out:
    memset(&hmem_cu, 0, sizeof(hmem_cu));
    return OPAL_ERR_NOT_AVAILABLE;
}

void hmem_cuda_classify(const void *addr, struct hmem_mt_entry *e)
{
    hmem_cu_deviceptr p = (hmem_cu_deviceptr) (uintptr_t) addr, start = 0;
    unsigned long long id = 0;
    unsigned int type = 0, managed = 0;
    size_t size = 0;
    int ordinal = 0;

    memset(e, 0, sizeof(*e));
    e->type = HMEM_MT_HOST;
    /* Host memory the driver never saw answers with an error: not ours.
     * One call, and only on a cache miss. */
    if (0 != hmem_cu.pointer_get_attribute(&type, HMEM_CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p)) {
        return;
    }
    if (0 != hmem_cu.pointer_get_attribute(&managed, HMEM_CU_POINTER_ATTRIBUTE_IS_MANAGED, p)) {
        managed = 0;
    }
    if (managed) {
        e->type = HMEM_MT_CUDA_MANAGED;
    } else if (HMEM_CU_MEMORYTYPE_DEVICE == type || HMEM_CU_MEMORYTYPE_UNIFIED == type) {
        e->type = HMEM_CU_MEMORYTYPE_DEVICE == type ? HMEM_MT_CUDA_DEVICE : HMEM_MT_CUDA_MANAGED;
    } else {
        e->type = HMEM_MT_CUDA_PINNED; /* registered or pinned host memory: memcpy works */
    }
    if (HMEM_MT_CUDA_PINNED != e->type &&
        0 != hmem_cu.pointer_get_attribute(&ordinal, HMEM_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p)) {
        ordinal = 0;
    }
    e->device = ordinal < 0 ? 0 : (uint32_t) ordinal;
    /* Without an id the entry could not be checked on a hit: cache the
     * address alone then (end == start: hmem_mt_insert ignores it). */
    if (0 == hmem_cu.pointer_get_attribute(&id, HMEM_CU_POINTER_ATTRIBUTE_BUFFER_ID, p) &&
        0 == hmem_cu.pointer_get_attribute(&start, HMEM_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p) &&
        0 == hmem_cu.pointer_get_attribute(&size, HMEM_CU_POINTER_ATTRIBUTE_RANGE_SIZE, p) &&
        start <= p && p - start < size) {
        e->buffer_id = id;
        e->start = (uintptr_t) start;
        e->end = (uintptr_t) (start + size);
    } else {
        e->start = e->end = (uintptr_t) p;
    }
}

int hmem_cuda_buffer_id(const void *addr, uint64_t *id)
{
    unsigned long long v = 0;

    if (0 != hmem_cu.pointer_get_attribute(&v, HMEM_CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                           (hmem_cu_deviceptr) (uintptr_t) addr)) {
        return OPAL_ERR_NOT_FOUND;
    }
    *id = v;
    return OPAL_SUCCESS;
}

/* The driver copies need a current context; a progress thread that never
 * touched CUDA has none, so borrow the one the memory belongs to.
 * (CUresult values stay in this file: callers get OPAL codes.) */
static int hmem_cuda_enter(void *hmem, bool *pushed)
{
    hmem_cu_context cur = NULL, owner = NULL;

    *pushed = false;
    if (0 == hmem_cu.ctx_get_current(&cur) && NULL != cur) {
        return OPAL_SUCCESS;
    }
    if (0 != hmem_cu.pointer_get_attribute(&owner, HMEM_CU_POINTER_ATTRIBUTE_CONTEXT,
                                           (hmem_cu_deviceptr) (uintptr_t) hmem) ||
        NULL == owner || 0 != hmem_cu.ctx_push_current(owner)) {
        return OPAL_ERROR;
    }
    *pushed = true;
    return OPAL_SUCCESS;
}

static void hmem_cuda_leave(bool pushed)
{
    hmem_cu_context dummy;

    if (pushed) {
        (void) hmem_cu.ctx_pop_current(&dummy);
    }
}

/* One segment, either way; only the driver call differs by direction. */
static int hmem_cuda_seg_copy(void *hmem, void *host, size_t n, bool to_hmem)
{
    hmem_cu_deviceptr dev = (hmem_cu_deviceptr) (uintptr_t) hmem;
    bool pushed;
    hmem_cu_result rc;

    if (to_hmem ? NULL == hmem_cu.memcpy_htod : NULL == hmem_cu.memcpy_dtoh) {
        return OPAL_ERR_NOT_AVAILABLE;
    }
    if (OPAL_SUCCESS != hmem_cuda_enter(hmem, &pushed)) {
        return OPAL_ERROR;
    }
    rc = to_hmem ? hmem_cu.memcpy_htod(dev, host, n) : hmem_cu.memcpy_dtoh(host, dev, n);
    hmem_cuda_leave(pushed);
    return 0 == rc ? OPAL_SUCCESS : OPAL_ERROR;
}

int hmem_cuda_seg_from(void *hmem, void *host, size_t n, uint64_t device)
{
    (void) device;
    return hmem_cuda_seg_copy(hmem, host, n, false);
}

int hmem_cuda_seg_to(void *hmem, void *host, size_t n, uint64_t device)
{
    (void) device;
    return hmem_cuda_seg_copy(hmem, host, n, true);
}

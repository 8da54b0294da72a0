/*
 * test_hmem_cuda.c - the CUDA path against the real driver (libcuda.so.1).
 * Without a usable driver: checks that CUDA is reported absent with a clear
 * reason, that buffers are detected as system memory and CUDA copies refuse
 * with -ENODEV, then SKIPs (exit 77) the device checks with that reason.
 * With one: allocates device memory through the driver API and checks
 * detection (device, managed and pinned host memory, and a device buffer
 * freed and allocated again, through the memory-type cache), copies
 * through iovecs both ways (also from a thread that has no current
 * context), and data integrity. CUDA is started with mode always (what
 * auto would do once the application loads the driver).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hmem/openib_hmem_btl.h"
#include "tests/unit/hmem/hmem_test.h"

typedef int cu_result;
typedef unsigned long long cu_deviceptr;

static struct {
    cu_result (*device_get)(int *dev, int ordinal);
    cu_result (*primary_retain)(void **ctx, int dev);
    cu_result (*primary_release)(int dev);
    cu_result (*ctx_set_current)(void *ctx);
    cu_result (*mem_alloc)(cu_deviceptr *p, size_t n);
    cu_result (*mem_free)(cu_deviceptr p);
    cu_result (*mem_alloc_managed)(cu_deviceptr *p, size_t n, unsigned int flags); /* optional */
    cu_result (*mem_alloc_host)(void **p, size_t n);                             /* optional */
    cu_result (*mem_free_host)(void *p);                                         /* optional */
} cu;

static struct openib_hmem_object *obj;
static unsigned char *dbuf;

static int load_driver_test_api(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);

    if (NULL == h) {
        return -1;
    }
    *(void **) &cu.device_get = dlsym(h, "cuDeviceGet");
    *(void **) &cu.primary_retain = dlsym(h, "cuDevicePrimaryCtxRetain");
    *(void **) &cu.primary_release = dlsym(h, "cuDevicePrimaryCtxRelease_v2");
    if (NULL == cu.primary_release) {
        *(void **) &cu.primary_release = dlsym(h, "cuDevicePrimaryCtxRelease");
    }
    *(void **) &cu.ctx_set_current = dlsym(h, "cuCtxSetCurrent");
    *(void **) &cu.mem_alloc = dlsym(h, "cuMemAlloc_v2");
    *(void **) &cu.mem_free = dlsym(h, "cuMemFree_v2");
    *(void **) &cu.mem_alloc_managed = dlsym(h, "cuMemAllocManaged");
    *(void **) &cu.mem_alloc_host = dlsym(h, "cuMemAllocHost_v2");
    *(void **) &cu.mem_free_host = dlsym(h, "cuMemFreeHost");
    return (NULL != cu.device_get && NULL != cu.primary_retain && NULL != cu.ctx_set_current &&
            NULL != cu.mem_alloc && NULL != cu.mem_free)
               ? 0
               : -1;
}

/* Copies from a thread that never made a context current. */
static void *no_ctx_thread(void *arg)
{
    unsigned char out[64];
    long ok;

    ok = openib_hmem_copy_from_buf(obj, OPENIB_HMEM_CUDA, 0, out, dbuf + 1000, 64) == 64 &&
         out[0] == (unsigned char) (1000 % 251) && out[63] == (unsigned char) (1063 % 251);
    return (void *) ok;
}

static int run_device_checks(void)
{
    enum { N = 1 << 20 };
    cu_deviceptr d = 0;
    void *ctx = NULL;
    int dev = 0;
    unsigned char *host = malloc(N), *back = malloc(N);
    enum openib_hmem_iface iface;
    uint64_t ordinal = 99;
    struct iovec iov[3];
    pthread_t th;
    void *thread_ok = NULL;
    size_t i;

    CHECK(NULL != host && NULL != back);
    CHECK_EQ(load_driver_test_api(), 0);
    if (unit_failures) {
        return 1;
    }
    CHECK_EQ(cu.device_get(&dev, 0), 0);
    CHECK_EQ(cu.primary_retain(&ctx, dev), 0);
    CHECK_EQ(cu.ctx_set_current(ctx), 0);
    CHECK_EQ(cu.mem_alloc(&d, N), 0);
    if (unit_failures) {
        return 1;
    }
    dbuf = (unsigned char *) (uintptr_t) d;

    CHECK_EQ(openib_hmem_detect(dbuf + 4096, &iface, &ordinal), 0);
    CHECK_EQ(iface, OPENIB_HMEM_CUDA);
    CHECK_EQ(ordinal, 0);
    CHECK_EQ(openib_hmem_detect(host, &iface, &ordinal), 0);
    CHECK_EQ(iface, OPENIB_HMEM_SYSTEM);

    for (i = 0; i < N; ++i) {
        host[i] = (unsigned char) (i % 251);
    }
    /* Host -> device over a 3-entry iovec (one empty), then back. */
    iov[0].iov_base = dbuf;
    iov[0].iov_len = N / 2;
    iov[1].iov_base = dbuf + N / 2;
    iov[1].iov_len = 0;
    iov[2].iov_base = dbuf + N / 2;
    iov[2].iov_len = N / 2;
    CHECK_EQ(openib_hmem_copy_to_iov(obj, OPENIB_HMEM_CUDA, 0, iov, 3, 0, host, N), N);
    memset(back, 0, N);
    CHECK_EQ(openib_hmem_copy_from_iov(obj, OPENIB_HMEM_CUDA, 0, back, N, iov, 3, 0), N);
    CHECK(0 == memcmp(host, back, N));
    /* An offset that crosses the entry boundary. */
    memset(back, 0, N);
    CHECK_EQ(openib_hmem_copy_from_iov(obj, OPENIB_HMEM_CUDA, 0, back, 4096, iov, 3, N / 2 - 100),
             4096);
    CHECK(0 == memcmp(back, host + N / 2 - 100, 4096));

    CHECK_EQ(pthread_create(&th, NULL, no_ctx_thread, NULL), 0);
    CHECK_EQ(pthread_join(th, &thread_ok), 0);
    CHECK(NULL != thread_ok);

    /* Managed memory is CUDA memory; pinned host memory is host memory. */
    if (NULL != cu.mem_alloc_managed) {
        cu_deviceptr m = 0;

        CHECK_EQ(cu.mem_alloc_managed(&m, 65536, 1 /* CU_MEM_ATTACH_GLOBAL */), 0);
        CHECK_EQ(openib_hmem_detect((void *) (uintptr_t) (m + 100), &iface, &ordinal), 0);
        CHECK_EQ(iface, OPENIB_HMEM_CUDA);
        CHECK_EQ(cu.mem_free(m), 0);
    }
    if (NULL != cu.mem_alloc_host && NULL != cu.mem_free_host) {
        void *p = NULL;

        CHECK_EQ(cu.mem_alloc_host(&p, 65536), 0);
        CHECK_EQ(openib_hmem_detect((char *) p + 100, &iface, &ordinal), 0);
        CHECK_EQ(iface, OPENIB_HMEM_SYSTEM);
        CHECK_EQ(openib_hmem_detect((char *) p + 100, &iface, &ordinal), 0); /* cached */
        CHECK_EQ(iface, OPENIB_HMEM_SYSTEM);
        CHECK_EQ(cu.mem_free_host(p), 0);
    }
    /* Freed and allocated again (often at the same address): the cached
     * entry's buffer id no longer matches, so it is classified afresh. */
    CHECK_EQ(cu.mem_free(d), 0);
    d = 0;
    CHECK_EQ(cu.mem_alloc(&d, N), 0);
    CHECK_EQ(openib_hmem_detect((void *) (uintptr_t) (d + 4096), &iface, &ordinal), 0);
    CHECK_EQ(iface, OPENIB_HMEM_CUDA);
    CHECK_EQ(cu.mem_free(d), 0);
    if (NULL != cu.primary_release) {
        cu.primary_release(dev);
    }
    free(host);
    free(back);
    return 0;
}

int main(void)
{
    const char *status;
    unsigned char buf[16] = { 0 }, out[16];
    enum openib_hmem_iface iface = OPENIB_HMEM_ZE;

    /* The real driver only: a fake named in the environment is for
     * test_hmem_cuda_fake. */
    unsetenv("OPENIB_HMEM_CUDA_LIBRARY");
    CHECK_EQ(openib_hmem_set_cuda_mode(OPENIB_HMEM_CUDA_ALWAYS), 0);
    CHECK_EQ(openib_hmem_object_create(NULL, "cuda-test", &obj), 0);
    status = openib_hmem_iface_status(OPENIB_HMEM_CUDA);
    printf("%s\n", status);
    CHECK(0 == strncmp(status, "cuda: ", 6));

    if (!openib_hmem_iface_available(OPENIB_HMEM_CUDA)) {
        /* Absent must mean absent, cleanly. */
        CHECK_STR_CONTAINS(status, "not available: ");
        CHECK(strlen(status) > strlen("cuda: not available: ") + 5);
        CHECK(!openib_hmem_iface_has_copy(OPENIB_HMEM_CUDA));
        CHECK_EQ(openib_hmem_detect(buf, &iface, NULL), 0);
        CHECK_EQ(iface, OPENIB_HMEM_SYSTEM);
        CHECK_EQ(openib_hmem_copy_from_buf(obj, OPENIB_HMEM_CUDA, 0, out, buf, 16), -ENODEV);
        CHECK_EQ(openib_hmem_copy_from_buf(obj, OPENIB_HMEM_SYSTEM, 0, out, buf, 16), 16);
        openib_hmem_object_free(obj);
        if (unit_failures) {
            return unit_finish("test_hmem_cuda");
        }
        printf("SKIP: CUDA device checks skipped: %s\n", status);
        return HMEM_TEST_SKIP;
    }
    run_device_checks();
    openib_hmem_object_free(obj);
    return unit_finish("test_hmem_cuda");
}

/*
 * test_hmem_cuda.c - the CUDA path against the real driver (libcuda.so.1).
 * Without a usable driver: checks that CUDA is reported absent with a clear
 * reason, that buffers are detected as system memory and CUDA copies refuse
 * with -ENODEV, then SKIPs (exit 77) the device checks with that reason.
 * With one: allocates device memory through the driver API and checks
 * detection (device, managed and pinned host memory, and a device buffer
 * freed and allocated again, through the memory-type cache), copies
 * through iovecs both ways (also from a thread that has no current
 * context), and data integrity. Then the same copies through an override
 * installed with set_op, as a plug-in would write one: cuMemcpyAsync on a
 * (blocking) stream of its own and one cuStreamSynchronize per call, read
 * back right after the built-in default wrote (so the override must be
 * ordered after the default stream's copies), inherited by a
 * child object, chaining to the default for host memory, counted in the
 * object's counters; and the set_ops size rules with it. CUDA is started
 * with mode always (what auto would do once the application loads the
 * driver).
 * Built with -DHMEM_TEST_ON_FAKE_CUDA (test_hmem_cuda_on_fake) the same
 * checks run against the fake driver (hmem_fake_cuda.so) on every host; its
 * cuMemcpyAsync copies only when the stream is synchronized.
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
typedef struct cu_stream_st *cu_stream;

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
    cu_result (*stream_create)(cu_stream *s, unsigned int flags);
    cu_result (*stream_sync)(cu_stream s);
    cu_result (*stream_destroy)(cu_stream s);
    cu_result (*memcpy_async)(cu_deviceptr dst, cu_deviceptr src, size_t n, cu_stream s);
} cu;

static struct openib_hmem_object *obj;
static unsigned char *dbuf;

/* The driver the component was told to use: the real one, or the fake. */
static const char *driver_lib = "libcuda.so.1";
static void *driver_handle;

static int load_driver_test_api(void)
{
    void *h = dlopen(driver_lib, RTLD_NOW | RTLD_NOLOAD); /* loaded by the component */

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
    *(void **) &cu.stream_create = dlsym(h, "cuStreamCreate");
    *(void **) &cu.stream_sync = dlsym(h, "cuStreamSynchronize");
    *(void **) &cu.stream_destroy = dlsym(h, "cuStreamDestroy_v2");
    *(void **) &cu.memcpy_async = dlsym(h, "cuMemcpyAsync");
    driver_handle = h;
    return (NULL != cu.device_get && NULL != cu.primary_retain && NULL != cu.ctx_set_current &&
            NULL != cu.mem_alloc && NULL != cu.mem_free && NULL != cu.stream_create &&
            NULL != cu.stream_sync && NULL != cu.stream_destroy && NULL != cu.memcpy_async)
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

/* ---- an override as a plug-in would write one ------------------------- */

#define FROM OPENIB_HMEM_OP_COPY_FROM_HMEM_IOV
#define TO OPENIB_HMEM_OP_COPY_TO_HMEM_IOV

/* CUDA segments go to cuMemcpyAsync on the override's own stream and are
 * waited for with one cuStreamSynchronize before the call returns (the
 * caller reuses its buffer as soon as we return). Other interfaces go to
 * the operations it replaced. It walks the iovec by the rules of
 * openib_hmem.h (offset across entries, empty entries skipped, at most
 * len bytes, offset past the end -EINVAL, NULL base touched -EFAULT). */
static struct {
    cu_stream stream;
    union openib_hmem_op next_from, next_to;
    unsigned long calls, segments, syncs, chained;
    uint64_t last_device;
} ovr;

static ssize_t ovr_copy(int to_hmem, unsigned char *host, size_t len, uint64_t device,
                        const struct iovec *iov, size_t cnt, uint64_t off)
{
    uint64_t total = 0;
    size_t i, n, done = 0;
    ssize_t rc = 0;
    cu_deviceptr seg;

    ovr.calls++;
    ovr.last_device = device;
    for (i = 0; i < cnt; ++i) {
        total += iov[i].iov_len;
    }
    if (off > total) {
        return -EINVAL;
    }
    for (i = 0; i < cnt && done < len; ++i) {
        if (off >= iov[i].iov_len) {
            off -= iov[i].iov_len;
            continue;
        }
        if (NULL == iov[i].iov_base) {
            rc = -EFAULT;
            break;
        }
        n = iov[i].iov_len - off;
        if (n > len - done) {
            n = len - done;
        }
        seg = (cu_deviceptr) (uintptr_t) iov[i].iov_base + off;
        if (0 != (to_hmem ? cu.memcpy_async(seg, (cu_deviceptr) (uintptr_t) (host + done), n,
                                            ovr.stream)
                          : cu.memcpy_async((cu_deviceptr) (uintptr_t) (host + done), seg, n,
                                            ovr.stream))) {
            rc = -EIO;
            break;
        }
        ovr.segments++;
        done += n;
        off = 0;
    }
    /* Even after an error: what was queued must finish before we return. */
    if (done > 0) {
        ovr.syncs++;
        if (0 != cu.stream_sync(ovr.stream)) {
            rc = -EIO;
        }
    }
    return 0 != rc ? rc : (ssize_t) done;
}

static ssize_t ovr_from(void *dst, size_t len, enum openib_hmem_iface iface, uint64_t device,
                        const struct iovec *iov, size_t cnt, uint64_t off)
{
    if (OPENIB_HMEM_CUDA != iface) {
        ovr.chained++;
        return ovr.next_from.copy_from_hmem_iov(dst, len, iface, device, iov, cnt, off);
    }
    return ovr_copy(0, dst, len, device, iov, cnt, off);
}

static ssize_t ovr_to(enum openib_hmem_iface iface, uint64_t device, const struct iovec *iov,
                      size_t cnt, uint64_t off, const void *src, size_t len)
{
    if (OPENIB_HMEM_CUDA != iface) {
        ovr.chained++;
        return ovr.next_to.copy_to_hmem_iov(iface, device, iov, cnt, off, src, len);
    }
    return ovr_copy(1, (unsigned char *) src, len, device, iov, cnt, off);
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    size_t i;

    for (i = 0; i < n; ++i) {
        p[i] = (unsigned char) ((i * 7 + seed) % 253);
    }
}

/* Which override calls one copy each way made through o: bit 0 = from,
 * bit 1 = to. The data must be right either way. */
static int override_used(struct openib_hmem_object *o, const struct iovec *iov,
                         unsigned char *host, unsigned char *back, size_t n)
{
    unsigned long before;
    int used = 0;

    fill(host, n, 11);
    before = ovr.calls;
    CHECK_EQ(openib_hmem_copy_to_iov(o, OPENIB_HMEM_CUDA, 0, iov, 3, 0, host, n), n);
    used |= ovr.calls != before ? 2 : 0;
    memset(back, 0, n);
    before = ovr.calls;
    CHECK_EQ(openib_hmem_copy_from_iov(o, OPENIB_HMEM_CUDA, 0, back, n, iov, 3, 0), n);
    used |= ovr.calls != before ? 1 : 0;
    CHECK(0 == memcmp(host, back, n));
    return used;
}

/* The override on a real device buffer (dbuf, n bytes, as a 3-entry iovec
 * with an empty middle entry). */
static void run_override_checks(struct iovec *iov, unsigned char *host, unsigned char *back,
                                size_t n)
{
    struct openib_hmem_object *child = NULL;
    struct openib_hmem_stats st = OPENIB_HMEM_STATS_INITIALIZER;
    union openib_hmem_op def_from, op;
    struct openib_hmem_override_ops ops = OPENIB_HMEM_OVERRIDE_OPS_INITIALIZER;
    struct {
        struct openib_hmem_override_ops v1;
        uint64_t v2_field; /* a field a later version might add */
    } fut;
    unsigned char sys_src[64], sys_dst[64];
    void *pinned = NULL;
    size_t i;

    memset(&ovr, 0, sizeof(ovr));
    /* A blocking stream (flags 0): its work waits for the application's
     * earlier work on the legacy default stream, e.g. a cuMemcpyHtoD from
     * pageable memory, which returns before its DMA is done. On a
     * non-blocking stream the override could read the device buffer
     * before that data lands (seen on an H100: bench/hmem_copy_bench). */
    CHECK_EQ(cu.stream_create(&ovr.stream, 0 /* CU_STREAM_DEFAULT */), 0);
    CHECK_EQ(openib_hmem_get_op(obj, FROM, &ovr.next_from, 0), 0);
    CHECK_EQ(openib_hmem_get_op(obj, TO, &ovr.next_to, 0), 0);
    CHECK_EQ(openib_hmem_get_op(obj, FROM, &def_from, OPENIB_HMEM_FLAG_DEFAULT), 0);
    if (unit_failures) {
        return;
    }
    op.copy_from_hmem_iov = ovr_from;
    CHECK_EQ(openib_hmem_set_op(obj, FROM, &op, 0), 0);
    op.copy_to_hmem_iov = ovr_to;
    CHECK_EQ(openib_hmem_set_op(obj, TO, &op, 0), 0);
    /* A module's object is created from the root after the plug-in ran. */
    CHECK_EQ(openib_hmem_object_create(obj, "cuda-child", &child), 0);
    if (unit_failures) {
        return;
    }

    /* Host -> device through the override; read back by the built-in
     * default (cuMemcpyDtoH), so the override's bytes are checked by a
     * path that is not its own. */
    fill(host, n, 3);
    CHECK_EQ(openib_hmem_copy_to_iov(child, OPENIB_HMEM_CUDA, 0, iov, 3, 0, host, n), n);
    CHECK_EQ(ovr.calls, 1);
    CHECK_EQ(ovr.segments, 2); /* the empty entry is skipped */
    CHECK_EQ(ovr.syncs, 1);
    CHECK_EQ(ovr.last_device, 0);
    memset(back, 0, n);
    CHECK_EQ(def_from.copy_from_hmem_iov(back, n, OPENIB_HMEM_CUDA, 0, iov, 3, 0), n);
    CHECK(0 == memcmp(host, back, n));
    /* Device -> host through the override. */
    memset(back, 0, n);
    CHECK_EQ(openib_hmem_copy_from_iov(child, OPENIB_HMEM_CUDA, 0, back, n, iov, 3, 0), n);
    CHECK_EQ(ovr.calls, 2);
    CHECK_EQ(ovr.syncs, 2);
    CHECK(0 == memcmp(host, back, n));
    /* From an offset that crosses the entry boundary: two segments. */
    memset(back, 0, n);
    CHECK_EQ(openib_hmem_copy_from_iov(child, OPENIB_HMEM_CUDA, 0, back, 4096, iov, 3,
                                       n / 2 - 100), 4096);
    CHECK_EQ(ovr.segments, 6);
    CHECK(0 == memcmp(back, host + n / 2 - 100, 4096));
    /* Into pinned host memory: a copy the engine really does on its own. */
    if (NULL != cu.mem_alloc_host && NULL != cu.mem_free_host &&
        0 == cu.mem_alloc_host(&pinned, n)) {
        memset(pinned, 0, n);
        CHECK_EQ(openib_hmem_copy_from_iov(child, OPENIB_HMEM_CUDA, 0, pinned, n, iov, 3, 0), n);
        CHECK(0 == memcmp(host, pinned, n));
        fill(pinned, n, 5);
        CHECK_EQ(openib_hmem_copy_to_iov(child, OPENIB_HMEM_CUDA, 0, iov, 3, 0, pinned, n), n);
        CHECK_EQ(def_from.copy_from_hmem_iov(back, n, OPENIB_HMEM_CUDA, 0, iov, 3, 0), n);
        CHECK(0 == memcmp(pinned, back, n));
        CHECK_EQ(cu.mem_free_host(pinned), 0);
    }
    /* Host memory goes to the chained default. */
    for (i = 0; i < sizeof(sys_src); ++i) {
        sys_src[i] = (unsigned char) (200 - i);
    }
    CHECK_EQ(openib_hmem_copy_from_buf(child, OPENIB_HMEM_SYSTEM, 0, sys_dst, sys_src, 64), 64);
    CHECK(0 == memcmp(sys_src, sys_dst, 64));
    CHECK_EQ(ovr.chained, 1);
    /* Every call above went to the override, and was counted so. */
    CHECK_EQ(openib_hmem_get_stats(child, &st), 0);
    CHECK_EQ(st.errors, 0);
    CHECK_EQ(st.from_hmem_override_calls, st.from_hmem_calls);
    CHECK_EQ(st.to_hmem_override_calls, st.to_hmem_calls);
    CHECK_EQ(st.to_hmem_bytes, NULL != pinned ? 2 * n : n);

    /* Back to the default for one op (NULL): that op no longer reaches the
     * override, the other still does. */
    CHECK_EQ(openib_hmem_set_op(child, FROM, NULL, 0), 0);
    CHECK_EQ(override_used(child, iov, host, back, n), 2);
    /* The parent keeps both. */
    CHECK_EQ(override_used(obj, iov, host, back, n), 3);

    /* set_ops, the whole table, by its size rules. */
    ops.size = OPENIB_HMEM_OVERRIDE_OPS_V1_SIZE;
    ops.copy_from_hmem_iov = ovr_from;
    ops.copy_to_hmem_iov = NULL; /* not set: the default */
    CHECK_EQ(openib_hmem_set_ops(child, &ops), 0);
    CHECK_EQ(override_used(child, iov, host, back, n), 1);
    /* Larger than this component knows, unknown tail zero: accepted. */
    memset(&fut, 0, sizeof(fut));
    fut.v1.size = sizeof(fut);
    fut.v1.copy_from_hmem_iov = ovr_from;
    fut.v1.copy_to_hmem_iov = ovr_to;
    CHECK_EQ(openib_hmem_set_ops(child, &fut.v1), 0);
    CHECK_EQ(override_used(child, iov, host, back, n), 3);
    /* Unknown tail not zero: -E2BIG, and nothing changes. */
    fut.v2_field = 1;
    fut.v1.copy_from_hmem_iov = NULL;
    fut.v1.copy_to_hmem_iov = NULL;
    CHECK_EQ(openib_hmem_set_ops(child, &fut.v1), -E2BIG);
    CHECK_EQ(override_used(child, iov, host, back, n), 3);
    /* Smaller than v1: -EINVAL, nothing changes. */
    ops.size = OPENIB_HMEM_OVERRIDE_OPS_V1_SIZE - 1;
    ops.copy_from_hmem_iov = NULL;
    CHECK_EQ(openib_hmem_set_ops(child, &ops), -EINVAL);
    CHECK_EQ(override_used(child, iov, host, back, n), 3);
    /* Both NULL: the defaults again. */
    ops.size = OPENIB_HMEM_OVERRIDE_OPS_V1_SIZE;
    CHECK_EQ(openib_hmem_set_ops(child, &ops), 0);
    CHECK_EQ(override_used(child, iov, host, back, n), 0);

#ifdef HMEM_TEST_ON_FAKE_CUDA
    {
        /* The fake saw every queued copy and every sync (its counters). */
        struct { unsigned long dtoh, htod, push, pop, attr, no_ctx_errors, init, uninit_calls,
                 async, syncs; } *fs = dlsym(driver_handle, "fake_cuda_stats");

        CHECK(NULL != fs);
        if (NULL != fs) {
            CHECK_EQ(fs->async, ovr.segments);
            CHECK_EQ(fs->syncs, ovr.syncs);
            CHECK_EQ(fs->uninit_calls, 0);
        }
    }
#endif
    openib_hmem_object_free(child);
    CHECK_EQ(openib_hmem_set_op(obj, FROM, NULL, 0), 0);
    CHECK_EQ(openib_hmem_set_op(obj, TO, NULL, 0), 0);
    CHECK_EQ(cu.stream_destroy(ovr.stream), 0);
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

    run_override_checks(iov, host, back, N);

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

#ifdef HMEM_TEST_ON_FAKE_CUDA
    driver_lib = hmem_test_module("tests/unit/hmem", "hmem_fake_cuda");
    setenv("OPENIB_HMEM_CUDA_LIBRARY", driver_lib, 1);
#else
    /* The real driver only: a fake named in the environment is for
     * test_hmem_cuda_fake. */
    unsetenv("OPENIB_HMEM_CUDA_LIBRARY");
#endif
    CHECK_EQ(openib_hmem_set_cuda_mode(OPENIB_HMEM_CUDA_ALWAYS), 0);
    CHECK_EQ(openib_hmem_object_create(NULL, "cuda-test", &obj), 0);
    status = openib_hmem_iface_status(OPENIB_HMEM_CUDA);
    printf("%s\n", status);
    CHECK(0 == strncmp(status, "cuda: ", 6));

#ifdef HMEM_TEST_ON_FAKE_CUDA
    CHECK(openib_hmem_iface_available(OPENIB_HMEM_CUDA)); /* the fake is always there */
#endif
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

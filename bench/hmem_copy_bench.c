/*
 * hmem_copy_bench.c - what the HMEM copy hooks cost on a real CUDA driver,
 * next to the driver's own copy. Not a test: nothing here is asserted on
 * time; the exit status says only whether every copy ran and moved the
 * right bytes (each method's result is checked after its timing).
 *
 *   hmem_copy_bench [-n SAMPLES] [-s SIZE,SIZE,...] [-m pageable|pinned]
 *                   [-l LIBCUDA] [-d LOOKUPS]
 *
 * The program is the application: it loads the driver (default
 * libcuda.so.1), makes device 0's primary context current and allocates a
 * device buffer and a host buffer (-m pageable: malloc, what the BTL's own
 * buffers are to CUDA; pinned: cuMemAllocHost). The component's HMEM code
 * (linked in, as the BTL links it) runs with btl_openib_hmem_cuda=auto, so
 * its first lookup starts CUDA lazily; the status line says so.
 *
 * For each direction (H2D: host -> device, D2H) and size, one copy per
 * sample and method, in a new random order in each sample (so drift in
 * clocks or load, and whatever one copy leaves behind for the next, spread
 * over all of them alike), after 5 warm-up copies.
 * The device is idle when each timed copy starts (cuCtxSynchronize, not
 * timed): a synchronous copy from pageable memory may return once the
 * driver has staged the data, before it reaches the device, and the next
 * copy then first waits for that one - without the sync, each method
 * would be charged for the one before it. What is timed is a call until
 * it returns (the caller may then reuse its buffer):
 *   cuMemcpy        cuMemcpyHtoD_v2 / cuMemcpyDtoH_v2 alone (the baseline)
 *   hook            openib_hmem_copy_to_buf / _from_buf: the built-in copy
 *                   (object dispatch, iovec walk, context check, counters)
 *   detect+hook     openib_hmem_detect on the device buffer first, as the
 *                   BTL does per fragment (a memory-type cache hit: one
 *                   buffer-id query), then the hook
 *   cuMemcpyAsync   cuMemcpyAsync on a stream + cuStreamSynchronize alone
 *   override        the hook with a set_op override that does the above
 *                   (a plug-in's way of copying)
 * Printed per row: median, first and third quartile of the samples in
 * microseconds, and the bandwidth at the median.
 * Then openib_hmem_detect alone (-d lookups per batch, 101 batches; median
 * and quartiles of the per-lookup time): a host buffer cached as host, a
 * cached device buffer, and a host buffer with host caching off (no memory
 * hooks: one driver call per lookup, what every lookup cost before the
 * cache), and cuPointerGetAttribute alone for scale.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_stats.h"
#include "hmem/hmem_dl_syms.h"
#include "hmem/openib_hmem_btl.h"

typedef int cu_result;
typedef unsigned long long cu_deviceptr;
typedef struct cu_stream_st *cu_stream;

static struct {
    cu_result (*init)(unsigned int flags);
    cu_result (*driver_get_version)(int *v);
    cu_result (*device_get)(int *dev, int ordinal);
    cu_result (*device_get_name)(char *name, int len, int dev);
    cu_result (*primary_retain)(void **ctx, int dev);
    cu_result (*ctx_set_current)(void *ctx);
    cu_result (*mem_alloc)(cu_deviceptr *p, size_t n);
    cu_result (*mem_free)(cu_deviceptr p);
    cu_result (*mem_alloc_host)(void **p, size_t n);
    cu_result (*mem_free_host)(void *p);
    cu_result (*htod)(cu_deviceptr dst, const void *src, size_t n);
    cu_result (*dtoh)(void *dst, cu_deviceptr src, size_t n);
    cu_result (*memcpy_async)(cu_deviceptr dst, cu_deviceptr src, size_t n, cu_stream s);
    cu_result (*stream_create)(cu_stream *s, unsigned int flags);
    cu_result (*stream_sync)(cu_stream s);
    cu_result (*stream_destroy)(cu_stream s);
    cu_result (*pointer_get_attribute)(void *data, int attr, cu_deviceptr p);
    cu_result (*ctx_synchronize)(void);
} cu;

/* the entry points the application side needs, loaded as hmem_cuda.c
 * loads the driver's */
#define CU_SYM(field_, name_, required_) HMEM_DL_SYM(__typeof__(cu), field_, name_, required_)
static const struct hmem_dl_sym cu_syms[] = {
    CU_SYM(init, "cuInit", true),
    CU_SYM(driver_get_version, "cuDriverGetVersion", true),
    CU_SYM(device_get, "cuDeviceGet", true),
    CU_SYM(device_get_name, "cuDeviceGetName", false),
    CU_SYM(primary_retain, "cuDevicePrimaryCtxRetain", true),
    CU_SYM(ctx_set_current, "cuCtxSetCurrent", true),
    CU_SYM(mem_alloc, "cuMemAlloc_v2", true),
    CU_SYM(mem_free, "cuMemFree_v2", true),
    CU_SYM(mem_alloc_host, "cuMemAllocHost_v2", true),
    CU_SYM(mem_free_host, "cuMemFreeHost", true),
    CU_SYM(htod, "cuMemcpyHtoD_v2", true),
    CU_SYM(dtoh, "cuMemcpyDtoH_v2", true),
    CU_SYM(memcpy_async, "cuMemcpyAsync", true),
    CU_SYM(stream_create, "cuStreamCreate", true),
    CU_SYM(stream_sync, "cuStreamSynchronize", true),
    CU_SYM(stream_destroy, "cuStreamDestroy_v2", true),
    CU_SYM(pointer_get_attribute, "cuPointerGetAttribute", true),
    CU_SYM(ctx_synchronize, "cuCtxSynchronize", true),
};

static cu_stream stream;
static struct openib_hmem_object *obj, *ovr_obj;
static union openib_hmem_op next_from, next_to;
static unsigned long failures;

/* ---- the override: cuMemcpyAsync per segment, one sync per call -------- */

static ssize_t ovr_copy(int to_hmem, unsigned char *host, size_t len, const struct iovec *iov,
                        size_t cnt, uint64_t off)
{
    size_t i, n, done = 0;
    uint64_t total = 0;
    cu_deviceptr seg, h;
    ssize_t rc = 0;

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
        n = iov[i].iov_len - off < len - done ? iov[i].iov_len - off : len - done;
        seg = (cu_deviceptr) (uintptr_t) iov[i].iov_base + off;
        h = (cu_deviceptr) (uintptr_t) (host + done);
        if (0 != (to_hmem ? cu.memcpy_async(seg, h, n, stream)
                          : cu.memcpy_async(h, seg, n, stream))) {
            rc = -EIO;
            break;
        }
        done += n;
        off = 0;
    }
    if (done > 0 && 0 != cu.stream_sync(stream)) {
        rc = -EIO;
    }
    return 0 != rc ? rc : (ssize_t) done;
}

static ssize_t ovr_from(void *dst, size_t len, enum openib_hmem_iface iface, uint64_t device,
                        const struct iovec *iov, size_t cnt, uint64_t off)
{
    if (OPENIB_HMEM_CUDA != iface) {
        return next_from.copy_from_hmem_iov(dst, len, iface, device, iov, cnt, off);
    }
    return ovr_copy(0, dst, len, iov, cnt, off);
}

static ssize_t ovr_to(enum openib_hmem_iface iface, uint64_t device, const struct iovec *iov,
                      size_t cnt, uint64_t off, const void *src, size_t len)
{
    if (OPENIB_HMEM_CUDA != iface) {
        return next_to.copy_to_hmem_iov(iface, device, iov, cnt, off, src, len);
    }
    return ovr_copy(1, (unsigned char *) src, len, iov, cnt, off);
}

/* ---- the methods ------------------------------------------------------ */

enum { M_CUMEMCPY, M_HOOK, M_DETECT_HOOK, M_ASYNC, M_OVERRIDE, M_NUM };
static const char *const method_name[M_NUM] = {
    [M_CUMEMCPY] = "cuMemcpy",
    [M_HOOK] = "hook",
    [M_DETECT_HOOK] = "detect+hook",
    [M_ASYNC] = "cuMemcpyAsync",
    [M_OVERRIDE] = "override",
};

/* One copy of n bytes between host and dev through the HMEM hook of o (the
 * built-in copy, or the override's); 0 when it moved them all. */
static int hook_copy(const struct openib_hmem_object *o, int h2d, unsigned char *host,
                     unsigned char *dev, size_t n)
{
    return (h2d ? openib_hmem_copy_to_buf(o, OPENIB_HMEM_CUDA, 0, dev, host, n)
                : openib_hmem_copy_from_buf(o, OPENIB_HMEM_CUDA, 0, host, dev, n)) == (ssize_t) n
               ? 0
               : -1;
}

/* One copy of n bytes between host and dev by method m; 0 when it worked. */
static int copy_once(int m, int h2d, unsigned char *host, unsigned char *dev, size_t n)
{
    cu_deviceptr d = (cu_deviceptr) (uintptr_t) dev, hp = (cu_deviceptr) (uintptr_t) host;
    enum openib_hmem_iface iface;
    uint64_t ordinal;

    switch (m) {
    case M_CUMEMCPY:
        return h2d ? cu.htod(d, host, n) : cu.dtoh(host, d, n);
    case M_DETECT_HOOK:
        if (0 != openib_hmem_detect(dev, &iface, &ordinal) || OPENIB_HMEM_CUDA != iface) {
            return -1;
        }
        /* fall through */
    case M_HOOK:
        return hook_copy(obj, h2d, host, dev, n);
    case M_ASYNC:
        if (0 != (h2d ? cu.memcpy_async(d, hp, n, stream) : cu.memcpy_async(hp, d, n, stream))) {
            return -1;
        }
        return cu.stream_sync(stream);
    case M_OVERRIDE:
        return hook_copy(ovr_obj, h2d, host, dev, n);
    }
    return -1;
}

/* A new order of the methods for each sample (a fixed-seed xorshift, so
 * runs are alike): each method comes first, last and after each other
 * one about equally often. A fixed rotation left each method always
 * after the same one: on an H100 the plain cuMemcpyDtoH, always after the
 * override, came out 0.37 us slower than the same call inside the hook
 * (8 B, 7.49 vs 7.12 us); shuffled, it is 0.12 us faster (7.36 vs 7.48). */
static void shuffle(int *v, int n)
{
    static uint32_t x = 2463534242u;
    int i, j, t;

    for (i = n - 1; i > 0; --i) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        j = (int) (x % (uint32_t) (i + 1));
        t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

static double now_us(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    size_t i;

    for (i = 0; i < n; ++i) {
        p[i] = (unsigned char) ((i * 13 + seed) % 251);
    }
}

/* After the timing: does method m move the right bytes? Checked against
 * the driver's own copy, with a pattern no earlier copy left there. For
 * D2H the pattern is written with cuMemcpyHtoD just before, with no sync:
 * from pageable memory that call returns before its DMA is done, so this
 * also checks that the method is ordered after the application's work on
 * the default stream (the override's stream on an H100: a non-blocking
 * one was not, and read stale bytes at 32 KiB and 256 KiB; a blocking
 * one is). */
static int verify(int m, int h2d, unsigned char *host, unsigned char *dev, unsigned char *ref,
                  size_t n, unsigned seed)
{
    cu_deviceptr d = (cu_deviceptr) (uintptr_t) dev;

    if (h2d) {
        fill(host, n, seed);
        memset(ref, 0, n);
        return 0 == copy_once(m, 1, host, dev, n) && 0 == cu.dtoh(ref, d, n) &&
               0 == memcmp(host, ref, n);
    }
    fill(ref, n, seed);
    memset(host, 0, n);
    return 0 == cu.htod(d, ref, n) && 0 == copy_once(m, 0, host, dev, n) &&
           0 == memcmp(host, ref, n);
}

static void bench_size(int h2d, size_t n, int samples, const char *mode, unsigned char *host,
                       unsigned char *dev, unsigned char *ref)
{
    static double *t[M_NUM];
    static int cap;
    int s, k, m, ok, order[M_NUM];
    double t0;

    if (samples > cap) {
        for (m = 0; m < M_NUM; ++m) {
            free(t[m]);
            t[m] = malloc(sizeof(double) * samples);
            if (NULL == t[m]) {
                fprintf(stderr, "out of memory\n");
                exit(2);
            }
        }
        cap = samples;
    }
    fill(host, n, 1);
    for (m = 0; m < M_NUM; ++m) {
        order[m] = m;
        for (k = 0; k < 5; ++k) {
            if (0 != copy_once(m, h2d, host, dev, n)) {
                fprintf(stderr, "%s %s %zu: warm-up copy failed\n", method_name[m],
                        h2d ? "H2D" : "D2H", n);
                failures++;
            }
        }
    }
    for (s = 0; s < samples; ++s) {
        shuffle(order, M_NUM);
        for (k = 0; k < M_NUM; ++k) {
            m = order[k];
            if (0 != cu.ctx_synchronize()) {
                failures++;
            }
            t0 = now_us();
            if (0 != copy_once(m, h2d, host, dev, n)) {
                failures++;
            }
            t[m][s] = now_us() - t0;
        }
    }
    for (m = 0; m < M_NUM; ++m) {
        double med, q1, q3;

        ok = verify(m, h2d, host, dev, ref, n, 7 + m);
        failures += !ok;
        qsort(t[m], samples, sizeof(double), cmp_double);
        med = quantile(t[m], samples, 0.5);
        q1 = quantile(t[m], samples, 0.25);
        q3 = quantile(t[m], samples, 0.75);
        printf("%-4s %-8s %10zu %-14s %11.2f %11.2f %11.2f %9.3f %7d %s\n", h2d ? "H2D" : "D2H",
               mode, n, method_name[m], med, q1, q3, n / med / 1e3, samples,
               ok ? "ok" : "WRONG-DATA");
    }
    fflush(stdout);
}

/* ---- lookups ---------------------------------------------------------- */

static void bench_detect(const char *what, const void *p, enum openib_hmem_iface want, int per,
                         int raw)
{
    enum { BATCHES = 101 };
    double v[BATCHES], t0;
    enum openib_hmem_iface iface;
    uint64_t dev;
    unsigned int type;
    unsigned long wrong = 0;
    int b, i;

    for (i = 0; i < 100; ++i) { /* warm-up: the first lookup classifies */
        openib_hmem_detect(p, &iface, &dev);
    }
    for (b = 0; b < BATCHES; ++b) {
        t0 = now_us();
        for (i = 0; i < per; ++i) {
            if (raw) {
                wrong += 0 != cu.pointer_get_attribute(&type, 2 /* MEMORY_TYPE */,
                                                       (cu_deviceptr) (uintptr_t) p);
            } else {
                openib_hmem_detect(p, &iface, &dev);
                wrong += iface != want;
            }
        }
        v[b] = (now_us() - t0) * 1e3 / per;
    }
    failures += 0 != wrong;
    qsort(v, BATCHES, sizeof(double), cmp_double);
    printf("detect %-44s %9.1f %9.1f %9.1f ns/lookup (median q1 q3 of %d x %d)%s\n", what,
           quantile(v, BATCHES, 0.5), quantile(v, BATCHES, 0.25), quantile(v, BATCHES, 0.75),
           BATCHES, per, wrong ? " WRONG" : "");
}

static size_t parse_size(const char *s)
{
    char *end;
    size_t v = strtoull(s, &end, 10);

    switch (*end) {
    case 'k': case 'K': v <<= 10; break;
    case 'm': case 'M': v <<= 20; break;
    }
    return v;
}

int main(int argc, char **argv)
{
    const char *lib = "libcuda.so.1", *mode = "pageable";
    bool pinned;
    char sizes_arg[512] = "8,64,512,4K,32K,256K,2M,16M,64M", *tok, *save = NULL, name[128] = "";
    size_t sizes[32], max = 0;
    int nsizes = 0, samples = 200, per = 10000, opt, dev_no = 0, version = 0, i, h2d;
    unsigned char *host = NULL, *ref, *dev;
    cu_deviceptr d = 0;
    void *h, *ctx = NULL;
    const char *missing;
    union openib_hmem_op op;
    enum openib_hmem_iface iface;
    uint64_t ordinal;
    struct openib_hmem_stats st = OPENIB_HMEM_STATS_INITIALIZER, ost = OPENIB_HMEM_STATS_INITIALIZER;

    while (-1 != (opt = getopt(argc, argv, "n:s:m:l:d:"))) {
        switch (opt) {
        case 'n': samples = atoi(optarg); break;
        case 's': snprintf(sizes_arg, sizeof(sizes_arg), "%s", optarg); break;
        case 'm': mode = optarg; break;
        case 'l': lib = optarg; break;
        case 'd': per = atoi(optarg); break;
        default:
            fprintf(stderr, "usage: %s [-n SAMPLES] [-s SIZES] [-m pageable|pinned] "
                            "[-l LIBCUDA] [-d LOOKUPS]\n", argv[0]);
            return 2;
        }
    }
    if (samples < 1 || per < 1 || (0 != strcmp(mode, "pageable") && 0 != strcmp(mode, "pinned"))) {
        fprintf(stderr, "bad -n, -d or -m\n");
        return 2;
    }
    pinned = 0 == strcmp(mode, "pinned");
    for (tok = strtok_r(sizes_arg, ",", &save); NULL != tok && nsizes < 32;
         tok = strtok_r(NULL, ",", &save)) {
        sizes[nsizes] = parse_size(tok);
        if (0 == sizes[nsizes]) {
            fprintf(stderr, "bad size %s\n", tok);
            return 2;
        }
        max = sizes[nsizes] > max ? sizes[nsizes] : max;
        nsizes++;
    }

    /* The application: driver, context, memory. */
    h = dlopen(lib, RTLD_NOW | RTLD_GLOBAL);
    if (NULL == h) {
        printf("SKIP: cannot load %s: %s\n", lib, dlerror());
        return 77;
    }
    missing = hmem_dl_syms_load(h, cu_syms, sizeof(cu_syms) / sizeof(cu_syms[0]), &cu);
    if (NULL != missing) {
        fprintf(stderr, "%s lacks %s\n", lib, missing);
        return 2;
    }
    if (0 != cu.init(0) || 0 != cu.device_get(&dev_no, 0) ||
        0 != cu.primary_retain(&ctx, dev_no) || 0 != cu.ctx_set_current(ctx)) {
        printf("SKIP: no usable CUDA device\n");
        return 77;
    }
    (void) cu.driver_get_version(&version);
    if (NULL == cu.device_get_name || 0 != cu.device_get_name(name, sizeof(name), dev_no)) {
        snprintf(name, sizeof(name), "(name unknown)");
    }
    ref = malloc(max);
    if (pinned ? 0 != cu.mem_alloc_host((void **) &host, max)
                       : NULL == (host = malloc(max))) {
        fprintf(stderr, "host allocation failed\n");
        return 2;
    }
    /* A blocking stream: ordered after the legacy default stream's work
     * (see verify); a non-blocking one was seen reading stale bytes. */
    if (NULL == ref || 0 != cu.mem_alloc(&d, max) || 0 != cu.stream_create(&stream, 0)) {
        fprintf(stderr, "device allocation or stream failed\n");
        return 2;
    }
    memset(host, 0, max); /* touched: no first-touch page faults in the timing */
    memset(ref, 0, max);
    dev = (unsigned char *) (uintptr_t) d;

    /* The component's side, as in the BTL: mode auto, lazy start. */
    setenv("OPENIB_HMEM_CUDA_LIBRARY", lib, 1);
    openib_hmem_cache_set_host_caching(true); /* as with Open MPI's memory hooks */
    if (0 != openib_hmem_object_create(NULL, "bench", &obj) ||
        0 != openib_hmem_object_create(NULL, "bench-override", &ovr_obj) ||
        0 != openib_hmem_get_op(ovr_obj, OPENIB_HMEM_OP_COPY_FROM_HMEM_IOV, &next_from, 0) ||
        0 != openib_hmem_get_op(ovr_obj, OPENIB_HMEM_OP_COPY_TO_HMEM_IOV, &next_to, 0)) {
        fprintf(stderr, "hmem objects\n");
        return 2;
    }
    op.copy_from_hmem_iov = ovr_from;
    openib_hmem_set_op(ovr_obj, OPENIB_HMEM_OP_COPY_FROM_HMEM_IOV, &op, 0);
    op.copy_to_hmem_iov = ovr_to;
    openib_hmem_set_op(ovr_obj, OPENIB_HMEM_OP_COPY_TO_HMEM_IOV, &op, 0);
    printf("# before the first lookup: %s\n", openib_hmem_iface_status(OPENIB_HMEM_CUDA));
    if (0 != openib_hmem_detect(dev, &iface, &ordinal) || OPENIB_HMEM_CUDA != iface) {
        fprintf(stderr, "the device buffer is not detected as CUDA memory (%s)\n",
                openib_hmem_iface_status(OPENIB_HMEM_CUDA));
        return 1;
    }
    printf("# after it:                %s\n", openib_hmem_iface_status(OPENIB_HMEM_CUDA));
    printf("# device 0: %s; driver API %d.%d; host buffer %s; %d samples per row\n", name,
           version / 1000, (version % 1000) / 10, mode, samples);
    printf("# %-4s %-8s %10s %-14s %11s %11s %11s %9s %7s %s\n", "dir", "host", "bytes", "method",
           "median_us", "q1_us", "q3_us", "GB/s", "samples", "data");

    for (h2d = 1; h2d >= 0; --h2d) {
        for (i = 0; i < nsizes; ++i) {
            bench_size(h2d, sizes[i], samples, mode, host, dev, ref);
        }
    }

    bench_detect("host buffer, cached as host", ref, OPENIB_HMEM_SYSTEM, per, 0);
    bench_detect("device buffer, cached (buffer-id check)", dev + 64, OPENIB_HMEM_CUDA, per, 0);
    bench_detect("cuPointerGetAttribute(MEMORY_TYPE), device", dev + 64, OPENIB_HMEM_CUDA, per, 1);
    openib_hmem_cache_set_host_caching(false);
    bench_detect("host buffer, no host caching (driver call)", ref + 64, OPENIB_HMEM_SYSTEM, per,
                 0);

    openib_hmem_get_stats(obj, &st);
    openib_hmem_get_stats(ovr_obj, &ost);
    printf("# hook object: %llu to + %llu from calls, %llu errors; override object: %llu + %llu "
           "override calls, %llu errors\n",
           (unsigned long long) st.to_hmem_calls, (unsigned long long) st.from_hmem_calls,
           (unsigned long long) st.errors, (unsigned long long) ost.to_hmem_override_calls,
           (unsigned long long) ost.from_hmem_override_calls, (unsigned long long) ost.errors);
    printf("# failures: %lu\n", failures);

    openib_hmem_object_free(ovr_obj);
    openib_hmem_object_free(obj);
    cu.stream_destroy(stream);
    cu.mem_free(d);
    if (pinned) {
        cu.mem_free_host(host);
    } else {
        free(host);
    }
    free(ref);
    return 0 == failures && 0 == st.errors && 0 == ost.errors ? 0 : 1;
}

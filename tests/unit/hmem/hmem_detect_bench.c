/*
 * hmem_detect_bench.c - the cost of openib_hmem_detect on the send path, for
 * bench/hmem-cost.sh: N lookups of one buffer inside bench_loop(), which
 * callgrind counts alone (--toggle-collect=bench_loop: instructions per
 * lookup, deterministic); the wall time per lookup is printed too (not
 * deterministic, for orientation only). Not a test: it asserts nothing
 * but that every answer is the expected interface.
 *
 *   hmem_detect_bench CASE [N]     (N default 100000)
 * CASE (the fake driver, tests/unit/hmem/.libs/hmem_fake_cuda.so, stands
 * in for libcuda.so.1; host caching on, as with Open MPI's memory hooks):
 *   absent    no driver library at all; host buffer
 *   present   driver library named but never loaded (auto); host buffer
 *   started   driver loaded by the "application", CUDA started; host buffer
 *   device    CUDA started; a cached device buffer (one buffer-id call)
 *   never     btl_openib_hmem_cuda=never; host buffer
 *   uncached  CUDA started, no memory hooks: no host caching, so one driver
 *             call per lookup - what every lookup cost before the cache
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hmem/openib_hmem_btl.h"
#include "tests/unit/hmem/hmem_test.h"

static unsigned long bench_wrong;

__attribute__((noinline)) static void bench_loop(const void *p, long n,
                                                 enum openib_hmem_iface want)
{
    enum openib_hmem_iface iface;
    uint64_t dev;
    long i;

    for (i = 0; i < n; ++i) {
        openib_hmem_detect(p, &iface, &dev);
        bench_wrong += iface != want;
    }
}

int main(int argc, char **argv)
{
    const char *c = argc > 1 ? argv[1] : "", *fake = getenv("HMEM_FAKE_CUDA");
    long n = argc > 2 ? atol(argv[2]) : 100000;
    enum openib_hmem_iface want = OPENIB_HMEM_SYSTEM;
    static unsigned char host[256];
    const void *buf = host;
    struct timespec t0, t1;
    void *h = NULL;

    if (NULL == fake) {
        fake = hmem_test_module("tests/unit/hmem", "hmem_fake_cuda");
    }
    setenv("OPENIB_HMEM_CUDA_LIBRARY", 0 == strcmp(c, "absent") ? "/nonexistent/libcuda.so.1"
                                                                 : fake, 1);
    openib_hmem_cache_set_host_caching(0 != strcmp(c, "uncached"));
    if (0 == strcmp(c, "never")) {
        openib_hmem_set_cuda_mode(OPENIB_HMEM_CUDA_NEVER);
    } else if (0 == strcmp(c, "started") || 0 == strcmp(c, "device") ||
               0 == strcmp(c, "uncached")) {
        h = dlopen(fake, RTLD_NOW); /* the application loads the driver */
        if (NULL == h) {
            fprintf(stderr, "cannot load %s\n", fake);
            return 2;
        }
        openib_hmem_set_cuda_mode(OPENIB_HMEM_CUDA_ALWAYS);
        if (0 == strcmp(c, "device")) {
            void *(*arena)(int, size_t *) = (void *(*)(int, size_t *)) dlsym(h, "fake_cuda_arena");
            size_t len;

            buf = arena(0, &len);
            want = OPENIB_HMEM_CUDA;
        }
    } else if (0 != strcmp(c, "absent") && 0 != strcmp(c, "present")) {
        fprintf(stderr, "usage: %s absent|present|started|device|never|uncached [N]\n", argv[0]);
        return 2;
    }
    bench_loop(buf, 10, want); /* warm-up: the first lookup classifies */
    clock_gettime(CLOCK_MONOTONIC, &t0);
    bench_loop(buf, n, want);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("%s: %ld lookups, %.1f ns each, %lu wrong; %s\n", c, n,
           ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / (double) n, bench_wrong,
           openib_hmem_iface_status(OPENIB_HMEM_CUDA));
    return 0 == bench_wrong ? 0 : 1;
}

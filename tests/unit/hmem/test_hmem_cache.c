/*
 * test_hmem_cache.c - lazy CUDA start-up and the memory-type cache, against
 * the fake driver (hmem_fake_cuda.so), which counts every call:
 *   - a process that never loads the driver never starts it (zero cuInit),
 *     and its host buffers stay cached when it does load it later;
 *   - after warm-up a host buffer costs no driver call, a device buffer one
 *     (its buffer id is checked);
 *   - device, managed and pinned host memory are classified right, also
 *     when an allocation is freed and another kind made at the same address;
 *   - host memory unmapped and reused by the driver is re-classified once
 *     the memory hooks report the release (and, as a control, not without);
 *   - releases cut cached host ranges; a full cache empties and refills;
 *   - without memory hooks no host range is cached;
 *   - btl_openib_hmem_cuda's three modes.
 * The memory hooks are Open MPI's; here openib_hmem_cache_release is called
 * as they would (test_hmem_params shows them firing on munmap and free).
 * Each scenario runs in a child: the driver is loaded and started once per
 * process.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hmem/openib_hmem_btl.h"
#include "tests/unit/hmem/hmem_test.h"

struct fake_cuda_stats {
    unsigned long dtoh, htod, push, pop, attr, no_ctx_errors, init, uninit_calls;
};
enum { FAKE_DEVICE = 0, FAKE_MANAGED = 1, FAKE_PINNED = 2 };

static const char *fake_path;

/* The fake driver as the application sees it once it has loaded it. */
static struct fake {
    void *h;
    void *(*arena)(int, size_t *);
    unsigned long long (*alloc)(void *, size_t, int, int);
    int (*free)(void *);
    struct fake_cuda_stats *st;
} fk;

static int fake_load(void)
{
    fk.h = dlopen(fake_path, RTLD_NOW);
    CHECK(NULL != fk.h);
    if (NULL == fk.h) {
        return -1;
    }
    *(void **) &fk.arena = dlsym(fk.h, "fake_cuda_arena");
    *(void **) &fk.alloc = dlsym(fk.h, "fake_cuda_alloc");
    *(void **) &fk.free = dlsym(fk.h, "fake_cuda_free");
    fk.st = dlsym(fk.h, "fake_cuda_stats");
    CHECK(NULL != fk.arena && NULL != fk.alloc && NULL != fk.free && NULL != fk.st);
    return NULL != fk.arena && NULL != fk.alloc && NULL != fk.free && NULL != fk.st ? 0 : -1;
}

static bool fake_in_process(void)
{
    void *h = dlopen(fake_path, RTLD_NOW | RTLD_NOLOAD);

    if (NULL != h) {
        dlclose(h);
    }
    return NULL != h;
}

static void *arena(int which)
{
    size_t len;

    return fk.arena(which, &len);
}

/* detect, returning the interface; *dev gets the device. */
static int kind_of(const void *p, uint64_t *dev)
{
    enum openib_hmem_iface iface = OPENIB_HMEM_ZE;
    uint64_t d = 99;

    CHECK_EQ(openib_hmem_detect(p, &iface, &d), 0);
    if (NULL != dev) {
        *dev = d;
    }
    return (int) iface;
}

static struct openib_hmem_cache_stats cstats(void)
{
    struct openib_hmem_cache_stats s;

    openib_hmem_cache_get_stats(&s);
    return s;
}

static void *map_pages(size_t n)
{
    void *p = mmap(NULL, n * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    CHECK(MAP_FAILED != p);
    return MAP_FAILED == p ? NULL : p;
}

static unsigned char static_buf[64];

/* A process that never loads the driver: zero driver calls, ever. When it
 * loads it later, its cached host buffers still cost none; a device buffer
 * starts CUDA (once), and then costs one call per lookup. */
static void s_lazy(void)
{
    unsigned char stack_buf[64], *heap = malloc(256), *mapped = map_pages(4), *fresh;
    const void *host[4] = { heap, stack_buf, static_buf, mapped };
    struct openib_hmem_cache_stats c0, c1;
    unsigned long attr0;
    uint64_t dev;
    int i, k, wrong = 0;

    setenv("OPENIB_HMEM_CUDA_LIBRARY", fake_path, 1);
    openib_hmem_cache_set_host_caching(true); /* as with Open MPI's memory hooks */
    c0 = cstats();
    for (i = 0; i < 1000; ++i) {
        for (k = 0; k < 4; ++k) {
            wrong += OPENIB_HMEM_SYSTEM != kind_of(host[k], NULL);
        }
    }
    CHECK_EQ(wrong, 0);
    c1 = cstats();
    CHECK_EQ(c1.misses - c0.misses, 4); /* one per buffer, then hits */
    CHECK_EQ(c1.hits - c0.hits, 3996);
    CHECK(!fake_in_process()); /* never loaded: no cuInit, no call at all */
    CHECK_STR_CONTAINS(openib_hmem_iface_status(OPENIB_HMEM_CUDA), "cuda: not started");
    CHECK(!openib_hmem_iface_available(OPENIB_HMEM_CUDA));

    /* The application starts using CUDA. */
    if (fake_load()) {
        return;
    }
    CHECK_EQ(fk.st->init, 0);
    for (i = 0; i < 100; ++i) {
        for (k = 0; k < 4; ++k) {
            wrong += OPENIB_HMEM_SYSTEM != kind_of(host[k], NULL);
        }
    }
    CHECK_EQ(wrong, 0);
    CHECK_EQ(fk.st->init, 0); /* host buffers seen before: still no driver call */
    CHECK_EQ(fk.st->attr, 0);

    CHECK_EQ(kind_of(arena(1), &dev), OPENIB_HMEM_CUDA);
    CHECK_EQ(dev, 1);
    CHECK_EQ(fk.st->init, 1);
    CHECK_STR_CONTAINS(openib_hmem_iface_status(OPENIB_HMEM_CUDA), "started on first use");

    /* Warm: host buffers cost nothing, a new one one call, then nothing. */
    attr0 = fk.st->attr;
    for (i = 0; i < 100; ++i) {
        for (k = 0; k < 4; ++k) {
            wrong += OPENIB_HMEM_SYSTEM != kind_of(host[k], NULL);
        }
    }
    CHECK_EQ(fk.st->attr - attr0, 0);
    fresh = map_pages(1);
    CHECK_EQ(kind_of(fresh, NULL), OPENIB_HMEM_SYSTEM);
    CHECK_EQ(fk.st->attr - attr0, 1); /* "not mine": one call */
    for (i = 0; i < 100; ++i) {
        wrong += OPENIB_HMEM_SYSTEM != kind_of(fresh, NULL);
    }
    CHECK_EQ(fk.st->attr - attr0, 1);
    /* A cached device buffer: one call per lookup (the buffer id). */
    attr0 = fk.st->attr;
    for (i = 0; i < 100; ++i) {
        wrong += OPENIB_HMEM_CUDA != kind_of((char *) arena(1) + 64 * i, NULL);
    }
    CHECK_EQ(wrong, 0);
    CHECK_EQ(fk.st->attr - attr0, 100);
    CHECK_EQ(fk.st->init, 1);
    CHECK_EQ(fk.st->uninit_calls, 0);
    munmap(fresh, 4096);
    munmap(mapped, 4 * 4096);
    free(heap);
}

/* never: even with the driver loaded and device memory passed, no call. */
static void s_mode_never(void)
{
    struct openib_hmem_cache_stats c0 = cstats(), c1;

    setenv("OPENIB_HMEM_CUDA_LIBRARY", fake_path, 1);
    CHECK_EQ(openib_hmem_set_cuda_mode(OPENIB_HMEM_CUDA_NEVER), 0);
    CHECK_EQ(openib_hmem_cuda_mode(), OPENIB_HMEM_CUDA_NEVER);
    if (fake_load()) {
        return;
    }
    CHECK_EQ(kind_of(arena(0), NULL), OPENIB_HMEM_SYSTEM);
    CHECK_EQ(kind_of(static_buf, NULL), OPENIB_HMEM_SYSTEM);
    CHECK_EQ(fk.st->init, 0);
    CHECK_EQ(fk.st->attr, 0);
    c1 = cstats();
    CHECK_EQ(c1.hits + c1.misses, c0.hits + c0.misses); /* not even a lookup */
    CHECK_STR_CONTAINS(openib_hmem_iface_status(OPENIB_HMEM_CUDA), "btl_openib_hmem_cuda=never");
    CHECK_EQ(openib_hmem_set_cuda_mode((enum openib_hmem_cuda_mode) 3), -EINVAL);
}

/* always: started before any buffer is seen; host buffers then cost one
 * call each on their first lookup only. */
static void s_mode_always(void)
{
    unsigned char *heap = malloc(64);
    unsigned long attr0;
    int i, wrong = 0;

    setenv("OPENIB_HMEM_CUDA_LIBRARY", fake_path, 1);
    openib_hmem_cache_set_host_caching(true);
    CHECK_EQ(openib_hmem_set_cuda_mode(OPENIB_HMEM_CUDA_ALWAYS), 0);
    CHECK(openib_hmem_iface_available(OPENIB_HMEM_CUDA));
    CHECK_STR_CONTAINS(openib_hmem_iface_status(OPENIB_HMEM_CUDA), "at start-up");
    if (fake_load()) {
        return;
    }
    CHECK_EQ(fk.st->init, 1);
    attr0 = fk.st->attr;
    for (i = 0; i < 100; ++i) {
        wrong += OPENIB_HMEM_SYSTEM != kind_of(heap, NULL);
    }
    CHECK_EQ(wrong, 0);
    CHECK_EQ(fk.st->attr - attr0, 1);
    /* Applying a mode again leaves a started driver started. */
    CHECK_EQ(openib_hmem_set_cuda_mode(OPENIB_HMEM_CUDA_AUTO), 0);
    CHECK(openib_hmem_iface_available(OPENIB_HMEM_CUDA));
    CHECK_EQ(fk.st->init, 1);
    free(heap);
}

/* Device (two devices), managed, pinned: right on the first lookup and
 * on the cached one. */
static void s_classify(void)
{
    static const struct {
        int arena, iface;
        uint64_t dev;
    } want[] = {
        { 0, OPENIB_HMEM_CUDA, 0 },
        { 1, OPENIB_HMEM_CUDA, 1 },
        { 2, OPENIB_HMEM_CUDA, 0 },   /* managed */
        { 3, OPENIB_HMEM_SYSTEM, 0 }, /* pinned host */
    };
    struct openib_hmem_cache_stats c0, c1;
    unsigned long attr0;
    uint64_t dev;
    size_t i;
    int pass;

    setenv("OPENIB_HMEM_CUDA_LIBRARY", fake_path, 1);
    openib_hmem_cache_set_host_caching(true);
    if (fake_load()) {
        return;
    }
    c0 = cstats();
    for (pass = 0; pass < 2; ++pass) {
        attr0 = fk.st->attr;
        for (i = 0; i < sizeof(want) / sizeof(want[0]); ++i) {
            CHECK_EQ(kind_of((char *) arena(want[i].arena) + 100, &dev), want[i].iface);
            CHECK_EQ(dev, want[i].dev);
        }
        if (1 == pass) {
            CHECK_EQ(fk.st->attr - attr0, 4); /* one buffer-id check each */
        }
    }
    c1 = cstats();
    CHECK_EQ(c1.misses - c0.misses, 4);
    CHECK_EQ(c1.hits - c0.hits, 4);
    CHECK_EQ(fk.st->uninit_calls, 0);
}

/* Freed and allocated again at the same address, as another kind or on
 * another device (cuMemFree unmaps nothing: only the buffer id tells). */
static void s_realloc(void)
{
    unsigned char *pool;
    unsigned long misses;
    uint64_t dev;

    setenv("OPENIB_HMEM_CUDA_LIBRARY", fake_path, 1);
    openib_hmem_cache_set_host_caching(true);
    if (fake_load()) {
        return;
    }
    pool = arena(4);
    CHECK(0 != fk.alloc(pool, 8192, FAKE_DEVICE, 1));
    CHECK_EQ(kind_of(pool + 10, &dev), OPENIB_HMEM_CUDA);
    CHECK_EQ(dev, 1);
    CHECK_EQ(kind_of(pool + 20, &dev), OPENIB_HMEM_CUDA); /* cached */
    CHECK_EQ(fk.free(pool), 0);
    CHECK(0 != fk.alloc(pool, 8192, FAKE_MANAGED, 0));
    CHECK_EQ(kind_of(pool + 10, &dev), OPENIB_HMEM_CUDA);
    CHECK_EQ(dev, 0);
    CHECK_EQ(cstats().stale, 1);
    CHECK_EQ(fk.free(pool), 0);
    CHECK(0 != fk.alloc(pool, 8192, FAKE_PINNED, 0));
    CHECK_EQ(kind_of(pool + 10, &dev), OPENIB_HMEM_SYSTEM);
    CHECK_EQ(fk.free(pool), 0);
    /* Freed, nothing there: host memory as far as the driver knows, but the
     * driver's address range - asked every time, never cached as host. */
    misses = cstats().misses;
    CHECK_EQ(kind_of(pool + 10, NULL), OPENIB_HMEM_SYSTEM);
    CHECK_EQ(kind_of(pool + 10, NULL), OPENIB_HMEM_SYSTEM);
    CHECK_EQ(kind_of(pool + 10, NULL), OPENIB_HMEM_SYSTEM);
    CHECK_EQ(cstats().misses, misses); /* the freed mark answers the lookup */
    CHECK(0 != fk.alloc(pool, 8192, FAKE_DEVICE, 0));
    CHECK_EQ(kind_of(pool + 10, &dev), OPENIB_HMEM_CUDA);
    CHECK_EQ(dev, 0);
    CHECK_EQ(fk.free(pool), 0);
    /* Two allocations side by side: two entries, never merged. */
    CHECK(0 != fk.alloc(pool, 4096, FAKE_DEVICE, 0));
    CHECK(0 != fk.alloc(pool + 4096, 4096, FAKE_DEVICE, 1));
    CHECK_EQ(kind_of(pool + 4095, &dev), OPENIB_HMEM_CUDA);
    CHECK_EQ(dev, 0);
    CHECK_EQ(kind_of(pool + 4096, &dev), OPENIB_HMEM_CUDA);
    CHECK_EQ(dev, 1);
    CHECK_EQ(kind_of(pool, &dev), OPENIB_HMEM_CUDA);
    CHECK_EQ(dev, 0);
    CHECK_EQ(fk.st->uninit_calls, 0);
}

/* Host memory unmapped, its addresses reused by the driver: the release
 * reported by the memory hooks is what makes the new memory look new. */
static void s_unmap_reuse(void)
{
    unsigned char *r, *r2, *again;
    uint64_t dev;

    setenv("OPENIB_HMEM_CUDA_LIBRARY", fake_path, 1);
    openib_hmem_cache_set_host_caching(true);
    if (fake_load()) {
        return;
    }
    CHECK_EQ(kind_of(arena(0), NULL), OPENIB_HMEM_CUDA); /* CUDA started */
    r = map_pages(2);
    r2 = map_pages(2);
    if (NULL == r || NULL == r2) {
        return;
    }
    CHECK_EQ(kind_of(r, NULL), OPENIB_HMEM_SYSTEM);
    CHECK_EQ(kind_of(r2, NULL), OPENIB_HMEM_SYSTEM);

    CHECK_EQ(munmap(r, 8192), 0);
    openib_hmem_cache_release(r, 8192); /* what the munmap hook does */
    again = mmap(r, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    CHECK(again == r);
    CHECK(0 != fk.alloc(r, 8192, FAKE_DEVICE, 1));
    CHECK_EQ(kind_of(r + 100, &dev), OPENIB_HMEM_CUDA);
    CHECK_EQ(dev, 1);

    /* Control: the same without the release is still cached as host. */
    CHECK(0 != fk.alloc(r2, 8192, FAKE_DEVICE, 1));
    CHECK_EQ(kind_of(r2, NULL), OPENIB_HMEM_SYSTEM);
    openib_hmem_cache_release(r2, 8192);
    CHECK_EQ(kind_of(r2, NULL), OPENIB_HMEM_CUDA);

    /* A release over a device allocation drops it too (asked again). */
    openib_hmem_cache_release(r + 4096, 1);
    CHECK_EQ(kind_of(r, &dev), OPENIB_HMEM_CUDA);
    CHECK_EQ(dev, 1);
    fk.free(r);
    fk.free(r2);
    munmap(r, 8192);
    munmap(r2, 8192);
}

/* Adjacent host pages merge; a release in the middle cuts them. */
static void s_release_cuts(void)
{
    unsigned char *r = map_pages(8);
    struct openib_hmem_cache_stats c0, c1;
    int i;

    openib_hmem_cache_set_host_caching(true);
    setenv("OPENIB_HMEM_CUDA_LIBRARY", fake_path, 1);
    if (NULL == r) {
        return;
    }
    for (i = 0; i < 8; ++i) {
        CHECK_EQ(kind_of(r + i * 4096 + 7, NULL), OPENIB_HMEM_SYSTEM);
    }
    c0 = cstats();
    CHECK_EQ(c0.entries, 1);
    openib_hmem_cache_release(r + 3 * 4096, 4096);
    c1 = cstats();
    CHECK_EQ(c1.entries, 2);
    CHECK_EQ(c1.dropped - c0.dropped, 1);
    CHECK_EQ(kind_of(r + 2 * 4096, NULL), OPENIB_HMEM_SYSTEM);
    CHECK_EQ(kind_of(r + 4 * 4096, NULL), OPENIB_HMEM_SYSTEM);
    CHECK_EQ(kind_of(r + 7 * 4096, NULL), OPENIB_HMEM_SYSTEM);
    c0 = cstats();
    CHECK_EQ(c0.hits - c1.hits, 3);
    CHECK_EQ(c0.misses, c1.misses);
    CHECK_EQ(kind_of(r + 3 * 4096 + 1, NULL), OPENIB_HMEM_SYSTEM);
    CHECK_EQ(cstats().misses - c0.misses, 1);
    CHECK_EQ(cstats().entries, 1); /* merged again */
    openib_hmem_cache_release(r, 8 * 4096);
    CHECK_EQ(cstats().entries, 0);
    munmap(r, 8 * 4096);
    CHECK(!fake_in_process());
}

/* More ranges than the cache holds: it empties and refills, answers stay
 * right. */
static void s_full(void)
{
    enum { PAGES = 1400 };
    unsigned char *r = mmap(NULL, PAGES * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int i, wrong = 0;

    openib_hmem_cache_set_host_caching(true);
    setenv("OPENIB_HMEM_CUDA_LIBRARY", fake_path, 1);
    CHECK(MAP_FAILED != r);
    if (MAP_FAILED == r) {
        return;
    }
    for (i = 0; i < PAGES; i += 2) { /* every other page: no merging */
        wrong += OPENIB_HMEM_SYSTEM != kind_of(r + i * 4096, NULL);
    }
    CHECK_EQ(wrong, 0);
    CHECK(cstats().flushes >= 1);
    CHECK(cstats().entries > 0);
    openib_hmem_cache_release(r, PAGES * 4096);
    munmap(r, PAGES * 4096);
}

/* No memory hooks: host ranges are never cached (nothing would say when
 * they go); CUDA allocations still are (the buffer id checks them). */
static void s_no_hooks(void)
{
    unsigned char *heap = malloc(64);
    unsigned long attr0;
    int i, wrong = 0;

    setenv("OPENIB_HMEM_CUDA_LIBRARY", fake_path, 1);
    for (i = 0; i < 10; ++i) {
        wrong += OPENIB_HMEM_SYSTEM != kind_of(heap, NULL);
    }
    CHECK_EQ(cstats().entries, 0);
    CHECK(!cstats().host_caching);
    CHECK(!fake_in_process());
    if (fake_load()) {
        return;
    }
    CHECK_EQ(kind_of(arena(0), NULL), OPENIB_HMEM_CUDA);
    attr0 = fk.st->attr;
    for (i = 0; i < 10; ++i) {
        wrong += OPENIB_HMEM_SYSTEM != kind_of(heap, NULL);
    }
    CHECK_EQ(fk.st->attr - attr0, 10); /* one "not mine" per lookup */
    attr0 = fk.st->attr;
    for (i = 0; i < 10; ++i) {
        wrong += OPENIB_HMEM_CUDA != kind_of(arena(0), NULL);
    }
    CHECK_EQ(fk.st->attr - attr0, 10); /* the buffer-id check only */
    CHECK_EQ(wrong, 0);
    CHECK_STR_CONTAINS(openib_hmem_cache_status(), "not cached");
    free(heap);
}

int main(void)
{
    fake_path = hmem_test_module("tests/unit/hmem", "hmem_fake_cuda");
    unsetenv("FAKE_CUDA_REPORT");
    in_child("lazy start: no driver, then driver", s_lazy);
    in_child("mode never", s_mode_never);
    in_child("mode always", s_mode_always);
    in_child("classification", s_classify);
    in_child("freed and allocated again", s_realloc);
    in_child("unmapped and reused", s_unmap_reuse);
    in_child("releases cut host ranges", s_release_cuts);
    in_child("cache full", s_full);
    in_child("no memory hooks", s_no_hooks);
    return unit_finish("test_hmem_cache");
}

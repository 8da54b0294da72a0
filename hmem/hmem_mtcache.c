/*
 * hmem_mtcache.c - the memory-type cache: address ranges and what memory
 * they are (host, CUDA device, managed, pinned host), so that every
 * prepare_src, pack and registration pays a lookup instead of a driver call.
 *
 * Structure: a sorted array of non-overlapping ranges, looked up by binary
 * search (O(log n)) after a check of the entry that answered last (O(1) for
 * the buffer a program sends again and again). Fixed size and static: the
 * release path runs inside munmap/free (Open MPI's memory hooks), where
 * allocating could deadlock on the allocator's own lock. When it is full it
 * is emptied and refills (a rare miss costs a re-classification, nothing
 * more).
 *
 * Host entries: the page around a classified address (a mapping is whole
 * pages, so the page is the same memory as the buffer's first byte),
 * merged with host neighbours. Host memory stays host memory until it is
 * unmapped, so they are valid until a release (munmap, mremap, brk shrink,
 * madvise(DONTNEED), shmdt - what Open MPI's patcher reports) touches them.
 * Without memory hooks they are never cached (hmem_mt_set_host_caching).
 *
 * CUDA entries: the driver's allocation range with its buffer id; the
 * caller re-checks the id on every hit (cuMemFree/cuMemAlloc need not
 * unmap anything, so no hook would tell us). An allocation found freed
 * stays as a FREED mark: that address range is the driver's, so it is
 * never cached as host memory while it is mapped.
 *
 * Concurrency: readers never block (a sequence lock: a reader that raced
 * with a writer retries); writers (inserts, the release hook, which may
 * run on any thread of the process, MPI or not) take a mutex. Nothing is
 * called with the mutex held, so a hook firing inside a driver call cannot
 * deadlock on it.
 */
#include <pthread.h>
#include <unistd.h>

#include "hmem/hmem_private.h"

#define HMEM_MT_CAP 512

static struct {
    pthread_mutex_t lock;
    unsigned seq;    /* odd while a writer changes entries */
    unsigned n;      /* entries in use, sorted by start */
    unsigned hint;   /* the entry that answered last (a hint: checked) */
    uint64_t gen;    /* bumped by every release */
    bool host_ok;    /* memory hooks report releases: host ranges may be cached */
    uintptr_t page;
    struct hmem_mt_entry e[HMEM_MT_CAP];
    struct openib_hmem_cache_stats st;
} mt = { .lock = PTHREAD_MUTEX_INITIALIZER };

#define RLX __ATOMIC_RELAXED

/* Counters: relaxed load + store (statistics, like hmem_copy.c's). */
static inline void mt_count(uint64_t *c)
{
    __atomic_store_n(c, __atomic_load_n(c, RLX) + 1, RLX);
}

static inline void mt_load(const struct hmem_mt_entry *src, struct hmem_mt_entry *dst)
{
    dst->start = __atomic_load_n(&src->start, RLX);
    dst->end = __atomic_load_n(&src->end, RLX);
    dst->buffer_id = __atomic_load_n(&src->buffer_id, RLX);
    dst->device = __atomic_load_n(&src->device, RLX);
    dst->type = __atomic_load_n(&src->type, RLX);
}

static inline void mt_store(struct hmem_mt_entry *dst, const struct hmem_mt_entry *src)
{
    __atomic_store_n(&dst->start, src->start, RLX);
    __atomic_store_n(&dst->end, src->end, RLX);
    __atomic_store_n(&dst->buffer_id, src->buffer_id, RLX);
    __atomic_store_n(&dst->device, src->device, RLX);
    __atomic_store_n(&dst->type, src->type, RLX);
}

/* Index of the first entry whose start is above addr (0..n). */
static inline unsigned mt_upper(uintptr_t addr, unsigned n)
{
    unsigned lo = 0, hi = n;

    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;

        if (addr < __atomic_load_n(&mt.e[mid].start, RLX)) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    return lo;
}

/* One attempt at a lock-free read; false if it raced with a writer. */
static inline bool mt_try_read(uintptr_t addr, struct hmem_mt_entry *out, bool *found)
{
    unsigned s = __atomic_load_n(&mt.seq, __ATOMIC_ACQUIRE);
    unsigned n, h, i;
    bool hit = false;

    if (HMEM_UNLIKELY(s & 1)) {
        return false;
    }
    n = __atomic_load_n(&mt.n, RLX);
    if (n > HMEM_MT_CAP) {
        n = HMEM_MT_CAP;
    }
    h = __atomic_load_n(&mt.hint, RLX);
    if (h < n) {
        mt_load(&mt.e[h], out);
        hit = addr >= out->start && addr < out->end;
    }
    if (!hit) {
        i = mt_upper(addr, n);
        if (i > 0) {
            mt_load(&mt.e[i - 1], out);
            hit = addr < out->end;
            h = i - 1;
        }
    }
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&mt.seq, RLX) != s) {
        return false;
    }
    if (hit) {
        __atomic_store_n(&mt.hint, h, RLX);
    }
    *found = hit;
    return true;
}

bool hmem_mt_hint_is_host(uintptr_t addr)
{
    unsigned s = __atomic_load_n(&mt.seq, __ATOMIC_ACQUIRE);
    unsigned h = __atomic_load_n(&mt.hint, RLX);
    uintptr_t start, end;
    uint32_t type;

    if (HMEM_UNLIKELY(s & 1) || h >= __atomic_load_n(&mt.n, RLX)) {
        return false;
    }
    start = __atomic_load_n(&mt.e[h].start, RLX);
    end = __atomic_load_n(&mt.e[h].end, RLX);
    type = __atomic_load_n(&mt.e[h].type, RLX);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&mt.seq, RLX) != s) {
        return false;
    }
    if (addr >= start && addr < end && HMEM_MT_HOST == type) {
        mt_count(&mt.st.hits);
        return true;
    }
    return false;
}

bool hmem_mt_lookup(uintptr_t addr, struct hmem_mt_entry *out)
{
    bool found = false;
    int tries;

    for (tries = 0; tries < 4; ++tries) {
        if (HMEM_LIKELY(mt_try_read(addr, out, &found))) {
            mt_count(found ? &mt.st.hits : &mt.st.misses);
            return found;
        }
    }
    /* A writer keeps getting in the way: read under its lock. */
    pthread_mutex_lock(&mt.lock);
    (void) mt_try_read(addr, out, &found);
    pthread_mutex_unlock(&mt.lock);
    mt_count(found ? &mt.st.hits : &mt.st.misses);
    return found;
}

uint64_t hmem_mt_generation(void)
{
    return __atomic_load_n(&mt.gen, __ATOMIC_ACQUIRE);
}

/* Writers: under mt.lock, entries changed between these two. */
static void mt_write_begin(void)
{
    __atomic_store_n(&mt.seq, mt.seq + 1, RLX);
    __atomic_thread_fence(__ATOMIC_RELEASE);
}

static void mt_write_end(void)
{
    __atomic_store_n(&mt.seq, mt.seq + 1, __ATOMIC_RELEASE);
}

static void mt_remove_at(unsigned i)
{
    struct hmem_mt_entry tmp;
    unsigned k;

    for (k = i; k + 1 < mt.n; ++k) {
        mt_load(&mt.e[k + 1], &tmp);
        mt_store(&mt.e[k], &tmp);
    }
    __atomic_store_n(&mt.n, mt.n - 1, RLX);
}

/* Insert e at index i (sorted); empties the cache first when it is full,
 * so i is recomputed. */
static void mt_insert_at(unsigned i, const struct hmem_mt_entry *e)
{
    struct hmem_mt_entry tmp;
    unsigned k;

    if (mt.n == HMEM_MT_CAP) {
        __atomic_store_n(&mt.n, 0, RLX);
        mt_count(&mt.st.flushes);
        i = 0;
    }
    for (k = mt.n; k > i; --k) {
        mt_load(&mt.e[k - 1], &tmp);
        mt_store(&mt.e[k], &tmp);
    }
    mt_store(&mt.e[i], e);
    __atomic_store_n(&mt.n, mt.n + 1, RLX);
    mt_count(&mt.st.inserts);
}

static uintptr_t mt_page(void)
{
    if (0 == mt.page) {
        long p = sysconf(_SC_PAGESIZE);

        mt.page = p > 0 ? (uintptr_t) p : 4096;
    }
    return mt.page;
}

void hmem_mt_insert_host(uintptr_t addr, uint64_t gen)
{
    uintptr_t lo, hi, page;
    unsigned i;

    pthread_mutex_lock(&mt.lock);
    if (!mt.host_ok || gen != mt.gen) {
        goto out;
    }
    page = mt_page();
    lo = addr & ~(page - 1);
    hi = lo + page < lo ? UINTPTR_MAX : lo + page;
    i = mt_upper(addr, mt.n);
    if (i > 0 && mt.e[i - 1].end > addr) {
        goto out; /* someone cached it meanwhile */
    }
    /* Clip to the neighbours: a pinned range may share the page. */
    if (i > 0 && mt.e[i - 1].end > lo) {
        lo = mt.e[i - 1].end;
    }
    if (i < mt.n && mt.e[i].start < hi) {
        hi = mt.e[i].start;
    }
    mt_write_begin();
    if (i > 0 && HMEM_MT_HOST == mt.e[i - 1].type && mt.e[i - 1].end == lo) {
        __atomic_store_n(&mt.e[i - 1].end, hi, RLX);
        if (i < mt.n && HMEM_MT_HOST == mt.e[i].type && mt.e[i].start == hi) {
            __atomic_store_n(&mt.e[i - 1].end, mt.e[i].end, RLX);
            mt_remove_at(i);
        }
        mt_count(&mt.st.inserts);
    } else if (i < mt.n && HMEM_MT_HOST == mt.e[i].type && mt.e[i].start == hi) {
        __atomic_store_n(&mt.e[i].start, lo, RLX);
        mt_count(&mt.st.inserts);
    } else {
        struct hmem_mt_entry e = { .start = lo, .end = hi, .type = HMEM_MT_HOST };

        mt_insert_at(i, &e);
    }
    mt_write_end();
out:
    pthread_mutex_unlock(&mt.lock);
}

void hmem_mt_insert(const struct hmem_mt_entry *e, uint64_t gen)
{
    unsigned i;

    if (e->end <= e->start) {
        return;
    }
    pthread_mutex_lock(&mt.lock);
    if (gen != mt.gen) {
        goto out;
    }
    mt_write_begin();
    /* The driver's answer is fresh: whatever overlaps it is stale. */
    i = mt_upper(e->start, mt.n);
    if (i > 0 && mt.e[i - 1].end > e->start) {
        --i;
    }
    while (i < mt.n && mt.e[i].start < e->end) {
        mt_remove_at(i);
    }
    mt_insert_at(i, e);
    mt_write_end();
out:
    pthread_mutex_unlock(&mt.lock);
}

void hmem_mt_mark_freed(const struct hmem_mt_entry *e)
{
    unsigned i;

    pthread_mutex_lock(&mt.lock);
    i = mt_upper(e->start, mt.n);
    if (i > 0 && mt.e[i - 1].start == e->start && mt.e[i - 1].buffer_id == e->buffer_id &&
        mt.e[i - 1].type == e->type) {
        mt_write_begin();
        __atomic_store_n(&mt.e[i - 1].type, (uint32_t) HMEM_MT_CUDA_FREED, RLX);
        __atomic_store_n(&mt.e[i - 1].buffer_id, 0, RLX);
        mt_write_end();
        mt_count(&mt.st.stale);
    }
    pthread_mutex_unlock(&mt.lock);
}

void openib_hmem_cache_release(const void *addr, size_t len)
{
    uintptr_t a = (uintptr_t) addr, b = a + len < a ? UINTPTR_MAX : a + len;
    struct hmem_mt_entry right;
    unsigned i;

    if (0 == len) {
        return;
    }
    pthread_mutex_lock(&mt.lock);
    mt_write_begin();
    __atomic_store_n(&mt.gen, mt.gen + 1, __ATOMIC_RELEASE);
    mt_count(&mt.st.releases);
    i = mt_upper(a, mt.n);
    if (i > 0 && mt.e[i - 1].end > a) {
        --i;
    }
    while (i < mt.n && mt.e[i].start < b) {
        struct hmem_mt_entry *e = &mt.e[i];

        mt_count(&mt.st.dropped);
        if (HMEM_MT_HOST != e->type) {
            mt_remove_at(i); /* an allocation partly gone is gone */
            continue;
        }
        /* Host: keep what lies outside [a, b). */
        right = *e;
        right.start = b;
        if (e->start < a) {
            __atomic_store_n(&e->end, a, RLX);
            ++i;
            if (right.end > b && mt.n < HMEM_MT_CAP) {
                mt_insert_at(i, &right);
                ++i;
            }
        } else if (e->end > b) {
            __atomic_store_n(&e->start, b, RLX);
            ++i;
        } else {
            mt_remove_at(i);
        }
    }
    mt_write_end();
    pthread_mutex_unlock(&mt.lock);
}

void openib_hmem_cache_set_host_caching(bool on)
{
    pthread_mutex_lock(&mt.lock);
    mt.host_ok = on;
    if (!on) {
        /* Nobody will tell us about releases any more. */
        mt_write_begin();
        __atomic_store_n(&mt.n, 0, RLX);
        __atomic_store_n(&mt.gen, mt.gen + 1, __ATOMIC_RELEASE);
        mt_write_end();
    }
    pthread_mutex_unlock(&mt.lock);
}

void openib_hmem_cache_flush(void)
{
    pthread_mutex_lock(&mt.lock);
    mt_write_begin();
    __atomic_store_n(&mt.n, 0, RLX);
    __atomic_store_n(&mt.gen, mt.gen + 1, __ATOMIC_RELEASE);
    mt_write_end();
    pthread_mutex_unlock(&mt.lock);
}

void openib_hmem_cache_get_stats(struct openib_hmem_cache_stats *st)
{
    pthread_mutex_lock(&mt.lock);
    *st = mt.st;
    st->entries = mt.n;
    st->host_caching = mt.host_ok;
    pthread_mutex_unlock(&mt.lock);
}

const char *openib_hmem_cache_status(void)
{
    return __atomic_load_n(&mt.host_ok, RLX)
               ? "memory-type cache: host ranges cached until the memory hooks report them "
                 "released"
               : "memory-type cache: host ranges not cached (no memory hooks to report "
                 "munmap/free); device ranges cached, checked by buffer id";
}

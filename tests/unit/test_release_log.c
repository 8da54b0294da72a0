/* The log of released ranges (btl_openib_release_log.c) that the
 * registration cache replays before each lookup: a reader sees every range
 * noted after its cursor was made, once and in order; a reader that fell a
 * ring behind is told to drop everything; an entry still being written
 * does not hide those after it; and with writer threads noting
 * while the reader replays (kept from lapping it), every range arrives,
 * whole and in each writer's order. */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "openib_config.h"
#include "btl_openib/btl_openib_release_log.h"
#include "tests/unit/unit.h"

struct seen {
    int n, all;
    uintptr_t base[16];
    size_t len[16];
};

static void record(void *ctx, uintptr_t base, size_t len)
{
    struct seen *s = ctx;

    if (base == OPENIB_RELEASE_ALL_BASE && len == OPENIB_RELEASE_ALL_LEN) {
        s->all++;
        return;
    }
    if (s->n < 16) {
        s->base[s->n] = base;
        s->len[s->n] = len;
    }
    s->n++;
}

static void in_order(void)
{
    struct openib_release_cursor early, late;
    struct seen a = { 0 }, b = { 0 };

    openib_release_cursor_init(&early);
    openib_release_log_note((void *) 0x10000, 4096);
    openib_release_cursor_init(&late);
    openib_release_log_note((void *) 0x20000, 8192);
    openib_release_log_note((void *) 0x30000, 12288);

    CHECK(3 == openib_release_log_replay(&early, record, &a));
    CHECK(3 == a.n && 0 == a.all);
    CHECK(0x10000 == a.base[0] && 4096 == a.len[0]);
    CHECK(0x20000 == a.base[1] && 8192 == a.len[1]);
    CHECK(0x30000 == a.base[2] && 12288 == a.len[2]);
    /* a cursor made after a note does not see it */
    CHECK(2 == openib_release_log_replay(&late, record, &b));
    CHECK(2 == b.n && 0x20000 == b.base[0]);
    /* nothing twice */
    a.n = 0;
    CHECK(0 == openib_release_log_replay(&early, record, &a));
    CHECK(0 == a.n && 0 == a.all);
}

static void lapped_reader(void)
{
    struct openib_release_cursor c;
    struct seen s = { 0 };

    openib_release_cursor_init(&c);
    for (int i = 0; i < OPENIB_RELEASE_LOG_LEN + 5; ++i) {
        openib_release_log_note((void *) (uintptr_t) (0x100000 + 4096 * i), 4096);
    }
    CHECK(1 == openib_release_log_replay(&c, record, &s));
    CHECK(1 == s.all && 0 == s.n);
    /* caught up: the next note is seen as itself */
    openib_release_log_note((void *) 0x40000, 4096);
    s.all = 0;
    CHECK(1 == openib_release_log_replay(&c, record, &s));
    CHECK(0 == s.all && 1 == s.n && 0x40000 == s.base[0]);
}

/* A writer that has claimed an entry and not filled it yet does not hide
 * the entries noted after it; its own is reported once filled. */
static void slow_writer(void)
{
    struct openib_release_cursor c;
    struct seen s = { 0 };
    uint64_t slow;

    openib_release_cursor_init(&c);
    slow = openib_release_log_claim();
    openib_release_log_note((void *) 0x50000, 4096);
    openib_release_log_note((void *) 0x60000, 4096);
    CHECK(2 == openib_release_log_replay(&c, record, &s));
    CHECK(2 == s.n && 0x50000 == s.base[0] && 0x60000 == s.base[1]);
    s.n = 0;
    /* still unfilled: the entries after it come again, and nothing else */
    CHECK(2 == openib_release_log_replay(&c, record, &s));
    CHECK(2 == s.n && 0x50000 == s.base[0] && 0 == s.all);
    s.n = 0;
    openib_release_log_fill(slow, (void *) 0x70000, 8192);
    CHECK(3 == openib_release_log_replay(&c, record, &s));
    CHECK(3 == s.n && 0x70000 == s.base[0] && 8192 == s.len[0] && 0x50000 == s.base[1]);
    s.n = 0;
    CHECK(0 == openib_release_log_replay(&c, record, &s) && 0 == s.n && 0 == s.all);
}

/* Writers note (thread, i) encoded in the base; the reader checks each
 * writer's entries arrive in order with none skipped, unless "everything"
 * was reported in between (then it resynchronizes). */
#define WRITERS 4
#define PER_WRITER 50000

static int writers_done;
static uint64_t reader_at; /* the reader's cursor, for the writers' throttle */

static void *writer(void *arg)
{
    uintptr_t t = (uintptr_t) arg;

    for (uintptr_t i = 1; i <= PER_WRITER; ++i) {
        /* stay within half a ring of the reader, so that nothing is lost
         * and every entry must arrive (losing them is lapped_reader's) */
        while ((i & 63) == 0 && openib_release_log_claim_count() -
                                        __atomic_load_n(&reader_at, __ATOMIC_ACQUIRE) >
                                    OPENIB_RELEASE_LOG_LEN / 2) {
            sched_yield();
        }
        openib_release_log_note((void *) ((t << 40) | (i << 12)), 4096 * t + 4096);
    }
    __atomic_add_fetch(&writers_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

struct follow {
    uintptr_t last[WRITERS];
    long entries, alls, gaps, bad;
};

static void follow_one(void *ctx, uintptr_t base, size_t len)
{
    struct follow *f = ctx;
    uintptr_t t = base >> 40, i = (base >> 12) & ((1ul << 28) - 1);

    if (base == OPENIB_RELEASE_ALL_BASE && len == OPENIB_RELEASE_ALL_LEN) {
        f->alls++;
        for (int k = 0; k < WRITERS; ++k) {
            f->last[k] = 0; /* anything may have been lost: accept the next of each */
        }
        return;
    }
    f->entries++;
    if (t >= WRITERS || len != 4096 * t + 4096 || (base & 4095)) {
        f->bad++; /* a torn entry */
        return;
    }
    if (f->last[t] && i > f->last[t] + 1) {
        f->gaps++;
    }
    if (i > f->last[t]) {
        f->last[t] = i; /* (an entry seen again, behind one still being written, is fine) */
    }
}

static void concurrent(void)
{
    struct openib_release_cursor c;
    struct follow f = { { 0 }, 0, 0, 0, 0 };
    pthread_t th[WRITERS];

    openib_release_cursor_init(&c);
    for (uintptr_t t = 0; t < WRITERS; ++t) {
        CHECK(0 == pthread_create(&th[t], NULL, writer, (void *) t));
    }
    while (__atomic_load_n(&writers_done, __ATOMIC_ACQUIRE) < WRITERS) {
        (void) openib_release_log_replay(&c, follow_one, &f);
        __atomic_store_n(&reader_at, c.next, __ATOMIC_RELEASE);
    }
    for (int t = 0; t < WRITERS; ++t) {
        pthread_join(th[t], NULL);
    }
    (void) openib_release_log_replay(&c, follow_one, &f);
    printf("test_release_log: concurrent: %ld entries replayed, %ld resets\n", f.entries, f.alls);
    CHECK(0 == f.bad);
    CHECK(0 == f.gaps);
    CHECK(0 == f.alls);
    for (int t = 0; t < WRITERS; ++t) {
        CHECK(PER_WRITER == f.last[t]); /* every writer's entries, all of them, in order */
    }
    CHECK(f.entries >= (long) WRITERS * PER_WRITER);
}

int main(void)
{
    in_order();
    lapped_reader();
    slow_writer();
    concurrent();
    return unit_finish("test_release_log");
}

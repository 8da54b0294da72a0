/*
 * btl_openib_release_log.c - the ring of released address ranges (the
 * header says why openib keeps it).
 *
 * Each slot carries the sequence number of the entry in it, plus one. A
 * writer claims a number, marks the slot busy, writes the range, then
 * publishes the number. A reader trusts a slot only if it shows the number
 * it expects both before and after it copies the range out. Replaying an
 * entry twice costs a registration at most, so a reader that meets an
 * entry still being written goes on past it and comes back to it.
 */
#include "openib_config.h"

#include "btl_openib/btl_openib_release_log.h"

#define SLOT_BUSY UINT64_MAX

static struct {
    uint64_t seq; /* entry number + 1 when complete, SLOT_BUSY while written, 0 never */
    uintptr_t base;
    size_t len;
} ring[OPENIB_RELEASE_LOG_LEN];

static uint64_t head; /* entries claimed so far */

uint64_t openib_release_log_claim(void)
{
    uint64_t n = __atomic_fetch_add(&head, 1, __ATOMIC_ACQ_REL);

    __atomic_store_n(&ring[n % OPENIB_RELEASE_LOG_LEN].seq, SLOT_BUSY, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE); /* busy before the range changes */
    return n;
}

void openib_release_log_fill(uint64_t n, const void *base, size_t len)
{
    __typeof__(ring[0]) *s = &ring[n % OPENIB_RELEASE_LOG_LEN];

    __atomic_store_n(&s->base, (uintptr_t) base, __ATOMIC_RELAXED);
    __atomic_store_n(&s->len, len, __ATOMIC_RELAXED);
    __atomic_store_n(&s->seq, n + 1, __ATOMIC_RELEASE);
}

void openib_release_log_note(const void *base, size_t len)
{
    openib_release_log_fill(openib_release_log_claim(), base, len);
}

uint64_t openib_release_log_claim_count(void)
{
    return __atomic_load_n(&head, __ATOMIC_ACQUIRE);
}

void openib_release_cursor_init(struct openib_release_cursor *c)
{
    c->next = openib_release_log_claim_count();
}

/* Whether entry N is lost to this reader: HEAD has lapped it. */
static int lapped(uint64_t n)
{
    return openib_release_log_claim_count() - n > OPENIB_RELEASE_LOG_LEN;
}

int openib_release_log_replay(struct openib_release_cursor *c,
                              void (*fn)(void *ctx, uintptr_t base, size_t len), void *ctx)
{
    uint64_t end = openib_release_log_claim_count(), pending = end;
    int calls = 0;

    for (uint64_t n = c->next; n < end; ++n) {
        __typeof__(ring[0]) *s = &ring[n % OPENIB_RELEASE_LOG_LEN];
        uint64_t before = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE), after;
        uintptr_t base;
        size_t len;

        if (before != n + 1) {
            if ((before != SLOT_BUSY && before > n + 1) || lapped(n)) {
                goto lost; /* a later entry took the slot */
            }
            /* Entry N is still being written. Its range is not released
             * yet (the hook runs before the unmap), but later ones may
             * be: replay those now, and N, with them again, next time. */
            if (pending == end) {
                pending = n;
            }
            continue;
        }
        base = __atomic_load_n(&s->base, __ATOMIC_RELAXED);
        len = __atomic_load_n(&s->len, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_ACQUIRE); /* the copy before the second look */
        after = __atomic_load_n(&s->seq, __ATOMIC_RELAXED);
        if (after != n + 1) {
            goto lost; /* overwritten while copied */
        }
        fn(ctx, base, len);
        calls++;
    }
    c->next = pending;
    return calls;

lost:
    fn(ctx, OPENIB_RELEASE_ALL_BASE, OPENIB_RELEASE_ALL_LEN);
    openib_release_cursor_init(c);
    return calls + 1;
}

/*
 * cpc_active.c - the set of handshakes under way (see cpc_active.h).
 */
#include "connect/cpc_active.h"

#include <stdlib.h>

static int *slot_of(const struct openib_cpc_active *s, void *e)
{
    return (int *) ((char *) e + s->index_off);
}

bool openib_cpc_active_set(struct openib_cpc_active *s, void *e, bool on)
{
    int *slot = slot_of(s, e);

    if (on && *slot < 0) {
        if (s->n == s->cap) {
            int cap = s->cap ? 2 * s->cap : 16;
            void **v = realloc(s->v, (size_t) cap * sizeof(*v));

            if (NULL == v) {
                return false;
            }
            s->v = v;
            s->cap = cap;
        }
        *slot = s->n;
        s->v[s->n++] = e;
    } else if (!on && *slot >= 0) {
        /* the last element takes the freed slot */
        s->v[*slot] = s->v[--s->n];
        *slot_of(s, s->v[*slot]) = *slot;
        *slot = -1;
    }
    return true;
}

void openib_cpc_active_fini(struct openib_cpc_active *s)
{
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}

long openib_cpc_retry_at_ms(int failures)
{
    long ms = 100L * failures;

    return openib_now_ms() + (ms > OPENIB_CPC_RETRY_MAX_MS ? OPENIB_CPC_RETRY_MAX_MS : ms);
}

void openib_cpc_active_scan(struct openib_cpc_active *s, void (*visit)(void *e, long now))
{
    long now;
    int i;

    if (0 == s->n) {
        return;
    }
    now = openib_now_ms();
    for (i = s->n - 1; i >= 0; --i) {
        if (i < s->n) {
            visit(s->v[i], now);
        }
    }
}

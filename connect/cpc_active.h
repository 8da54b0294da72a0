/*
 * cpc_active.h - the handshakes a CPC has under way, for its timer scan:
 * O(1) add and remove (each element keeps its own slot number), and a
 * monotonic millisecond clock for deadlines. Shared by oob and xoob.
 */
#ifndef OPENIB_CPC_ACTIVE_H
#define OPENIB_CPC_ACTIVE_H

#include <stdbool.h>
#include <stddef.h>

struct openib_cpc_active {
    void **v;            /* elements, v[0 .. n-1] */
    int n, cap;
    size_t index_off;    /* offsetof(element, int slot): -1 when not in the set */
};

/* OPENIB_CPC_ACTIVE_INIT(struct oob_ep, active_index) */
#define OPENIB_CPC_ACTIVE_INIT(type, member) { NULL, 0, 0, offsetof(type, member) }

/* Add (on) or remove (!on) e; both are no-ops when already so. Adding can
 * fail only for memory, and then e simply has no timer (returns false);
 * the side channel's own errors still end its handshake. */
bool openib_cpc_active_set(struct openib_cpc_active *s, void *e, bool on);

/* Forget every element and free the array (component finalize). */
void openib_cpc_active_fini(struct openib_cpc_active *s);

/* CLOCK_MONOTONIC in milliseconds. */
long openib_cpc_now_ms(void);

#endif

/*
 * cpc_active.h - the handshakes a CPC has under way, for its timer scan:
 * O(1) add and remove (each element keeps its own slot number), and a
 * monotonic millisecond clock for deadlines. Shared by oob and xoob (and
 * the absence rule by rdma_cm).
 */
#ifndef OPENIB_CPC_ACTIVE_H
#define OPENIB_CPC_ACTIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "common/openib_clock.h"
#include "openib/openib_cpc.h"

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

/* A CPC's timer scan: visit(e, now) for every handshake in s, the newest
 * first, with one reading of the clock. A visit may end any handshake
 * (take it out of s, even another than e): the scan reads each slot as it
 * reaches it and passes over slots the set no longer has. */
void openib_cpc_active_scan(struct openib_cpc_active *s, void (*visit)(void *e, long now));

/* A failed attempt is tried again 100 ms later per failure so far, and at
 * least every OPENIB_CPC_RETRY_MAX_MS: the delay outgrows the IB CM's
 * time-wait (about a second on RoCE), after which a stale-connection
 * refusal clears, while a peer that comes up late is still found soon.
 * Returns when (openib_now_ms()'s clock). */
#define OPENIB_CPC_RETRY_MAX_MS 2000
long openib_cpc_retry_at_ms(int failures);

/* Crossing connects (each side sent the other a request): the side whose
 * process name compares lower keeps initiating and refuses the other's
 * request; the other drops its own attempt and answers. Both sides compute
 * the same answer, so exactly one handshake completes. */
static inline bool openib_cpc_keeps_initiating(const struct openib_cpc_endpoint *cep)
{
    return memcmp(cep->local_id, cep->peer_id, cep->id_len) < 0;
}

/*
 * A handshake's deadline bounds the peer's silence, and silence is counted
 * only while this process looks: a process computing outside MPI runs no
 * timer, and its own absence is not the peer's silence (the peer may well
 * have answered meanwhile). A timer scan runs many times a second inside
 * MPI; when it last looked at a handshake more than OPENIB_CPC_ABSENT_MS
 * ago, the deadline moves back by the gap. `looked_ms` is set when the
 * handshake is armed and updated here.
 */
#define OPENIB_CPC_ABSENT_MS 1000
static inline void openib_cpc_discount_absence(long *deadline_ms, long *looked_ms, long now)
{
    if (now - *looked_ms > OPENIB_CPC_ABSENT_MS) {
        *deadline_ms += now - *looked_ms;
    }
    *looked_ms = now;
}

/* A handshake timeout in seconds, as used: a bound below 1 s would end every
 * handshake before it starts. */
static inline long openib_cpc_timeout_ms(int timeout_s)
{
    return timeout_s < 1 ? 1000L : 1000L * timeout_s;
}

/* The peer showed it was alive at t: the silence bound starts again from
 * there (never earlier than it already was). */
static inline void openib_cpc_alive(long *deadline_ms, long t, long timeout_ms)
{
    if (t + timeout_ms > *deadline_ms) {
        *deadline_ms = t + timeout_ms;
    }
}

#endif

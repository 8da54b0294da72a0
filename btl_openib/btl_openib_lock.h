/*
 * btl_openib_lock.h - what makes openib safe under MPI_THREAD_MULTIPLE.
 *
 * Two locks for the whole component, both OPAL mutexes taken through the
 * OPAL_THREAD_* macros: when opal_using_threads() is false (every level
 * below MPI_THREAD_MULTIPLE) each costs one test of a flag.
 *
 * - openib_lock guards all of openib's state: endpoints and their queues,
 *   credits and mailboxes, eager-RDMA rings, the lazy-connect queues, the
 *   stalled list, the CPCs' active sets, statistics. Every entry point
 *   Open MPI calls takes it (the ops table in btl_openib_ops.c), and so
 *   does progress.
 *   It is never held across a call out to Open MPI (a PML or osc callback,
 *   the error callback, opal_progress, making a proc): OPENIB_CALLOUT drops
 *   it around each. A callback may then call back into openib (ob1 sends an
 *   ACK from its receive callback), and Open MPI's own locks never nest
 *   inside ours (bml holds ompi_proc_lock when it calls add_procs, and
 *   making a proc for a peer that contacted us takes the same lock).
 *
 * - openib_progress_lock makes one thread at a time the poller: progress
 *   try-locks it, and a thread that finds it taken returns at once (another
 *   thread is draining the same queues). The poller keeps it across its
 *   call-outs, so nobody else consumes completions or connection events
 *   while its walk over them is suspended; receives are still delivered in
 *   order (btl_openib_order.c holds what arrives ahead of its turn).
 *   Order: progress lock, then openib_lock; entry points take only the
 *   latter, and only try-locks ever wait on the former.
 *
 * Why one data lock and not one per endpoint: a process drives one or two
 * ports, the provider serializes work on each QP and CQ internally anyway,
 * and what openib does under the lock is short (a few hundred ns besides
 * the verbs call). The README's thread table measures what it costs.
 *
 * OPENIB_BENCH_NO_LOCKS (a compile-time define, never set by the build)
 * turns both locks into nothing: bench/mt-bench.sh --before nolock builds
 * such a copy to measure what the locks cost a single-threaded program
 * under MPI_THREAD_MULTIPLE. That copy is not safe with two threads.
 */
#ifndef BTL_OPENIB_LOCK_H
#define BTL_OPENIB_LOCK_H

#include "opal_config.h"

#include <stdbool.h>

#include "opal/threads/mutex.h"

extern opal_mutex_t openib_lock;
extern opal_mutex_t openib_progress_lock;

void openib_locks_init(void);
void openib_locks_fini(void);

#ifdef OPENIB_BENCH_NO_LOCKS
static inline void openib_lock_take(void) {}
static inline void openib_lock_drop(void) {}
static inline bool openib_progress_enter(void) { return true; }
static inline void openib_progress_leave(void) {}
#else
static inline void openib_lock_take(void)
{
    OPAL_THREAD_LOCK(&openib_lock);
}

static inline void openib_lock_drop(void)
{
    OPAL_THREAD_UNLOCK(&openib_lock);
}

/* Become the poller; false when another thread is. */
static inline bool openib_progress_enter(void)
{
    return 0 == OPAL_THREAD_TRYLOCK(&openib_progress_lock);
}

static inline void openib_progress_leave(void)
{
    OPAL_THREAD_UNLOCK(&openib_progress_lock);
}
#endif

/* A call out to Open MPI, made without openib_lock (see above). What the
 * caller read before may have changed when it returns. */
#define OPENIB_CALLOUT(call)  \
    do {                      \
        openib_lock_drop();   \
        call;                 \
        openib_lock_take();   \
    } while (0)

#endif /* BTL_OPENIB_LOCK_H */

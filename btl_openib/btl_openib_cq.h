/*
 * btl_openib_cq.h - the port's completion queue: its fixed size, and the
 * send budget that keeps it from overrunning.
 *
 * Every posted work request ends as at most one completion (signaled, or
 * flushed by an error), so the CQ holds:
 *   - the shared receive queues at the largest they may grow to;
 *   - per-peer (P) queues' buffers, reserved per endpoint (the only part
 *     that grows with peers, and only with P queues: the user's, or the
 *     default where SRQs are absent or unsafe); the CQ grows for them
 *     where the device can resize it, else the send budget lends them;
 *   - a send budget for the whole port: send WRs of all QPs outstanding at
 *     once. A send that finds it spent waits on its endpoint's queue, like
 *     one that waits for a send WQE; completions give the budget back.
 * With the default (shared) queues the CQ is sized once and never resized,
 * however many peers connect.
 */
#ifndef BTL_OPENIB_CQ_H
#define BTL_OPENIB_CQ_H

#include "btl_openib/btl_openib.h"

/* A shared queue grows, on its limit events, to at most this many times
 * the count asked for (btl_openib_async.c); the CQ has room for that. */
#define OPENIB_SRQ_GROWTH 4

/* Kept back from data for credit writes and teardown markers, so that
 * credits can flow and endpoints can close while data has spent the rest. */
#define OPENIB_BUDGET_CONTROL 64

/* Create m's CQ: sized for the shared queues at their largest plus the
 * send budget (btl_openib_cq_size in all, raised to fit the queues and
 * two QPs' worth of sends). OPAL_* code; says why at verbose 1. */
int openib_cq_create(mca_btl_openib_module_t *m, int cq_size);

/* Reserve room for `wqes` more receive completions (per-peer queues'
 * buffers): the CQ grows for them where the device allows, the send budget
 * lends the rest down to two QPs' worth. OPAL_* code. */
int openib_cq_reserve_recv(mca_btl_openib_module_t *m, int wqes);
void openib_cq_release_recv(mca_btl_openib_module_t *m, int wqes);

/* Send WRs data may still post on m's port. */
static inline int32_t openib_send_budget_room(const mca_btl_openib_module_t *m)
{
    return m->send_budget - OPENIB_BUDGET_CONTROL;
}

#endif

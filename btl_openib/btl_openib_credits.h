/*
 * btl_openib_credits.h - flow control for per-peer (P) receive queues.
 *
 * Each side posts `count` buffers per P queue for its peer. A sender may have
 * at most `count` sends outstanding against them: it counts what it sent and
 * learns how many buffers the peer reposted, as cumulative counters, from
 *   - the 16-bit `credits` field piggy-backed on every message it receives,
 *   - its credit mailbox, which the peer RDMA-writes when traffic is one-sided
 *     (no receive buffer is consumed by returning credits).
 * Shared (S) queues carry no per-peer credits; only send WQEs are counted.
 */
#ifndef BTL_OPENIB_CREDITS_H
#define BTL_OPENIB_CREDITS_H

#include "btl_openib/btl_openib.h"
#include "wire/data_hdr.h"

static inline bool openib_queue_is_pp(int q)
{
    return mca_btl_openib_component.rq.q[q].type == OPENIB_RQ_PP;
}

/* Sends we may still post on queue q. */
static inline int32_t openib_credits_available(const struct openib_ep_qp *qp, int q)
{
    if (!openib_queue_is_pp(q)) {
        return INT32_MAX;
    }
    return (int32_t) mca_btl_openib_component.rq.q[q].count - (int32_t) (qp->sent - qp->peer_returned);
}

/* Fill the piggy-back fields of an outgoing header. */
void openib_credits_stamp(mca_btl_openib_endpoint_t *ep, struct openib_hdr *hdr);

/* Learn returned credits from an incoming header. */
void openib_credits_from_hdr(mca_btl_openib_endpoint_t *ep, const struct openib_hdr *hdr);

/* Learn returned credits from the mailbox; true when any arrived. */
bool openib_credits_from_mailbox(mca_btl_openib_endpoint_t *ep);

/* Return credits explicitly where a window's worth is owed (P queues: the
 * rq spec's window; the eager ring: half of it). Called after reposting or
 * taking a ring message, when the connection completes, and by the stalled
 * list's retries. When no send WQE is free it puts the endpoint on the
 * stalled list and returns false. */
bool openib_credits_return(mca_btl_openib_endpoint_t *ep);
/* RDMA-write `value` into mailbox entry idx of the peer (OPENIB_MAILBOX_*).
 * OPAL_ERR_OUT_OF_RESOURCE when no send WQE is free (try again later). */
int openib_credits_write(mca_btl_openib_endpoint_t *ep, int idx, uint32_t value);

#endif

/*
 * openib_post.h - posting one send work request, and what a failure means.
 *
 * After ibv_post_send fails, the WRs ahead of *bad_wr were queued and will
 * complete; only the one *bad_wr names and those after it were not. A
 * provider may queue a WR and fail after that: siw and rxe write it into
 * the send queue they share with the kernel, then ring the doorbell, which
 * can fail with *bad_wr NULL (siw on a QP that is closing: -ENOTCONN, seen
 * in t-siw-patterns); that WR completes later, flushed when the QP goes to
 * the error state. A caller that took such a
 * failure for "not queued" would reuse or free the WR's fragment and meet
 * it again in that flush. So the question asked here is "is it queued?".
 */
#ifndef OPENIB_POST_H
#define OPENIB_POST_H

#include <infiniband/verbs.h>

/* One WR (wr->next NULL) on qp: 0 when it is queued (it will complete,
 * successfully or flushed), else the errno value the provider returned.
 * bad starts as wr, so a provider that fails without setting it reads as
 * "not queued". */
static inline int openib_post_send_one(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
    struct ibv_send_wr *bad = wr;
    int rc = ibv_post_send(qp, wr, &bad);

    return (0 != rc && bad == wr) ? rc : 0;
}

#endif

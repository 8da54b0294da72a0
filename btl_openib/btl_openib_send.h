/*
 * btl_openib_send.h - posting work requests: sends, RDMA and receives, with
 * per-queue ordering and flow control.
 */
#ifndef BTL_OPENIB_SEND_H
#define BTL_OPENIB_SEND_H

#include "btl_openib/btl_openib_cq.h"
#include "btl_openib/btl_openib_credits.h"
#include "btl_openib/btl_openib_frag.h"

/* Submit a fragment of any kind: queued behind the lazy connection when the
 * endpoint is not connected yet, else posted or queued for resources. */
int openib_ep_submit(mca_btl_openib_endpoint_t *ep, openib_frag_t *f);

/* Post on a connected endpoint, or queue it (in order) when the queue has no
 * WQE or credit left. */
int openib_post_frag(mca_btl_openib_endpoint_t *ep, openib_frag_t *f);

/* One of openib's own messages (tag below OPENIB_TAG_PML_FIRST) with len
 * bytes of data, owned by the BTL: submitted like any send, or, with now,
 * posted at once (for a connection no longer open to other sends). */
int openib_send_ctl(mca_btl_openib_endpoint_t *ep, uint8_t tag, const void *data, size_t len,
                    bool now);

/* Put ep on its module's stalled list: fragments wait on its queues for a
 * WQE or a credit, or credits wait to go back (openib_credits_return).
 * Progress retries the list (openib_ep_drain). */
void openib_ep_mark_stalled(mca_btl_openib_endpoint_t *ep);

/* Post what waits on the endpoint's queues, as far as resources allow. */
void openib_ep_drain(mca_btl_openib_endpoint_t *ep);

/* Complete every fragment waiting on ep with rc. */
void openib_ep_fail_pending(mca_btl_openib_endpoint_t *ep, int rc);

/* Complete a fragment with an error (connection failed / endpoint closed). */
void openib_frag_fail(mca_btl_openib_endpoint_t *ep, openib_frag_t *f, int rc);

/* Give a receive buffer to the hardware (per-peer QP or SRQ). */
int openib_post_recv(mca_btl_openib_module_t *m, mca_btl_openib_endpoint_t *ep, openib_frag_t *f);

/* Post one send WR on queue q of a connected endpoint, signaled when the
 * caller needs the completion or when the unsignaled run is long enough.
 * Returns OPAL_SUCCESS or the OPAL code of ibv_post_send's errno value;
 * on failure errno holds that value, for messages. */
int openib_qp_post(mca_btl_openib_endpoint_t *ep, int q, struct ibv_send_wr *wr, bool need_signal);

/* Send WQEs of queue q that data (sends, RDMA, ring writes) may still use:
 * within the QP's own WQEs and the port's send budget (btl_openib_cq.h).
 * One WQE of the first QP is held back for credit writes
 * (openib_credits_write), so returned credits can always be posted even
 * when data has used up the queue; XRC endpoints write no credits. */
#define OPENIB_CREDIT_WQES 1
static inline int32_t openib_qp_data_room(const mca_btl_openib_endpoint_t *ep, int q)
{
    int32_t qp = ep->qps[q].sd_wqe - (0 == q && !ep->xrc ? OPENIB_CREDIT_WQES : 0);
    int32_t port = openib_send_budget_room(ep->module);

    return qp < port ? qp : port;
}

/* Fill an outgoing wire header's credits and its place in the stream to
 * the peer; openib_hdr_unstamp takes the place back when the message
 * could not be posted after all (the receiver would wait for it). */
static inline void openib_hdr_stamp(mca_btl_openib_endpoint_t *ep, struct openib_hdr *hdr)
{
    openib_credits_stamp(ep, hdr);
    hdr->seq = ep->send_seq++;
    hdr->reserved = 0;
}

static inline void openib_hdr_unstamp(mca_btl_openib_endpoint_t *ep)
{
    ep->send_seq--;
}

/* Whether a message may go out now without overtaking one that waits. */
static inline bool openib_ep_may_send_now(mca_btl_openib_endpoint_t *ep)
{
    return opal_list_is_empty(&ep->pending);
}

/* A signaled WQE on queue q completed: give back its WQE and the unsignaled
 * ones before it. */
static inline void openib_qp_reclaim(mca_btl_openib_endpoint_t *ep, int q)
{
    struct openib_ep_qp *qp = &ep->qps[q];

    int32_t n = 1 + (int32_t) qp->reclaim[qp->reclaim_head];

    qp->sd_wqe += n;
    ep->module->send_budget += n;
    if (++qp->reclaim_head == qp->reclaim_size) {
        qp->reclaim_head = 0;
    }
}

/* Send-side completion of a fragment. */
void openib_send_complete(openib_frag_t *f, int status);

#endif

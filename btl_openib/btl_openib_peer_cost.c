/*
 * btl_openib_peer_cost.c - adding up what a connected peer costs
 * (btl_openib_peer_cost.h).
 */
#include "opal_config.h"

#include "opal/util/bit_ops.h"

#include "btl_openib/btl_openib_frag.h"
#include "btl_openib/btl_openib_peer_cost.h"

#define WQE_BLOCK 64u
#define WQE_CTRL_ADDR 32u   /* control segment + remote address segment */
#define WQE_SGE 16u
#define RECV_WQE_SGE 16u
#define RING_INDEX_PAGE 4096u /* a slot ring's producer and consumer indices */
/* An entry in the module's QP-number table and in its process table:
 * the hash element and the table's spare capacity for it. */
#define TABLE_ENTRY_BYTES 64u

uint64_t openib_send_queue_bytes(const struct ibv_qp_cap *cap, int slot_header)
{
    uint64_t data = (uint64_t) cap->max_send_sge * WQE_SGE;
    uint64_t in, wqe;

    if (slot_header > 0) {
        in = cap->max_inline_data;
        wqe = (uint64_t) opal_next_poweroftwo_inclusive(slot_header + (int) (in > data ? in : data));
        return wqe * (uint64_t) opal_next_poweroftwo_inclusive((int) cap->max_send_wr + 1) +
               RING_INDEX_PAGE;
    }
    in = ((uint64_t) cap->max_inline_data + 4 + 15) & ~15ull; /* 4-byte inline header */
    wqe = WQE_CTRL_ADDR + (in > data ? in : data);
    wqe = (wqe + WQE_BLOCK - 1) / WQE_BLOCK * WQE_BLOCK;
    return (uint64_t) opal_next_poweroftwo_inclusive((int) ((uint64_t) cap->max_send_wr * wqe));
}

void openib_peer_cost(const mca_btl_openib_endpoint_t *ep, struct openib_peer_cost *out)
{
    const struct openib_rq_spec *rq = &mca_btl_openib_component.rq;
    int q;

    *out = (struct openib_peer_cost) {
        .endpoint = sizeof(*ep) + (ep->mailbox_item ? OPENIB_MAILBOX_BYTES : 0) +
                    2 * TABLE_ENTRY_BYTES,
    };
    for (q = 0; q < ep->num_qps; ++q) {
        const struct openib_ep_qp *qp = &ep->qps[q];

        out->endpoint += (uint64_t) qp->reclaim_size * sizeof(*qp->reclaim);
        if (NULL == qp->qp || ep->xrc) {
            continue; /* XRC: the node's shared send QP, not this peer's */
        }
        out->qps++;
        out->send_queue += qp->sq_bytes;
        if (rq->q[q].type == OPENIB_RQ_PP) {
            out->recv += (uint64_t) rq->q[q].count *
                         (rq->q[q].size + sizeof(openib_frag_t) + RECV_WQE_SGE);
        }
    }
    if (ep->eager.ring_mr) {
        out->ring = ep->eager.ring_mr->length;
    }
}

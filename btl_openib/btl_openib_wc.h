/*
 * btl_openib_wc.h - how the progress loop sees a completion.
 *
 * Read straight from the ibv_wc, once per completion. The versioned
 * completion record (openib/openib_wc.h) is for readers outside the BTL;
 * nothing here reads it, so the data path does not build one.
 */
#ifndef BTL_OPENIB_WC_H
#define BTL_OPENIB_WC_H

#include "btl_openib/btl_openib.h"
#include "btl_openib/btl_openib_frag.h"
#include "btl_openib/btl_openib_qp_map.h"

struct openib_completion {
    uint64_t id;
    int status;            /* enum ibv_wc_status */
    int opcode;            /* enum ibv_wc_opcode */
    uint32_t length;
    uint32_t vendor_err;
    bool is_recv;
    mca_btl_openib_endpoint_t *ep;   /* from the local QP number */
};

static inline void openib_completion_from_wc(mca_btl_openib_module_t *m, const struct ibv_wc *wc,
                                             struct openib_completion *c)
{
    void *ep = NULL;

    c->id = wc->wr_id;
    c->status = (int) wc->status;
    c->opcode = (int) wc->opcode;
    c->length = wc->byte_len;
    c->vendor_err = wc->vendor_err;
    if (OPAL_LIKELY(c->status == IBV_WC_SUCCESS)) {
        c->is_recv = (c->opcode & IBV_WC_RECV) != 0;
    } else {
        /* opcode is undefined in an error completion: ask the fragment. */
        c->is_recv = !(c->id & OPENIB_WRID_CTRL) &&
                     ((openib_frag_t *) OPENIB_WRID_FRAG(c->id))->kind == OPENIB_FRAG_RECV;
    }
    if (c->is_recv && c->status == IBV_WC_SUCCESS &&
        mca_btl_openib_component.rq.q[((openib_frag_t *) (uintptr_t) c->id)->qp].type ==
            OPENIB_RQ_PP) {
        /* a per-peer buffer was posted on its endpoint's own QP */
        ep = ((openib_frag_t *) (uintptr_t) c->id)->ep;
    } else if (c->is_recv || c->status != IBV_WC_SUCCESS) {
        ep = openib_qp_map_find(m, wc->qp_num);
    }
    c->ep = ep;
}

#endif

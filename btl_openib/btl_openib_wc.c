/*
 * btl_openib_wc.c - reading completions through the versioned record.
 */
#include "opal_config.h"

#include "btl_openib/btl_openib_frag.h"
#include "btl_openib/btl_openib_wc.h"

void openib_completion_from_wc(mca_btl_openib_module_t *m, const struct ibv_wc *wc,
                               struct openib_completion *c)
{
    void *ep = NULL;

    c->id = wc->wr_id;
    c->status = wc->status;
    c->opcode = wc->opcode;
    c->length = wc->byte_len;
    c->vendor_err = wc->vendor_err;
    if (wc->status == IBV_WC_SUCCESS) {
        c->is_recv = (wc->opcode & IBV_WC_RECV) != 0;
    } else {
        /* opcode is undefined in an error completion: ask the fragment. */
        c->is_recv = !(wc->wr_id & OPENIB_WRID_CREDIT) &&
                     ((openib_frag_t *) (uintptr_t) wc->wr_id)->kind == OPENIB_FRAG_RECV;
    }
    if (c->is_recv || wc->status != IBV_WC_SUCCESS) {
        opal_hash_table_get_value_uint32(&m->qp_map, wc->qp_num, &ep);
    }
    c->ep = ep;
}

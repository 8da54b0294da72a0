/*
 * btl_openib_wc.c - reading completions through the versioned record.
 *
 * Each ibv_wc becomes an openib_wc record (base, plus the addressing
 * extension for errors) and the progress loop reads id, status, opcode and length
 * back from the record: the data path depends only on the record's
 * documented, versioned fields. The endpoint comes from the local QP number.
 */
#include "opal_config.h"

#include "openib/openib_wc.h"

#include "btl_openib/btl_openib_frag.h"
#include "btl_openib/btl_openib_wc.h"

void openib_completion_from_wc(mca_btl_openib_module_t *m, const struct ibv_wc *wc,
                               struct openib_completion *c)
{
    uint8_t rec[sizeof(struct openib_wc) + sizeof(struct openib_wc_addr)];
    struct openib_wc_builder b;
    struct openib_wc base;
    void *ep = NULL;

    openib_wc_build_begin(&b, rec, sizeof(rec), wc->wr_id, wc->status, wc->opcode, wc->byte_len);
    if (OPAL_UNLIKELY(wc->status != IBV_WC_SUCCESS)) {
        /* where it came from, for the error report */
        struct openib_wc_addr a = {
            .src_qp = wc->src_qp,
            .slid = wc->slid,
            .pkey_index = wc->pkey_index,
            .sl = wc->sl,
            .wc_flags = (uint8_t) wc->wc_flags,
        };
        openib_wc_build_add(&b, OPENIB_WC_EXT_ADDR, &a, sizeof(a));
    }
    openib_wc_base(rec, openib_wc_build_len(&b), &base);

    c->id = base.id;
    c->status = (int) base.status;
    c->opcode = (int) base.opcode;
    c->length = base.length;
    c->vendor_err = wc->vendor_err;
    if (c->status == IBV_WC_SUCCESS) {
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
        opal_hash_table_get_value_uint32(&m->qp_map, wc->qp_num, &ep);
    }
    c->ep = ep;
}

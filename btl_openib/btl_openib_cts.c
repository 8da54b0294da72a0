/*
 * btl_openib_cts.c - the initiator sends first (see the header).
 */
#include "opal_config.h"

#include "opal/constants.h"

#include "btl_openib/btl_openib_cts.h"
#include "btl_openib/btl_openib_frag.h"
#include "btl_openib/btl_openib_send.h"
#include "mca/btl_openib_params.h"
#include "wire/data_hdr.h"

/* One empty credit message on queue q: the peer takes its header's
 * credits and seq like any other message; its arrival is what counts. */
static int send_cts(mca_btl_openib_endpoint_t *ep, int q)
{
    openib_frag_t *f = (openib_frag_t *) opal_free_list_get(&ep->module->send_frags[q]);
    int rc;

    if (NULL == f) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    f->des.des_flags = MCA_BTL_DES_FLAGS_BTL_OWNERSHIP;
    f->des.des_cbfunc = NULL;
    f->seg[0].seg_addr.pval = openib_frag_payload(f);
    f->seg[0].seg_len = 0;
    f->des.des_segments = f->seg;
    f->des.des_segment_count = 1;
    f->des.order = MCA_BTL_NO_ORDER;
    f->user_reg = NULL;
    f->hdr->tag = OPENIB_TAG_CREDIT;
    /* Straight to the QP (or the endpoint's FIFO, which nothing can be
     * ahead of yet): the connection queue opens only after this. */
    rc = openib_post_frag(ep, f);
    if (OPAL_SUCCESS != rc) {
        openib_frag_return(f);
    }
    return rc;
}

void openib_cts_established(mca_btl_openib_endpoint_t *ep, bool initiator)
{
    int q;

    if (!initiator) {
        ep->cts_established = true;
        if (0 == ep->cts_wait) {
            /* the initiator's first messages came before the CM said so */
            openib_endpoint_connected(ep);
            return;
        }
        OPENIB_VERBOSE(100, "%s: the connection manager connected %d QPs; waiting for the "
                       "initiator's first message on %d of them before sending", ep->desc,
                       ep->num_qps, __builtin_popcount(ep->cts_wait));
        return;
    }
    ep->cts_wait = 0; /* nothing to wait for on this side */
    for (q = 0; q < ep->num_qps; ++q) {
        int rc = send_cts(ep, q);
        if (OPAL_SUCCESS != rc) {
            openib_cpc_btl_ops.connect_failed(ep, rc, "sending the first message (CTS) on "
                                                      "a new connection failed");
            return;
        }
    }
    openib_endpoint_connected(ep);
}

void openib_cts_arrived(mca_btl_openib_endpoint_t *ep, int q)
{
    ep->cts_wait &= ~(1u << q);
    if (0 == ep->cts_wait && ep->cts_established) {
        OPENIB_VERBOSE(100, "%s: the initiator's first message arrived on every QP", ep->desc);
        openib_endpoint_connected(ep);
    }
}

/*
 * btl_openib_order.c - in-order delivery per peer.
 *
 * A peer's messages reach us on several paths: each receive queue has its
 * own QP, and small ones are RDMA-written into an eager ring that we read
 * from memory. Reliable connections keep order only within one QP, and we
 * look at rings before completion queues, so without care a message can
 * be delivered before one sent earlier. Open MPI's ob1 tolerates that for
 * whole messages (at the price of copying them aside), but not always for
 * the fragments of one message: unpacking a fragment of a nested datatype
 * at an offset beyond where the last one ended hits a bug of Open MPI
 * 4.1's convertor (opal_convertor_set_position moving forward inside a
 * loop of the description) and corrupts the data or crashes.
 *
 * So the sender posts strictly in the order it is given messages (one FIFO
 * per endpoint, btl_openib_send.c) and numbers them (the wire header's
 * seq); the receiver delivers in that order. A queue message that arrives
 * early is held here, its buffer not yet reposted; a ring message that is
 * early stays in its slot until its turn (btl_openib_eager_rdma.c). Every
 * message ahead of its turn was posted after one that is already in flight,
 * so its turn always comes.
 */
#include "opal_config.h"

#include "btl_openib/btl_openib_credits.h"
#include "btl_openib/btl_openib_order.h"
#include "btl_openib/btl_openib_send.h"

/* Serial comparison of 16-bit sequence numbers. */
static inline bool seq_before(uint16_t a, uint16_t b)
{
    return (int16_t) (a - b) < 0;
}

static uint16_t seq_of(const openib_frag_t *f)
{
    return f->hdr->seq;
}

void openib_order_hold(mca_btl_openib_endpoint_t *ep, openib_frag_t *f, uint32_t length)
{
    opal_list_item_t *it;

    f->ep = ep;
    f->len = length;
    /* usually appended: a later arrival has a later number */
    for (it = opal_list_get_last(&ep->held); it != opal_list_get_end(&ep->held);
         it = opal_list_get_prev(it)) {
        if (seq_before(seq_of((openib_frag_t *) it), seq_of(f))) {
            break;
        }
    }
    opal_list_insert_pos(&ep->held, opal_list_get_next(it), &f->des.super.super);
}

void openib_order_release(mca_btl_openib_endpoint_t *ep)
{
    while (!opal_list_is_empty(&ep->held)) {
        openib_frag_t *f = (openib_frag_t *) opal_list_get_first(&ep->held);

        if (seq_of(f) != ep->recv_seq) {
            return; /* its turn has not come: an earlier message is still under way */
        }
        opal_list_remove_first(&ep->held);
        openib_recv_deliver(ep->module, ep, f, f->len);
    }
}

void openib_order_drop(mca_btl_openib_endpoint_t *ep)
{
    opal_list_item_t *it;

    while (NULL != (it = opal_list_remove_first(&ep->held))) {
        openib_frag_t *f = (openib_frag_t *) it;

        /* a shared queue's buffer goes back to its SRQ (it would shrink) */
        if (openib_queue_is_pp(f->qp) || OPAL_SUCCESS != openib_post_recv(ep->module, NULL, f)) {
            openib_frag_return(f);
        }
    }
}

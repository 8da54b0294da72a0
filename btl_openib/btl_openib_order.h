/*
 * btl_openib_order.h - messages from a peer are delivered in the order the
 * peer handed them to its BTL (btl_openib_order.c).
 */
#ifndef BTL_OPENIB_ORDER_H
#define BTL_OPENIB_ORDER_H

#include "btl_openib/btl_openib_frag.h"

/* Keep a receive buffer whose message came ahead of its turn (its seq is
 * not ep->recv_seq); `length` is the completion's byte count. */
void openib_order_hold(mca_btl_openib_endpoint_t *ep, openib_frag_t *f, uint32_t length);

/* Deliver, in order, the held messages whose turn has come. */
void openib_order_release(mca_btl_openib_endpoint_t *ep);

/* ep is going: give its held buffers back, undelivered. */
void openib_order_drop(mca_btl_openib_endpoint_t *ep);

/* Hand one in-turn message of a receive buffer to its owner, advance
 * ep->recv_seq, and give the buffer back to the hardware
 * (btl_openib_progress.c). */
void openib_recv_deliver(mca_btl_openib_module_t *m, mca_btl_openib_endpoint_t *ep,
                         openib_frag_t *f, uint32_t length);

#endif

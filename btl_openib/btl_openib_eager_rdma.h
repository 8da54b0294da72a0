/*
 * btl_openib_eager_rdma.h - small messages RDMA-written into a ring of
 * slots that the receiver polls in memory ("eager RDMA").
 *
 * Why: a message taken from memory needs no receive WQE, no completion entry
 * and no repost. On an HCA the receiver then sees the message as soon as
 * its last byte is in memory, without the completion the adapter must
 * first write and the CQ poll that reads it (why ib_write_lat reports less
 * than ib_send_lat on the same link), and the BTL saves its own
 * receive-completion work too.
 *
 * Per direction, in-band (no CPC wire change):
 *  1. After btl_openib_eager_rdma_threshold messages from a peer (and once
 *     its own side of the connection is up), a receiver with fewer than
 *     btl_openib_eager_rdma_num rings on the port registers a ring and sends
 *     the peer an offer (OPENIB_TAG_EAGER_RDMA message).
 *  2. The sender then writes small messages into the ring, laid out as
 *     wire/eager_ring.h describes, on the endpoint's first QP:
 *     inline from the caller's memory (sendi) or from a registered send
 *     fragment; anything that does not fit or finds no free slot takes the
 *     normal send path.
 *  3. Slots are credits: consumed counts go back piggy-backed in the wire
 *     header (cr_qp OPENIB_EAGER_CR_QP) or, once half the ring is owed, by
 *     an RDMA write into the sender's credit mailbox.
 * Ring and queue messages may overtake each other; ob1's match sequence
 * numbers put them back in order, as they do across several BTLs.
 */
#ifndef BTL_OPENIB_EAGER_RDMA_H
#define BTL_OPENIB_EAGER_RDMA_H

#include "btl_openib/btl_openib.h"
#include "mca/btl_openib_params.h"

/* Take every complete message from the rings of m's endpoints. Returns how
 * many were delivered. */
int openib_eager_rdma_poll(mca_btl_openib_module_t *m);

/* Send through the peer's ring if one is offered, the message fits and a
 * slot is free; OPAL_ERR_NOT_SUPPORTED otherwise (the caller sends it the
 * normal way). */
int openib_eager_rdma_sendi(mca_btl_openib_endpoint_t *ep, const void *header, size_t header_size,
                            const void *payload, size_t payload_size, uint8_t tag);

/* The same for a send fragment (ob1's control messages and eager sends
 * too large to go inline): the message, pad and footer are laid out in the
 * fragment's own registered buffer and written from there. OPAL_SUCCESS
 * (the fragment completes as a send would), OPAL_ERR_NOT_SUPPORTED (send
 * it the normal way) or OPAL_ERROR (posting failed). */
struct openib_frag;
int openib_eager_rdma_send_frag(mca_btl_openib_endpoint_t *ep, struct openib_frag *f);

/* An OPENIB_TAG_EAGER_RDMA message arrived from ep. */
void openib_eager_rdma_on_offer(mca_btl_openib_endpoint_t *ep, const void *data, size_t len);

/* Release ep's ring (after its QPs are gone, so nothing writes any more). */
void openib_eager_rdma_fini(mca_btl_openib_endpoint_t *ep);

/* Offer a ring now (the slow half of note_recv). */
void openib_eager_rdma_offer(mca_btl_openib_endpoint_t *ep);

/* Count one message received from ep the normal way; offers a ring once
 * the threshold is reached (and again on later messages until the
 * endpoint could be asked). */
static inline void openib_eager_rdma_note_recv(mca_btl_openib_endpoint_t *ep)
{
    if (OPAL_UNLIKELY(++ep->eager.seen >= (uint32_t) openib_params.eager_rdma_threshold &&
                      !ep->eager.offered)) {
        openib_eager_rdma_offer(ep);
    }
}

#endif

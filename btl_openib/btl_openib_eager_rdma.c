/*
 * btl_openib_eager_rdma.c - eager RDMA rings: offering one, writing into the
 * peer's, and polling ours. Protocol: btl_openib_eager_rdma.h; slot layout:
 * wire/eager_ring.h.
 */
#include "opal_config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "opal/constants.h"
#include "opal/sys/atomic.h"

#include "btl_openib/btl_openib_async.h"
#include "btl_openib/btl_openib_credits.h"
#include "btl_openib/btl_openib_eager_rdma.h"
#include "btl_openib/btl_openib_frag.h"
#include "btl_openib/btl_openib_order.h"
#include "btl_openib/btl_openib_send.h"
#include "wire/eager_ring.h"

static uint32_t ring_slots(void)
{
    return (uint32_t) openib_params.eager_rdma_slots;
}

static uint32_t ring_slot_size(void)
{
    return (uint32_t) openib_params.eager_rdma_slot_size;
}

/* ---- receiving side: offering and polling our ring ---- */

/* Where the sequence number of slot i's footer lives. */
static volatile uint32_t *footer_seq(char *ring, uint32_t i)
{
    char *end = ring + (uint64_t) (i + 1) * ring_slot_size();

    return &((volatile struct openib_eager_footer *) (end - sizeof(struct openib_eager_footer)))->seq;
}

static int send_offer(mca_btl_openib_endpoint_t *ep)
{
    struct openib_eager_offer o = {
        .version = OPENIB_EAGER_OFFER_VERSION,
        .size = sizeof(o),
        .rkey = ep->eager.ring_mr->rkey,
        .addr = (uintptr_t) ep->eager.ring,
        .slots = ring_slots(),
        .slot_size = ring_slot_size(),
    };

    return openib_send_ctl(ep, OPENIB_TAG_EAGER_RDMA, &o, sizeof(o), false);
}

static void forget_ring(mca_btl_openib_endpoint_t *ep)
{
    mca_btl_openib_module_t *m = ep->module;
    struct openib_eager_rdma *e = &ep->eager;
    int i;

    for (i = 0; i < m->num_eager; ++i) {
        if (m->eager_eps[i] == ep) {
            m->eager_eps[i] = m->eager_eps[--m->num_eager];
            break;
        }
    }
    if (e->ring_mr && ibv_dereg_mr(e->ring_mr)) {
        OPENIB_VERBOSE(1, "deregistering the eager-RDMA ring of %s failed: %s", ep->desc,
                       strerror(errno));
    }
    e->ring_mr = NULL;
    free(e->ring);
    e->ring = NULL;
}

void openib_eager_rdma_offer(mca_btl_openib_endpoint_t *ep)
{
    mca_btl_openib_module_t *m = ep->module;
    struct openib_eager_rdma *e = &ep->eager;
    size_t bytes = (size_t) ring_slots() * ring_slot_size();
    int rc;

    /* Not connected on our side yet (a responder can receive before its
     * handshake ends): the next message tries again. */
    if (e->offered || ep->conn.state != OPENIB_CONN_CONNECTED || ep->closing) {
        return;
    }
    /* From here on one try per endpoint. Peers beyond eager_rdma_num keep
     * the queues; explicit credit returns need the peer's mailbox, which
     * loopback and XRC endpoints do not have. */
    e->offered = true;
    if (ep->is_self || ep->xrc || 0 == ep->peer_mailbox_rkey ||
        m->num_eager >= m->eager_rdma_num) {
        return;
    }
    if (NULL == m->eager_eps) {
        m->eager_eps = calloc((size_t) m->eager_rdma_num, sizeof(*m->eager_eps));
        if (NULL == m->eager_eps) {
            return;
        }
    }
    if (posix_memalign((void **) &e->ring, 64, bytes)) {
        e->ring = NULL;
        OPENIB_VERBOSE(10, "no memory for an eager-RDMA ring for %s", ep->desc);
        return;
    }
    memset(e->ring, 0, bytes);  /* sequence 0: no message yet */
    e->recv_slot = 0;
    e->next_seq = footer_seq(e->ring, 0);
    e->ring_mr = ibv_reg_mr(m->dev->pd, e->ring, bytes,
                            IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    if (NULL == e->ring_mr) {
        OPENIB_VERBOSE(10, "registering an eager-RDMA ring for %s failed: %s", ep->desc,
                       strerror(errno));
        goto fail;
    }
    /* Polled from now on: the peer may write as soon as the offer lands. */
    m->eager_eps[m->num_eager++] = ep;
    rc = send_offer(ep);
    if (OPAL_SUCCESS != rc) {
        OPENIB_VERBOSE(10, "offering an eager-RDMA ring to %s failed (%d)", ep->desc, rc);
        goto fail;
    }
    m->stats.eager_rdma_rings++;
    OPENIB_VERBOSE(100, "offered %s an eager-RDMA ring of %u x %u bytes", ep->desc, ring_slots(),
                   ring_slot_size());
    return;

fail:
    forget_ring(ep);
}

/* Deliver the next message of ep's ring if it is complete. */
static bool take_one(mca_btl_openib_module_t *m, mca_btl_openib_endpoint_t *ep)
{
    struct openib_eager_rdma *e = &ep->eager;
    const uint32_t slot_size = ring_slot_size();
    char *slot = e->ring + (uint64_t) e->recv_slot * slot_size;
    volatile struct openib_eager_footer *ft =
        (volatile struct openib_eager_footer *) (slot + slot_size - sizeof(*ft));
    struct openib_hdr hdr;
    uint32_t size;
    int64_t off;

    if (*e->next_seq != e->recv_n + 1) {
        return false;
    }
    opal_atomic_rmb(); /* the footer came last: read the message after it */
    if (ft->hdr.seq != ep->recv_seq) {
        return false; /* an earlier message is still on a queue: it goes first */
    }
    size = ft->size;
    hdr.tag = ft->hdr.tag;
    hdr.cr_qp = ft->hdr.cr_qp;
    hdr.credits = ft->hdr.credits;
    off = openib_eager_msg_offset(slot_size, size);
    if (OPAL_UNLIKELY(off < 0)) {
        openib_endpoint_fail(ep, OPAL_ERROR, "malformed eager-RDMA message");
        return false;
    }
    openib_credits_from_hdr(ep, &hdr);
    m->stats.eager_rdma_recvs++;
    /* The slot stays ours until the callback returns; only then does it
     * count as a credit for the peer. */
    e->busy = true;
    openib_deliver(m, ep, hdr.tag, slot + off, size);
    e->busy = false;
    ep->recv_seq++;
    e->recv_n++;
    e->recv_slot = e->recv_slot + 1 == ring_slots() ? 0 : e->recv_slot + 1;
    e->next_seq = footer_seq(e->ring, e->recv_slot);
    (void) openib_credits_return(ep); /* once half the ring is owed */
    if (OPAL_UNLIKELY(!opal_list_is_empty(&ep->held))) {
        openib_order_release(ep); /* queue messages that waited for this one */
    }
    return true;
}

int openib_eager_rdma_poll(mca_btl_openib_module_t *m)
{
    int i, n = 0;

    for (i = 0; i < m->num_eager; ++i) {
        mca_btl_openib_endpoint_t *ep = m->eager_eps[i];
        uint32_t k;

        /* the common case, nothing new: one load and a compare */
        if (OPAL_LIKELY(*ep->eager.next_seq != ep->eager.recv_n + 1)) {
            continue;
        }
        /* busy: a callback of this ring called progress; don't re-enter */
        if (ep->eager.busy || ep->conn.state == OPENIB_CONN_FAILED) {
            continue;
        }
        for (k = 0; k < ring_slots() && take_one(m, ep); ++k) {
            n++;
        }
        if (n && ep->stalled) {
            openib_ep_drain(ep);
        }
    }
    return n;
}

void openib_eager_rdma_fini(mca_btl_openib_endpoint_t *ep)
{
    forget_ring(ep);
    memset(&ep->eager, 0, sizeof(ep->eager));
}

/* ---- sending side: the peer's ring ---- */

void openib_eager_rdma_on_offer(mca_btl_openib_endpoint_t *ep, const void *data, size_t len)
{
    struct openib_eager_offer o;
    struct openib_eager_rdma *e = &ep->eager;

    memset(&o, 0, sizeof(o));
    memcpy(&o, data, len < sizeof(o) ? len : sizeof(o));
    if (!openib_eager_offer_valid(&o, len)) {
        OPENIB_VERBOSE(1, "ignoring a malformed eager-RDMA offer from %s (%zu bytes, version %u)",
                       ep->desc, len, (unsigned) o.version);
        return;
    }
    if (0 != e->peer_rkey) {
        return; /* one ring per direction */
    }
    e->peer_addr = o.addr;
    e->peer_slots = o.slots;
    e->peer_slot_size = o.slot_size;
    e->sent_n = 0;
    e->peer_returned = 0;
    e->peer_rkey = o.rkey; /* last: sendi looks at it */
    ep->module->stats.ring_offers_taken++;
    OPENIB_VERBOSE(100, "%s offered an eager-RDMA ring of %u x %u bytes", ep->desc, o.slots,
                   o.slot_size);
}

/* Whether the peer's ring has a free slot (asking the mailbox when not). */
static bool ring_has_room(mca_btl_openib_endpoint_t *ep)
{
    struct openib_eager_rdma *e = &ep->eager;

    if (e->sent_n - e->peer_returned < e->peer_slots) {
        return true;
    }
    openib_credits_from_mailbox(ep);
    return e->sent_n - e->peer_returned < e->peer_slots;
}

/* The footer of the message that goes into the peer's next slot: the
 * peer polls on its seq. */
static void stamp_footer(mca_btl_openib_endpoint_t *ep, struct openib_eager_footer *ft,
                         uint8_t tag, uint32_t size)
{
    openib_hdr_stamp(ep, &ft->hdr);
    ft->hdr.tag = tag;
    ft->size = size;
    ft->seq = ep->eager.sent_n + 1;
}

/* Where a message at off (openib_eager_msg_offset) of the peer's next slot
 * lies in the peer's memory. */
static uint64_t next_slot_addr(const struct openib_eager_rdma *e, int64_t off)
{
    return e->peer_addr + openib_eager_slot_offset(e->peer_slots, e->peer_slot_size, e->sent_n) +
           (uint64_t) off;
}

/* The write of size message bytes is posted: it holds the next slot. */
static void count_sent(mca_btl_openib_endpoint_t *ep, uint32_t size)
{
    ep->eager.sent_n++;
    ep->module->stats.sends++;
    ep->module->stats.eager_rdma_sends++;
    ep->module->stats.send_bytes += size;
    ep->module->stats.ring_bytes += size;
}

int openib_eager_rdma_sendi(mca_btl_openib_endpoint_t *ep, const void *header, size_t header_size,
                            const void *payload, size_t payload_size, uint8_t tag)
{
    struct openib_eager_rdma *e = &ep->eager;
    struct {
        uint64_t pad;                    /* source of the 0-7 pad bytes */
        struct openib_eager_footer ft;
    } tail = { 0 };
    uint32_t size = (uint32_t) (header_size + payload_size), pad;
    struct ibv_send_wr wr;
    struct ibv_sge sge[3];
    int64_t off;
    int n = 0;

    off = openib_eager_msg_offset(e->peer_slot_size, size);
    if (off < 0 || e->peer_slot_size - (uint64_t) off > ep->module->max_inline) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    /* the caller checked that nothing waits before this message */
    if (!ring_has_room(ep) || openib_qp_data_room(ep, 0) <= 0) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    stamp_footer(ep, &tail.ft, tag, size);
    pad = openib_eager_padded(size) - size;
    sge[n++] = (struct ibv_sge) { .addr = (uintptr_t) header, .length = (uint32_t) header_size };
    if (payload_size) {
        sge[n++] = (struct ibv_sge) { .addr = (uintptr_t) payload, .length = (uint32_t) payload_size };
    }
    sge[n++] = (struct ibv_sge) {
        .addr = (uintptr_t) &tail.ft - pad,
        .length = pad + (uint32_t) sizeof(tail.ft),
    };
    wr = (struct ibv_send_wr) {
        .wr_id = OPENIB_WRID_MAKE(ep, 0),
        .sg_list = sge,
        .num_sge = n,
        .opcode = IBV_WR_RDMA_WRITE,
        .send_flags = IBV_SEND_INLINE,
        .wr.rdma = {
            .remote_addr = next_slot_addr(e, off),
            .rkey = e->peer_rkey,
        },
    };
    if (OPAL_UNLIKELY(openib_qp_post(ep, 0, &wr, false))) {
        openib_hdr_unstamp(ep);
        return OPAL_ERR_NOT_SUPPORTED;
    }
    count_sent(ep, size);
    return OPAL_SUCCESS;
}

int openib_eager_rdma_send_frag(mca_btl_openib_endpoint_t *ep, struct openib_frag *f)
{
    struct openib_eager_rdma *e = &ep->eager;
    mca_btl_openib_module_t *m = ep->module;
    uint32_t size = (uint32_t) f->seg[0].seg_len;
    uint32_t padded = openib_eager_padded(size);
    uint32_t wire = padded + (uint32_t) sizeof(struct openib_eager_footer);
    char *msg = openib_frag_payload(f);
    struct openib_eager_footer *ft;
    bool early;
    int64_t off;
    int rc;

    /* In-place fragments are two pieces; the footer must fit behind the
     * message in the fragment's own buffer. */
    if (f->des.des_segment_count != 1 ||
        sizeof(struct openib_hdr) + wire > f->size) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    off = openib_eager_msg_offset(e->peer_slot_size, size);
    /* the caller checked that nothing waits before this message */
    if (off < 0 || !ring_has_room(ep) || openib_qp_data_room(ep, 0) <= 0) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    ft = (struct openib_eager_footer *) (msg + padded);
    stamp_footer(ep, ft, f->hdr->tag, size);
    f->sge[0] = (struct ibv_sge) {
        .addr = (uintptr_t) msg,
        .length = wire,
        .lkey = f->lkey,
    };
    f->swr = (struct ibv_send_wr) {
        .wr_id = (uintptr_t) f | OPENIB_WRID_RING,
        .sg_list = f->sge,
        .num_sge = 1,
        .opcode = IBV_WR_RDMA_WRITE,
        .wr.rdma = {
            .remote_addr = next_slot_addr(e, off),
            .rkey = e->peer_rkey,
        },
    };
    /* As for a send: an inline write of a fragment nobody waits for gives
     * the fragment back now and needs no completion. */
    early = false;
    if (wire <= m->max_inline) {
        f->swr.send_flags = IBV_SEND_INLINE;
        early = (f->des.des_flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP) && NULL == f->des.des_cbfunc;
        if (early) {
            f->swr.wr_id = OPENIB_WRID_MAKE(ep, 0);
        }
    }
    rc = openib_qp_post(ep, 0, &f->swr, !early);
    if (OPAL_UNLIKELY(rc)) {
        OPENIB_VERBOSE(1, "RDMA write into the eager ring of %s failed: %s", ep->desc,
                       strerror(errno));
        openib_hdr_unstamp(ep);
        return OPAL_ERROR;
    }
    count_sent(ep, size);
    m->stats.eager_rdma_frag_sends++;
    if (early) {
        openib_frag_return(f);
    }
    return OPAL_SUCCESS;
}

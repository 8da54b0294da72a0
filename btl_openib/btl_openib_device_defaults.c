/*
 * btl_openib_device_defaults.c - the device table (see the header).
 */
#include <stddef.h>

#include <infiniband/verbs.h>

#include "btl_openib/btl_openib_device_defaults.h"

/* Vendor ids as the drivers report them. */
#define VENDOR_SIW 0x626d74 /* "bmt": the Linux Soft-iWARP driver */
#define VENDOR_RXE 0xffffff /* the Linux Soft-RoCE driver (RXE_VENDOR_ID) */
/* sizeof(struct rxe_send_wqe), <rdma/rdma_user_rxe.h>: the kernel ABI's
 * header of every rxe send queue slot */
#define RXE_SEND_WQE_BYTES 208

/* A row's kind and match key: vendor, part, transport. */
#define DEVICE(kind_, vendor_, part_, transport_) \
    .kind = (kind_), .vendor_id = (vendor_), .vendor_part_id = (part_), .transport = (transport_)

/* What a row leaves out is 0, which is "unset" for cq_size and
 * sq_slot_header; the other values mean something at 0, so a row says
 * each one it leaves unset (-1). */
static const struct openib_device_defaults table[] = {
    {
        DEVICE("Soft-RoCE (rxe)", VENDOR_RXE, OPENIB_DEVICE_ANY, IBV_TRANSPORT_IB),
        /* rxe's send queue slot is its 208-byte WQE header plus the inline
         * room, rounded up to a power of two: 128 inline bytes make a 512-byte
         * slot, 48 a 256-byte one, which halves every peer's send queue
         * (64 KiB to 32 KiB at 127 WRs). 48 bytes still carry ob1's match
         * header, ours and a 16-byte payload; a larger one goes from its
         * registered fragment, which rxe copies in software either way. */
        .why = "rxe pads each send-queue slot (a 208-byte header plus the inline room) "
               "to a power of two; 48 inline bytes keep it at 256",
        .max_inline_data = 48,
        .sq_slot_header = RXE_SEND_WQE_BYTES,
        .eager_rdma_num = -1, .read_sink_remote_write = -1, .per_peer_queues = -1,
    },
    {
        DEVICE("Soft-iWARP (siw)", VENDOR_SIW, OPENIB_DEVICE_ANY, IBV_TRANSPORT_IWARP),
        /* The siw kernel driver hands out mmap keys from 0 up; its
         * user-space library (rdma-core, providers/siw) reads the key
         * 0x90000 (SIW_INVAL_UOBJ_KEY, page 144) as "no queue" and fails
         * the QP, CQ or SRQ whose queue was given it: ibv_create_qp fails
         * (with a stale errno) once about 144 pages of queues exist in the
         * process, which 4 ranks with the default queues reach. The CQ is
         * the first queue the BTL creates on a device; at 32768 entries
         * (32 B each: 257 pages) it holds that key for its lifetime, so no
         * later queue can get it. */
        .why = "the CQ holds siw's mmap key 0x90000, which its user-space library "
               "takes for an invalid one",
        .cq_size = 32768,
        .eager_rdma_num = -1, .read_sink_remote_write = -1, .per_peer_queues = -1,
        .max_inline_data = -1,
    },
    {
        DEVICE("iWARP", OPENIB_DEVICE_ANY, OPENIB_DEVICE_ANY, IBV_TRANSPORT_IWARP),
        /* An eager-RDMA ring is polled on the footer of each slot, which
         * is only safe where an RDMA write's last bytes land last. DDP
         * (RFC 5041) lets an iWARP data sink place the segments of one
         * write in any order; only a Send's arrival orders what came
         * before it. So iWARP uses the receive queues, whose completions
         * come after the data. */
        .why = "iWARP (DDP) may place an RDMA write's bytes in any order, and an "
               "eager-RDMA ring needs its footer to land last",
        .eager_rdma_num = 0,
        /* An RDMA read's response is placed like a tagged write into the
         * reader's buffer (RDMAP, RFC 5040), so iWARP devices demand remote
         * write access on the sink: without it an RDMA get fails with an
         * access error. */
        .read_sink_remote_write = 1,
        /* iWARP has no receiver-not-ready retry: a send that finds no
         * posted buffer terminates the connection (RDMAP). A shared queue
         * has no flow control but that retry (10,000 small messages in
         * flight ended siw connections), so the default queues are the
         * per-peer ones, whose credits keep every send to a posted buffer. */
        .per_peer_queues = 1,
        .max_inline_data = -1,
    },
};

bool openib_device_defaults_find(uint32_t vendor_id, uint32_t vendor_part_id, int transport,
                                 struct openib_device_choice *out)
{
    bool any = false;
    size_t i;

    *out = (struct openib_device_choice) {
        .cq_size = 0, .eager_rdma_num = -1, .read_sink_remote_write = -1,
        .per_peer_queues = -1, .max_inline_data = -1,
    };
    for (i = 0; i < sizeof(table) / sizeof(table[0]); ++i) {
        const struct openib_device_defaults *d = &table[i];

        if (!(OPENIB_DEVICE_ANY == d->vendor_id || d->vendor_id == vendor_id) ||
            !(OPENIB_DEVICE_ANY == d->vendor_part_id || d->vendor_part_id == vendor_part_id) ||
            !(d->transport < 0 || d->transport == transport)) {
            continue;
        }
        any = true;
        if (0 == out->cq_size && d->cq_size > 0) {
            out->cq_size = d->cq_size;
            out->cq_from = d;
        }
        if (out->eager_rdma_num < 0 && d->eager_rdma_num >= 0) {
            out->eager_rdma_num = d->eager_rdma_num;
            out->eager_from = d;
        }
        if (out->read_sink_remote_write < 0) {
            out->read_sink_remote_write = d->read_sink_remote_write;
        }
        if (out->per_peer_queues < 0) {
            out->per_peer_queues = d->per_peer_queues;
        }
        if (out->max_inline_data < 0 && d->max_inline_data >= 0) {
            out->max_inline_data = d->max_inline_data;
            out->inline_from = d;
        }
        if (0 == out->sq_slot_header) {
            out->sq_slot_header = d->sq_slot_header;
        }
    }
    return any;
}

/* The device table: siw (by vendor id and transport) gets a CQ big enough
 * to hold page 144 of its mmap keys and, like every iWARP device, no
 * eager-RDMA rings and remotely writable registrations (RDMA read sinks); an entry's values merge with the general iWARP entry's;
 * rxe gets a smaller inline size and its send-queue layout; an
 * InfiniBand/RoCE HCA (a ConnectX) keeps the parameters' defaults. */
#include <stddef.h>
#include <string.h>

#include <infiniband/verbs.h>
#if __has_include(<rdma/rdma_user_rxe.h>)
#include <rdma/rdma_user_rxe.h>
#endif

#include "btl_openib/btl_openib_device_defaults.h"
#include "tests/unit/unit.h"

#define SIW_VENDOR 0x626d74
#define RXE_VENDOR 0xffffff
#define MLX_VENDOR 0x02c9
#define CHELSIO_VENDOR 0x1425
/* siw's CQ entry (struct siw_cqe) and its mmap key that the library
 * reads as invalid (SIW_INVAL_UOBJ_KEY, rdma/siw-abi.h) */
#define SIW_CQE_BYTES 32
#define SIW_BAD_KEY_PAGE (0x90000 / 4096)

int main(void)
{
    struct openib_device_choice c;

    CHECK(openib_device_defaults_find(SIW_VENDOR, 0, IBV_TRANSPORT_IWARP, &c));
    /* the CQ, created first at page 0, must reach past page 144 */
    CHECK((size_t) c.cq_size * SIW_CQE_BYTES / 4096 > SIW_BAD_KEY_PAGE);
    CHECK(NULL != c.cq_from && NULL != strstr(c.cq_from->kind, "siw"));
    CHECK(NULL != c.cq_from && NULL != strstr(c.cq_from->why, "0x90000"));
    /* from the general iWARP entry */
    CHECK(c.eager_rdma_num == 0);
    CHECK(NULL != c.eager_from && 0 == strcmp(c.eager_from->kind, "iWARP"));
    CHECK(NULL != c.eager_from && NULL != strstr(c.eager_from->why, "footer"));
    CHECK(c.read_sink_remote_write == 1); /* RDMAP: a read's sink is written remotely */
    CHECK(c.per_peer_queues == 1); /* no RNR retry: credits, not a shared queue */

    /* another iWARP device: no eager RDMA, the CQ as set */
    CHECK(openib_device_defaults_find(CHELSIO_VENDOR, 0x6408, IBV_TRANSPORT_IWARP, &c));
    CHECK(c.cq_size == 0);
    CHECK(NULL == c.cq_from);
    CHECK(c.eager_rdma_num == 0);
    CHECK(c.read_sink_remote_write == 1);
    CHECK(c.per_peer_queues == 1);

    /* siw's vendor id on another transport is not siw */
    CHECK(!openib_device_defaults_find(SIW_VENDOR, 0, IBV_TRANSPORT_IB, &c));
    CHECK(c.cq_size == 0);
    CHECK(c.eager_rdma_num == -1);
    CHECK(c.per_peer_queues == -1);
    /* Soft-RoCE: inline room that keeps its send-queue slot at 256 bytes
     * (the 208-byte kernel header plus 48), and that header for the
     * per-peer count; nothing else */
    CHECK(openib_device_defaults_find(RXE_VENDOR, 0, IBV_TRANSPORT_IB, &c));
    CHECK(c.max_inline_data == 48);
    CHECK(NULL != c.inline_from && NULL != strstr(c.inline_from->kind, "rxe"));
#if __has_include(<rdma/rdma_user_rxe.h>)
    CHECK(c.sq_slot_header == (int) sizeof(struct rxe_send_wqe));
#else
    CHECK(c.sq_slot_header == 208);
#endif
    CHECK(c.sq_slot_header + c.max_inline_data <= 256);
    CHECK(c.cq_size == 0 && c.eager_rdma_num == -1 && c.per_peer_queues == -1);
    CHECK(c.read_sink_remote_write == -1);
    /* a ConnectX keeps the parameters' own defaults */
    CHECK(!openib_device_defaults_find(MLX_VENDOR, 4123, IBV_TRANSPORT_IB, &c));
    CHECK(c.eager_rdma_num == -1);
    CHECK(c.read_sink_remote_write == -1);
    CHECK(c.max_inline_data == -1 && c.sq_slot_header == 0);
    return unit_finish("test_device_defaults");
}

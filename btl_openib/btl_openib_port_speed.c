/*
 * btl_openib_port_speed.c - a port's data rate from its active speed and
 * width, through Open MPI's own table (opal/mca/common/verbs), and its
 * latency class from its kind of link.
 */
#include "opal_config.h"
#include "opal/constants.h"

#include "openib_config.h"
#include "btl_openib/btl_openib_port_speed.h"

#if OPENIB_HAVE_COMMON_VERBS
#include "opal/mca/common/verbs/common_verbs.h"
#endif

/* ibv_port_attr.active_speed codes past Open MPI 4.1's table (it ends at
 * HDR): an NDR lane carries twice an HDR lane (100 vs 50 Gb/s, same
 * 64b/66b-class coding), so NDR is asked as HDR and doubled. */
#define SPEED_HDR 64
#define SPEED_NDR 128

uint32_t openib_port_bandwidth(const struct ibv_port_attr *pa)
{
#if OPENIB_HAVE_COMMON_VERBS
    struct ibv_port_attr a = *pa;
    uint32_t bw = 0, factor = 1;

    if (SPEED_NDR == a.active_speed) {
        a.active_speed = SPEED_HDR;
        factor = 2;
    }
    if (OPAL_SUCCESS != opal_common_verbs_port_bw(&a, &bw)) {
        return 0;
    }
    return bw * factor;
#else
    (void) pa;
    return 0; /* no table to read it from: the template's value stays */
#endif
}

/* End-to-end small-message latency of current hardware, rounded up to whole
 * microseconds: an InfiniBand HCA pair through a switch about 1 us (a hop is
 * ~0.1 us, cut-through, credit-based links); RoCE and iWARP adapters about
 * 1.5-2 us (Ethernet switches take several hundred ns a hop, and the frame
 * carries Ethernet and IP headers; an iWARP NIC runs TCP in hardware, a RoCE
 * NIC UDP, at about the same cost), so the two are ranked alike and ob1
 * uses both for first fragments where a node has one of each. Only the
 * order matters to ob1: a node with an InfiniBand port and an Ethernet one
 * sends first fragments on the InfiniBand one, and any of them goes before
 * tcp (100). Software devices (rxe, siw) report their link like the hardware
 * they emulate and are ranked with it. */
uint32_t openib_port_latency(int transport, uint8_t link_layer)
{
    if (IBV_TRANSPORT_IWARP == transport) {
        return 2; /* always Ethernet, whatever link layer the driver reports */
    }
    if (IBV_TRANSPORT_IB != transport) {
        return 0;
    }
    switch (link_layer) {
    case IBV_LINK_LAYER_INFINIBAND:
    case IBV_LINK_LAYER_UNSPECIFIED: /* older drivers say nothing for IB */
        return 1;
    case IBV_LINK_LAYER_ETHERNET:
        return 2;
    default:
        return 0;
    }
}

/* A port's data rate (btl_bandwidth, ob1's rail weight) from its active
 * speed and width codes (ibv_port_attr): Open MPI's table for SDR to HDR,
 * NDR as twice HDR, 0 for codes nobody knows; skipped, and said so, in a
 * build without opal/mca/common/verbs (then every rate is 0). And its
 * latency class (btl_latency) from transport and link layer. */
#include <stdio.h>
#include <string.h>

#include "openib_config.h"
#include "btl_openib/btl_openib_port_speed.h"
#include "tests/unit/unit.h"

static uint32_t rate(uint8_t speed, uint8_t width)
{
    struct ibv_port_attr a;

    memset(&a, 0, sizeof(a));
    a.active_speed = speed;
    a.active_width = width;
    return openib_port_bandwidth(&a);
}

/* The latency class needs no table: checked in every build. */
static void latency(void)
{
    CHECK(openib_port_latency(IBV_TRANSPORT_IB, IBV_LINK_LAYER_INFINIBAND) == 1);
    CHECK(openib_port_latency(IBV_TRANSPORT_IB, IBV_LINK_LAYER_UNSPECIFIED) == 1);
    CHECK(openib_port_latency(IBV_TRANSPORT_IB, IBV_LINK_LAYER_ETHERNET) == 2); /* RoCE */
    CHECK(openib_port_latency(IBV_TRANSPORT_IWARP, IBV_LINK_LAYER_ETHERNET) == 2); /* as RoCE */
    CHECK(openib_port_latency(IBV_TRANSPORT_IWARP, IBV_LINK_LAYER_UNSPECIFIED) == 2);
    CHECK(openib_port_latency(IBV_TRANSPORT_IB, 77) == 0);         /* unknown link */
    CHECK(openib_port_latency(IBV_TRANSPORT_UNKNOWN, IBV_LINK_LAYER_ETHERNET) == 0);
    /* ob1's order: InfiniBand before RoCE and iWARP, all before tcp's 100 */
    CHECK(openib_port_latency(IBV_TRANSPORT_IWARP, IBV_LINK_LAYER_ETHERNET) < 100);
}

int main(void)
{
    latency();
#if !OPENIB_HAVE_COMMON_VERBS
    printf("test_port_speed: built without opal/mca/common/verbs: data rates skipped\n");
    return unit_finish("test_port_speed");
#else
    /* width codes: 1 = 1x, 2 = 4x, 4 = 8x, 8 = 12x */
    CHECK(rate(1, 1) == 2000);     /* SDR 1x: 2.5 Gb/s, 8b/10b */
    CHECK(rate(4, 2) == 32000);    /* QDR 4x */
    CHECK(rate(32, 2) == 100000);  /* EDR 4x */
    CHECK(rate(64, 2) == 200000);  /* HDR 4x */
    CHECK(rate(128, 2) == 400000); /* NDR 4x: past Open MPI 4.1's table */
    CHECK(rate(128, 1) == 100000); /* NDR 1x */
    CHECK(rate(3, 2) == 0);        /* not a speed code */
    CHECK(rate(64, 3) == 0);       /* not a width code */
    return unit_finish("test_port_speed");
#endif
}

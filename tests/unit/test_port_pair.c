/* Port pairing: both processes compute the same pairs from their own side,
 * every port is used at most once, incompatible ports (link layer, subnet,
 * transport) never pair, and two
 * rails on each side use both. */
#include <stdint.h>
#include <stdlib.h>

#include <infiniband/verbs.h>

#include "btl_openib/btl_openib_port_pair.h"
#include "tests/unit/unit.h"

#define ETH IBV_LINK_LAYER_ETHERNET
#define IB IBV_LINK_LAYER_INFINIBAND

/* Pair a and b from both sides; the two views must agree. Returns the
 * number of pairs; a_partner gets a's view. */
static int both_ways(const struct openib_port_key *a, int na, const struct openib_port_key *b,
                     int nb, int *a_partner)
{
    int b_partner[16], i, pairs = 0;
    int seen_b[16] = { 0 };

    openib_port_pair(a, na, b, nb, true, a_partner);
    openib_port_pair(b, nb, a, na, false, b_partner);
    for (i = 0; i < na; ++i) {
        if (a_partner[i] >= 0) {
            CHECK(a_partner[i] < nb);
            CHECK(b_partner[a_partner[i]] == i);          /* the same pair seen from b */
            CHECK(seen_b[a_partner[i]]++ == 0);           /* b's port used once */
            CHECK(a[i].link_layer == b[a_partner[i]].link_layer);
            CHECK(a[i].transport == b[a_partner[i]].transport);
            pairs++;
        }
    }
    for (i = 0; i < nb; ++i) {
        if (b_partner[i] >= 0) {
            CHECK(a_partner[b_partner[i]] == i);
        }
    }
    return pairs;
}

int main(void)
{
    struct openib_port_key eth2[2] = { { ETH, 0 }, { ETH, 0 } }, eth1[1] = { { ETH, 0 } };
    struct openib_port_key ib_a[2] = { { IB, 0xfe80 }, { IB, 0xfe81 } };
    struct openib_port_key ib_b[2] = { { IB, 0xfe81 }, { IB, 0xfe80 } };
    struct openib_port_key ib_c[1] = { { IB, 0xfe99 } };
    struct openib_port_key mixed[2] = { { IB, 0xfe80 }, { ETH, 0 } };
    int p[16], i, r;

    /* two rails each: both used, rail i with rail i */
    CHECK(2 == both_ways(eth2, 2, eth2, 2, p));
    CHECK(p[0] == 0 && p[1] == 1);
    /* two against one: one pair only (the peer's single port is used once) */
    CHECK(1 == both_ways(eth2, 2, eth1, 1, p));
    CHECK(p[0] == 0 && p[1] == -1);
    CHECK(1 == both_ways(eth1, 1, eth2, 2, p));
    /* InfiniBand pairs by subnet prefix, not by index */
    CHECK(2 == both_ways(ib_a, 2, ib_b, 2, p));
    CHECK(p[0] == 1 && p[1] == 0);
    /* different subnets: unreachable */
    CHECK(0 == both_ways(ib_a, 2, ib_c, 1, p));
    CHECK(p[0] == -1 && p[1] == -1);
    /* IB and Ethernet never pair */
    CHECK(1 == both_ways(mixed, 2, eth2, 2, p));
    CHECK(p[0] == -1 && p[1] == 1);
    CHECK(0 == both_ways(ib_c, 1, eth1, 1, p));
    /* iWARP and RoCE are both Ethernet but never pair (issue 17's mixed
     * job: rxe0 + siw0 against a peer with the two in another order, or
     * with only one of them) */
    {
        struct openib_port_key roce_iw[2] = { { ETH, 0, 0 }, { ETH, 0, 1 } };
        struct openib_port_key iw_roce[2] = { { ETH, 0, 1 }, { ETH, 0, 0 } };
        struct openib_port_key iw1[1] = { { ETH, 0, 1 } };

        CHECK(2 == both_ways(roce_iw, 2, iw_roce, 2, p));
        CHECK(p[0] == 1 && p[1] == 0);
        CHECK(0 == both_ways(iw1, 1, eth1, 1, p));
        CHECK(p[0] == -1);
        CHECK(1 == both_ways(roce_iw, 2, iw1, 1, p));
        CHECK(p[0] == -1 && p[1] == 0);
    }
    /* random tables: the two views always agree (checked in both_ways) */
    srand(7);
    for (r = 0; r < 2000; ++r) {
        struct openib_port_key a[6], b[6];
        int na = 1 + rand() % 6, nb = 1 + rand() % 6;
        for (i = 0; i < na; ++i) {
            a[i] = (struct openib_port_key) { rand() % 2 ? IB : ETH, 0xfe80 + rand() % 3,
                                              (uint8_t) (rand() % 2) };
        }
        for (i = 0; i < nb; ++i) {
            b[i] = (struct openib_port_key) { rand() % 2 ? IB : ETH, 0xfe80 + rand() % 3,
                                              (uint8_t) (rand() % 2) };
        }
        (void) both_ways(a, na, b, nb, p);
    }
    return unit_finish("test_port_pair");
}

/*
 * btl_openib_port_pair.h - which of a peer's ports each of our ports
 * connects to.
 *
 * Both processes compute the same pairs on their own (a passive side that
 * meets a peer for the first time when its connect request arrives must
 * know which of the peer's ports it came from), so the rule is symmetric:
 * the process with the lower name is "first", and its ports, in modex
 * order, each take the first free compatible port of the other, starting
 * at the same index (so two ports on each side spread over both rails). A
 * port is used by at most one pair: each of our modules has at most one
 * endpoint per peer, and so has each of the peer's. Compatible: the same
 * transport (iWARP talks only to iWARP), the same link layer, and on
 * InfiniBand the same subnet prefix (a GRH across
 * subnets needs a router this BTL does not assume). A port left without a
 * partner cannot reach that peer; when none of ours has one, the peer is
 * unreachable over openib and another BTL carries its traffic.
 *
 * Device-free so both sides of the rule are unit-tested.
 */
#ifndef BTL_OPENIB_PORT_PAIR_H
#define BTL_OPENIB_PORT_PAIR_H

#include <stdbool.h>
#include <stdint.h>

struct openib_port_key {
    uint8_t link_layer;     /* IBV_LINK_LAYER_* */
    uint64_t subnet_prefix; /* host order; compared on InfiniBand only */
    uint8_t transport;      /* OPENIB_MODEX_TRANSPORT_* (0: InfiniBand/RoCE) */
};

/* partner[i] = the index of the peer port our port i pairs with, or -1.
 * mine_first: whether this process's name is the lower of the two. */
void openib_port_pair(const struct openib_port_key *mine, int nmine,
                      const struct openib_port_key *theirs, int ntheirs, bool mine_first,
                      int *partner);

#endif

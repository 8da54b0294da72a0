/*
 * btl_openib_port_pair.c - the port pairing rule (see the header).
 */
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "btl_openib/btl_openib_port_pair.h"

#define PAIR_MAX_PORTS 64

static bool compatible(const struct openib_port_key *a, const struct openib_port_key *b)
{
    if (a->transport != b->transport || a->link_layer != b->link_layer) {
        return false;
    }
    return a->link_layer != IBV_LINK_LAYER_INFINIBAND || a->subnet_prefix == b->subnet_prefix;
}

void openib_port_pair(const struct openib_port_key *mine, int nmine,
                      const struct openib_port_key *theirs, int ntheirs, bool mine_first,
                      int *partner)
{
    const struct openib_port_key *first = mine_first ? mine : theirs;
    const struct openib_port_key *second = mine_first ? theirs : mine;
    int nfirst = mine_first ? nmine : ntheirs, nsecond = mine_first ? ntheirs : nmine;
    bool used[PAIR_MAX_PORTS] = { false };
    int i, t;

    for (i = 0; i < nmine; ++i) {
        partner[i] = -1;
    }
    if (nfirst > PAIR_MAX_PORTS) {
        nfirst = PAIR_MAX_PORTS;
    }
    if (nsecond > PAIR_MAX_PORTS) {
        nsecond = PAIR_MAX_PORTS;
    }
    for (i = 0; i < nfirst && nsecond > 0; ++i) {
        for (t = 0; t < nsecond; ++t) {
            int j = (i + t) % nsecond;

            if (used[j] || !compatible(&first[i], &second[j])) {
                continue;
            }
            used[j] = true;
            if (mine_first) {
                partner[i] = j;
            } else {
                partner[j] = i;
            }
            break;
        }
    }
}

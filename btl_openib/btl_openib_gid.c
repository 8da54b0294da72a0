/*
 * btl_openib_gid.c - the RoCE GID preference (see the header).
 */
#include <string.h>

#include "btl_openib/btl_openib_gid.h"

static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

int openib_gid_rank(const struct ibv_gid_entry *e)
{
    const uint8_t *g = e->gid.raw;
    static const uint8_t zero[16];

    if (0 == memcmp(g, zero, sizeof(zero))) {
        return 0; /* an empty slot */
    }
    if (e->gid_type != IBV_GID_TYPE_ROCE_V2) {
        return e->gid_type == IBV_GID_TYPE_ROCE_V1 ? 1 : 0;
    }
    if (0 == memcmp(g, v4mapped, sizeof(v4mapped))) {
        return 4;
    }
    if (g[0] == 0xfe && (g[1] & 0xc0) == 0x80) {
        return 2; /* fe80::/10: only inside one link */
    }
    return 3;
}

int openib_gid_pick(const struct ibv_gid_entry *entries, int n)
{
    int i, best = -1, best_rank = 0;

    for (i = 0; i < n; ++i) {
        int r = openib_gid_rank(&entries[i]);
        if (r > best_rank ||
            (r == best_rank && r > 0 && entries[i].gid_index < entries[best].gid_index)) {
            best = i;
            best_rank = r;
        }
    }
    return best;
}

/* RoCE GID choice by type: on a ConnectX-style table (each address listed
 * as RoCE v1 first, then v2) the RoCE v2 IPv4 entry wins, not the first
 * IPv4-mapped one; then v2 IPv6 global, v2 link-local, v1; empty entries
 * never; the lowest index among equals; rxe's table (v2 only) too. */
#include <string.h>

#include "btl_openib/btl_openib_gid.h"
#include "tests/unit/unit.h"

static struct ibv_gid_entry entry(uint32_t index, uint32_t type, const char *kind)
{
    struct ibv_gid_entry e;

    memset(&e, 0, sizeof(e));
    e.gid_index = index;
    e.gid_type = type;
    if (0 == strcmp(kind, "ll")) {          /* fe80::1 */
        e.gid.raw[0] = 0xfe;
        e.gid.raw[1] = 0x80;
        e.gid.raw[15] = 1;
    } else if (0 == strcmp(kind, "v4")) {   /* ::ffff:10.0.0.index */
        e.gid.raw[10] = e.gid.raw[11] = 0xff;
        e.gid.raw[12] = 10;
        e.gid.raw[15] = (uint8_t) index;
    } else if (0 == strcmp(kind, "v6")) {   /* 2001:db8::index */
        e.gid.raw[0] = 0x20;
        e.gid.raw[1] = 0x01;
        e.gid.raw[2] = 0x0d;
        e.gid.raw[3] = 0xb8;
        e.gid.raw[15] = (uint8_t) index;
    }
    return e;
}

int main(void)
{
    const uint32_t V1 = IBV_GID_TYPE_ROCE_V1, V2 = IBV_GID_TYPE_ROCE_V2;
    struct ibv_gid_entry cx[6] = {
        entry(0, V1, "ll"), entry(1, V2, "ll"), entry(2, V1, "v4"),
        entry(3, V2, "v4"), entry(4, V1, "v6"), entry(5, V2, "v6"),
    };
    struct ibv_gid_entry rxe[2] = { entry(0, V2, "ll"), entry(1, V2, "v4") };
    struct ibv_gid_entry v6only[4] = { entry(0, V1, "ll"), entry(1, V2, "ll"), entry(2, V1, "v6"),
                                       entry(3, V2, "v6") };
    struct ibv_gid_entry llonly[2] = { entry(0, V1, "ll"), entry(1, V2, "ll") };
    struct ibv_gid_entry v1only[2] = { entry(0, V1, "ll"), entry(2, V1, "v4") };
    struct ibv_gid_entry empty[2] = { entry(0, V2, "zero"), entry(1, V1, "zero") };
    struct ibv_gid_entry ties[2] = { entry(7, V2, "v4"), entry(4, V2, "v4") };

    CHECK(3 == cx[openib_gid_pick(cx, 6)].gid_index);       /* v2 IPv4, not index 2 (v1) */
    CHECK(1 == rxe[openib_gid_pick(rxe, 2)].gid_index);     /* what rxe's table gives */
    CHECK(3 == v6only[openib_gid_pick(v6only, 4)].gid_index);
    CHECK(1 == llonly[openib_gid_pick(llonly, 2)].gid_index);
    CHECK(0 == v1only[openib_gid_pick(v1only, 2)].gid_index); /* v1: lowest index */
    CHECK(-1 == openib_gid_pick(empty, 2));
    CHECK(-1 == openib_gid_pick(cx, 0));
    CHECK(4 == ties[openib_gid_pick(ties, 2)].gid_index);
    CHECK(4 == openib_gid_rank(&cx[3]) && 1 == openib_gid_rank(&cx[2]));
    CHECK(3 == openib_gid_rank(&cx[5]) && 2 == openib_gid_rank(&cx[1]));
    return unit_finish("test_gid");
}

/* Registration handles: an RDMA operation is allowed only inside the
 * registered range, edges included, and no address arithmetic wraps. */
#include <stdint.h>

#include "btl_openib/btl_openib_handle.h"
#include "tests/unit/unit.h"

int main(void)
{
    struct mca_btl_base_registration_handle_t h = { .rkey = 7, .base = 0x10000, .len = 0x2000 };

    CHECK(openib_handle_covers(&h, 0x10000, 0x2000));       /* all of it */
    CHECK(openib_handle_covers(&h, 0x10000, 0));
    CHECK(openib_handle_covers(&h, 0x11ff8, 8));            /* the last word */
    CHECK(openib_handle_covers(&h, 0x12000, 0));            /* empty, at the end */
    CHECK(!openib_handle_covers(&h, 0x11ff9, 8));           /* one byte past */
    CHECK(!openib_handle_covers(&h, 0xfff8, 8));            /* before */
    CHECK(!openib_handle_covers(&h, 0x12000, 1));           /* after */
    CHECK(!openib_handle_covers(&h, 0x10000, 0x2001));      /* too long */
    /* the neighbouring page's registration (what osc/rdma's region-table
     * race hands over) */
    CHECK(!openib_handle_covers(&h, 0x12008, 4));
    /* no wrap-around: huge sizes and addresses near the top */
    CHECK(!openib_handle_covers(&h, 0x10000, SIZE_MAX));
    CHECK(!openib_handle_covers(&h, UINT64_MAX - 3, 8));
    h.base = UINT64_MAX - 0xfff;
    h.len = 0x1000;
    CHECK(openib_handle_covers(&h, UINT64_MAX - 7, 8));
    CHECK(!openib_handle_covers(&h, UINT64_MAX - 7, 9));
    return unit_finish("test_handle");
}

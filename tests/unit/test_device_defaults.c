/* The device table: siw (by vendor id and transport) gets its entry with a
 * CQ big enough to hold page 144 of its mmap keys; a device that only
 * shares one of the keys, and InfiniBand/RoCE devices, get none. */
#include <stddef.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "btl_openib/btl_openib_device_defaults.h"
#include "tests/unit/unit.h"

#define SIW_VENDOR 0x626d74
#define RXE_VENDOR 0xffffff
#define MLX_VENDOR 0x02c9
/* siw's CQ entry (struct siw_cqe) and its mmap key that the library
 * reads as invalid (SIW_INVAL_UOBJ_KEY, rdma/siw-abi.h) */
#define SIW_CQE_BYTES 32
#define SIW_BAD_KEY_PAGE (0x90000 / 4096)

int main(void)
{
    const struct openib_device_defaults *d;

    d = openib_device_defaults_find(SIW_VENDOR, 0, IBV_TRANSPORT_IWARP);
    CHECK(NULL != d);
    if (NULL != d) {
        CHECK(NULL != strstr(d->kind, "siw"));
        CHECK(NULL != d->why && '\0' != d->why[0]);
        /* the CQ, created first at page 0, must reach past page 144 */
        CHECK((size_t) d->cq_size * SIW_CQE_BYTES / 4096 > SIW_BAD_KEY_PAGE);
    }
    /* the vendor alone or the transport alone is not siw */
    CHECK(NULL == openib_device_defaults_find(SIW_VENDOR, 0, IBV_TRANSPORT_IB));
    CHECK(NULL == openib_device_defaults_find(0x1425, 0, IBV_TRANSPORT_IWARP) ||
          openib_device_defaults_find(0x1425, 0, IBV_TRANSPORT_IWARP)->cq_size == 0);
    /* Soft-RoCE and a ConnectX keep the parameters' own defaults */
    CHECK(NULL == openib_device_defaults_find(RXE_VENDOR, 0, IBV_TRANSPORT_IB));
    CHECK(NULL == openib_device_defaults_find(MLX_VENDOR, 4123, IBV_TRANSPORT_IB));
    return unit_finish("test_device_defaults");
}

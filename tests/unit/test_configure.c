/* configure's results match the system: the Open MPI version it found is
 * 4.1.x with BTL API 3.1.0, XRC detection agrees with the verbs headers,
 * and every result carries our prefix (no PACKAGE_* leaks into it). */
#include "opal_config.h"

#include <infiniband/verbs.h>

#include "opal/mca/btl/btl.h"

#include "openib_config.h"
#include "tests/unit/unit.h"

int main(void)
{
    CHECK(4 == OPAL_MAJOR_VERSION && 1 == OPAL_MINOR_VERSION);
    CHECK(310 == BTL_VERSION);
    CHECK(0 == strncmp(OPENIB_OMPI_VERSION_STRING, "4.1.", 4));
    CHECK_STR_CONTAINS(OPENIB_VERSION_STRING, "openib-ng");
#if OPENIB_HAVE_XRC
    {
        /* configure said yes: the XRC verbs must really be there */
        struct ibv_xrcd *(*open_xrcd)(struct ibv_context *, struct ibv_xrcd_init_attr *) =
            ibv_open_xrcd;
        CHECK(NULL != open_xrcd);
        CHECK(IBV_QPT_XRC_SEND != IBV_QPT_XRC_RECV);
    }
#endif
    CHECK(1 == OPENIB_HAVE_RDMACM);
    CHECK(OPENIB_HAVE_HWLOC == 0 || OPENIB_HAVE_HWLOC == 1);
    CHECK(OPENIB_HAVE_PMIX == 0 || OPENIB_HAVE_PMIX == 1);
    /* opal_config.h owns PACKAGE_*: ours must not redefine them */
    CHECK(0 != strcmp(PACKAGE_NAME, "openib-ng"));
    return unit_finish("test_configure");
}

/* The component's two error edges (common/openib_errno.h): errno ->
 * OPAL_* at the verbs edge, OPAL_* -> negative errno at the public ABI edge.
 * What matters: a failure never turns into success, every errno the HMEM ABI
 * documents survives the trip inside and back out unchanged, and the
 * verbs errors land on the OPAL codes their meaning calls for. */
#include <errno.h>
#include <stdio.h>

#include "opal_config.h"
#include "opal/constants.h"

#include "common/openib_errno.h"
#include "tests/unit/unit.h"

/* Every negative errno the installed HMEM header and openib_abi.h document. */
static const int hmem_abi_errnos[] = {
    EINVAL, E2BIG, EFAULT, ENOSYS, EOPNOTSUPP, ENODEV, EIO, ENOMEM, EPROTO, ENOEXEC, ENOENT,
    EACCES,
};
#define N_ABI (sizeof(hmem_abi_errnos) / sizeof(hmem_abi_errnos[0]))

int main(void)
{
    size_t i, j;
    int e;

    /* success both ways; counts pass the ABI edge untouched */
    CHECK(OPAL_SUCCESS == openib_err_from_errno(0));
    CHECK(0 == openib_err_to_abi_errno(OPAL_SUCCESS));
    CHECK(4096 == openib_err_to_abi_errno(4096));

    /* no errno becomes success, and every result is an OPAL error code */
    for (e = 1; e < 200; ++e) {
        int o = openib_err_from_errno(e);
        CHECK(o < 0 && o > OPAL_ERR_MAX);
    }
    CHECK(OPAL_ERROR == openib_err_from_errno(-EINVAL)); /* not an errno */
    CHECK(OPAL_ERROR == openib_err_from_errno(100000));

    /* the HMEM ABI's errnos: round trip exact, and no two share a code */
    for (i = 0; i < N_ABI; ++i) {
        int o = openib_err_from_errno(hmem_abi_errnos[i]);
        CHECK(-hmem_abi_errnos[i] == openib_err_to_abi_errno(o));
        for (j = 0; j < i; ++j) {
            CHECK(o != openib_err_from_errno(hmem_abi_errnos[j]));
        }
    }
    /* the values the HMEM code relies on by name */
    CHECK(-EINVAL == openib_err_to_abi_errno(OPAL_ERR_BAD_PARAM));
    CHECK(-ENOSYS == openib_err_to_abi_errno(OPAL_ERR_NOT_IMPLEMENTED));
    CHECK(-EOPNOTSUPP == openib_err_to_abi_errno(OPAL_ERR_NOT_SUPPORTED));
    CHECK(-ENOMEM == openib_err_to_abi_errno(OPAL_ERR_OUT_OF_RESOURCE));
    CHECK(-ENOENT == openib_err_to_abi_errno(OPAL_ERR_NOT_FOUND));
    CHECK(-EACCES == openib_err_to_abi_errno(OPAL_ERR_PERM));
    CHECK(-EIO == openib_err_to_abi_errno(OPAL_ERROR));
    CHECK(-EIO == openib_err_to_abi_errno(OPAL_ERR_FATAL)); /* not in the table */

    /* the verbs edge */
    CHECK(OPAL_ERR_OUT_OF_RESOURCE == openib_err_from_errno(ENOMEM));
    CHECK(OPAL_ERR_BAD_PARAM == openib_err_from_errno(EINVAL));
    CHECK(OPAL_ERR_NOT_SUPPORTED == openib_err_from_errno(EOPNOTSUPP));
    CHECK(OPAL_ERR_TEMP_OUT_OF_RESOURCE == openib_err_from_errno(EAGAIN));
    CHECK(OPAL_ERR_TEMP_OUT_OF_RESOURCE == openib_err_from_errno(ENOBUFS));
    CHECK(OPAL_ERR_RESOURCE_BUSY == openib_err_from_errno(EBUSY));
    CHECK(OPAL_ERR_TIMEOUT == openib_err_from_errno(ETIMEDOUT));
    CHECK(OPAL_ERR_NOT_FOUND == openib_err_from_errno(ENOENT));
    CHECK(OPAL_ERR_PERM == openib_err_from_errno(EPERM));
    CHECK(OPAL_ERR_UNREACH == openib_err_from_errno(EHOSTUNREACH));
    CHECK(OPAL_ERROR == openib_err_from_errno(EIO));
    CHECK(OPAL_ERROR == openib_err_from_errno(ENOSPC)); /* not in the table */

    /* the conversion leaves errno alone (callers still print it) */
    errno = ETIMEDOUT;
    (void) openib_err_from_errno(EINVAL);
    (void) openib_err_to_abi_errno(OPAL_ERR_BAD_PARAM);
    CHECK(ETIMEDOUT == errno);

    return unit_finish("test_errno");
}

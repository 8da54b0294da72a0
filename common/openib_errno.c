/*
 * openib_errno.c - errno <-> OPAL_* conversion at the component's two
 * edges (see the header).
 */
#include "opal_config.h"

#include <errno.h>
#include <stddef.h>

#include "opal/constants.h"

#include "openib/openib_cpc.h"
#include "openib/openib_wc.h"

#include "common/openib_errno.h"

/* The public CPC and completion-record codes are OPAL codes under another
 * name (spelled out so plug-ins need no Open MPI headers); nothing converts
 * them, so they must stay equal. */
_Static_assert(OPENIB_CPC_SUCCESS == OPAL_SUCCESS, "CPC code is an OPAL code");
_Static_assert(OPENIB_CPC_ERROR == OPAL_ERROR, "CPC code is an OPAL code");
_Static_assert(OPENIB_CPC_ERR_OUT_OF_RESOURCE == OPAL_ERR_OUT_OF_RESOURCE, "CPC code is an OPAL code");
_Static_assert(OPENIB_CPC_ERR_BAD_PARAM == OPAL_ERR_BAD_PARAM, "CPC code is an OPAL code");
_Static_assert(OPENIB_CPC_ERR_NOT_SUPPORTED == OPAL_ERR_NOT_SUPPORTED, "CPC code is an OPAL code");
_Static_assert(OPENIB_CPC_ERR_UNREACH == OPAL_ERR_UNREACH, "CPC code is an OPAL code");
_Static_assert(OPENIB_WC_OK == OPAL_SUCCESS, "WC code is an OPAL code");
_Static_assert(OPENIB_WC_ERR_NOSPACE == OPAL_ERR_OUT_OF_RESOURCE, "WC code is an OPAL code");
_Static_assert(OPENIB_WC_ERR_INVAL == OPAL_ERR_BAD_PARAM, "WC code is an OPAL code");
_Static_assert(OPENIB_WC_ERR_UNKNOWN == OPAL_ERR_NOT_SUPPORTED, "WC code is an OPAL code");
_Static_assert(OPENIB_WC_ERR_NOT_FOUND == OPAL_ERR_NOT_FOUND, "WC code is an OPAL code");
_Static_assert(OPENIB_WC_ERR_TRUNCATED == OPAL_ERR_UNPACK_READ_PAST_END_OF_BUFFER,
               "WC code is an OPAL code");

/*
 * One row per pair. Reading errno -> OPAL takes the first row with that
 * errno, OPAL -> errno the first row with that code, so each OPAL code's
 * first row is the errno the ABI returns for it, and a later row with the
 * same code (EPERM after EACCES) is an alias read in one direction only.
 * Every errno the HMEM ABI documents has a code of its own, which is what
 * makes its round trip exact. OPAL_ERROR <-> EIO is also the fallback both
 * ways.
 */
static const struct openib_err_pair {
    int err;
    int opal;
} openib_err_pairs[] = {
    /* HMEM ABI errors (openib/openib_hmem.h, openib/openib_abi.h) */
    { EINVAL, OPAL_ERR_BAD_PARAM },
    { E2BIG, OPAL_ERR_VALUE_OUT_OF_BOUNDS },    /* a struct larger than known, tail set */
    { EFAULT, OPAL_ERR_BUFFER },                /* NULL base where bytes would go */
    { ENOSYS, OPAL_ERR_NOT_IMPLEMENTED },       /* no override support at all */
    { EOPNOTSUPP, OPAL_ERR_NOT_SUPPORTED },     /* not this operation */
    { ENODEV, OPAL_ERR_NOT_AVAILABLE },         /* the interface's runtime is absent */
    { EIO, OPAL_ERROR },                        /* a copy or call failed */
    { ENOMEM, OPAL_ERR_OUT_OF_RESOURCE },
    { EPROTO, OPAL_ERR_TYPE_MISMATCH },         /* built against an ABI not accepted */
    { ENOEXEC, OPAL_ERR_MODULE_NOT_FOUND },     /* a library that is no plug-in */
    { ENOENT, OPAL_ERR_NOT_FOUND },
    { EACCES, OPAL_ERR_PERM },
    /* verbs, librdmacm and the system */
    { EPERM, OPAL_ERR_PERM },
    { EAGAIN, OPAL_ERR_TEMP_OUT_OF_RESOURCE },  /* EWOULDBLOCK is the same value on Linux */
    { ENOBUFS, OPAL_ERR_TEMP_OUT_OF_RESOURCE },
    { EBUSY, OPAL_ERR_RESOURCE_BUSY },
    { ETIMEDOUT, OPAL_ERR_TIMEOUT },
    { EINTR, OPAL_ERR_INTERRUPTED },
    { EEXIST, OPAL_EXISTS },
    { EHOSTUNREACH, OPAL_ERR_UNREACH },
    { ENETUNREACH, OPAL_ERR_UNREACH },
    { ECONNREFUSED, OPAL_ERR_CONNECTION_FAILED },
    { ECONNRESET, OPAL_ERR_CONNECTION_FAILED },
};
#define OPENIB_ERR_NPAIRS (sizeof(openib_err_pairs) / sizeof(openib_err_pairs[0]))

int openib_err_from_errno(int e)
{
    size_t i;

    if (0 == e) {
        return OPAL_SUCCESS;
    }
    for (i = 0; i < OPENIB_ERR_NPAIRS; ++i) {
        if (openib_err_pairs[i].err == e) {
            return openib_err_pairs[i].opal;
        }
    }
    return OPAL_ERROR;
}

int openib_err_to_abi_errno(int opal)
{
    size_t i;

    if (opal >= 0) {
        return opal;
    }
    for (i = 0; i < OPENIB_ERR_NPAIRS; ++i) {
        if (openib_err_pairs[i].opal == opal) {
            return -openib_err_pairs[i].err;
        }
    }
    return -EIO;
}

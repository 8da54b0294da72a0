/*
 * btl_openib_hmem_glue.c - the fragment path's use of the HMEM copy hooks.
 */
#include "opal_config.h"

#include <string.h>
#include <sys/uio.h>

#include "opal/constants.h"
#include "opal/datatype/opal_convertor.h"

#include "btl_openib/btl_openib_hmem_glue.h"
#include "mca/btl_openib_params.h"

int openib_hmem_glue_register(struct mca_base_component_2_1_0_t *c)
{
    (void) c;
    return OPAL_SUCCESS;
}

int openib_hmem_glue_init(void)
{
    return OPAL_SUCCESS;
}

void openib_hmem_glue_fini(void)
{
}

struct openib_hmem_object *openib_hmem_glue_child(struct openib_hmem_object *parent)
{
    return parent;
}

void openib_hmem_glue_release(struct openib_hmem_object *o)
{
    (void) o;
}

int openib_hmem_pack(mca_btl_openib_module_t *m, struct opal_convertor_t *conv, void *dst,
                     size_t *size)
{
    struct iovec iov = { .iov_base = dst, .iov_len = *size };
    uint32_t n = 1;
    size_t max = *size;
    int rc;

    (void) m;
    if (0 == max) {
        return OPAL_SUCCESS;
    }
    rc = opal_convertor_pack(conv, &iov, &n, &max);
    if (rc < 0) {
        return rc;
    }
    *size = max;
    return OPAL_SUCCESS;
}

/*
 * btl_openib_hmem_glue.c - the fragment path's use of the HMEM copy hooks.
 *
 * Every copy of user payload into a send fragment goes through the hook
 * table of the device's HMEM object, so an override (or the CUDA copy) sees
 * every byte. Contiguous data is one copy_from_buf; non-contiguous data is
 * described by opal_convertor_raw (no copy) and copied with copy_from_iov.
 */
#include "opal_config.h"

#include <string.h>
#include <sys/uio.h>

#include "opal/constants.h"
#include "opal/datatype/opal_convertor.h"

#include "btl_openib/btl_openib_hmem_glue.h"
#include "hmem/openib_hmem_btl.h"
#include "mca/btl_openib_params.h"

#define RAW_IOVS 32

int openib_hmem_glue_register(struct mca_base_component_2_1_0_t *c)
{
    return openib_hmem_register_params(c);
}

int openib_hmem_glue_init(void)
{
    int rc = openib_hmem_component_init(&mca_btl_openib_component.hmem_root);

    if (OPAL_SUCCESS == rc) {
        OPENIB_VERBOSE(10, "HMEM: %s", openib_hmem_iface_status(OPENIB_HMEM_CUDA));
    }
    return rc; /* a plug-in failure was already shown to the user */
}

void openib_hmem_glue_fini(void)
{
    if (mca_btl_openib_component.hmem_root) {
        openib_hmem_component_fini();
        mca_btl_openib_component.hmem_root = NULL;
    }
}

struct openib_hmem_object *openib_hmem_glue_child(struct openib_hmem_object *parent)
{
    struct openib_hmem_object *o = NULL;

    if (parent && OPAL_SUCCESS != openib_hmem_object_create(parent, "device", &o)) {
        return NULL;
    }
    return o;
}

void openib_hmem_glue_release(struct openib_hmem_object *o)
{
    if (o) {
        openib_hmem_object_free(o);
    }
}

static int pack_raw(const struct openib_hmem_object *h, opal_convertor_t *conv, char *dst,
                    size_t want, size_t *done)
{
    size_t start = conv->bConverted, packed = 0;

    while (packed < want) {
        struct iovec iov[RAW_IOVS];
        uint32_t n = RAW_IOVS;
        size_t len = 0;
        enum openib_hmem_iface iface;
        uint64_t dev;
        ssize_t got;

        opal_convertor_raw(conv, iov, &n, &len);
        if (0 == n || 0 == len) {
            break;
        }
        openib_hmem_detect(iov[0].iov_base, &iface, &dev);
        got = openib_hmem_copy_from_iov(h, iface, dev, dst + packed,
                                        len < want - packed ? len : want - packed, iov, n, 0);
        if (got < 0) {
            return OPAL_ERROR;
        }
        packed += (size_t) got;
    }
    /* raw() may have described more than we took: put the convertor exactly
     * after the bytes packed. */
    start += packed;
    opal_convertor_set_position(conv, &start);
    *done = packed;
    return OPAL_SUCCESS;
}

int openib_hmem_pack(mca_btl_openib_module_t *m, struct opal_convertor_t *conv, void *dst,
                     size_t *size)
{
    const struct openib_hmem_object *h = m->dev->hmem;
    size_t want = *size, left = conv->local_size - conv->bConverted;

    if (want > left) {
        want = left;
    }
    if (0 == want) {
        *size = 0;
        return OPAL_SUCCESS;
    }
    if (!opal_convertor_need_buffers(conv)) {
        enum openib_hmem_iface iface;
        uint64_t dev;
        void *src;
        size_t pos;
        ssize_t got;

        opal_convertor_get_current_pointer(conv, &src);
        openib_hmem_detect(src, &iface, &dev);
        got = openib_hmem_copy_from_buf(h, iface, dev, dst, src, want);
        if (got < 0 || (size_t) got != want) {
            return OPAL_ERROR;
        }
        pos = conv->bConverted + want;
        opal_convertor_set_position(conv, &pos);
        *size = want;
        return OPAL_SUCCESS;
    }
    return pack_raw(h, conv, dst, want, size);
}

/*
 * btl_openib_hmem_glue.c - the fragment path's use of the HMEM copy hooks.
 *
 * Every copy of user payload into a send fragment goes through the hook
 * table of the device's HMEM object, so an override (or the CUDA copy) sees
 * every byte (btl_openib_pack.c: contiguous data is one copy_from_buf;
 * non-contiguous data is packed by Open MPI's convertor where that is a
 * plain memcpy, otherwise handed to copy_from_iov as iovecs).
 */
#include "opal_config.h"

#include <stdbool.h>
#include <string.h>

#include "opal/constants.h"
#include "opal/datatype/opal_convertor.h"

#include "btl_openib/btl_openib_hmem_glue.h"
#include "btl_openib/btl_openib_pack.h"
#include "hmem/openib_hmem_btl.h"
#include "mca/btl_openib_params.h"

int openib_hmem_glue_register(const struct mca_base_component_2_1_0_t *c)
{
    return openib_hmem_register_params(c);
}

/* CUDA starts lazily, on the data path: say so when it does. */
static void openib_hmem_glue_status(enum openib_hmem_iface iface, const char *status)
{
    (void) iface;
    OPENIB_VERBOSE(10, "HMEM: %s", status);
}

int openib_hmem_glue_init(void)
{
    int rc = openib_hmem_component_init(&mca_btl_openib_component.hmem_root);

    if (OPAL_SUCCESS == rc) {
        const char *plugin = openib_hmem_plugin_newest_file();

        if (NULL != plugin) {
            OPENIB_VERBOSE(1, "HMEM: loaded the copy-override plug-in %s "
                           "(btl_openib_hmem_override)", plugin);
        }
        OPENIB_VERBOSE(10, "HMEM: %s", openib_hmem_iface_status(OPENIB_HMEM_CUDA));
        OPENIB_VERBOSE(10, "HMEM: %s", openib_hmem_cache_status());
        openib_hmem_set_status_hook(openib_hmem_glue_status);
    }
    return rc; /* a plug-in failure was already shown to the user */
}

void openib_hmem_glue_fini(void)
{
    if (mca_btl_openib_component.hmem_root) {
        openib_hmem_set_status_hook(NULL);
        openib_hmem_component_fini();
        mca_btl_openib_component.hmem_root = NULL;
    }
}

struct openib_hmem_object *openib_hmem_glue_child(struct openib_hmem_object *parent)
{
    struct openib_hmem_object *o = NULL;

    /* the public HMEM API: 0 or a negative errno */
    if (parent && 0 != openib_hmem_object_create(parent, "device", &o)) {
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

int openib_hmem_pack(mca_btl_openib_module_t *m, struct opal_convertor_t *conv, void *dst,
                     size_t *size)
{
    bool gaps = opal_convertor_need_buffers(conv);
    int rc = openib_pack(m->dev->hmem, &m->pack_cache, conv, dst, size);

    if (OPAL_SUCCESS == rc && gaps) {
        m->stats.packed_bytes += *size;
    }
    return rc;
}

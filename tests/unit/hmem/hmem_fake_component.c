/*
 * hmem_fake_component.c - stands in for mca_btl_openib.so in test_hmem_app:
 * the core library linked into a loadable module that, once loaded, has a
 * published root ("fake_component") and one module object made from it
 * before any application could reach the root - as after MPI_Init.
 * FAKE_COMPONENT_NO_ROOT=1: loaded but without a root (a disqualified BTL).
 */
#include <stdlib.h>

#include "hmem/openib_hmem_btl.h"

static struct openib_hmem_object *fake_root, *fake_module;

__attribute__((constructor)) static void fake_component_load(void)
{
    if (NULL != getenv("FAKE_COMPONENT_NO_ROOT")) {
        return;
    }
    if (0 == openib_hmem_object_create(NULL, "fake_component", &fake_root) &&
        0 == openib_hmem_object_create(fake_root, "fake_module", &fake_module)) {
        openib_hmem_publish_root(fake_root);
    }
}

__attribute__((destructor)) static void fake_component_unload(void)
{
    openib_hmem_object_free(fake_module);
    openib_hmem_object_free(fake_root);
}

/* What the BTL's fragment path would do on the module. */
__attribute__((visibility("default"))) ssize_t fake_component_pack(void *dst, const void *src,
                                                                    size_t len)
{
    return openib_hmem_copy_from_buf(fake_module, OPENIB_HMEM_SYSTEM, 0, dst, src, len);
}

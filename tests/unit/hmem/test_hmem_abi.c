/*
 * test_hmem_abi.c - the current openib/openib_hmem.h keeps every v1 field
 * where the frozen v1 header put it (same offset, same size), the stable
 * numbers and symbol names, and an ABI version not older than v1: what a
 * plug-in or application built against v1 relies on (rule 1 of
 * openib_abi.h).
 */
#include <string.h>

#include "openib/openib_hmem.h"
#include "tests/unit/hmem/hmem_layout.h"
#include "tests/unit/hmem/hmem_test.h"

static const struct hmem_layout_entry current_layout[] = { HMEM_V1_LAYOUT };

int main(void)
{
    size_t i;

    for (i = 0; NULL != hmem_v1_layout[i].what; ++i) {
        const struct hmem_layout_entry *v1 = &hmem_v1_layout[i], *now = &current_layout[i];

        CHECK(NULL != now->what && 0 == strcmp(v1->what, now->what));
        if (v1->offset != now->offset || v1->size != now->size) {
            fprintf(stderr, "%s: v1 offset %zu size %zu, now offset %zu size %zu\n", v1->what,
                    v1->offset, v1->size, now->offset, now->size);
        }
        CHECK_EQ(now->offset, v1->offset);
        CHECK_EQ(now->size, v1->size);
    }
    CHECK(i > 30);
    CHECK(NULL == current_layout[i].what);
    CHECK_EQ(hmem_v1_abi_version, 1);
    CHECK(OPENIB_HMEM_ABI_VERSION >= hmem_v1_abi_version);
    CHECK(OPENIB_HMEM_ABI_VERSION_MIN <= hmem_v1_abi_version);
    CHECK(0 == strcmp(hmem_v1_plugin_symbol, OPENIB_HMEM_PLUGIN_SYMBOL));
    CHECK(0 == strcmp(hmem_v1_root_symbol, OPENIB_HMEM_ROOT_SYMBOL));
    /* The size field comes first in every struct. */
    CHECK_EQ(offsetof(struct openib_hmem_override_ops, size), 0);
    CHECK_EQ(offsetof(struct openib_hmem_plugin_info, size), 0);
    return unit_finish("test_hmem_abi");
}

/*
 * hmem_v1_layout.c - the v1 layout as the FROZEN header
 * (tests/abi/hmem_v1/openib/openib_hmem.h) defines it; only that directory
 * is on this file's include path.
 */
#include "openib/openib_hmem.h"

#include "hmem_layout.h"

const struct hmem_layout_entry hmem_v1_layout[] = { HMEM_V1_LAYOUT };
const unsigned hmem_v1_abi_version = OPENIB_HMEM_ABI_VERSION;
const char hmem_v1_plugin_symbol[] = OPENIB_HMEM_PLUGIN_SYMBOL;
const char hmem_v1_root_symbol[] = OPENIB_HMEM_ROOT_SYMBOL;

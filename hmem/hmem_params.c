/*
 * hmem_params.c - the Open MPI side of the HMEM hooks: the
 * btl_openib_hmem_override parameter, component init/fini, and the help
 * texts a user sees when the plug-in cannot be used. The only file of
 * hmem/ that includes Open MPI headers.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "opal_config.h"
#include "opal/constants.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/mca.h"
#include "opal/util/show_help.h"

#include "hmem/hmem_private.h"

#define HMEM_HELP_FILE "help-btl-openib-hmem.txt"
#define HMEM_PARAM_SUFFIX "hmem_override"

/* Storage of the parameter (the MCA variable system owns the string). */
static char *hmem_override_value;
/* Its full name for messages, e.g. "btl_openib_hmem_override". */
static char hmem_override_name[128] = "btl_openib_" HMEM_PARAM_SUFFIX;
static struct openib_hmem_object *hmem_root;

int openib_hmem_register_params(const struct mca_base_component_2_1_0_t *c)
{
    int idx;

    if (NULL == c) {
        return OPAL_ERR_BAD_PARAM;
    }
    snprintf(hmem_override_name, sizeof(hmem_override_name), "%s_%s_%s", c->mca_type_name,
             c->mca_component_name, HMEM_PARAM_SUFFIX);
    hmem_override_value = NULL;
    idx = mca_base_component_var_register(
        c, HMEM_PARAM_SUFFIX,
        "Path of an HMEM copy-override plug-in (a shared library exporting "
        "openib_hmem_plugin_info, see openib/openib_hmem.h). Its init function receives the "
        "component's root HMEM object and may replace the copy operations the BTL uses for "
        "message payload. Empty (default): built-in copies only",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY,
        &hmem_override_value);
    return idx < 0 ? idx : OPAL_SUCCESS;
}

int openib_hmem_apply_override(struct openib_hmem_object *root, const char *param_name,
                               const char *value)
{
    char why[512];
    char host[256] = "unknown";
    int rc;

    if (NULL == value || '\0' == value[0]) {
        return OPAL_SUCCESS;
    }
    rc = openib_hmem_load_plugin(root, value, why, sizeof(why));
    if (0 == rc) {
        return OPAL_SUCCESS;
    }
    (void) gethostname(host, sizeof(host) - 1);
    opal_show_help(HMEM_HELP_FILE, -EPROTO == rc ? "plugin-abi-mismatch" : "plugin-load-failed",
                   true, param_name, value, host, why);
    return OPAL_ERR_BAD_PARAM;
}

int openib_hmem_component_init(struct openib_hmem_object **root)
{
    int rc;

    if (NULL == root) {
        return OPAL_ERR_BAD_PARAM;
    }
    *root = NULL;
    openib_hmem_iface_probe();
    if (0 != openib_hmem_object_create(NULL, "btl_openib", &hmem_root)) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    rc = openib_hmem_apply_override(hmem_root, hmem_override_name, hmem_override_value);
    if (OPAL_SUCCESS != rc) {
        openib_hmem_object_free(hmem_root);
        hmem_root = NULL;
        return rc;
    }
    /* Published only now: an application never sees a half-set-up root. */
    openib_hmem_publish_root(hmem_root);
    *root = hmem_root;
    return OPAL_SUCCESS;
}

void openib_hmem_component_fini(void)
{
    openib_hmem_publish_root(NULL);
    openib_hmem_object_free(hmem_root);
    hmem_root = NULL;
    openib_hmem_unload_plugins();
}

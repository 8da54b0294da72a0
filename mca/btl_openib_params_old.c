/*
 * btl_openib_params_old.c - parameters of Open MPI's own openib that sites
 * have in their mca-params.conf files.
 *
 * Each is accepted, never silently ignored: where ours means the same it is
 * a synonym (Open MPI then prints its own deprecation notice naming the
 * new name), where the meaning maps it is translated, and where openib-ng
 * has no use for it one notice says why and what replaces it.
 */
#include "opal_config.h"

#include <stdio.h>
#include <string.h>

#include "opal/constants.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/util/show_help.h"

#include "mca/btl_openib_params.h"
#include "mca/btl_openib_params_old.h"

/* Same meaning under another name. */
static const struct {
    const char *old_name;
    const char *new_name; /* without the btl_openib_ prefix */
} synonyms[] = {
    { "connect_rdmacm_priority", "connect_rdma_cm_priority" },
    { "connect_rdmacm_port", "connect_rdma_cm_port" },
    { "connect_rdmacm_retry_count", "connect_rdma_cm_retries" },
    { "max_eager_rdma", "eager_rdma_num" },
    { "ib_cq_size", "cq_size" },
    { "ib_max_inline_data", "max_inline_data" },
};

/* Accepted, with one notice: what happens instead. */
static const struct {
    const char *old_name;
    const char *instead;
} notices[] = {
    { "use_eager_rdma", "use btl_openib_eager_rdma_num (0 turns eager RDMA off; 0 here is applied as that)" },
    { "allow_ib", "not needed: openib-ng uses InfiniBand ports like any other" },
    { "device_param_files", "per-device settings are built in; set the btl_openib_* parameters directly" },
    { "warn_no_device_params_found", "there is no device parameters file to warn about" },
    { "connect_rdmacm_resolve_timeout", "use btl_openib_connect_rdma_cm_timeout (seconds, bounding silence)" },
    { "connect_rdmacm_reject_causes_connect_error", "a rejected rdma_cm connection always fails it, with the reason" },
    { "ipaddr_include", "rdma_cm uses each port's RoCE v2 IPv4 address; choose ports with btl_openib_if_include" },
    { "ipaddr_exclude", "rdma_cm uses each port's RoCE v2 IPv4 address; choose ports with btl_openib_if_exclude" },
    { "use_async_event_thread", "device events are always read by a thread of their own" },
    { "warn_default_gid_prefix", "ports pair by subnet prefix; nothing to warn about" },
    { "warn_nonexistent_if", "a missing device or port in btl_openib_if_include is reported when openib is named in --mca btl" },
};

#define NNOTICES (sizeof(notices) / sizeof(notices[0]))
static char *notice_values[NNOTICES];

int openib_old_params_register(const struct mca_base_component_2_1_0_t *c)
{
    size_t i;
    int rc;

    for (i = 0; i < sizeof(synonyms) / sizeof(synonyms[0]); ++i) {
        int idx = openib_params_index(synonyms[i].new_name);

        if (idx < 0) {
            continue; /* its CPC or feature is not built */
        }
        rc = mca_base_var_register_synonym(idx, "ompi", "btl", "openib", synonyms[i].old_name,
                                           MCA_BASE_VAR_SYN_FLAG_DEPRECATED);
        if (rc < 0) {
            return rc;
        }
    }
    /* Strings, so that whatever an old file holds is taken as it is. */
    for (i = 0; i < NNOTICES; ++i) {
        char desc[256];

        snprintf(desc, sizeof(desc), "Old openib parameter, accepted for compatibility: %s",
                 notices[i].instead);
        notice_values[i] = NULL;
        rc = mca_base_component_var_register(c, notices[i].old_name, desc, MCA_BASE_VAR_TYPE_STRING,
                                             NULL, 0, MCA_BASE_VAR_FLAG_DEPRECATED, OPAL_INFO_LVL_9,
                                             MCA_BASE_VAR_SCOPE_READONLY, &notice_values[i]);
        if (rc < 0) {
            return rc;
        }
    }
    return OPAL_SUCCESS;
}

void openib_old_params_apply(const char *nodename)
{
    size_t i;

    for (i = 0; i < NNOTICES; ++i) {
        if (!openib_params_user_set(notices[i].old_name)) {
            continue;
        }
        if (0 == strcmp(notices[i].old_name, "use_eager_rdma") && notice_values[i] &&
            0 == strcmp(notice_values[i], "0") && !openib_params_user_set("eager_rdma_num")) {
            openib_params.eager_rdma_num = 0;
        }
        opal_show_help("help-btl-openib.txt", "old-param", true, notices[i].old_name, nodename,
                       notice_values[i] ? notice_values[i] : "", notices[i].instead);
    }
}

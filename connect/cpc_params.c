/*
 * cpc_params.c - the framework's MCA parameters:
 *   btl_openib_cpc_include, btl_openib_cpc_exclude, btl_openib_cpc_plugins,
 *   btl_openib_connect_<name>_priority (one per CPC),
 * plus each CPC's own register hook.
 */
#include "opal_config.h"
#include "opal/constants.h"
#include "opal/mca/base/base.h"
#include "opal/mca/base/mca_base_var.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connect/cpc_internal.h"

/* Names of a CPC list like "oob, rdma_cm (alias: rdmacm), xoob", for help
 * texts: users should never have to guess what a valid value is. */
int openib_cpc_names_list(char *buf, size_t len)
{
    int i, j;

    if (0 == len) {
        return OPAL_ERR_BAD_PARAM;
    }
    buf[0] = '\0';
    for (i = 0; i < openib_cpc_reg.n; ++i) {
        const struct cpc_entry *e = &openib_cpc_reg.e[i];

        openib_cpc_strcatf(buf, len, "%s%s", i ? ", " : "", e->c->name);
        for (j = 0; NULL != e->aliases && NULL != e->aliases[j]; ++j) {
            openib_cpc_strcatf(buf, len, "%s%s", j ? ", " : " (alias: ", e->aliases[j]);
        }
        if (NULL != e->aliases && NULL != e->aliases[0]) {
            openib_cpc_strcatf(buf, len, ")");
        }
    }
    return OPAL_SUCCESS;
}

int openib_cpc_register_priority(struct cpc_entry *e)
{
    char name[OPENIB_CPC_NAME_MAX + 32];
    char desc[256];
    int idx;

    if (NULL == openib_cpc_reg.btl) {
        return OPAL_SUCCESS; /* no MCA system (unit tests): the default stays */
    }
    snprintf(name, sizeof(name), "connect_%s_priority", e->c->name);
    snprintf(desc, sizeof(desc),
             "Priority of the %s connection method (CPC), 0-100. Between two ports the "
             "CPC both offer with the highest priority is used (the higher of the two "
             "sides' values for a CPC counts). Default: %u",
             e->c->name, (unsigned) e->c->default_priority);
    e->priority = e->c->default_priority;
    idx = mca_base_component_var_register(openib_cpc_reg.btl, name, desc,
                                          MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
                                          MCA_BASE_VAR_SCOPE_READONLY, &e->priority);
    e->priority_var = idx < 0 ? -1 : idx;
    return idx < 0 ? idx : OPAL_SUCCESS;
}

/* Load every plug-in named in btl_openib_cpc_plugins. A bad entry has been
 * shown to the user and is skipped: the built-in CPCs still work. Called
 * from openib_connect_init, not at registration: ompi_info registers and
 * opens components but never initializes a BTL, so it loads no plug-in
 * code (it lists only the built-in CPCs and the parameter itself). */
void openib_cpc_load_mca_plugins(void)
{
    static bool loaded;
    const char *list = openib_cpc_reg.mca_plugins;
    char *copy, *tok, *save = NULL;

    if (loaded || NULL == list || '\0' == list[0]) {
        return;
    }
    loaded = true; /* a second init (after finalize) finds them registered */
    copy = strdup(list);
    if (NULL == copy) {
        return;
    }
    for (tok = strtok_r(copy, ",", &save); NULL != tok; tok = strtok_r(NULL, ",", &save)) {
        while (' ' == *tok) {
            ++tok;
        }
        if ('\0' != *tok) {
            (void) openib_connect_load_plugin(tok);
        }
    }
    free(copy);
}

/* A read-only string parameter of the BTL component, unset by default. */
static int register_string(const struct mca_base_component_2_1_0_t *btl_component,
                           const char *name, const char *help, mca_base_var_info_lvl_t level,
                           char **storage)
{
    *storage = NULL;
    return mca_base_component_var_register(btl_component, name, help, MCA_BASE_VAR_TYPE_STRING,
                                           NULL, 0, 0, level, MCA_BASE_VAR_SCOPE_READONLY,
                                           storage);
}

int openib_connect_register_params(const struct mca_base_component_2_1_0_t *btl_component)
{
    /* The var system copies descriptions, but keeping them static costs
     * nothing and survives any version that does not. */
    static char inc_desc[768], exc_desc[768];
    char names[400];
    int rc;

    if (NULL == btl_component) {
        return OPAL_ERR_BAD_PARAM;
    }
    openib_cpc_reg.btl = btl_component;

    /* Built-ins first: adding registers each one's priority and hook. */
    rc = openib_cpc_add_builtins();
    if (OPAL_SUCCESS != rc) {
        return rc;
    }

    rc = register_string(btl_component, "cpc_plugins",
                         "Comma-separated paths of CPC plug-in libraries to load "
                         "(each exports " OPENIB_CPC_PLUGIN_SYMBOL ")",
                         OPAL_INFO_LVL_9, &openib_cpc_reg.mca_plugins);
    if (rc < 0) {
        return rc;
    }

    /* The help texts list the built-in CPCs: plug-ins load at init. */
    openib_cpc_names_list(names, sizeof(names));
    snprintf(inc_desc, sizeof(inc_desc),
             "Comma-separated list of connection methods (CPCs) to consider; all others are "
             "ignored. Mutually exclusive with btl_openib_cpc_exclude. Valid CPCs: %s",
             names);
    snprintf(exc_desc, sizeof(exc_desc),
             "Comma-separated list of connection methods (CPCs) not to use. Mutually "
             "exclusive with btl_openib_cpc_include. Valid CPCs: %s",
             names);
    rc = register_string(btl_component, "cpc_include", inc_desc, OPAL_INFO_LVL_3,
                         &openib_cpc_reg.mca_include);
    if (rc < 0) {
        return rc;
    }
    rc = register_string(btl_component, "cpc_exclude", exc_desc, OPAL_INFO_LVL_3,
                         &openib_cpc_reg.mca_exclude);
    if (rc < 0) {
        return rc;
    }
    return OPAL_SUCCESS;
}

void openib_cpc_register_int(const char *name, const char *help, int *storage)
{
    (void) mca_base_var_register("opal", "btl", "openib", name, help, MCA_BASE_VAR_TYPE_INT, NULL,
                                 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY, storage);
}

int openib_connect_set_priority(const char *name, int priority)
{
    struct cpc_entry *e = openib_cpc_find_name(name);

    if (NULL == e) {
        return OPAL_ERR_NOT_FOUND;
    }
    /* Same storage as the MCA variable; the range is checked at init. */
    e->priority = priority;
    return OPAL_SUCCESS;
}

/* Called from init: a priority outside 0..100 is a user error. */
int openib_cpc_check_priorities(void)
{
    char value[16], param[OPENIB_CPC_NAME_MAX + 48];
    int i;

    for (i = 0; i < openib_cpc_reg.n; ++i) {
        const struct cpc_entry *e = &openib_cpc_reg.e[i];

        if (e->priority >= 0 && e->priority <= 100) {
            continue;
        }
        snprintf(value, sizeof(value), "%d", e->priority);
        snprintf(param, sizeof(param), "btl_openib_connect_%s_priority", e->c->name);
        openib_cpc_help("cpc invalid priority", 3, openib_cpc_hostname(), param, value);
        return OPAL_ERR_BAD_PARAM;
    }
    return OPAL_SUCCESS;
}

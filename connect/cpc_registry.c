/*
 * cpc_registry.c - the list of CPC components: adding one (built-in or
 * plug-in) under the rules of openib_abi.h, looking one up, and shutdown.
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <ctype.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/openib_errno.h"
#include "connect/cpc_internal.h"
#include "mca/btl_openib_path_check.h"

/* OPENIB_CPC_* are OPAL codes under another name: asserted in
 * common/openib_errno.c, beside the error convention. */

/* Aliases a component may declare; more is certainly a corrupt table. */
#define CPC_MAX_ALIASES 4

struct cpc_registry openib_cpc_reg = {
    .verbose_stream = -1,
    .verbose_level = 0,
};

/* Why the last add_component failed, for the plug-in help message. */
static char add_why[OPENIB_CPC_WHY_MAX];

volatile int32_t openib_connect_work;

/* Names end up in MCA variable names (btl_openib_connect_<name>_priority)
 * and in comma-separated lists, so keep them to [a-z0-9_]. */
static bool valid_name(const char *s)
{
    size_t i;

    if (NULL == s || '\0' == s[0]) {
        return false;
    }
    for (i = 0; s[i]; ++i) {
        if (i >= OPENIB_CPC_NAME_MAX - 1) {
            return false;
        }
        if (!(islower((unsigned char) s[i]) || isdigit((unsigned char) s[i]) || '_' == s[i])) {
            return false;
        }
    }
    return true;
}

static bool entry_has_name(const struct cpc_entry *e, const char *name)
{
    int i;

    if (0 == strcmp(e->c->name, name)) {
        return true;
    }
    for (i = 0; NULL != e->aliases && NULL != e->aliases[i]; ++i) {
        if (0 == strcmp(e->aliases[i], name)) {
            return true;
        }
    }
    return false;
}

struct cpc_entry *openib_cpc_find_name(const char *name)
{
    int i;

    if (NULL == name) {
        return NULL;
    }
    for (i = 0; i < openib_cpc_reg.n; ++i) {
        if (entry_has_name(&openib_cpc_reg.e[i], name)) {
            return &openib_cpc_reg.e[i];
        }
    }
    return NULL;
}

struct cpc_entry *openib_cpc_find_id(uint8_t id)
{
    int i;

    for (i = 0; i < openib_cpc_reg.n; ++i) {
        if (openib_cpc_reg.e[i].c->id == id) {
            return &openib_cpc_reg.e[i];
        }
    }
    return NULL;
}

const char *openib_connect_name(uint8_t id)
{
    struct cpc_entry *e = openib_cpc_find_id(id);

    return e ? e->c->name : "unknown";
}

/* The v2 aliases of a component, read only when its size says they exist. */
static const char *const *component_aliases(const struct openib_cpc_component *c)
{
    if (!OPENIB_HAS_FIELD(c, struct openib_cpc_component, aliases)) {
        return NULL;
    }
    return c->aliases;
}

/* Everything the framework relies on later, checked once here. */
static int check_component(const struct openib_cpc_component *c)
{
    const char *const *aliases;
    int rc, i;

    if (NULL == c) {
        snprintf(add_why, sizeof(add_why), "no component table");
        return OPAL_ERR_BAD_PARAM;
    }
    /* openib_abi.h's check answers in the ABI's -EINVAL / -E2BIG. */
    rc = openib_err_from_errno(-openib_abi_check_size(c, c->size, OPENIB_CPC_COMPONENT_V1_SIZE,
                                                      sizeof(*c)));
    if (OPAL_ERR_BAD_PARAM == rc) {
        snprintf(add_why, sizeof(add_why),
                 "component table of %u bytes is smaller than the first version (%zu)",
                 (unsigned) c->size, (size_t) OPENIB_CPC_COMPONENT_V1_SIZE);
        return OPAL_ERR_BAD_PARAM;
    }
    if (OPAL_ERR_VALUE_OUT_OF_BOUNDS == rc) {
        snprintf(add_why, sizeof(add_why),
                 "component table (ABI %u, %u bytes) uses fields this openib (ABI %d) "
                 "does not know",
                 (unsigned) c->abi_version, (unsigned) c->size, OPENIB_CPC_ABI_VERSION);
        return OPAL_ERR_NOT_SUPPORTED;
    }
    if (0 == c->abi_version) {
        snprintf(add_why, sizeof(add_why), "component table has ABI version 0");
        return OPAL_ERR_BAD_PARAM;
    }
    if (!valid_name(c->name)) {
        snprintf(add_why, sizeof(add_why), "invalid CPC name (want 1-%d of [a-z0-9_])",
                 OPENIB_CPC_NAME_MAX - 1);
        return OPAL_ERR_BAD_PARAM;
    }
    if (0 == c->id || c->id > OPENIB_CPC_ID_PLUGIN_LAST) {
        snprintf(add_why, sizeof(add_why), "CPC %s: wire id %u out of range 1-%d", c->name,
                 (unsigned) c->id, OPENIB_CPC_ID_PLUGIN_LAST);
        return OPAL_ERR_BAD_PARAM;
    }
    if (c->default_priority > 100) {
        snprintf(add_why, sizeof(add_why), "CPC %s: default priority %u above 100", c->name,
                 (unsigned) c->default_priority);
        return OPAL_ERR_BAD_PARAM;
    }
    if (NULL == c->query) {
        snprintf(add_why, sizeof(add_why), "CPC %s has no query function", c->name);
        return OPAL_ERR_BAD_PARAM;
    }
    if (NULL != openib_cpc_find_id(c->id)) {
        snprintf(add_why, sizeof(add_why), "CPC %s: wire id %u already used by %s", c->name,
                 (unsigned) c->id, openib_connect_name(c->id));
        return OPAL_EXISTS;
    }
    if (NULL != openib_cpc_find_name(c->name)) {
        snprintf(add_why, sizeof(add_why), "CPC name %s already registered", c->name);
        return OPAL_EXISTS;
    }
    aliases = component_aliases(c);
    for (i = 0; NULL != aliases && NULL != aliases[i]; ++i) {
        if (i >= CPC_MAX_ALIASES || !valid_name(aliases[i])) {
            snprintf(add_why, sizeof(add_why), "CPC %s: invalid alias list", c->name);
            return OPAL_ERR_BAD_PARAM;
        }
        if (NULL != openib_cpc_find_name(aliases[i]) || 0 == strcmp(aliases[i], c->name)) {
            snprintf(add_why, sizeof(add_why), "CPC %s: alias %s already registered", c->name,
                     aliases[i]);
            return OPAL_EXISTS;
        }
    }
    return OPAL_SUCCESS;
}

int openib_connect_add_component(const struct openib_cpc_component *c)
{
    struct cpc_entry *e;
    int rc;

    add_why[0] = '\0';
    if (openib_cpc_reg.initialized) {
        /* init has run the selection and every init; a late CPC would skip both. */
        snprintf(add_why, sizeof(add_why), "CPCs must be added before openib_connect_init");
        return OPAL_ERR_RESOURCE_BUSY;
    }
    rc = check_component(c);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    if (openib_cpc_reg.n >= CPC_MAX_COMPONENTS) {
        snprintf(add_why, sizeof(add_why), "too many CPCs (at most %d)", CPC_MAX_COMPONENTS);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }

    e = &openib_cpc_reg.e[openib_cpc_reg.n];
    memset(e, 0, sizeof(*e));
    e->c = c;
    e->aliases = component_aliases(c);
    e->progress = OPENIB_HAS_FIELD(c, struct openib_cpc_component, progress) ? c->progress : NULL;
    e->priority = c->default_priority;
    e->priority_var = -1;
    e->state = CPC_STATE_REGISTERED;
    openib_cpc_reg.n++;

    /* After register_params (a plug-in loaded late): register its
     * parameters now so they can still be set from the environment. */
    if (NULL != openib_cpc_reg.btl) {
        openib_cpc_register_priority(e);
        if (NULL != c->register_params) {
            c->register_params(c);
        }
    }
    return OPAL_SUCCESS;
}

int openib_cpc_add_builtins(void)
{
    static const struct openib_cpc_component *const builtins[] = {
        &openib_cpc_oob_component,
        &openib_cpc_rdma_cm_component,
        &openib_cpc_xoob_component,
    };
    size_t i;
    int rc;

    for (i = 0; i < sizeof(builtins) / sizeof(builtins[0]); ++i) {
        if (NULL != openib_cpc_find_id(builtins[i]->id)) {
            continue; /* already added: register may run more than once */
        }
        rc = openib_connect_add_component(builtins[i]);
        if (OPAL_SUCCESS != rc) {
            openib_cpc_log(0, "openib: built-in CPC %s rejected: %s", builtins[i]->name,
                           add_why);
            return rc;
        }
    }
    return OPAL_SUCCESS;
}

int openib_connect_load_plugin(const char *path)
{
    const struct openib_cpc_component *c;
    openib_cpc_plugin_fn entry;
    char why[OPENIB_CPC_WHY_MAX + 64 + PATH_MAX];
    char file[PATH_MAX];
    void *handle;
    int rc;

    if (NULL == path || '\0' == path[0]) {
        return OPAL_ERR_BAD_PARAM;
    }
    /* Code run in every rank: only from a file others cannot change. */
    rc = openib_plugin_path_check(path, file, why, sizeof(why));
    if (OPAL_ERR_NOT_FOUND == rc) {
        goto err_show;
    }
    if (OPAL_SUCCESS != rc) {
        openib_cpc_help("cpc plugin refused", 5, openib_cpc_hostname(), "btl_openib_cpc_plugins",
                        path, why, OPENIB_PLUGIN_PATH_RULE);
        return rc;
    }
    /* RTLD_NOW: a plug-in with a missing symbol fails here, not mid-job.
     * RTLD_LOCAL: plug-ins must not see or clash with each other. The
     * resolved file: the one that was checked. */
    handle = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (NULL == handle) {
        const char *err = dlerror();
        snprintf(why, sizeof(why), "dlopen failed: %s", err ? err : "unknown error");
        rc = OPAL_ERR_NOT_FOUND;
        goto err_show;
    }
    *(void **) &entry = dlsym(handle, OPENIB_CPC_PLUGIN_SYMBOL);
    if (NULL == entry) {
        snprintf(why, sizeof(why), "it does not export %s", OPENIB_CPC_PLUGIN_SYMBOL);
        rc = OPAL_ERR_NOT_FOUND;
        goto err_close;
    }
    c = entry();
    if (NULL == c) {
        snprintf(why, sizeof(why), "%s returned no component", OPENIB_CPC_PLUGIN_SYMBOL);
        rc = OPAL_ERR_BAD_PARAM;
        goto err_close;
    }
    /* Check the table before trusting c->id; ids below 64 are ours. */
    if (c->size >= OPENIB_CPC_COMPONENT_V1_SIZE &&
        (c->id < OPENIB_CPC_ID_PLUGIN_FIRST || c->id > OPENIB_CPC_ID_PLUGIN_LAST)) {
        snprintf(why, sizeof(why), "wire id %u is outside the plug-in range %d-%d",
                 (unsigned) c->id, OPENIB_CPC_ID_PLUGIN_FIRST, OPENIB_CPC_ID_PLUGIN_LAST);
        rc = OPAL_ERR_BAD_PARAM;
        goto err_close;
    }
    rc = openib_connect_add_component(c);
    if (OPAL_SUCCESS != rc) {
        snprintf(why, sizeof(why), "%s", add_why);
        goto err_close;
    }
    openib_cpc_reg.e[openib_cpc_reg.n - 1].dl_handle = handle;
    openib_cpc_log(1, "openib: loaded CPC plug-in %s from %s (ABI %u)", c->name, file,
                   (unsigned) c->abi_version);
    return OPAL_SUCCESS;

err_close:
    dlclose(handle);
err_show:
    openib_cpc_help("cpc plugin failed", 3, openib_cpc_hostname(), path, why);
    return rc;
}

int openib_connect_finalize(void)
{
    int ret = OPAL_SUCCESS;
    int i, rc;

    for (i = 0; i < openib_cpc_reg.n; ++i) {
        struct cpc_entry *e = &openib_cpc_reg.e[i];

        if (CPC_STATE_ACTIVE == e->state && NULL != e->c->finalize) {
            rc = e->c->finalize();
            if (OPAL_SUCCESS != rc && OPAL_SUCCESS == ret) {
                ret = rc;
            }
        }
    }

    /* Plug-in libraries stay loaded: MCA variables a plug-in registered
     * keep pointing at its storage until Open MPI deregisters the BTL's
     * variables, which happens after this (component close). Unloading here
     * would leave the variable system with dangling pointers. */
    free(openib_cpc_reg.sel_include);
    free(openib_cpc_reg.sel_exclude);
    openib_cpc_reg.sel_include = NULL;
    openib_cpc_reg.sel_exclude = NULL;
    openib_cpc_reg.sel_override = false;
    /* Keep hooks and verbosity (they belong to the caller); forget the rest
     * so a later register/init starts from scratch. The MCA strings belong
     * to the variable system and are left alone. */
    memset(openib_cpc_reg.e, 0, sizeof(openib_cpc_reg.e));
    openib_cpc_reg.n = 0;
    openib_cpc_reg.initialized = false;
    openib_cpc_reg.btl = NULL;
    openib_cpc_reg.last_reasons[0] = '\0';
    openib_cpc_reg.last_summary[0] = '\0';
    return ret;
}

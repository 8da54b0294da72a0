/*
 * hmem_plugin.c - override plug-ins: dlopen a library, check the ABI it was
 * built against, let its init install operations on the root object, and
 * take everything back out before unloading it.
 *
 * Opening and checking a library works in OPAL codes; openib_hmem_load_plugin
 * is the ABI edge (negative errno, openib_hmem_btl.h) and converts them
 * once. The plug-in's init answers in the ABI's terms and its error goes
 * out as it is.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "opal_config.h"
#include "opal/constants.h"

#include "hmem/hmem_private.h"
#include "mca/btl_openib_path_check.h"

struct hmem_plugin {
    void *handle;
    const void *base; /* load address, to find its code in override tables */
    const struct openib_hmem_plugin_info *info;
    char file[PATH_MAX]; /* the resolved path it was loaded from */
    struct hmem_plugin *next;
};

/* Newest first, so unloading goes in reverse load order. */
static struct hmem_plugin *hmem_plugins;
static pthread_mutex_t hmem_plugins_lock = PTHREAD_MUTEX_INITIALIZER;

static void hmem_why(char *why, size_t why_len, const char *fmt, const char *a, const char *b)
{
    if (NULL != why && why_len > 0) {
        snprintf(why, why_len, fmt, a, b);
    }
}

/* Check the info struct; on failure fill why and return the OPAL code. */
static int hmem_plugin_check_info(const struct openib_hmem_plugin_info *info, const char *path,
                                  char *why, size_t why_len)
{
    char detail[160];
    int rc;

    if (info->size < OPENIB_SIZE_THROUGH(struct openib_hmem_plugin_info, abi_version)) {
        snprintf(detail, sizeof(detail), "its %s has size %u, too small to be one",
                 OPENIB_HMEM_PLUGIN_SYMBOL, (unsigned) info->size);
        hmem_why(why, why_len, "%s: %s", path, detail);
        return OPAL_ERR_BAD_PARAM;
    }
    /* The version first: a newer plug-in's bigger info would otherwise be
     * reported as a size problem, which says less. */
    if (info->abi_version < OPENIB_HMEM_ABI_VERSION_MIN ||
        info->abi_version > OPENIB_HMEM_ABI_VERSION) {
        snprintf(detail, sizeof(detail),
                 "built against openib-ng HMEM ABI v%u, but this component accepts v%u to v%u; "
                 "rebuild the plug-in against this installation's openib/openib_hmem.h",
                 (unsigned) info->abi_version, (unsigned) OPENIB_HMEM_ABI_VERSION_MIN,
                 (unsigned) OPENIB_HMEM_ABI_VERSION);
        hmem_why(why, why_len, "%s: %s", path, detail);
        return OPAL_ERR_TYPE_MISMATCH; /* -EPROTO */
    }
    /* openib_abi.h's check answers in the ABI's -EINVAL / -E2BIG. */
    rc = openib_err_from_errno(-openib_abi_check_size(info, info->size,
                                                      OPENIB_HMEM_PLUGIN_INFO_V1_SIZE,
                                                      sizeof(struct openib_hmem_plugin_info)));
    if (OPAL_SUCCESS != rc) {
        const bool larger = OPAL_ERR_VALUE_OUT_OF_BOUNDS == rc; /* -E2BIG */

        snprintf(detail, sizeof(detail),
                 "its %s (size %u) is %s than this component's (%zu bytes)%s",
                 OPENIB_HMEM_PLUGIN_SYMBOL, (unsigned) info->size,
                 larger ? "larger" : "smaller",
                 (size_t) sizeof(struct openib_hmem_plugin_info),
                 larger ? " and sets fields this component does not know" : "");
        hmem_why(why, why_len, "%s: %s", path, detail);
        return rc;
    }
    if (NULL == info->init) {
        hmem_why(why, why_len, "%s: %s", path, "its init function is NULL");
        return OPAL_ERR_MODULE_NOT_FOUND; /* -ENOEXEC */
    }
    return OPAL_SUCCESS;
}

/* Check path, dlopen it, check its info: a plug-in ready for its init in
 * *out, or an OPAL code with the reason in why. */
static int hmem_plugin_open(const char *path, char *why, size_t why_len,
                            struct hmem_plugin **out)
{
    struct hmem_plugin *pl;
    const char *err;
    char pwhy[256 + PATH_MAX] = "";
    char file[PATH_MAX];
    Dl_info dl;
    int rc;

    /* Code run in every rank: only from a file others cannot change. */
    rc = openib_plugin_path_check(path, file, pwhy, sizeof(pwhy));
    if (OPAL_SUCCESS != rc) {
        hmem_why(why, why_len, "%s%s", OPAL_ERR_NOT_FOUND == rc ? "cannot load the library: " : "",
                 pwhy);
        /* Not there (-ENOENT), or there and refused by the rule (-EACCES). */
        return OPAL_ERR_NOT_FOUND == rc ? OPAL_ERR_NOT_FOUND : OPAL_ERR_PERM;
    }
    pl = calloc(1, sizeof(*pl));
    if (NULL == pl) {
        hmem_why(why, why_len, "%s: %s", path, "out of memory");
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    /* RTLD_NOW: a plug-in with a missing symbol fails here, not mid-copy.
     * The resolved file: the one that was checked. */
    pl->handle = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (NULL == pl->handle) {
        err = dlerror();
        hmem_why(why, why_len, "cannot load the library: %s%s", NULL != err ? err : path, "");
        rc = OPAL_ERR_NOT_FOUND;
        goto err_free;
    }
    pl->info = dlsym(pl->handle, OPENIB_HMEM_PLUGIN_SYMBOL);
    if (NULL == pl->info) {
        hmem_why(why, why_len,
                 "%s is not an openib-ng HMEM plug-in: it does not export '%s' "
                 "(use OPENIB_HMEM_PLUGIN_DEFINE from openib/openib_hmem.h)",
                 path, OPENIB_HMEM_PLUGIN_SYMBOL);
        rc = OPAL_ERR_MODULE_NOT_FOUND; /* -ENOEXEC */
        goto err_close;
    }
    rc = hmem_plugin_check_info(pl->info, path, why, why_len);
    if (OPAL_SUCCESS != rc) {
        goto err_close;
    }
    pl->base = (0 != dladdr(pl->info, &dl)) ? dl.dli_fbase : NULL;
    memcpy(pl->file, file, sizeof(pl->file));
    *out = pl;
    return OPAL_SUCCESS;

err_close:
    dlclose(pl->handle);
err_free:
    free(pl);
    return rc;
}

int openib_hmem_load_plugin(struct openib_hmem_object *root, const char *path, char *why,
                            size_t why_len)
{
    struct hmem_plugin *pl = NULL;
    char pwhy[256 + PATH_MAX] = "";
    int rc;

    if (NULL != why && why_len > 0) {
        why[0] = '\0';
    }
    if (NULL == hmem_obj_of(root) || NULL == path || '\0' == path[0]) {
        hmem_why(why, why_len, "%s%s", "no root object or no plug-in path given", "");
        return openib_err_to_abi_errno(OPAL_ERR_BAD_PARAM);
    }
    rc = hmem_plugin_open(path, why, why_len, &pl);
    if (OPAL_SUCCESS != rc) {
        return openib_err_to_abi_errno(rc);
    }

    /* The plug-in's own answer: 0 or a negative errno, which goes to the
     * caller unchanged (any errno, not only those the table knows); a
     * positive one breaks the ABI and becomes -ECANCELED. */
    rc = pl->info->init(root, pwhy, sizeof(pwhy));
    if (0 != rc) {
        if (NULL != why && why_len > 0) {
            snprintf(why, why_len, "%s: plug-in '%s' init failed (%d): %s", path,
                     NULL != pl->info->name ? pl->info->name : "?", rc,
                     '\0' != pwhy[0] ? pwhy : "no reason given");
        }
        /* It may have installed some operations before failing. */
        (void) hmem_obj_forget_library(pl->base);
        dlclose(pl->handle);
        free(pl);
        return rc < 0 ? rc : -ECANCELED;
    }

    pthread_mutex_lock(&hmem_plugins_lock);
    pl->next = hmem_plugins;
    hmem_plugins = pl;
    pthread_mutex_unlock(&hmem_plugins_lock);
    return 0;
}

const char *openib_hmem_plugin_newest_file(void)
{
    const char *f;

    pthread_mutex_lock(&hmem_plugins_lock);
    f = NULL != hmem_plugins ? hmem_plugins->file : NULL;
    pthread_mutex_unlock(&hmem_plugins_lock);
    return f;
}

void openib_hmem_unload_plugins(void)
{
    struct hmem_plugin *pl;

    pthread_mutex_lock(&hmem_plugins_lock);
    while (NULL != (pl = hmem_plugins)) {
        hmem_plugins = pl->next;
        (void) hmem_obj_forget_library(pl->base);
        if (OPENIB_HAS_FIELD(pl->info, struct openib_hmem_plugin_info, fini) &&
            NULL != pl->info->fini) {
            pl->info->fini();
        }
        dlclose(pl->handle);
        free(pl);
    }
    pthread_mutex_unlock(&hmem_plugins_lock);
}

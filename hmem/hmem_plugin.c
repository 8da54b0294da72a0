/*
 * hmem_plugin.c - override plug-ins: dlopen a library, check the ABI it was
 * built against, let its init install operations on the root object, and
 * take everything back out before unloading it.
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

/* Check the info struct; on failure fill why and return the error. */
static int hmem_plugin_check_info(const struct openib_hmem_plugin_info *info, const char *path,
                                  char *why, size_t why_len)
{
    char detail[160];
    int rc;

    if (info->size < OPENIB_SIZE_THROUGH(struct openib_hmem_plugin_info, abi_version)) {
        snprintf(detail, sizeof(detail), "its %s has size %u, too small to be one",
                 OPENIB_HMEM_PLUGIN_SYMBOL, (unsigned) info->size);
        hmem_why(why, why_len, "%s: %s", path, detail);
        return -EINVAL;
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
        return -EPROTO;
    }
    rc = openib_abi_check_size(info, info->size, OPENIB_HMEM_PLUGIN_INFO_V1_SIZE,
                               sizeof(struct openib_hmem_plugin_info));
    if (0 != rc) {
        snprintf(detail, sizeof(detail),
                 "its %s (size %u) is %s than this component's (%zu bytes)%s",
                 OPENIB_HMEM_PLUGIN_SYMBOL, (unsigned) info->size,
                 -E2BIG == rc ? "larger" : "smaller",
                 (size_t) sizeof(struct openib_hmem_plugin_info),
                 -E2BIG == rc ? " and sets fields this component does not know" : "");
        hmem_why(why, why_len, "%s: %s", path, detail);
        return rc;
    }
    if (NULL == info->init) {
        hmem_why(why, why_len, "%s: %s", path, "its init function is NULL");
        return -ENOEXEC;
    }
    return 0;
}

int openib_hmem_load_plugin(struct openib_hmem_object *root, const char *path, char *why,
                            size_t why_len)
{
    struct hmem_plugin *pl;
    const char *err;
    char pwhy[256 + PATH_MAX] = "";
    char file[PATH_MAX];
    Dl_info dl;
    int rc;

    if (NULL != why && why_len > 0) {
        why[0] = '\0';
    }
    if (NULL == hmem_obj_of(root) || NULL == path || '\0' == path[0]) {
        hmem_why(why, why_len, "%s%s", "no root object or no plug-in path given", "");
        return -EINVAL;
    }
    /* Code run in every rank: only from a file others cannot change. */
    rc = openib_plugin_path_check(path, file, pwhy, sizeof(pwhy));
    if (OPAL_SUCCESS != rc) {
        hmem_why(why, why_len, "%s%s", OPAL_ERR_NOT_FOUND == rc ? "cannot load the library: " : "",
                 pwhy);
        return OPAL_ERR_NOT_FOUND == rc ? -ENOENT : -EACCES;
    }
    pl = calloc(1, sizeof(*pl));
    if (NULL == pl) {
        hmem_why(why, why_len, "%s: %s", path, "out of memory");
        return -ENOMEM;
    }
    /* RTLD_NOW: a plug-in with a missing symbol fails here, not mid-copy.
     * The resolved file: the one that was checked. */
    pl->handle = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (NULL == pl->handle) {
        err = dlerror();
        hmem_why(why, why_len, "cannot load the library: %s%s", NULL != err ? err : path, "");
        rc = -ENOENT;
        goto err_free;
    }
    pl->info = dlsym(pl->handle, OPENIB_HMEM_PLUGIN_SYMBOL);
    if (NULL == pl->info) {
        hmem_why(why, why_len,
                 "%s is not an openib-ng HMEM plug-in: it does not export '%s' "
                 "(use OPENIB_HMEM_PLUGIN_DEFINE from openib/openib_hmem.h)",
                 path, OPENIB_HMEM_PLUGIN_SYMBOL);
        rc = -ENOEXEC;
        goto err_close;
    }
    rc = hmem_plugin_check_info(pl->info, path, why, why_len);
    if (0 != rc) {
        goto err_close;
    }
    pl->base = (0 != dladdr(pl->info, &dl)) ? dl.dli_fbase : NULL;
    memcpy(pl->file, file, sizeof(pl->file));
    pwhy[0] = '\0';

    rc = pl->info->init(root, pwhy, sizeof(pwhy));
    if (0 != rc) {
        if (NULL != why && why_len > 0) {
            snprintf(why, why_len, "%s: plug-in '%s' init failed (%d): %s", path,
                     NULL != pl->info->name ? pl->info->name : "?", rc,
                     '\0' != pwhy[0] ? pwhy : "no reason given");
        }
        rc = rc < 0 ? rc : -ECANCELED;
        goto err_forget;
    }

    pthread_mutex_lock(&hmem_plugins_lock);
    pl->next = hmem_plugins;
    hmem_plugins = pl;
    pthread_mutex_unlock(&hmem_plugins_lock);
    return 0;

err_forget:
    /* It may have installed some operations before failing. */
    (void) hmem_obj_forget_library(pl->base);
err_close:
    dlclose(pl->handle);
err_free:
    free(pl);
    return rc;
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

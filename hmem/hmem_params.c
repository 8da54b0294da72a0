/*
 * hmem_params.c - the Open MPI side of the HMEM hooks: the
 * btl_openib_hmem_override and btl_openib_hmem_cuda parameters, component
 * init/fini, the memory hooks that keep the memory-type cache right, and
 * the help texts a user sees when a setting cannot be used. The only file
 * of hmem/ that uses Open MPI beyond its error codes (opal/constants.h).
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "opal_config.h"
#include "opal/constants.h"
#include "opal/mca/base/mca_base_framework.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/mca.h"
#include "opal/mca/memory/base/base.h"
#include "opal/memoryhooks/memory.h"
#include "opal/runtime/opal_params.h"
#include "opal/util/show_help.h"

#include "hmem/hmem_private.h"
#include "mca/btl_openib_path_check.h"

#define HMEM_HELP_FILE "help-btl-openib-hmem.txt"
#define HMEM_PARAM_SUFFIX "hmem_override"
#define HMEM_CUDA_SUFFIX "hmem_cuda"

/* Storage of the parameters (the MCA variable system owns the strings). */
static char *hmem_override_value;
static char *hmem_cuda_value;
static char hmem_cuda_default[] = "auto";
/* Full names for messages, e.g. "btl_openib_hmem_override". */
static char hmem_override_name[128] = "btl_openib_" HMEM_PARAM_SUFFIX;
static char hmem_cuda_name[128] = "btl_openib_" HMEM_CUDA_SUFFIX;
static struct openib_hmem_object *hmem_root;
static bool hmem_memory_fw_open, hmem_release_registered;

/* The values of btl_openib_hmem_cuda: the help line and the check both
 * come from this table, so ompi_info and the check never disagree. */
static const struct hmem_cuda_mode_name {
    const char *name;
    enum openib_hmem_cuda_mode mode;
    const char *meaning;
} hmem_cuda_modes[] = {
    { "auto", OPENIB_HMEM_CUDA_AUTO,
      "start CUDA (cuInit) the first time a buffer is looked up while the CUDA driver "
      "library is loaded in the process; a process that never loads it (no CUDA in the "
      "job) never starts CUDA" },
    { "never", OPENIB_HMEM_CUDA_NEVER,
      "never start CUDA: every buffer is host memory (device memory passed to MPI would "
      "crash)" },
    { "always", OPENIB_HMEM_CUDA_ALWAYS,
      "start CUDA when the component initializes, whether it will be needed or not" },
};
#define HMEM_NUM_CUDA_MODES (sizeof(hmem_cuda_modes) / sizeof(hmem_cuda_modes[0]))

static void hmem_cuda_valid_values(char *buf, size_t len)
{
    size_t i, used = 0;

    buf[0] = '\0';
    for (i = 0; i < HMEM_NUM_CUDA_MODES && used < len; ++i) {
        used += (size_t) snprintf(buf + used, len - used, "%s%s", i ? ", " : "",
                                  hmem_cuda_modes[i].name);
    }
}

int openib_hmem_register_params(const struct mca_base_component_2_1_0_t *c)
{
    static char cuda_help[1024];
    char valid[64];
    size_t i, used;
    int idx;

    if (NULL == c) {
        return OPAL_ERR_BAD_PARAM;
    }
    snprintf(hmem_override_name, sizeof(hmem_override_name), "%s_%s_%s", c->mca_type_name,
             c->mca_component_name, HMEM_PARAM_SUFFIX);
    snprintf(hmem_cuda_name, sizeof(hmem_cuda_name), "%s_%s_%s", c->mca_type_name,
             c->mca_component_name, HMEM_CUDA_SUFFIX);
    hmem_override_value = NULL;
    idx = mca_base_component_var_register(
        c, HMEM_PARAM_SUFFIX,
        "Path of an HMEM copy-override plug-in (a shared library exporting "
        "openib_hmem_plugin_info, see openib/openib_hmem.h). Its init function receives the "
        "component's root HMEM object and may replace the copy operations the BTL uses for "
        "message payload. Empty (default): built-in copies only",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY,
        &hmem_override_value);
    if (idx < 0) {
        return idx;
    }
    used = (size_t) snprintf(cuda_help, sizeof(cuda_help),
                             "When the openib BTL starts the CUDA driver to recognise device "
                             "memory:");
    for (i = 0; i < HMEM_NUM_CUDA_MODES && used < sizeof(cuda_help); ++i) {
        used += (size_t) snprintf(cuda_help + used, sizeof(cuda_help) - used, " %s = %s%s",
                                  hmem_cuda_modes[i].name, hmem_cuda_modes[i].meaning,
                                  i + 1 < HMEM_NUM_CUDA_MODES ? ";" : ".");
    }
    hmem_cuda_valid_values(valid, sizeof(valid));
    if (used < sizeof(cuda_help)) {
        snprintf(cuda_help + used, sizeof(cuda_help) - used, " (valid: %s)", valid);
    }
    hmem_cuda_value = hmem_cuda_default;
    idx = mca_base_component_var_register(c, HMEM_CUDA_SUFFIX, cuda_help,
                                          MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_4,
                                          MCA_BASE_VAR_SCOPE_READONLY, &hmem_cuda_value);
    return idx < 0 ? idx : OPAL_SUCCESS;
}

/* btl_openib_hmem_cuda to a mode; a bad value is shown to the user (the
 * layout of help-btl-openib.txt's param-out-of-range). Open MPI stores an
 * empty string as NULL: that is the default, auto. */
static int hmem_apply_cuda_mode(void)
{
    const char *v = hmem_cuda_value;
    char host[256] = "unknown", valid[64];
    size_t i;

    if (NULL == v || '\0' == v[0]) {
        return openib_hmem_set_cuda_mode(OPENIB_HMEM_CUDA_AUTO) ? OPAL_ERROR : OPAL_SUCCESS;
    }
    for (i = 0; i < HMEM_NUM_CUDA_MODES; ++i) {
        if (0 == strcasecmp(v, hmem_cuda_modes[i].name)) {
            return openib_hmem_set_cuda_mode(hmem_cuda_modes[i].mode) ? OPAL_ERROR
                                                                       : OPAL_SUCCESS;
        }
    }
    (void) gethostname(host, sizeof(host) - 1);
    hmem_cuda_valid_values(valid, sizeof(valid));
    opal_show_help(HMEM_HELP_FILE, "cuda-mode-invalid", true, hmem_cuda_name, host, v, valid,
                   "auto starts CUDA only in processes that load the CUDA driver; never "
                   "treats all memory as host memory; always starts CUDA at start-up");
    return OPAL_ERR_BAD_PARAM;
}

/* Open MPI's memory hooks (opal/memoryhooks): called before munmap, mremap,
 * brk shrinks, madvise(DONTNEED) and shmdt take effect, from whichever
 * thread does it, including inside free() of a large block. */
static void hmem_release_cb(void *buf, size_t length, void *cbdata, bool from_alloc)
{
    (void) cbdata;
    (void) from_alloc;
    openib_hmem_cache_release(buf, length);
}

/* Host ranges may be cached only if releases are reported. The memory
 * framework (the patcher) is opened like the registration cache does;
 * opal_init (not only opal_init_util) must have run, as in every MPI
 * process, or the hooks' list does not exist yet. */
static void hmem_hooks_start(void)
{
    const int need = OPAL_MEMORY_FREE_SUPPORT | OPAL_MEMORY_MUNMAP_SUPPORT;
    int rc;

    if (opal_initialized <= 0) {
        return;
    }
    if (OPAL_SUCCESS == mca_base_framework_open(&opal_memory_base_framework, 0)) {
        hmem_memory_fw_open = true;
    }
    if (need != (opal_mem_hooks_support_level() & need)) {
        return;
    }
    rc = opal_mem_hooks_register_release(hmem_release_cb, NULL);
    if (OPAL_SUCCESS == rc || OPAL_EXISTS == rc) {
        hmem_release_registered = true;
        openib_hmem_cache_set_host_caching(true);
    }
}

static void hmem_hooks_stop(void)
{
    if (hmem_release_registered) {
        /* Before the component (and this callback) can be unloaded. */
        openib_hmem_cache_set_host_caching(false);
        (void) opal_mem_hooks_unregister_release(hmem_release_cb);
        hmem_release_registered = false;
    }
    if (hmem_memory_fw_open) {
        (void) mca_base_framework_close(&opal_memory_base_framework);
        hmem_memory_fw_open = false;
    }
}

int openib_hmem_apply_override(struct openib_hmem_object *root, const char *param_name,
                               const char *value)
{
    char why[512 + PATH_MAX];
    char resolved[PATH_MAX];
    char host[256] = "unknown";
    int rc;

    if (NULL == value || '\0' == value[0]) {
        return OPAL_SUCCESS;
    }
    (void) gethostname(host, sizeof(host) - 1);
    /* The rule first, on its own: a plug-in's init may fail with any
     * code, so the loader's error alone cannot tell the two apart. */
    if (OPAL_ERR_BAD_PARAM == openib_plugin_path_check(value, resolved, why, sizeof(why))) {
        opal_show_help(HMEM_HELP_FILE, "plugin-path-refused", true, param_name, value, host, why,
                       OPENIB_PLUGIN_PATH_RULE);
        return OPAL_ERR_BAD_PARAM;
    }
    rc = openib_hmem_load_plugin(root, value, why, sizeof(why));
    if (0 == rc) {
        return OPAL_SUCCESS;
    }
    /* The loader answers in the ABI's negative errno (a plug-in's init may
     * return any negative int; INT_MIN has no errno to negate to). */
    rc = INT_MIN == rc ? OPAL_ERROR : openib_err_from_errno(-rc);
    opal_show_help(HMEM_HELP_FILE,
                   OPAL_ERR_TYPE_MISMATCH == rc ? "plugin-abi-mismatch" : "plugin-load-failed",
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
    rc = hmem_apply_cuda_mode();
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    if (OPENIB_HMEM_CUDA_NEVER != openib_hmem_cuda_mode()) {
        hmem_hooks_start();
    }
    openib_hmem_iface_probe();
    if (0 != openib_hmem_object_create(NULL, "btl_openib", &hmem_root)) {
        hmem_hooks_stop();
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    rc = openib_hmem_apply_override(hmem_root, hmem_override_name, hmem_override_value);
    if (OPAL_SUCCESS != rc) {
        openib_hmem_object_free(hmem_root);
        hmem_root = NULL;
        hmem_hooks_stop();
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
    hmem_hooks_stop();
}

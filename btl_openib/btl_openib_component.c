/*
 * btl_openib_component.c - the MCA component: register, open, init, close.
 */
#include "opal_config.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <string.h>

#include "opal/constants.h"
#include "opal/runtime/opal_params.h"
#include "opal/mca/btl/base/base.h"
#include "opal/util/show_help.h"

#include "openib_config.h"
#include "btl_openib/btl_openib.h"
#include "btl_openib/btl_openib_lock.h"
#include "btl_openib/btl_openib_diag.h"
#include "btl_openib/btl_openib_hmem_glue.h"
#include "btl_openib/btl_openib_pvars.h"
#include "mca/btl_openib_params_old.h"
#include "mca/btl_openib_help_dir.h"
#include "mca/btl_openib_param_check.h"
#include "mca/btl_openib_params.h"

static int openib_register(void);
static int openib_open(void);
static int openib_close(void);
static mca_btl_base_module_t **openib_init(int *num_btls, bool enable_progress_threads,
                                            bool enable_mpi_threads);

/* The one symbol Open MPI looks up in mca_btl_openib.so. */
__attribute__((visibility("default"))) mca_btl_openib_component_t mca_btl_openib_component = {
    .super = {
        .btl_version = {
            MCA_BTL_BASE_VERSION_3_1_0,
            .mca_component_name = "openib",
            MCA_BASE_MAKE_VERSION(component, OPENIB_VERSION_MAJOR, OPENIB_VERSION_MINOR,
                                  OPENIB_VERSION_RELEASE),
            .mca_open_component = openib_open,
            .mca_close_component = openib_close,
            .mca_register_component_params = openib_register,
        },
        .btl_data = {
            .param_field = MCA_BASE_METADATA_PARAM_CHECKPOINT,
        },
        .btl_init = openib_init,
        .btl_progress = openib_component_progress,
    },
    .output = -1,
};

void openib_show_help(const char *topic, bool want_error_header, ...)
{
    va_list ap;

    va_start(ap, want_error_header);
    opal_show_vhelp("help-btl-openib.txt", topic, want_error_header, ap);
    va_end(ap);
    mca_btl_openib_component.told_user = true;
}

/* Our help texts live outside Open MPI's data directory. They are printf
 * formats, so they come from one trusted place (mca/btl_openib_help_dir.h):
 * the installed directory, or the source tree's mca/ only when this
 * component is the build tree's own .libs copy (dladdr says which file we
 * were loaded from), i.e. an uninstalled run. Added before anything of ours
 * can show one (registration can already report bad parameters). */
static const char *help_dir;
static char *help_dir_param; /* the same, as a read-only MCA variable */

static void add_help_dirs(void)
{
    Dl_info self;

    if (NULL == help_dir) {
        help_dir = OPENIB_HELP_DIR_INSTALLED;
        if (0 != dladdr((void *) add_help_dirs, &self) &&
            openib_help_from_build_tree(self.dli_fname, OPENIB_BUILD_LIBDIR)) {
            help_dir = OPENIB_HELP_DIR_SRCTREE;
        }
        opal_show_help_add_dir(help_dir);
    }
}

static int openib_register(void)
{
    /* In this order: the old names are synonyms of ours, so they come last. */
    static int (*const registers[])(const mca_base_component_t *) = {
        openib_params_register, openib_connect_register_params, openib_hmem_glue_register,
        openib_pvars_register, openib_old_params_register,
    };
    mca_base_component_t *c = &mca_btl_openib_component.super.btl_version;
    mca_btl_openib_module_t *t = (mca_btl_openib_module_t *) &openib_module_template;
    size_t i;
    int rc;

    add_help_dirs();
    /* Shown by ompi_info, so an operator can see which texts are used. */
    help_dir_param = (char *) help_dir;
    rc = mca_base_component_var_register(c, "help_dir",
                                         "Directory the openib BTL reads its help texts from: the "
                                         "installed one, or the source tree's mca/ when the build "
                                         "tree's component runs uninstalled (read-only)",
                                         MCA_BASE_VAR_TYPE_STRING, NULL, 0,
                                         MCA_BASE_VAR_FLAG_DEFAULT_ONLY, OPAL_INFO_LVL_9,
                                         MCA_BASE_VAR_SCOPE_CONSTANT, &help_dir_param);
    if (rc < 0) {
        return rc;
    }
    for (i = 0; i < sizeof(registers) / sizeof(registers[0]); ++i) {
        rc = registers[i](c);
        if (OPAL_SUCCESS != rc) {
            return rc;
        }
    }
    /* The standard btl_openib_* limits (eager_limit, exclusivity, ...): the
     * template must already carry flags and RDMA functions so that the
     * put/get-limit and pipeline variables get created too. */
    return mca_btl_base_param_register(c, &t->super);
}

static int openib_open(void)
{
    openib_locks_init();
    add_help_dirs();
    if (openib_params.verbose > 0) {
        mca_btl_openib_component.output = opal_output_open(NULL);
        opal_output_set_verbosity(mca_btl_openib_component.output, openib_params.verbose);
    } else {
        mca_btl_openib_component.output = 0;
    }
    openib_connect_set_verbose(mca_btl_openib_component.output, openib_params.verbose);
    return OPAL_SUCCESS;
}

static int openib_close(void)
{
    /* what finalize left is torn down like the rest: under the lock, so
     * the call-outs of a last drain can drop it */
    openib_lock_take();
    openib_devices_close();
    openib_connect_finalize();
    openib_hmem_glue_fini();
    openib_lock_drop();
    if (mca_btl_openib_component.output > 0) {
        opal_output_close(mca_btl_openib_component.output);
    }
    mca_btl_openib_component.output = -1;
    openib_locks_fini();
    return OPAL_SUCCESS;
}

/* The receive queues `spec` and every numeric parameter against its range
 * and the queues (mca/btl_openib_param_check.c); on success they are the
 * queues every module uses. */
static int use_receive_queues(const char *spec)
{
    mca_btl_openib_module_t *t = (mca_btl_openib_module_t *) &openib_module_template;
    struct openib_param_effective eff;
    struct openib_param_error err;
    char bad[128], why[240];
    int rc;

    rc = openib_rq_spec_parse(spec, &mca_btl_openib_component.rq, bad, sizeof(bad), why,
                              sizeof(why));
    if (OPAL_SUCCESS != rc) {
        openib_show_help("bad-receive-queues", true, opal_process_info.nodename, spec, bad, why);
        return rc;
    }
    rc = openib_params_check(openib_params_get, NULL, &mca_btl_openib_component.rq, &err, &eff);
    if (OPAL_SUCCESS != rc) {
        openib_show_help("param-out-of-range", true, err.name, opal_process_info.nodename,
                         err.value, err.range, err.why);
        return rc;
    }
    /* Every module starts from the template: fit its send sizes to the queues. */
    t->super.btl_max_send_size = (size_t) eff.max_send_size;
    t->super.btl_eager_limit = (size_t) eff.eager_limit;
    /* Credits are per P queue: list them once for the send path. */
    mca_btl_openib_component.num_pp = 0;
    for (int q = 0; q < mca_btl_openib_component.rq.num; ++q) {
        if (mca_btl_openib_component.rq.q[q].type == OPENIB_RQ_PP) {
            mca_btl_openib_component.pp_queue[mca_btl_openib_component.num_pp++] = q;
        }
    }
    return OPAL_SUCCESS;
}

int openib_component_queues_without_srq(const char *device, const char *why)
{
    if (openib_params_user_set("receive_queues")) {
        return OPAL_SUCCESS; /* theirs: create_srqs() says so if they need an SRQ */
    }
    OPENIB_VERBOSE(10, "%s %s: btl_openib_receive_queues %s (per-peer queues only) instead of "
                   "the default %s", device, why, OPENIB_DEFAULT_RECEIVE_QUEUES_NO_SRQ,
                   openib_params.receive_queues);
    return use_receive_queues(OPENIB_DEFAULT_RECEIVE_QUEUES_NO_SRQ);
}

/* Every numeric parameter against its range, the receive queues, and the
 * relations between them. */
static int check_params(void)
{
    int rc;

    openib_old_params_apply(opal_process_info.nodename); /* before the checks: it may translate */
    if (openib_params.if_include && *openib_params.if_include && openib_params.if_exclude &&
        *openib_params.if_exclude) {
        openib_show_help("include-and-exclude", true, opal_process_info.nodename,
                         openib_params.if_include, openib_params.if_exclude);
        return OPAL_ERR_BAD_PARAM;
    }
    /* Open MPI stores an empty string as NULL */
    if (NULL == openib_params.receive_queues || '\0' == openib_params.receive_queues[0]) {
        openib_show_help("receive-queues-empty", true, opal_process_info.nodename,
                         OPENIB_DEFAULT_RECEIVE_QUEUES);
        return OPAL_ERR_BAD_PARAM;
    }
    rc = use_receive_queues(openib_params.receive_queues);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    if (mca_btl_openib_component.rq.ignored && openib_params_user_set("receive_queues")) {
        uint32_t ig = mca_btl_openib_component.rq.ignored;
        char list[400];

        snprintf(list, sizeof(list), "%s%s%s",
                 ig & OPENIB_RQ_IGNORED_P_LOW ? "P <low>: receive buffers are reposted as soon as they are consumed.\n  " : "",
                 ig & OPENIB_RQ_IGNORED_P_RESERVE ? "P <reserve>: credits go back by RDMA write, using no receive buffer.\n  " : "",
                 ig & OPENIB_RQ_IGNORED_MAX_PENDING ? "S/X <max_pending>: sends are not capped per queue; a shared queue grows on its limit event.\n  " : "");
        openib_show_help("receive-queues-ignored-fields", true, opal_process_info.nodename,
                         openib_params.receive_queues, list);
    }
    return OPAL_SUCCESS;
}

static mca_btl_base_module_t **openib_init(int *num_btls, bool enable_progress_threads,
                                            bool enable_mpi_threads)
{
    mca_btl_base_module_t **btls = NULL;
    int rc, i;

    *num_btls = 0;
    OPENIB_VERBOSE(10, "%s initializing", openib_params.version);

    mca_btl_openib_component.told_user = false;
    /* Under MPI_THREAD_MULTIPLE opal_using_threads() is true and the
     * component's locks are real (btl_openib_lock.h). */
    OPENIB_VERBOSE(10, "MPI threads %s, progress threads %s",
                   enable_mpi_threads ? "enabled" : "disabled",
                   enable_progress_threads ? "enabled" : "disabled");
    /* User errors first, so a bad setting fails fast even with no device;
     * then what must come before any verbs resource exists. */
    if (OPAL_SUCCESS != check_params() || OPAL_SUCCESS != openib_diag_fork_support() ||
        OPAL_SUCCESS != openib_diag_check_memory(&mca_btl_openib_component.rq) ||
        OPAL_SUCCESS != openib_connect_init()) {
        return NULL;
    }
    rc = openib_hmem_glue_init();
    if (OPAL_SUCCESS != rc) {
        return NULL;
    }
    rc = openib_devices_open();
    if (OPAL_SUCCESS != rc || 0 == mca_btl_openib_component.num_modules) {
        /* openib_devices_open said why (a help text when openib was asked
         * for by name, or a setting was wrong; else at verbose level) */
        openib_devices_close();
        return NULL;
    }
    /* The registration cache turns leave_pinned on when memory hooks can
     * invalidate it; ob1 then uses RDMA get for every large message. */
    OPENIB_VERBOSE(10, "mpi_leave_pinned %d after the registration cache was created",
                   opal_leave_pinned);
    rc = openib_modex_send();
    if (OPAL_SUCCESS != rc) {
        OPENIB_VERBOSE(1, "publishing our ports failed (%d); openib disabled", rc);
        openib_devices_close();
        return NULL;
    }
    btls = malloc(sizeof(*btls) * mca_btl_openib_component.num_modules);
    if (NULL == btls) {
        openib_devices_close();
        return NULL;
    }
    for (i = 0; i < mca_btl_openib_component.num_modules; ++i) {
        btls[i] = &mca_btl_openib_component.modules[i]->super;
    }
    *num_btls = mca_btl_openib_component.num_modules;
    return btls;
}

/*
 * test_hmem_params.c - btl_openib_hmem_override through Open MPI's real MCA
 * variable system (opal_init_util, no MPI, no device): the name it is
 * registered under, a value from OMPI_MCA_* reaching component init (a bad
 * plug-in fails init with the help text naming the parameter and publishes
 * no root; a good one is applied to the published root; no value leaves
 * built-in copies), and component fini unpublishing and unloading.
 * Each scenario runs in a child: the variable is read at registration.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "opal_config.h"
#include "opal/constants.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/mca.h"
#include "opal/runtime/opal.h"

#include "hmem/openib_hmem_btl.h"
#include "tests/unit/hmem/hmem_help_capture.h"
#include "tests/unit/hmem/hmem_test.h"

/* Stands in for mca_btl_openib_component: only its names matter here. */
static mca_base_component_t fake_btl = {
    .mca_major_version = 2,
    .mca_minor_version = 1,
    .mca_release_version = 0,
    .mca_project_name = "opal",
    .mca_type_name = "btl",
    .mca_type_major_version = 3,
    .mca_type_minor_version = 1,
    .mca_component_name = "openib",
};

static const char *tp_v1;

/* Register, then init with whatever OMPI_MCA_btl_openib_hmem_override says. */
static int setup(struct openib_hmem_object **root)
{
    const mca_base_var_t *var = NULL;
    int idx;

    unit_checks = unit_failures = 0;
    CHECK_EQ(opal_init_util(NULL, NULL), OPAL_SUCCESS);
    help_capture_install();
    CHECK_EQ(openib_hmem_register_params(&fake_btl), OPAL_SUCCESS);
    idx = mca_base_var_find("opal", "btl", "openib", "hmem_override");
    CHECK(idx >= 0);
    if (idx >= 0 && OPAL_SUCCESS == mca_base_var_get(idx, &var) && NULL != var) {
        CHECK(0 == strcmp(var->mbv_full_name, "btl_openib_hmem_override"));
        CHECK_STR_CONTAINS(var->mbv_description, "openib_hmem_plugin_info");
        CHECK_EQ(var->mbv_type, MCA_BASE_VAR_TYPE_STRING);
    }
    return openib_hmem_component_init(root);
}

static void s_bad_path(void)
{
    struct openib_hmem_object *root = (void *) 1;

    setenv("OMPI_MCA_btl_openib_hmem_override", "/no/such/override.so", 1);
    CHECK_EQ(setup(&root), OPAL_ERR_BAD_PARAM);
    CHECK(NULL == root);
    CHECK(NULL == openib_hmem_root());
    CHECK_EQ(help_count, 1);
    CHECK_STR_CONTAINS(help_captured, "Parameter: btl_openib_hmem_override");
    CHECK_STR_CONTAINS(help_captured, "Value:     /no/such/override.so");
    CHECK_STR_CONTAINS(help_captured, "Reason:    cannot load the library");
    openib_hmem_component_fini(); /* harmless after a failed init */
}

static void s_good_plugin(void)
{
    struct openib_hmem_object *root = NULL, *module;

    setenv("OMPI_MCA_btl_openib_hmem_override", tp_v1, 1);
    CHECK_EQ(setup(&root), OPAL_SUCCESS);
    CHECK(NULL != root);
    CHECK(openib_hmem_root() == root);
    CHECK(0 == strcmp(root->name, "btl_openib"));
    CHECK_EQ(help_count, 0);
    CHECK(openib_hmem_object_overridden(root, OPENIB_HMEM_OP_COPY_FROM_HMEM_IOV));
    CHECK_EQ(openib_hmem_object_create(root, "module0", &module), 0);
    CHECK(openib_hmem_object_overridden(module, OPENIB_HMEM_OP_COPY_FROM_HMEM_IOV));
    openib_hmem_object_free(module);
    openib_hmem_component_fini();
    CHECK(NULL == openib_hmem_root());
    {
        void *h = dlopen(tp_v1, RTLD_NOW | RTLD_NOLOAD);
        CHECK(NULL == h); /* unloaded */
    }
}

static void s_unset(void)
{
    struct openib_hmem_object *root = NULL;

    unsetenv("OMPI_MCA_btl_openib_hmem_override");
    CHECK_EQ(setup(&root), OPAL_SUCCESS);
    CHECK(NULL != root);
    CHECK(openib_hmem_root() == root);
    CHECK(!openib_hmem_object_overridden(root, OPENIB_HMEM_OP_COPY_FROM_HMEM_IOV));
    CHECK(!openib_hmem_object_overridden(root, OPENIB_HMEM_OP_COPY_TO_HMEM_IOV));
    CHECK_EQ(help_count, 0);
    openib_hmem_component_fini();
    CHECK(NULL == openib_hmem_root());
}

static void in_child(const char *name, void (*fn)(void))
{
    pid_t pid;
    int status = 0;

    fflush(NULL);
    pid = fork();
    if (0 == pid) {
        int rc;

        fn();
        rc = unit_finish(name);
        fflush(NULL);
        _exit(rc);
    }
    unit_checks++;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        0 != WEXITSTATUS(status)) {
        unit_failures++;
        fprintf(stderr, "scenario '%s' failed (status 0x%x)\n", name, status);
    }
}

int main(void)
{
    tp_v1 = hmem_test_module("tests/unit/hmem", "hmem_tp_v1");
    in_child("bad path", s_bad_path);
    in_child("good plug-in", s_good_plugin);
    in_child("unset", s_unset);
    CHECK_EQ(openib_hmem_register_params(NULL), OPAL_ERR_BAD_PARAM);
    return unit_finish("test_hmem_params");
}

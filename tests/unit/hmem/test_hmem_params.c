/*
 * test_hmem_params.c - btl_openib_hmem_override and btl_openib_hmem_cuda
 * through Open MPI's real MCA variable system (opal_init, no MPI, no
 * device): the names they are registered under, a value from OMPI_MCA_*
 * reaching component init (a bad plug-in fails init with the help text
 * naming the parameter and publishes no root; a good one is applied to the
 * published root; no value leaves built-in copies; each CUDA mode; a bad
 * mode is refused naming the valid values), component fini unpublishing
 * and unloading. And Open MPI's memory hooks for real: the component
 * opens the memory framework, and munmap and free() of a large block reach
 * the memory-type cache, so a range the driver reuses is re-classified.
 * Each scenario runs in a child: the variables are read at registration.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

static const char *tp_v1, *fake_cuda;

/* Register, then init with whatever OMPI_MCA_btl_openib_hmem_* say. opal_init
 * (not only opal_init_util), as in an MPI process: the memory hooks need it. */
static int setup(struct openib_hmem_object **root)
{
    const mca_base_var_t *var = NULL;
    int idx;

    unit_checks = unit_failures = 0;
    CHECK_EQ(opal_init(NULL, NULL), OPAL_SUCCESS);
    help_capture_install();
    CHECK_EQ(openib_hmem_register_params(&fake_btl), OPAL_SUCCESS);
    idx = mca_base_var_find("opal", "btl", "openib", "hmem_override");
    CHECK(idx >= 0);
    if (idx >= 0 && OPAL_SUCCESS == mca_base_var_get(idx, &var) && NULL != var) {
        CHECK(0 == strcmp(var->mbv_full_name, "btl_openib_hmem_override"));
        CHECK_STR_CONTAINS(var->mbv_description, "openib_hmem_plugin_info");
        CHECK_EQ(var->mbv_type, MCA_BASE_VAR_TYPE_STRING);
    }
    idx = mca_base_var_find("opal", "btl", "openib", "hmem_cuda");
    CHECK(idx >= 0);
    var = NULL;
    if (idx >= 0 && OPAL_SUCCESS == mca_base_var_get(idx, &var) && NULL != var) {
        CHECK(0 == strcmp(var->mbv_full_name, "btl_openib_hmem_cuda"));
        CHECK_STR_CONTAINS(var->mbv_description, "(valid: auto, never, always)");
        CHECK_STR_CONTAINS(var->mbv_description, "never = never start CUDA");
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
    if (NULL == root) {
        fprintf(stderr, "%s\n", help_captured);
        return;
    }
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

static void s_cuda_bad(void)
{
    struct openib_hmem_object *root = (void *) 1;

    setenv("OMPI_MCA_btl_openib_hmem_cuda", "sometimes", 1);
    CHECK_EQ(setup(&root), OPAL_ERR_BAD_PARAM);
    CHECK(NULL == root);
    CHECK(NULL == openib_hmem_root());
    CHECK_EQ(help_count, 1);
    CHECK_STR_CONTAINS(help_captured, "The value of btl_openib_hmem_cuda on ");
    CHECK_STR_CONTAINS(help_captured, "Value:        sometimes");
    CHECK_STR_CONTAINS(help_captured, "Valid values: auto, never, always");
    CHECK_STR_CONTAINS(help_captured, "The openib BTL is disabled in this process.");
    openib_hmem_component_fini();
}

/* mode: value of the parameter (NULL: unset); expect: in the CUDA status. */
static void cuda_mode_case(const char *mode, const char *expect)
{
    struct openib_hmem_object *root = NULL;

    setenv("OPENIB_HMEM_CUDA_LIBRARY", fake_cuda, 1);
    if (NULL != mode) {
        setenv("OMPI_MCA_btl_openib_hmem_cuda", mode, 1);
    } else {
        unsetenv("OMPI_MCA_btl_openib_hmem_cuda");
    }
    CHECK_EQ(setup(&root), OPAL_SUCCESS);
    CHECK_EQ(help_count, 0);
    CHECK_STR_CONTAINS(openib_hmem_iface_status(OPENIB_HMEM_CUDA), expect);
    openib_hmem_component_fini();
}

static void s_cuda_unset(void) { cuda_mode_case(NULL, "cuda: not started"); }
static void s_cuda_auto(void) { cuda_mode_case("auto", "cuda: not started"); }
static void s_cuda_never(void) { cuda_mode_case("never", "btl_openib_hmem_cuda=never"); }
static void s_cuda_always(void) { cuda_mode_case("ALWAYS", "cuda: available"); }

/* The real hooks: munmap and free() report releases to the cache. */
static void s_memory_hooks(void)
{
    struct openib_hmem_object *root = NULL;
    struct openib_hmem_cache_stats c0, c1;
    enum openib_hmem_iface iface;
    unsigned long long (*fake_alloc)(void *, size_t, int, int);
    unsigned char *r, *again, *big;
    uint64_t dev = 99;
    void *h;

    setenv("OPENIB_HMEM_CUDA_LIBRARY", fake_cuda, 1);
    unsetenv("OMPI_MCA_btl_openib_hmem_cuda");
    CHECK_EQ(setup(&root), OPAL_SUCCESS);
    openib_hmem_cache_get_stats(&c0);
    CHECK(c0.host_caching); /* the patcher's hooks are in */
    CHECK_STR_CONTAINS(openib_hmem_cache_status(), "until the memory hooks report");

    r = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(MAP_FAILED != r);
    if (MAP_FAILED == r) {
        return;
    }
    CHECK_EQ(openib_hmem_detect(r, &iface, NULL), 0);
    CHECK_EQ(iface, OPENIB_HMEM_SYSTEM);
    openib_hmem_cache_get_stats(&c0);
    CHECK(c0.entries >= 1);
    CHECK_EQ(munmap(r, 8192), 0); /* no call of ours: the hook does it */
    openib_hmem_cache_get_stats(&c1);
    CHECK(c1.releases > c0.releases);
    CHECK(c1.dropped > c0.dropped);

    /* The application starts CUDA; the driver puts device memory where the
     * host mapping was. */
    again = mmap(r, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    CHECK(again == r);
    h = dlopen(fake_cuda, RTLD_NOW);
    CHECK(NULL != h);
    if (NULL == h) {
        return;
    }
    *(void **) &fake_alloc = dlsym(h, "fake_cuda_alloc");
    CHECK(NULL != fake_alloc);
    if (NULL == fake_alloc) {
        return;
    }
    CHECK(0 != fake_alloc(r, 8192, 0 /* device */, 1));
    CHECK_EQ(openib_hmem_detect(r + 10, &iface, &dev), 0);
    CHECK_EQ(iface, OPENIB_HMEM_CUDA);
    CHECK_EQ(dev, 1);

    /* free() of a block glibc maps by itself: released through munmap. */
    big = malloc(8 << 20);
    CHECK(NULL != big);
    if (NULL != big) {
        big[0] = 1;
        CHECK_EQ(openib_hmem_detect(big, &iface, NULL), 0);
        CHECK_EQ(iface, OPENIB_HMEM_SYSTEM);
        openib_hmem_cache_get_stats(&c0);
        free(big);
        openib_hmem_cache_get_stats(&c1);
        CHECK(c1.releases > c0.releases);
        CHECK(c1.dropped > c0.dropped);
    }
    openib_hmem_component_fini();
    openib_hmem_cache_get_stats(&c1);
    CHECK(!c1.host_caching);
    CHECK_EQ(c1.entries, 0);
}

int main(void)
{
    tp_v1 = hmem_test_module("tests/unit/hmem", "hmem_tp_v1");
    fake_cuda = hmem_test_module("tests/unit/hmem", "hmem_fake_cuda");
    in_child("bad path", s_bad_path);
    in_child("good plug-in", s_good_plugin);
    in_child("unset", s_unset);
    in_child("hmem_cuda: bad value", s_cuda_bad);
    in_child("hmem_cuda: unset", s_cuda_unset);
    in_child("hmem_cuda=auto", s_cuda_auto);
    in_child("hmem_cuda=never", s_cuda_never);
    in_child("hmem_cuda=always", s_cuda_always);
    in_child("memory hooks", s_memory_hooks);
    CHECK_EQ(openib_hmem_register_params(NULL), OPAL_ERR_BAD_PARAM);
    return unit_finish("test_hmem_params");
}

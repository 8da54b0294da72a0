/*
 * test_hmem_plugin.c - loading override plug-ins built against the frozen
 * v1 header: a good one (set_op form, and set_ops form), the version and
 * size checks with their messages, a failing init (its operations are taken
 * back out), unloading, the help text a user sees for each failure, and
 * the plug-in path rule (a relative or group-writable path is refused).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "opal/constants.h"

#include "hmem/openib_hmem_btl.h"
#include "tests/unit/hmem/hmem_help_capture.h"
#include "tests/unit/hmem/hmem_test.h"

struct hmem_tp_counters {
    uint64_t from_calls, from_bytes, to_calls, to_bytes, fini_calls, abi_version;
};

static char why[512];

static const char *tp(const char *variant)
{
    return hmem_test_module("tests/unit/hmem", variant);
}

/* The loaded plug-in's counters (a reference the caller must dlclose). */
static struct hmem_tp_counters *tp_counters(const char *path, void **h)
{
    *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    return NULL != *h ? dlsym(*h, "hmem_tp_counters") : NULL;
}

static bool tp_loaded(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);

    if (NULL != h) {
        dlclose(h);
    }
    return NULL != h;
}

static void test_good_v1_set_op(void)
{
    struct openib_hmem_object *root, *module;
    struct openib_hmem_stats st = OPENIB_HMEM_STATS_INITIALIZER;
    struct hmem_tp_counters *c;
    char src[100], dst[100];
    void *h;
    int i;

    for (i = 0; i < 100; ++i) {
        src[i] = (char) i;
    }
    CHECK_EQ(openib_hmem_object_create(NULL, "btl_openib", &root), 0);
    CHECK_EQ(openib_hmem_load_plugin(root, tp("hmem_tp_v1"), why, sizeof(why)), 0);
    CHECK_EQ(why[0], '\0');
    c = tp_counters(tp("hmem_tp_v1"), &h);
    CHECK(NULL != c);
    if (NULL == c) {
        fprintf(stderr, "plug-in: %s (%s)\n", tp("hmem_tp_v1"), why);
        return;
    }
    CHECK_EQ(c->abi_version, 1); /* really built against the frozen v1 */

    /* A module created after the plug-in ran inherits its override. */
    CHECK_EQ(openib_hmem_object_create(root, "module0", &module), 0);
    CHECK(openib_hmem_object_overridden(module, OPENIB_HMEM_OP_COPY_FROM_HMEM_IOV));
    CHECK(!openib_hmem_object_overridden(module, OPENIB_HMEM_OP_COPY_TO_HMEM_IOV));
    memset(dst, 0, sizeof(dst));
    CHECK_EQ(openib_hmem_copy_from_buf(module, OPENIB_HMEM_SYSTEM, 0, dst, src, 100), 100);
    CHECK(0 == memcmp(dst, src, 100)); /* chained to the default: data intact */
    CHECK_EQ(openib_hmem_copy_from_buf(root, OPENIB_HMEM_SYSTEM, 0, dst, src + 10, 20), 20);
    CHECK_EQ(c->from_calls, 2);
    CHECK_EQ(c->from_bytes, 120);
    /* Only copy_from was overridden: copy_to runs the default. */
    memset(dst, 0, sizeof(dst));
    CHECK_EQ(openib_hmem_copy_to_buf(module, OPENIB_HMEM_SYSTEM, 0, dst, src, 50), 50);
    CHECK(0 == memcmp(dst, src, 50));
    CHECK_EQ(c->to_calls, 0);
    CHECK_EQ(openib_hmem_get_stats(module, &st), 0);
    CHECK_EQ(st.from_hmem_override_calls, 1);
    CHECK_EQ(st.to_hmem_calls, 1);
    CHECK_EQ(st.to_hmem_override_calls, 0);

    /* Unloading takes the plug-in's code out of every object first. */
    openib_hmem_unload_plugins();
    CHECK_EQ(c->fini_calls, 1);
    CHECK(!openib_hmem_object_overridden(module, OPENIB_HMEM_OP_COPY_FROM_HMEM_IOV));
    CHECK(!openib_hmem_object_overridden(root, OPENIB_HMEM_OP_COPY_FROM_HMEM_IOV));
    CHECK_EQ(openib_hmem_copy_from_buf(module, OPENIB_HMEM_SYSTEM, 0, dst, src, 100), 100);
    CHECK_EQ(c->from_calls, 2);
    dlclose(h);
    CHECK(!tp_loaded(tp("hmem_tp_v1")));
    openib_hmem_object_free(module);
    openib_hmem_object_free(root);
}

static void test_good_v1_set_ops(void)
{
    struct openib_hmem_object *root;
    struct hmem_tp_counters *c;
    char src[32] = "0123456789abcdefghijklmnopqrstu", dst[32];
    void *h;

    CHECK_EQ(openib_hmem_object_create(NULL, "btl_openib", &root), 0);
    CHECK_EQ(openib_hmem_load_plugin(root, tp("hmem_tp_setops"), why, sizeof(why)), 0);
    c = tp_counters(tp("hmem_tp_setops"), &h);
    CHECK(NULL != c);
    if (NULL == c) {
        return;
    }
    CHECK(openib_hmem_object_overridden(root, OPENIB_HMEM_OP_COPY_TO_HMEM_IOV));
    CHECK(!openib_hmem_object_overridden(root, OPENIB_HMEM_OP_COPY_FROM_HMEM_IOV));
    CHECK_EQ(openib_hmem_copy_to_buf(root, OPENIB_HMEM_SYSTEM, 0, dst, src, 32), 32);
    CHECK(0 == memcmp(dst, src, 32));
    CHECK_EQ(c->to_calls, 1);
    CHECK_EQ(c->to_bytes, 32);
    CHECK_EQ(openib_hmem_copy_from_buf(root, OPENIB_HMEM_SYSTEM, 0, dst, src, 32), 32);
    CHECK_EQ(c->from_calls, 0);
    openib_hmem_unload_plugins();
    CHECK(!openib_hmem_object_overridden(root, OPENIB_HMEM_OP_COPY_TO_HMEM_IOV));
    dlclose(h);
    openib_hmem_object_free(root);
}

/* A plug-in that must be refused: rc, message, nothing left behind. */
static void expect_refused(struct openib_hmem_object *root, const char *variant, int want_rc,
                           const char *must1, const char *must2)
{
    int rc;

    why[0] = 'x';
    why[1] = '\0';
    rc = openib_hmem_load_plugin(root, tp(variant), why, sizeof(why));
    CHECK_EQ(rc, want_rc);
    CHECK_STR_CONTAINS(why, must1);
    if (NULL != must2) {
        CHECK_STR_CONTAINS(why, must2);
    }
    CHECK(!openib_hmem_object_overridden(root, OPENIB_HMEM_OP_COPY_FROM_HMEM_IOV));
    CHECK(!openib_hmem_object_overridden(root, OPENIB_HMEM_OP_COPY_TO_HMEM_IOV));
    CHECK(!tp_loaded(tp(variant)));
}

static void test_refused(void)
{
    struct openib_hmem_object *root;

    CHECK_EQ(openib_hmem_object_create(NULL, "btl_openib", &root), 0);
    expect_refused(root, "hmem_tp_abi99", -EPROTO, "built against openib-ng HMEM ABI v99",
                   "accepts v1 to v1");
    expect_refused(root, "hmem_tp_abi99", -EPROTO, "rebuild the plug-in", NULL);
    expect_refused(root, "hmem_tp_abi0", -EPROTO, "ABI v0", NULL);
    expect_refused(root, "hmem_tp_noinfo", -ENOEXEC, "is not an openib-ng HMEM plug-in",
                   "openib_hmem_plugin_info");
    expect_refused(root, "hmem_tp_initfail", -EPERM, "init failed (-1)",
                   "the test plug-in refuses on purpose");
    expect_refused(root, "hmem_tp_biginfo", -E2BIG, "larger", "does not know");
    expect_refused(root, "hmem_tp_smallinfo", -EINVAL, "too small", NULL);
    expect_refused(root, "hmem_tp_does_not_exist", -ENOENT, "cannot load the library",
                   "hmem_tp_does_not_exist.so");

    CHECK_EQ(openib_hmem_load_plugin(root, "", why, sizeof(why)), -EINVAL);
    CHECK_EQ(openib_hmem_load_plugin(root, NULL, why, sizeof(why)), -EINVAL);
    CHECK_EQ(openib_hmem_load_plugin(NULL, tp("hmem_tp_v1"), why, sizeof(why)), -EINVAL);
    CHECK(!tp_loaded(tp("hmem_tp_v1")));
    /* why may be absent. */
    CHECK_EQ(openib_hmem_load_plugin(root, tp("hmem_tp_abi99"), NULL, 0), -EPROTO);
    openib_hmem_unload_plugins(); /* nothing loaded: no-op */
    openib_hmem_object_free(root);
}

/* What the user sees: the help text naming the parameter. */
static void test_help_text(void)
{
    struct openib_hmem_object *root;

    help_capture_install();
    CHECK_EQ(openib_hmem_object_create(NULL, "btl_openib", &root), 0);

    CHECK_EQ(openib_hmem_apply_override(root, "btl_openib_hmem_override", NULL), OPAL_SUCCESS);
    CHECK_EQ(openib_hmem_apply_override(root, "btl_openib_hmem_override", ""), OPAL_SUCCESS);
    CHECK_EQ(help_count, 0);

    CHECK_EQ(openib_hmem_apply_override(root, "btl_openib_hmem_override", "/no/such/plugin.so"),
             OPAL_ERR_BAD_PARAM);
    CHECK_EQ(help_count, 1);
    CHECK(0 == strcmp(help_topic, "plugin-load-failed"));
    CHECK_STR_CONTAINS(help_captured, "Parameter: btl_openib_hmem_override");
    CHECK_STR_CONTAINS(help_captured, "Value:     /no/such/plugin.so");
    CHECK_STR_CONTAINS(help_captured, "Reason:    cannot load the library");
    CHECK_STR_CONTAINS(help_captured, "unset the parameter");

    CHECK_EQ(openib_hmem_apply_override(root, "btl_openib_hmem_override", tp("hmem_tp_abi99")),
             OPAL_ERR_BAD_PARAM);
    CHECK(0 == strcmp(help_topic, "plugin-abi-mismatch"));
    CHECK_STR_CONTAINS(help_captured, "ABI version");
    CHECK_STR_CONTAINS(help_captured, "btl_openib_hmem_override");
    CHECK_STR_CONTAINS(help_captured, "v99");

    CHECK_EQ(openib_hmem_apply_override(root, "btl_openib_hmem_override", tp("hmem_tp_initfail")),
             OPAL_ERR_BAD_PARAM);
    CHECK(0 == strcmp(help_topic, "plugin-load-failed"));
    CHECK_STR_CONTAINS(help_captured, "refuses on purpose");

    CHECK_EQ(openib_hmem_apply_override(root, "btl_openib_hmem_override", tp("hmem_tp_v1")),
             OPAL_SUCCESS);
    CHECK_EQ(help_count, 3);
    CHECK(openib_hmem_object_overridden(root, OPENIB_HMEM_OP_COPY_FROM_HMEM_IOV));
    openib_hmem_object_free(root);
    openib_hmem_unload_plugins();
    CHECK(!tp_loaded(tp("hmem_tp_v1")));
}

static bool copy_file(const char *from, const char *to, mode_t mode)
{
    char buf[65536];
    ssize_t n;
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    bool ok = in >= 0 && out >= 0;

    while (ok && (n = read(in, buf, sizeof(buf))) > 0) {
        ok = write(out, buf, (size_t) n) == n;
    }
    if (in >= 0) {
        close(in);
    }
    if (out >= 0) {
        close(out);
    }
    return ok && 0 == chmod(to, mode);
}

/* btl_openib_hmem_override follows the plug-in path rule
 * (mca/btl_openib_path_check.h; its cases are in test_path_check). */
static void test_path_rule(void)
{
    struct openib_hmem_object *root;
    char dir[] = "/tmp/openib-hmem-path-XXXXXX", copy[PATH_MAX];
    int before;

    help_capture_install();
    CHECK_EQ(openib_hmem_object_create(NULL, "btl_openib", &root), 0);
    before = help_count;

    CHECK_EQ(openib_hmem_apply_override(root, "btl_openib_hmem_override", "hmem_tp_v1.so"),
             OPAL_ERR_BAD_PARAM);
    CHECK_EQ(help_count, before + 1);
    CHECK(0 == strcmp(help_topic, "plugin-path-refused"));
    CHECK_STR_CONTAINS(help_captured, "Parameter: btl_openib_hmem_override");
    CHECK_STR_CONTAINS(help_captured, "Value:     hmem_tp_v1.so");
    CHECK_STR_CONTAINS(help_captured, "is not an absolute path");
    CHECK_STR_CONTAINS(help_captured, "The rule: an absolute path to a regular file");

    CHECK(NULL != mkdtemp(dir));
    snprintf(copy, sizeof(copy), "%s/tp.so", dir);
    CHECK(copy_file(tp("hmem_tp_v1"), copy, 0775));
    CHECK_EQ(openib_hmem_apply_override(root, "btl_openib_hmem_override", copy),
             OPAL_ERR_BAD_PARAM);
    CHECK(0 == strcmp(help_topic, "plugin-path-refused"));
    CHECK_STR_CONTAINS(help_captured, "group-writable (mode 0775)");
    CHECK(!tp_loaded(copy));
    /* the loader itself refuses too, for callers other than the parameter */
    CHECK_EQ(openib_hmem_load_plugin(root, copy, why, sizeof(why)), -EACCES);
    CHECK_STR_CONTAINS(why, "group-writable");
    CHECK(!tp_loaded(copy));
    CHECK(!openib_hmem_object_overridden(root, OPENIB_HMEM_OP_COPY_FROM_HMEM_IOV));

    /* the same file, once only its owner can write it, loads; its
     * resolved path is what the BTL logs at verbose level 1 */
    CHECK(0 == chmod(copy, 0755));
    CHECK_EQ(openib_hmem_apply_override(root, "btl_openib_hmem_override", copy), OPAL_SUCCESS);
    CHECK(openib_hmem_object_overridden(root, OPENIB_HMEM_OP_COPY_FROM_HMEM_IOV));
    CHECK(NULL != openib_hmem_plugin_newest_file() &&
          0 == strcmp(openib_hmem_plugin_newest_file(), copy));
    openib_hmem_object_free(root);
    openib_hmem_unload_plugins();
    CHECK(NULL == openib_hmem_plugin_newest_file());
    unlink(copy);
    rmdir(dir);
}

int main(void)
{
    test_good_v1_set_op();
    test_good_v1_set_ops();
    test_refused();
    test_help_text();
    test_path_rule();
    return unit_finish("test_hmem_plugin");
}

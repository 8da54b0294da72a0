/*
 * test_cpc_mca.c - the framework against Open MPI's real MCA variable and
 * help systems (opal_init_util, no MPI, no device):
 *   - register_params creates btl_openib_cpc_include/_exclude (help text
 *     listing every valid CPC) and btl_openib_connect_<name>_priority;
 *   - values from OMPI_MCA_* reach the framework (a bad cpc_include fails
 *     init with BAD_PARAM, a priority override reaches query);
 *   - every help topic the code uses exists in mca/help-btl-openib-cpc.txt
 *     and renders with its arguments.
 */
#include "opal_config.h"
#include "opal/constants.h"
#include "opal/mca/base/base.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/runtime/opal.h"
#include "opal/util/show_help.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "connect/openib_connect.h"
#include "tests/unit/connect/cpc_test.h"

#ifndef CPC_HELP_DIR
#error "CPC_HELP_DIR must name the source tree's mca/ directory"
#endif

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

/* Every help shown, kept to be rendered through the real help file. */
#define MAXH 16
static struct {
    char topic[64];
    int nargs;
    char args[6][1200];
} helps[MAXH];
static int nhelps;

static void hook(const char *file, const char *topic, int nargs, const char *const *args)
{
    int i;

    CHECK_EQ(strcmp(file, "help-btl-openib-cpc.txt"), 0);
    if (nhelps >= MAXH) {
        return;
    }
    snprintf(helps[nhelps].topic, sizeof(helps[0].topic), "%s", topic);
    helps[nhelps].nargs = nargs;
    for (i = 0; i < nargs && i < 6; ++i) {
        snprintf(helps[nhelps].args[i], sizeof(helps[0].args[0]), "%s", args[i]);
    }
    nhelps++;
}

static int last_help_is(const char *topic)
{
    return nhelps > 0 && 0 == strcmp(helps[nhelps - 1].topic, topic);
}

static const char *var_description(const char *name)
{
    const mca_base_var_t *var = NULL;
    int idx = mca_base_var_find("opal", "btl", "openib", name);

    if (idx < 0 || OPAL_SUCCESS != mca_base_var_get(idx, &var) || NULL == var) {
        return NULL;
    }
    return var->mbv_description;
}

static int var_int(const char *name, int *out)
{
    const mca_base_var_t *var = NULL;
    int idx = mca_base_var_find("opal", "btl", "openib", name);

    if (idx < 0 || OPAL_SUCCESS != mca_base_var_get(idx, &var)) {
        return -1;
    }
    *out = var->mbv_storage->intval;
    return 0;
}

/* The variables are read-only at run time (read once at init, like every
 * BTL selection parameter), so a new value comes the way a user gives it:
 * the environment, picked up when the BTL registers again. */
static void reregister(const char *include, const char *exclude, const char *xoob_prio)
{
    openib_connect_finalize();
    include ? setenv("OMPI_MCA_btl_openib_cpc_include", include, 1)
            : unsetenv("OMPI_MCA_btl_openib_cpc_include");
    exclude ? setenv("OMPI_MCA_btl_openib_cpc_exclude", exclude, 1)
            : unsetenv("OMPI_MCA_btl_openib_cpc_exclude");
    xoob_prio ? setenv("OMPI_MCA_btl_openib_connect_xoob_priority", xoob_prio, 1)
              : unsetenv("OMPI_MCA_btl_openib_connect_xoob_priority");
    CHECK_EQ(openib_connect_register_params(&fake_btl), OPAL_SUCCESS);
}

static void test_registration(void)
{
    const char *d;
    int v = -1;

    CHECK_EQ(openib_connect_register_params(&fake_btl), OPAL_SUCCESS);
    d = var_description("cpc_include");
    CHECK_STR_HAS(d, "oob, rdma_cm (alias: rdmacm), xoob");
    CHECK_STR_HAS(d, "btl_openib_cpc_exclude");
    d = var_description("cpc_exclude");
    CHECK_STR_HAS(d, "oob, rdma_cm (alias: rdmacm), xoob");
    CHECK(NULL != var_description("cpc_plugins"));
    CHECK_STR_HAS(var_description("connect_rdma_cm_priority"), "Default: 40");
    CHECK_EQ(var_int("connect_oob_priority", &v), 0);
    CHECK_EQ(v, 77); /* from OMPI_MCA_btl_openib_connect_oob_priority */
    CHECK_EQ(var_int("connect_xoob_priority", &v), 0);
    CHECK_EQ(v, 60);
    CHECK_EQ(var_int("connect_rdma_cm_priority", &v), 0);
    CHECK_EQ(v, 40);
}

static void test_values_reach_framework(void)
{
    struct openib_cpc_port port;
    struct openib_cpc_module *mods[4];
    int n = 0, rc;

    /* OMPI_MCA_btl_openib_cpc_include=bogus,oob was set before registration */
    nhelps = 0;
    CHECK_EQ(openib_connect_init(), OPAL_ERR_BAD_PARAM);
    CHECK(last_help_is("cpc name not found"));
    if (nhelps) {
        CHECK_EQ(strcmp(helps[nhelps - 1].args[1], "btl_openib_cpc_include"), 0);
        CHECK_EQ(strcmp(helps[nhelps - 1].args[3], "bogus"), 0);
    }

    /* both set */
    reregister("oob", "xoob", NULL);
    CHECK_EQ(openib_connect_init(), OPAL_ERR_BAD_PARAM);
    CHECK(last_help_is("cpc include and exclude"));

    /* include only: the overridden oob priority reaches query */
    reregister("oob,rdmacm", NULL, NULL);
    CHECK_EQ(openib_connect_init(), OPAL_SUCCESS);
    openib_cpc_port_init(&port);
    port.dev_name = "rxe0";
    port.port_num = 1;
    rc = openib_connect_query_port(&port, mods, 4, &n);
    if (OPAL_SUCCESS == rc) {
        CHECK_EQ(n, 1);
        CHECK_EQ(mods[0]->priority, 77);
        openib_connect_release_modules(mods, n);
    } else {
        CHECK_STR_HAS(openib_connect_last_reasons(), "oob: "); /* e.g. no IPv4 here */
    }
    CHECK_STR_HAS(openib_connect_last_reasons(), "xoob: not in btl_openib_cpc_include");
    CHECK_STR_HAS(openib_connect_last_reasons(),
                  "rdma_cm: port rxe0:1 has no IPv4 address");

    /* exclude by alias */
    reregister(NULL, "rdmacm,xoob", NULL);
    CHECK_EQ(openib_connect_init(), OPAL_SUCCESS);
    rc = openib_connect_query_port(&port, mods, 4, &n);
    if (OPAL_SUCCESS == rc) {
        openib_connect_release_modules(mods, n);
    }
    CHECK_STR_HAS(openib_connect_last_reasons(), "rdma_cm: excluded by btl_openib_cpc_exclude");

    /* out-of-range priority */
    reregister(NULL, NULL, "101");
    CHECK_EQ(openib_connect_init(), OPAL_ERR_BAD_PARAM);
    CHECK(last_help_is("cpc invalid priority"));
    if (nhelps) {
        CHECK_EQ(strcmp(helps[nhelps - 1].args[1], "btl_openib_connect_xoob_priority"), 0);
        CHECK_EQ(strcmp(helps[nhelps - 1].args[2], "101"), 0);
    }
    reregister(NULL, NULL, NULL);
    CHECK_EQ(openib_connect_init(), OPAL_SUCCESS);
    openib_connect_finalize();

    /* a missing plug-in, as a user would name it */
    CHECK_EQ(openib_connect_load_plugin("/nonexistent/libcpc.so"), OPAL_ERR_NOT_FOUND);
    CHECK(last_help_is("cpc plugin failed"));

    /* the plug-in path rule (mca/btl_openib_path_check.h): refused before
     * anything is loaded, naming the parameter, the path, why and the rule */
    CHECK_EQ(openib_connect_load_plugin("libcpc.so"), OPAL_ERR_BAD_PARAM);
    CHECK(last_help_is("cpc plugin refused"));
    if (nhelps) {
        CHECK_EQ(strcmp(helps[nhelps - 1].args[1], "btl_openib_cpc_plugins"), 0);
        CHECK_EQ(strcmp(helps[nhelps - 1].args[2], "libcpc.so"), 0);
        CHECK_STR_HAS(helps[nhelps - 1].args[3], "not an absolute path");
        CHECK_STR_HAS(helps[nhelps - 1].args[4], "neither its group nor others can write");
    }
    {
        char dir[] = "/tmp/openib-cpc-path-XXXXXX", path[64];
        FILE *f;

        CHECK(NULL != mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/w.so", dir);
        f = fopen(path, "w");
        CHECK(NULL != f);
        if (f) {
            fclose(f);
        }
        CHECK_EQ(chmod(path, 0646), 0);
        CHECK_EQ(openib_connect_load_plugin(path), OPAL_ERR_BAD_PARAM);
        CHECK(last_help_is("cpc plugin refused"));
        if (nhelps) {
            CHECK_STR_HAS(helps[nhelps - 1].args[3], "world-writable (mode 0646)");
        }
        unlink(path);
        rmdir(dir);
    }
}

/* Render a help with the real opal_show_help machinery. */
static void render(const char *topic, int nargs, char args[][1200], const char *expect)
{
    char *s = opal_show_help_string("help-btl-openib-cpc.txt", topic, 1,
                                    nargs > 0 ? args[0] : "", nargs > 1 ? args[1] : "",
                                    nargs > 2 ? args[2] : "", nargs > 3 ? args[3] : "",
                                    nargs > 4 ? args[4] : "", nargs > 5 ? args[5] : "");

    CHECK(NULL != s);
    if (NULL == s) {
        return;
    }
    if (strstr(s, "Sorry!")) {
        fprintf(stderr, "topic [%s] did not render:\n%s\n", topic, s);
    }
    CHECK(NULL == strstr(s, "Sorry!"));
    if (expect) {
        CHECK_STR_HAS(s, expect);
    }
    free(s);
}

static void test_help_file(void)
{
    static const char *const all_topics[] = {
        "cpc include and exclude", "cpc name not found", "cpc invalid priority",
        "cpc init failed",         "cpc query failed",   "no cpc for port",
        "cpc plugin failed",       "cpc plugin refused",
    };
    char args[6][1200] = { "hostA", "b", "c", "d", "e", "f" };
    size_t i;
    int h;

    CHECK_EQ(opal_show_help_add_dir(CPC_HELP_DIR), OPAL_SUCCESS);
    for (i = 0; i < sizeof(all_topics) / sizeof(all_topics[0]); ++i) {
        render(all_topics[i], 6, args, "hostA");
    }
    /* what the framework actually showed during this test, as shown */
    for (h = 0; h < nhelps; ++h) {
        render(helps[h].topic, helps[h].nargs, helps[h].args, helps[h].args[0]);
    }
    {
        char nocpc[6][1200] = { "hostB", "rxe0", "1",
                                "  rdma_cm: rdma_cm CPC is not implemented in this release\n"
                                "  xoob: device rxe0 does not support XRC" };

        render("no cpc for port", 4, nocpc, "xoob: device rxe0 does not support XRC");
    }
}

int main(int argc, char **argv)
{
    setenv("OMPI_MCA_btl_openib_cpc_include", "bogus,oob", 1);
    setenv("OMPI_MCA_btl_openib_connect_oob_priority", "77", 1);
    if (OPAL_SUCCESS != opal_init_util(&argc, &argv)) {
        fprintf(stderr, "opal_init_util failed\n");
        return 1;
    }
    openib_connect_set_help_hook(hook);
    test_registration();
    test_values_reach_framework();
    test_help_file();
    openib_connect_finalize();
    opal_finalize_util();
    return test_report("test_cpc_mca");
}

/*
 * test_oob_params.c - the side channel's parameters through Open MPI's
 * real MCA variable and help systems (opal_init_util, no MPI, no device),
 * set the way a user sets them (OMPI_MCA_* in the environment):
 *   - defaults: 10 s idle deadline, 64 unverified sessions per source;
 *   - btl_openib_oob_if_include=lo: only 127.0.0.1; a CIDR works too;
 *   - include and exclude both set: no address (the CPCs decline) and the
 *     help names both parameters, both values and the valid forms;
 *   - an unknown interface: the help names the parameter, the value, the
 *     wrong part and this host's interfaces; a bad idle value likewise;
 *   - each help renders from mca/help-btl-openib-cpc.txt.
 */
#include "opal_config.h"
#include "opal/constants.h"
#include "opal/mca/base/base.h"
#include "opal/runtime/opal.h"
#include "opal/util/show_help.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "connect/cpc_oob_channel.h"
#include "connect/cpc_oob_params.h"
#include "connect/openib_connect.h"
#include "tests/unit/connect/cpc_test.h"

#ifndef CPC_HELP_DIR
#error "CPC_HELP_DIR must name the source tree's mca/ directory"
#endif

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

static char topic[64], args[6][600];
static int nhelps;

static void hook(const char *file, const char *t, int nargs, const char *const *a)
{
    int i;

    CHECK_EQ(strcmp(file, "help-btl-openib-cpc.txt"), 0);
    snprintf(topic, sizeof(topic), "%s", t);
    memset(args, 0, sizeof(args));
    for (i = 0; i < nargs && i < 6; ++i) {
        snprintf(args[i], sizeof(args[0]), "%s", a[i]);
    }
    nhelps++;
}

/* What the user would read. */
static void rendered_has(const char *expect)
{
    char *s = opal_show_help_string("help-btl-openib-cpc.txt", topic, 0, args[0], args[1],
                                    args[2], args[3], args[4], args[5]);

    CHECK(NULL != s && NULL == strstr(s, "Sorry!"));
    CHECK_STR_HAS(s, expect);
    free(s);
}

static void with(const char *var, const char *val)
{
    char name[96];

    /* "" rather than unset: registering again keeps a value it had */
    snprintf(name, sizeof(name), "OMPI_MCA_btl_openib_%s", var);
    setenv(name, val ? val : "", 1);
}

/* Registration reads the environment, as in a job. */
static int addrs_for(const char *inc, const char *exc, const char *idle, uint32_t *a)
{
    openib_connect_finalize();
    with("oob_if_include", inc);
    with("oob_if_exclude", exc);
    with("oob_unverified_idle", idle ? idle : "10");
    CHECK_EQ(openib_connect_register_params(&fake_btl), OPAL_SUCCESS);
    oob_params_forget();
    nhelps = 0;
    return oob_local_addrs(a, OOB_MAX_ADDRS);
}

int main(int argc, char **argv)
{
    uint32_t a[OOB_MAX_ADDRS];
    int n;

    if (OPAL_SUCCESS != opal_init_util(&argc, &argv)) {
        fprintf(stderr, "opal_init_util failed\n");
        return 1;
    }
    CHECK_EQ(opal_show_help_add_dir(CPC_HELP_DIR), OPAL_SUCCESS);
    openib_connect_set_help_hook(hook);

    CHECK_EQ(openib_connect_register_params(&fake_btl), OPAL_SUCCESS);
    CHECK_EQ(oob_params_idle_ms(), 10000);
    CHECK_EQ(oob_params_per_source(), 64);

    n = addrs_for("lo", NULL, NULL, a);
    CHECK_EQ(n, 1);
    CHECK(a[0] == htonl(INADDR_LOOPBACK));
    CHECK_EQ(nhelps, 0);
    n = addrs_for("127.0.0.0/8", NULL, NULL, a);
    CHECK_EQ(n, 1);
    CHECK(a[0] == htonl(INADDR_LOOPBACK));

    CHECK_EQ(addrs_for("lo", "eth0", NULL, a), 0);
    CHECK_EQ(nhelps, 1);
    CHECK_STR_HAS(topic, "oob if include and exclude");
    CHECK_STR_HAS(args[1], "lo");
    CHECK_STR_HAS(args[2], "eth0");
    rendered_has("btl_openib_oob_if_include:   lo");
    rendered_has("btl_openib_oob_if_exclude:   eth0");
    rendered_has("a.b.c.d/n");
    /* one help per process however many ports ask */
    CHECK_EQ(oob_local_addrs(a, OOB_MAX_ADDRS), 0);
    CHECK_EQ(nhelps, 1);

    CHECK_EQ(addrs_for("lo,nosuch0", NULL, NULL, a), 0);
    CHECK_STR_HAS(topic, "oob if bad value");
    rendered_has("btl_openib_oob_if_include");
    rendered_has("lo,nosuch0");
    rendered_has("Wrong part:      nosuch0");
    rendered_has("interfaces here: lo");

    CHECK_EQ(addrs_for(NULL, "10.0.0.0/40", NULL, a), 0);
    rendered_has("btl_openib_oob_if_exclude");
    rendered_has("10.0.0.0/40");

    CHECK_EQ(addrs_for("lo", NULL, "0", a), 0);
    rendered_has("btl_openib_oob_unverified_idle");
    rendered_has("seconds, 1 or more");

    openib_connect_finalize();
    opal_finalize_util();
    return test_report("test_oob_params");
}

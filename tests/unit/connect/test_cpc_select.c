/*
 * test_cpc_select.c - the CPC framework driven by mock CPCs: adding
 * components, priority order, include/exclude, NOT_SUPPORTED at init and at
 * query, errors propagating, "no CPC for this port", the endpoint calls,
 * verbose output, the three built-in CPCs, and oob/xoob declining iWARP.
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <stdlib.h>
#include <string.h>

#include "connect/openib_connect.h"
#include "tests/unit/connect/cpc_test.h"
#include "tests/unit/connect/mock_cpc.h"

#define MAXM 8

static char log_lines[16][1400];
static int nlog;

static void log_hook(const char *line)
{
    if (nlog < 16) {
        snprintf(log_lines[nlog++], sizeof(log_lines[0]), "%s", line);
    }
}

static const char *log_find(const char *needle)
{
    int i;

    for (i = 0; i < nlog; ++i) {
        if (strstr(log_lines[i], needle)) {
            return log_lines[i];
        }
    }
    return NULL;
}

/* Query one port and return the mock indices of the modules, in order. */
static int query_order(int *order, int *rc_out)
{
    struct openib_cpc_port port;
    struct openib_cpc_module *mods[MAXM];
    int n = -1, i, rc;

    mock_port(&port, "mock0", 0);
    rc = openib_connect_query_port(&port, mods, MAXM, &n);
    if (rc_out) {
        *rc_out = rc;
    }
    if (OPAL_SUCCESS != rc) {
        return -1;
    }
    for (i = 0; i < n; ++i) {
        order[i] = mock_index(mods[i]);
    }
    openib_connect_release_modules(mods, n);
    return n;
}

static void test_priority_order(void)
{
    int order[MAXM], n, rc;

    CHECK_EQ(mock_fresh_framework(), OPAL_SUCCESS);
    CHECK_EQ(openib_connect_init(), OPAL_SUCCESS);
    n = query_order(order, &rc);
    CHECK_EQ(rc, OPAL_SUCCESS);
    CHECK_EQ(n, 4);
    /* b 70, then c and d tied at 50 (lower id first), then a 30. */
    CHECK_EQ(order[0], MOCK_B);
    CHECK_EQ(order[1], MOCK_C);
    CHECK_EQ(order[2], MOCK_D);
    CHECK_EQ(order[3], MOCK_A);
    CHECK_EQ(mock_cfg[MOCK_B].last_query_priority, 70);
    CHECK_EQ(mock_cfg[MOCK_A].module_finalize_calls, 1);
    CHECK_STR_HAS(openib_connect_last_summary(),
                  "CPCs usable: mock_b(70), mock_c(50), mock_d(50), mock_a(30)");
    CHECK_EQ(strlen(openib_connect_last_reasons()), 0);
    CHECK_EQ(mock_nhelps, 0);

    /* An overridden priority (what btl_openib_connect_mock_a_priority sets)
     * reaches query and reorders. */
    CHECK_EQ(mock_fresh_framework(), OPAL_SUCCESS);
    CHECK_EQ(openib_connect_set_priority("mock_a", 90), OPAL_SUCCESS);
    CHECK_EQ(openib_connect_set_priority("mockc", 71), OPAL_SUCCESS); /* by alias */
    CHECK_EQ(openib_connect_set_priority("nope", 1), OPAL_ERR_NOT_FOUND);
    CHECK_EQ(openib_connect_init(), OPAL_SUCCESS);
    n = query_order(order, &rc);
    CHECK_EQ(n, 4);
    CHECK_EQ(order[0], MOCK_A);
    CHECK_EQ(order[1], MOCK_C);
    CHECK_EQ(order[2], MOCK_B);
    CHECK_EQ(mock_cfg[MOCK_A].last_query_priority, 90);

    /* max smaller than the number found: the best ones, the rest released. */
    {
        struct openib_cpc_port port;
        struct openib_cpc_module *mods[2];

        mock_reset();
        mock_port(&port, "mock0", 0);
        CHECK_EQ(openib_connect_query_port(&port, mods, 2, &n), OPAL_SUCCESS);
        CHECK_EQ(n, 2);
        CHECK_EQ(mock_index(mods[0]), MOCK_A);
        CHECK_EQ(mock_index(mods[1]), MOCK_C);
        CHECK_EQ(mock_cfg[MOCK_B].module_finalize_calls, 1);
        CHECK_EQ(mock_cfg[MOCK_D].module_finalize_calls, 1);
        CHECK_EQ(mock_cfg[MOCK_A].module_finalize_calls, 0);
        openib_connect_release_modules(mods, n);
        CHECK_EQ(mock_cfg[MOCK_A].module_finalize_calls, 1);
    }
}

static void test_priority_range(void)
{
    static const int bad[] = { -1, 101, 1000 };
    const struct mock_help *h;
    int i;

    for (i = 0; i < 3; ++i) {
        CHECK_EQ(mock_fresh_framework(), OPAL_SUCCESS);
        openib_connect_set_priority("mock_d", bad[i]);
        CHECK_EQ(openib_connect_init(), OPAL_ERR_BAD_PARAM);
        h = mock_help_find("cpc invalid priority");
        CHECK(NULL != h);
        if (h) {
            CHECK_STR_HAS(h->args[1], "btl_openib_connect_mock_d_priority");
        }
        CHECK_EQ(mock_cfg[MOCK_A].init_calls, 0); /* fails before any CPC runs */
    }
    CHECK_EQ(mock_fresh_framework(), OPAL_SUCCESS);
    openib_connect_set_priority("mock_d", 0);
    openib_connect_set_priority("mock_a", 100);
    CHECK_EQ(openib_connect_init(), OPAL_SUCCESS);
}

static void test_include_exclude(void)
{
    const struct mock_help *h;
    int order[MAXM], n, rc;

    /* include: only those, in priority order. */
    CHECK_EQ(mock_fresh_framework(), OPAL_SUCCESS);
    CHECK_EQ(openib_connect_set_selection("mock_a, mock_c", NULL), OPAL_SUCCESS);
    CHECK_EQ(openib_connect_init(), OPAL_SUCCESS);
    n = query_order(order, &rc);
    CHECK_EQ(n, 2);
    CHECK_EQ(order[0], MOCK_C);
    CHECK_EQ(order[1], MOCK_A);
    CHECK_EQ(mock_cfg[MOCK_B].init_calls, 0);
    CHECK_EQ(mock_cfg[MOCK_B].query_calls, 0);
    CHECK_STR_HAS(openib_connect_last_reasons(), "mock_b: not in btl_openib_cpc_include");
    CHECK_STR_HAS(openib_connect_last_reasons(), "mock_d: not in btl_openib_cpc_include");

    /* include by alias. */
    CHECK_EQ(mock_fresh_framework(), OPAL_SUCCESS);
    openib_connect_set_selection("mockc", "");
    CHECK_EQ(openib_connect_init(), OPAL_SUCCESS);
    n = query_order(order, &rc);
    CHECK_EQ(n, 1);
    CHECK_EQ(order[0], MOCK_C);

    /* exclude, by name and by alias. */
    CHECK_EQ(mock_fresh_framework(), OPAL_SUCCESS);
    openib_connect_set_selection(NULL, "mock_b,mockc");
    CHECK_EQ(openib_connect_init(), OPAL_SUCCESS);
    n = query_order(order, &rc);
    CHECK_EQ(n, 2);
    CHECK_EQ(order[0], MOCK_D);
    CHECK_EQ(order[1], MOCK_A);
    CHECK_EQ(mock_cfg[MOCK_C].init_calls, 0);
    CHECK_STR_HAS(openib_connect_last_reasons(), "mock_c: excluded by btl_openib_cpc_exclude");

    /* unknown name: user error, shown, nothing runs. */
    CHECK_EQ(mock_fresh_framework(), OPAL_SUCCESS);
    openib_connect_set_selection("mock_a,bogus", NULL);
    CHECK_EQ(openib_connect_init(), OPAL_ERR_BAD_PARAM);
    h = mock_help_find("cpc name not found");
    CHECK(NULL != h);
    if (h) {
        CHECK_STR_HAS(h->args[1], "btl_openib_cpc_include");
        CHECK_STR_HAS(h->args[2], "mock_a,bogus");
        CHECK_EQ(strcmp(h->args[3], "bogus"), 0);
        CHECK_STR_HAS(h->args[4], "mock_a, mock_b, mock_c (alias: mockc), mock_d");
    }
    CHECK_EQ(mock_cfg[MOCK_A].init_calls, 0);
    {
        struct openib_cpc_port port;
        struct openib_cpc_module *mods[MAXM];

        mock_port(&port, "mock0", 0);
        CHECK_EQ(openib_connect_query_port(&port, mods, MAXM, &n), OPAL_ERR_NOT_INITIALIZED);
    }

    CHECK_EQ(mock_fresh_framework(), OPAL_SUCCESS);
    openib_connect_set_selection(NULL, "MOCK_A");
    CHECK_EQ(openib_connect_init(), OPAL_ERR_BAD_PARAM);
    h = mock_help_find("cpc name not found");
    CHECK(NULL != h);
    if (h) {
        CHECK_STR_HAS(h->args[1], "btl_openib_cpc_exclude");
        CHECK_EQ(strcmp(h->args[3], "MOCK_A"), 0);
    }

    /* a list with no name at all. */
    CHECK_EQ(mock_fresh_framework(), OPAL_SUCCESS);
    openib_connect_set_selection(" , ", NULL);
    CHECK_EQ(openib_connect_init(), OPAL_ERR_BAD_PARAM);
    CHECK(NULL != mock_help_find("cpc name not found"));

    /* both set: user error even when both are valid. */
    CHECK_EQ(mock_fresh_framework(), OPAL_SUCCESS);
    openib_connect_set_selection("mock_a", "mock_b");
    CHECK_EQ(openib_connect_init(), OPAL_ERR_BAD_PARAM);
    h = mock_help_find("cpc include and exclude");
    CHECK(NULL != h);
    if (h) {
        CHECK_STR_HAS(h->args[1], "mock_a");
        CHECK_STR_HAS(h->args[2], "mock_b");
        CHECK_STR_HAS(h->args[3], "mock_c (alias: mockc)");
    }
    CHECK_EQ(mock_cfg[MOCK_A].init_calls + mock_cfg[MOCK_B].init_calls, 0);
}

static void test_init_not_supported(void)
{
    int order[MAXM], n, rc;

    CHECK_EQ(mock_fresh_framework(), OPAL_SUCCESS);
    mock_cfg[MOCK_B].init_rc = OPAL_ERR_NOT_SUPPORTED;
    mock_cfg[MOCK_B].init_why = "no hardware for mock_b";
    CHECK_EQ(openib_connect_init(), OPAL_SUCCESS);
    CHECK_EQ(mock_nhelps, 0); /* quietly */
    n = query_order(order, &rc);
    CHECK_EQ(n, 3);
    CHECK_EQ(order[0], MOCK_C);
    CHECK_EQ(mock_cfg[MOCK_B].query_calls, 0);
    CHECK_STR_HAS(openib_connect_last_reasons(), "mock_b: no hardware for mock_b");
    /* gone for the process: a second port does not ask it either */
    n = query_order(order, &rc);
    CHECK_EQ(mock_cfg[MOCK_B].query_calls, 0);
    CHECK_EQ(openib_connect_finalize(), OPAL_SUCCESS);
    CHECK_EQ(mock_cfg[MOCK_B].finalize_calls, 0);
    CHECK_EQ(mock_cfg[MOCK_A].finalize_calls, 1);
}

static void test_init_error(void)
{
    const struct mock_help *h;

    CHECK_EQ(mock_fresh_framework(), OPAL_SUCCESS);
    mock_cfg[MOCK_C].init_rc = OPAL_ERR_OUT_OF_RESOURCE;
    mock_cfg[MOCK_C].init_why = "mock_c ran out";
    CHECK_EQ(openib_connect_init(), OPAL_ERR_OUT_OF_RESOURCE);
    h = mock_help_find("cpc init failed");
    CHECK(NULL != h);
    if (h) {
        CHECK_EQ(strcmp(h->args[1], "mock_c"), 0);
        CHECK_STR_HAS(h->args[3], "mock_c ran out");
    }
    /* those already started are shut down again; the later one never ran */
    CHECK_EQ(mock_cfg[MOCK_A].finalize_calls, 1);
    CHECK_EQ(mock_cfg[MOCK_B].finalize_calls, 1);
    CHECK_EQ(mock_cfg[MOCK_D].init_calls, 0);
    CHECK_EQ(mock_cfg[MOCK_C].finalize_calls, 0);
    /* and a finalize after the failed init does not finalize them twice */
    openib_connect_finalize();
    CHECK_EQ(mock_cfg[MOCK_A].finalize_calls, 1);
}

static void test_query_decline_and_error(void)
{
    struct openib_cpc_port port;
    struct openib_cpc_module *mods[MAXM];
    const struct mock_help *h;
    int order[MAXM], n, rc;

    CHECK_EQ(mock_fresh_framework(), OPAL_SUCCESS);
    CHECK_EQ(openib_connect_init(), OPAL_SUCCESS);
    mock_cfg[MOCK_B].query_rc = OPAL_ERR_NOT_SUPPORTED;
    mock_cfg[MOCK_B].query_why = "mock_b dislikes this port";
    n = query_order(order, &rc);
    CHECK_EQ(rc, OPAL_SUCCESS);
    CHECK_EQ(n, 3);
    CHECK_EQ(order[0], MOCK_C);
    CHECK_STR_HAS(openib_connect_last_reasons(), "mock_b: mock_b dislikes this port");
    CHECK_EQ(mock_nhelps, 0);

    /* an error other than NOT_SUPPORTED propagates, shown, nothing leaks */
    mock_reset();
    openib_connect_set_help_hook(mock_help_hook);
    mock_cfg[MOCK_D].query_rc = OPAL_ERR_OUT_OF_RESOURCE;
    mock_port(&port, "mock0", 0);
    n = 99;
    rc = openib_connect_query_port(&port, mods, MAXM, &n);
    CHECK_EQ(rc, OPAL_ERR_OUT_OF_RESOURCE);
    CHECK_EQ(n, 0);
    h = mock_help_find("cpc query failed");
    CHECK(NULL != h);
    if (h) {
        CHECK_EQ(strcmp(h->args[1], "mock_d"), 0);
        CHECK_EQ(strcmp(h->args[2], "mock0"), 0);
    }
    /* a, b and c got modules before d failed: all released */
    CHECK_EQ(mock_cfg[MOCK_A].module_finalize_calls, 1);
    CHECK_EQ(mock_cfg[MOCK_B].module_finalize_calls, 1);
    CHECK_EQ(mock_cfg[MOCK_C].module_finalize_calls, 1);

    /* broken modules are declined with a reason, not trusted */
    mock_reset();
    openib_connect_set_help_hook(mock_help_hook);
    mock_cfg[MOCK_A].bad_priority = true;
    mock_cfg[MOCK_B].wrong_component = true;
    n = query_order(order, &rc);
    CHECK_EQ(rc, OPAL_SUCCESS);
    CHECK_EQ(n, 2);
    CHECK_STR_HAS(openib_connect_last_reasons(), "mock_a: module priority above 100");
    CHECK_STR_HAS(openib_connect_last_reasons(), "mock_b: module does not point back");
}

static void test_no_cpc_for_port(void)
{
    struct openib_cpc_port port;
    struct openib_cpc_module *mods[MAXM];
    const struct mock_help *h;
    const char *r;
    int n = 99, rc;

    CHECK_EQ(mock_fresh_framework(), OPAL_SUCCESS);
    openib_connect_set_selection(NULL, "mock_d");
    mock_cfg[MOCK_A].init_rc = OPAL_ERR_NOT_SUPPORTED;
    mock_cfg[MOCK_A].init_why = "mock_a needs a license";
    mock_cfg[MOCK_B].query_rc = OPAL_ERR_NOT_SUPPORTED;
    mock_cfg[MOCK_B].query_why = "port is not mock_b-capable";
    mock_cfg[MOCK_C].query_rc = OPAL_ERR_NOT_SUPPORTED; /* no reason given */
    CHECK_EQ(openib_connect_init(), OPAL_SUCCESS);
    mock_port(&port, "mlx_test", 0);
    port.port_num = 2;
    rc = openib_connect_query_port(&port, mods, MAXM, &n);
    CHECK_EQ(rc, OPAL_ERR_NOT_AVAILABLE);
    CHECK_EQ(n, 0);
    r = openib_connect_last_reasons();
    CHECK_STR_HAS(r, "mock_a: mock_a needs a license");
    CHECK_STR_HAS(r, "mock_b: port is not mock_b-capable");
    CHECK_STR_HAS(r, "mock_c: declined this port");
    CHECK_STR_HAS(r, "mock_d: excluded by btl_openib_cpc_exclude");
    h = mock_help_find("no cpc for port");
    CHECK(NULL != h);
    if (h) {
        CHECK_EQ(strcmp(h->args[1], "mlx_test"), 0);
        CHECK_EQ(strcmp(h->args[2], "2"), 0);
        CHECK_STR_HAS(h->args[3], "  mock_a: mock_a needs a license\n");
        CHECK_STR_HAS(h->args[3], "  mock_b: port is not mock_b-capable");
        CHECK_STR_HAS(h->args[3], "  mock_d: excluded by btl_openib_cpc_exclude");
    }
    CHECK_STR_HAS(openib_connect_last_summary(),
                  "openib: port mlx_test:2 CPCs usable: none; declined: mock_a (mock_a needs "
                  "a license), mock_b (port is not mock_b-capable), mock_c (declined this "
                  "port), mock_d (excluded by btl_openib_cpc_exclude)");
}

static void test_add_component_checks(void)
{
    struct big {
        struct openib_cpc_component c;
        uint64_t tail[2];
    } big;
    struct openib_cpc_component c;

    CHECK_EQ(mock_fresh_framework(), OPAL_SUCCESS);
    CHECK_EQ(openib_connect_add_component(NULL), OPAL_ERR_BAD_PARAM);

#define GOOD(x) do { x = *mock_components[MOCK_A]; x.name = "fresh"; x.id = 70; } while (0)
    GOOD(c);
    c.size = OPENIB_CPC_COMPONENT_V1_SIZE - 1;
    CHECK_EQ(openib_connect_add_component(&c), OPAL_ERR_BAD_PARAM);
    GOOD(c);
    c.abi_version = 0;
    CHECK_EQ(openib_connect_add_component(&c), OPAL_ERR_BAD_PARAM);
    GOOD(c);
    c.name = "Bad-Name";
    CHECK_EQ(openib_connect_add_component(&c), OPAL_ERR_BAD_PARAM);
    GOOD(c);
    c.name = "";
    CHECK_EQ(openib_connect_add_component(&c), OPAL_ERR_BAD_PARAM);
    GOOD(c);
    c.name = "a_name_that_is_far_too_long_for_a_cpc";
    CHECK_EQ(openib_connect_add_component(&c), OPAL_ERR_BAD_PARAM);
    GOOD(c);
    c.id = 0;
    CHECK_EQ(openib_connect_add_component(&c), OPAL_ERR_BAD_PARAM);
    GOOD(c);
    c.id = 200;
    CHECK_EQ(openib_connect_add_component(&c), OPAL_ERR_BAD_PARAM);
    GOOD(c);
    c.default_priority = 101;
    CHECK_EQ(openib_connect_add_component(&c), OPAL_ERR_BAD_PARAM);
    GOOD(c);
    c.query = NULL;
    CHECK_EQ(openib_connect_add_component(&c), OPAL_ERR_BAD_PARAM);
    GOOD(c);
    c.id = 64; /* mock_a's */
    CHECK_EQ(openib_connect_add_component(&c), OPAL_EXISTS);
    GOOD(c);
    c.name = "mockc"; /* mock_c's alias */
    CHECK_EQ(openib_connect_add_component(&c), OPAL_EXISTS);
    {
        static const char *const clash[] = { "mock_d", NULL };
        GOOD(c);
        c.aliases = clash;
        CHECK_EQ(openib_connect_add_component(&c), OPAL_EXISTS);
    }

    /* Larger than we know (a newer header): fine while the tail is zero,
     * -E2BIG-style refusal (NOT_SUPPORTED) once something is in it. */
    memset(&big, 0, sizeof(big));
    GOOD(big.c);
    big.c.size = sizeof(big);
    big.tail[1] = 1;
    CHECK_EQ(openib_connect_add_component(&big.c), OPAL_ERR_NOT_SUPPORTED);
    big.tail[1] = 0;
    CHECK_EQ(openib_connect_add_component(&big.c), OPAL_SUCCESS);
    CHECK_EQ(strcmp(openib_connect_name(70), "fresh"), 0);
    CHECK_EQ(strcmp(openib_connect_name(99), "unknown"), 0);

    /* after init the set is closed */
    CHECK_EQ(openib_connect_init(), OPAL_SUCCESS);
    GOOD(c);
    c.name = "late";
    c.id = 71;
    CHECK_EQ(openib_connect_add_component(&c), OPAL_ERR_RESOURCE_BUSY);
#undef GOOD

    /* a plug-in that is not there: user-visible, and an error code */
    openib_connect_finalize();
    mock_help_clear();
    CHECK_EQ(openib_connect_load_plugin("/nonexistent/cpc_plugin.so"), OPAL_ERR_NOT_FOUND);
    CHECK(NULL != mock_help_find("cpc plugin failed"));
}

static void test_endpoint_calls_and_verbose(void)
{
    struct openib_cpc_port port;
    struct openib_cpc_module *mods[MAXM];
    struct openib_cpc_endpoint ep;
    int n;

    CHECK_EQ(mock_fresh_framework(), OPAL_SUCCESS);
    nlog = 0;
    openib_connect_set_log_hook(log_hook);
    openib_connect_set_verbose(-1, 10);
    mock_cfg[MOCK_D].query_rc = OPAL_ERR_NOT_SUPPORTED;
    mock_cfg[MOCK_D].query_why = "no mock_d here";
    CHECK_EQ(openib_connect_init(), OPAL_SUCCESS);
    mock_port(&port, "mock0", 0);
    CHECK_EQ(openib_connect_query_port(&port, mods, MAXM, &n), OPAL_SUCCESS);
    CHECK_STR_HAS(log_find("openib: port mock0:1"),
                  "openib: port mock0:1 CPCs usable: mock_b(70), mock_c(50), mock_a(30); "
                  "declined: mock_d (no mock_d here)");

    openib_cpc_endpoint_init(&ep);
    ep.peer_desc = "rank 3 on node17";
    CHECK_EQ(openib_connect_endpoint_init(mods[0], &ep), OPAL_SUCCESS);
    CHECK_EQ(mock_cfg[MOCK_B].endpoint_init_calls, 1);
    mock_cfg[MOCK_B].start_rc = OPAL_ERR_UNREACH;
    CHECK_EQ(openib_connect_start_connect(mods[0], &ep), OPAL_ERR_UNREACH);
    CHECK_EQ(mock_cfg[MOCK_B].start_calls, 1);
    CHECK(mock_cfg[MOCK_B].last_ep == &ep);
    CHECK_STR_HAS(log_find("connecting"),
                  "openib: connecting to rank 3 on node17 with CPC mock_b (priority 70; "
                  "mock module mock_b)");
    CHECK_EQ(openib_connect_endpoint_finalize(mods[0], &ep), OPAL_SUCCESS);
    CHECK_EQ(mock_cfg[MOCK_B].endpoint_finalize_calls, 1);

    /* a struct that is not an endpoint is refused before the CPC sees it */
    ep.size = 3;
    CHECK_EQ(openib_connect_start_connect(mods[0], &ep), OPAL_ERR_BAD_PARAM);
    CHECK_EQ(mock_cfg[MOCK_B].start_calls, 1);
    CHECK_EQ(openib_connect_start_connect(NULL, &ep), OPAL_ERR_BAD_PARAM);

    /* below 10 nothing is printed */
    nlog = 0;
    openib_connect_set_verbose(-1, 9);
    openib_connect_release_modules(mods, n);
    CHECK_EQ(openib_connect_query_port(&port, mods, MAXM, &n), OPAL_SUCCESS);
    CHECK_EQ(nlog, 0);
    /* ...but the summary is still there for whoever asks */
    CHECK_STR_HAS(openib_connect_last_summary(), "declined: mock_d (no mock_d here)");
    openib_connect_release_modules(mods, n);
    openib_connect_set_log_hook(NULL);
    openib_connect_set_verbose(-1, 0);
}

/* The real CPCs as they ship. oob is the lead's real side-channel CPC: its
 * query opens a TCP listener, and it may decline on a host without IPv4, so
 * the deterministic checks run with oob excluded. */
static void test_builtins(void)
{
    struct openib_cpc_port port;
    struct openib_cpc_module *mods[MAXM];
    const struct mock_help *h;
    int n = 0, rc;

    openib_connect_finalize();
    mock_help_clear();
    openib_connect_set_help_hook(mock_help_hook);
    openib_connect_set_selection(NULL, "oob");
    CHECK_EQ(openib_connect_init(), OPAL_SUCCESS); /* no CPC added: the built-ins */
    CHECK_EQ(strcmp(openib_connect_name(OPENIB_CPC_ID_OOB), "oob"), 0);
    CHECK_EQ(strcmp(openib_connect_name(OPENIB_CPC_ID_RDMA_CM), "rdma_cm"), 0);
    CHECK_EQ(strcmp(openib_connect_name(OPENIB_CPC_ID_XOOB), "xoob"), 0);

    mock_port(&port, "rxe0", OPENIB_PORT_CAP_SRQ);
    rc = openib_connect_query_port(&port, mods, MAXM, &n);
    CHECK_EQ(rc, OPAL_ERR_NOT_AVAILABLE);
    CHECK_STR_HAS(openib_connect_last_reasons(), "oob: excluded by btl_openib_cpc_exclude");
    CHECK_STR_HAS(openib_connect_last_reasons(),
                  "rdma_cm: port rxe0:1 has no IPv4 address");
    CHECK_STR_HAS(openib_connect_last_reasons(), "xoob: device rxe0 does not support XRC");
    h = mock_help_find("no cpc for port");
    CHECK(NULL != h);
    if (h) {
        CHECK_STR_HAS(h->args[3], "  xoob: device rxe0 does not support XRC");
    }

    mock_port(&port, "mlx5_0", OPENIB_PORT_CAP_XRC);
    CHECK_EQ(openib_connect_query_port(&port, mods, MAXM, &n), OPAL_ERR_NOT_AVAILABLE);
    /* XRC port, but no BTL handed xoob its XRC SRQs (no device here) */
    CHECK_STR_HAS(openib_connect_last_reasons(),
                  "xoob: no XRC receive queues were set up on mlx5_0:1");
    CHECK_EQ(openib_connect_finalize(), OPAL_SUCCESS);

    /* "rdmacm" is rdma_cm; alone it leaves no CPC on the port */
    openib_connect_set_selection("rdmacm", NULL);
    CHECK_EQ(openib_connect_init(), OPAL_SUCCESS);
    mock_port(&port, "rxe0", 0);
    rc = openib_connect_query_port(&port, mods, MAXM, &n);
    CHECK_EQ(rc, OPAL_ERR_NOT_AVAILABLE);
    CHECK_STR_HAS(openib_connect_last_reasons(), "oob: not in btl_openib_cpc_include");
    CHECK_STR_HAS(openib_connect_last_reasons(), "xoob: not in btl_openib_cpc_include");
    CHECK_STR_HAS(openib_connect_last_reasons(),
                  "rdma_cm: port rxe0:1 has no IPv4 address");
    openib_connect_finalize();

    /* Defaults: oob is what a port without XRC picks today. */
    openib_connect_set_selection(NULL, NULL);
    CHECK_EQ(openib_connect_init(), OPAL_SUCCESS);
    mock_port(&port, "rxe0", 0);
    rc = openib_connect_query_port(&port, mods, MAXM, &n);
    if (OPAL_SUCCESS == rc) {
        CHECK_EQ(n, 1);
        CHECK_EQ(mods[0]->component->id, OPENIB_CPC_ID_OOB);
        CHECK_EQ(mods[0]->priority, 50);
        openib_connect_release_modules(mods, n);
    } else {
        /* only acceptable when oob itself said why (e.g. no IPv4 here) */
        CHECK_EQ(rc, OPAL_ERR_NOT_AVAILABLE);
        CHECK_STR_HAS(openib_connect_last_reasons(), "oob: ");
        fprintf(stderr, "note: oob unusable here: %s\n", openib_connect_last_reasons());
    }
    openib_connect_finalize();

    CHECK(openib_cpc_xoob_component.default_priority > openib_cpc_oob_component.default_priority);
    CHECK(openib_cpc_oob_component.default_priority >
          openib_cpc_rdma_cm_component.default_priority);
}

/* iWARP: oob and xoob move QPs with ibv_modify_qp, which iWARP does not
 * allow; both decline the port in query with a reason that names iWARP and
 * the CPC that can connect it, logged at verbose 1, and the "no CPC" help
 * shown when they are all a user allowed lists that reason. */
static void test_iwarp_declines(void)
{
    struct openib_cpc_port port;
    struct openib_cpc_module *mods[MAXM];
    const struct mock_help *h;
    const char *line;
    int n = 0;

    openib_connect_finalize();
    mock_help_clear();
    openib_connect_set_help_hook(mock_help_hook);
    nlog = 0;
    openib_connect_set_log_hook(log_hook);
    openib_connect_set_verbose(-1, 1);
    openib_connect_set_selection("oob,xoob", NULL);
    CHECK_EQ(openib_connect_init(), OPAL_SUCCESS);
    /* XRC set too: the iWARP reason must win over any other */
    mock_port(&port, "siw0", OPENIB_PORT_CAP_SRQ | OPENIB_PORT_CAP_IWARP | OPENIB_PORT_CAP_XRC);
    CHECK_EQ(openib_connect_query_port(&port, mods, MAXM, &n), OPAL_ERR_NOT_AVAILABLE);
    CHECK_STR_HAS(openib_connect_last_reasons(), "oob: iWARP port: its queue pairs are "
                                                 "connected only by the iWARP connection "
                                                 "manager, through the rdma_cm CPC");
    CHECK_STR_HAS(openib_connect_last_reasons(), "xoob: iWARP port");
    line = log_find("openib: CPC oob declines port siw0:1: iWARP port");
    CHECK(NULL != line);
    CHECK(NULL != log_find("openib: CPC xoob declines port siw0:1: iWARP port"));
    h = mock_help_find("no cpc for port");
    CHECK(NULL != h);
    if (h) {
        CHECK_STR_HAS(h->args[1], "siw0");
        CHECK_STR_HAS(h->args[3], "  oob: iWARP port");
        CHECK_STR_HAS(h->args[3], "  xoob: iWARP port");
    }
    openib_connect_finalize();

    /* the same port without the iWARP bit: oob's iWARP reason is gone (it
     * is usable, or declines for a reason of its own on this host) */
    openib_connect_set_selection("oob", NULL);
    CHECK_EQ(openib_connect_init(), OPAL_SUCCESS);
    mock_port(&port, "rxe0", OPENIB_PORT_CAP_SRQ);
    nlog = 0;
    if (OPAL_SUCCESS == openib_connect_query_port(&port, mods, MAXM, &n)) {
        CHECK_EQ(n, 1);
        openib_connect_release_modules(mods, n);
    }
    CHECK(NULL == strstr(openib_connect_last_reasons(), "iWARP"));
    CHECK(NULL == log_find("declines port"));
    openib_connect_finalize();
    openib_connect_set_selection(NULL, NULL);
    openib_connect_set_log_hook(NULL);
    openib_connect_set_verbose(-1, 0);
    openib_connect_set_help_hook(NULL);
}

int main(void)
{
    test_priority_order();
    test_priority_range();
    test_include_exclude();
    test_init_not_supported();
    test_init_error();
    test_query_decline_and_error();
    test_no_cpc_for_port();
    test_add_component_checks();
    test_endpoint_calls_and_verbose();
    test_builtins();
    test_iwarp_declines();
    openib_connect_finalize();
    return test_report("test_cpc_select");
}

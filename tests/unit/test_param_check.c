/* The parameter range table and the checks between parameters: every
 * row's bounds, the settings issue 12 lists (each rejected naming the
 * parameter, its value, the valid range and why), the relations with the
 * receive queues, and the registered-memory estimates. */
#include "opal_config.h"

#include <inttypes.h>
#include <stdlib.h>

#include "opal/constants.h"

#include "btl_openib/btl_openib_rq_spec.h"
#include "mca/btl_openib_param_check.h"
#include "mca/btl_openib_params.h"
#include "tests/unit/unit.h"

/* A fake variable system: the defaults of the real one, plus overrides. */
struct fake_var {
    const char *name;
    int64_t value;
    bool set;
};

static struct fake_var vars[] = {
    { "verbose", 0 }, { "cq_size", 8192 }, { "max_inline_data", -1 }, { "gid_index", -1 },
    { "ib_timeout", 18 }, { "ib_retry_count", 7 }, { "ib_rnr_retry", 7 },
    { "ib_service_level", 0 }, { "traffic_class", 0 },
    { "max_send_wr", 127 }, { "free_list_num", 64 }, { "free_list_max", -1 },
    { "free_list_inc", 64 }, { "flush_timeout", 120 }, { "max_peers", 0 }, { "poll_batch", 16 },
    { "eager_rdma_num", 16 }, { "eager_rdma_threshold", 16 }, { "eager_rdma_slots", 32 },
    { "eager_rdma_slot_size", 2048 }, { "want_fork_support", -1 },
    { "connect_oob_timeout", 30 }, { "connect_oob_retries", 50 }, { "connect_rdma_cm_port", 0 },
    { "connect_rdma_cm_timeout", 30 }, { "connect_rdma_cm_retries", 50 },
    { "connect_xoob_timeout", 30 }, { "connect_xoob_retries", 50 },
    { "eager_limit", 32760 }, { "rndv_eager_limit", 32760 }, { "max_send_size", 65528 },
    { "rdma_pipeline_send_length", 1048576 }, { "rdma_pipeline_frag_size", 1048576 },
    { "min_rdma_pipeline_size", 1081336 }, { "get_limit", 1 << 30 }, { "put_limit", 1 << 30 },
    { "exclusivity", 1024 }, { "latency", 10 }, { "bandwidth", 10000 },
};
#define NVARS (sizeof(vars) / sizeof(vars[0]))
static int64_t saved[NVARS];

static struct fake_var *var(const char *name)
{
    size_t i;

    for (i = 0; i < NVARS; ++i) {
        if (0 == strcmp(vars[i].name, name)) {
            return &vars[i];
        }
    }
    fprintf(stderr, "test: no fake variable %s\n", name);
    exit(2);
}

static bool fake_get(void *ctx, const char *name, int64_t *value, bool *user_set)
{
    size_t i;

    (void) ctx;
    for (i = 0; i < NVARS; ++i) {
        if (0 == strcmp(vars[i].name, name)) {
            *value = vars[i].value;
            *user_set = vars[i].set;
            return true;
        }
    }
    return false;
}

static void set(const char *name, int64_t value)
{
    var(name)->value = value;
    var(name)->set = true;
}

static void reset(void)
{
    size_t i;

    for (i = 0; i < NVARS; ++i) {
        vars[i].value = saved[i];
        vars[i].set = false;
    }
}

static int check(const char *queues, struct openib_param_error *err,
                 struct openib_param_effective *eff)
{
    struct openib_rq_spec rq;
    char bad[128], why[240];

    if (OPAL_SUCCESS != openib_rq_spec_parse(queues, &rq, bad, sizeof(bad), why, sizeof(why))) {
        fprintf(stderr, "test: bad queues %s: %s\n", queues, why);
        exit(2);
    }
    memset(err, 0, sizeof(*err));
    return openib_params_check(fake_get, NULL, &rq, err, eff);
}

/* NAME=VALUE alone (default queues) is rejected: the error names it, its
 * value, a range containing `range` and a reason containing `why`. */
static void expect_reject(const char *name, int64_t value, const char *range, const char *why)
{
    struct openib_param_error err;
    struct openib_param_effective eff;
    char full[64], v[32];

    reset();
    set(name, value);
    CHECK(OPAL_ERR_BAD_PARAM == check(OPENIB_DEFAULT_RECEIVE_QUEUES, &err, &eff));
    snprintf(full, sizeof(full), "btl_openib_%s", name);
    snprintf(v, sizeof(v), "%" PRId64, value);
    CHECK_STR_CONTAINS(err.name, full);
    CHECK(0 == strcmp(err.value, v));
    CHECK_STR_CONTAINS(err.range, range);
    CHECK_STR_CONTAINS(err.why, why);
    reset();
}

static void expect_accept(const char *name, int64_t value)
{
    struct openib_param_error err;
    struct openib_param_effective eff;
    int rc;

    reset();
    set(name, value);
    rc = check(OPENIB_DEFAULT_RECEIVE_QUEUES, &err, &eff);
    CHECK(OPAL_SUCCESS == rc);
    if (OPAL_SUCCESS != rc) {
        fprintf(stderr, "  %s=%" PRId64 " rejected: %s %s\n", name, value, err.name, err.why);
    }
    reset();
}

static void table_rows(void)
{
    size_t i, j;

    for (i = 0; i < openib_num_param_ranges; ++i) {
        const struct openib_param_range *r = &openib_param_ranges[i];
        char text[160];

        CHECK(r->min <= r->max);
        CHECK(r->why && strlen(r->why) > 10);
        CHECK(openib_param_range_find(r->name) == r);
        for (j = i + 1; j < openib_num_param_ranges; ++j) {
            CHECK(0 != strcmp(r->name, openib_param_ranges[j].name));
        }
        /* the default value of every row is valid */
        {
            int64_t v = 0;
            bool s = false;
            CHECK(fake_get(NULL, r->name, &v, &s));
            CHECK(openib_param_in_range(r, v));
        }
        /* both bounds are valid, one past each is not */
        CHECK(openib_param_in_range(r, r->min));
        if (r->max != INT64_MAX) {
            CHECK(openib_param_in_range(r, r->max - (r->multiple > 1 ? r->max % r->multiple : 0)));
            if (!r->size_max_ok || r->max + 1 != INT64_MAX) {
                CHECK(!openib_param_in_range(r, r->max + 1));
            }
        }
        if (r->min != INT64_MIN) {
            CHECK(!openib_param_in_range(r, r->min - 1));
        }
        openib_param_range_text(r, text, sizeof(text));
        CHECK(strlen(text) > 2);
    }
}

int main(void)
{
    struct openib_param_error err;
    struct openib_param_effective eff;
    char text[64];
    size_t i;

    for (i = 0; i < NVARS; ++i) {
        saved[i] = vars[i].value;
    }
    table_rows();

    /* the defaults pass, and fit the send sizes to the default queues */
    reset();
    CHECK(OPAL_SUCCESS == check(OPENIB_DEFAULT_RECEIVE_QUEUES, &err, &eff));
    CHECK(65528 == eff.max_send_size && 32760 == eff.eager_limit);

    /* P,64,4 (valid for the parser) hung: ob1's rendezvous header did not
     * fit the 56 bytes a fragment could carry. The largest queue must
     * carry 128 bytes after our header; a larger queue next to it is fine. */
    reset();
    CHECK(OPAL_ERR_BAD_PARAM == check("P,64,4", &err, &eff));
    CHECK_STR_CONTAINS(err.name, "btl_openib_receive_queues");
    CHECK_STR_CONTAINS(err.value, "64 B");
    CHECK_STR_CONTAINS(err.range, "at least 136 bytes");
    CHECK_STR_CONTAINS(err.why, "rendezvous header");
    CHECK(OPAL_ERR_BAD_PARAM == check("P,128,4", &err, &eff));
    CHECK(OPAL_SUCCESS == check("P,136,4", &err, &eff));
    CHECK(OPAL_SUCCESS == check("P,64,4:S,65536,64", &err, &eff));

    /* the settings issue 12 lists as silently accepted */
    expect_reject("ib_timeout", 99, "1 to 31", "5-bit");
    expect_reject("ib_timeout", 0, "1 to 31", "stall");
    expect_reject("ib_retry_count", 99, "0 to 7", "3-bit");
    expect_reject("ib_service_level", 16, "0 to 15", "4-bit");
    expect_reject("traffic_class", 256, "0 to 255", "DSCP");
    expect_accept("traffic_class", 104);
    expect_accept("ib_service_level", 3);
    expect_reject("cq_size", 0, "1 to 2147483647", "at least one entry");
    expect_reject("cq_size", -1, "1 to", "at least one entry");
    expect_reject("gid_index", 999, "-1 to 255", "8 bits");
    expect_reject("poll_batch", 0, "1 to 64", "array of 64");
    expect_reject("max_peers", -1, "0 to 2147483647", "least recently used idle connection");
    expect_reject("max_send_size", 1, "128 or more", "ob1's header");
    expect_reject("max_send_wr", 0, "2 to", "held back for credit returns");
    expect_reject("max_send_wr", 1, "2 to",
                  "one send work request per QP is held back for credit returns so flow control "
                  "can always make progress; data needs at least one more");
    expect_reject("free_list_inc", 0, "1 to", "could never grow");
    expect_reject("get_limit", 4294967296LL, "1 to 4294967295", "32 bits");
    expect_reject("put_limit", 1LL << 40, "1 to 4294967295", "32 bits");
    expect_reject("connect_rdma_cm_port", 65536, "0 to 65535", "port number");
    expect_reject("eager_rdma_slot_size", 100, "a multiple of 8 from 64 to 65536", "footer");
    expect_reject("want_fork_support", 2, "-1 to 1", "ibv_fork_init");
    expect_reject("rdma_pipeline_frag_size", 0, "1 or more", "never move");
    expect_accept("ib_timeout", 1);
    expect_accept("ib_timeout", 31);
    expect_accept("max_send_wr", 2);
    expect_accept("poll_batch", 64);
    expect_accept("free_list_num", 0);
    expect_accept("get_limit", INT64_MAX); /* Open MPI's 0 (no limit) arrives as SIZE_MAX */
    expect_accept("get_limit", 4294967295LL);

    /* send sizes against the receive queues and each other */
    reset();
    set("max_send_size", 65529);
    CHECK(OPAL_ERR_BAD_PARAM == check(OPENIB_DEFAULT_RECEIVE_QUEUES, &err, &eff));
    CHECK_STR_CONTAINS(err.name, "btl_openib_max_send_size");
    CHECK_STR_CONTAINS(err.range, "128 to 65528");
    CHECK_STR_CONTAINS(err.why, "65536 bytes");
    reset();
    set("max_send_size", 16384);
    CHECK(OPAL_SUCCESS == check(OPENIB_DEFAULT_RECEIVE_QUEUES, &err, &eff));
    CHECK(16384 == eff.max_send_size && 16384 == eff.eager_limit); /* default eager fits */
    set("eager_limit", 20000);
    CHECK(OPAL_ERR_BAD_PARAM == check(OPENIB_DEFAULT_RECEIVE_QUEUES, &err, &eff));
    CHECK_STR_CONTAINS(err.name, "btl_openib_eager_limit");
    CHECK_STR_CONTAINS(err.range, "128 to 16384");
    reset();
    CHECK(OPAL_SUCCESS == check("P,256,64:S,4096,256", &err, &eff)); /* defaults shrink */
    CHECK(4088 == eff.max_send_size && 4088 == eff.eager_limit);
    set("eager_limit", 8192);
    CHECK(OPAL_ERR_BAD_PARAM == check("P,256,64:S,4096,256", &err, &eff));
    CHECK_STR_CONTAINS(err.range, "from btl_openib_receive_queues");
    reset();
    set("eager_limit", 4096);
    set("rndv_eager_limit", 8192);
    CHECK(OPAL_ERR_BAD_PARAM == check(OPENIB_DEFAULT_RECEIVE_QUEUES, &err, &eff));
    CHECK_STR_CONTAINS(err.name, "btl_openib_rndv_eager_limit");
    CHECK_STR_CONTAINS(err.range, "0 to 4096");

    /* free lists: one that cannot grow, and a cap below what a queue posts */
    reset();
    set("free_list_num", 0);
    set("free_list_inc", 0);
    CHECK(OPAL_ERR_BAD_PARAM == check(OPENIB_DEFAULT_RECEIVE_QUEUES, &err, &eff));
    CHECK_STR_CONTAINS(err.name, "btl_openib_free_list_inc");
    reset();
    set("free_list_max", 10);
    CHECK(OPAL_ERR_BAD_PARAM == check("P,256,64:S,4096,256", &err, &eff));
    CHECK_STR_CONTAINS(err.name, "btl_openib_free_list_max");
    CHECK_STR_CONTAINS(err.range, "-1 (unlimited), or 256 to");
    CHECK_STR_CONTAINS(err.why, "S queue of 4096-byte buffers");
    set("free_list_max", 0);
    CHECK(OPAL_ERR_BAD_PARAM == check("P,256,64:S,4096,256", &err, &eff));
    set("free_list_max", -2);
    CHECK(OPAL_ERR_BAD_PARAM == check("P,256,64:S,4096,256", &err, &eff));
    CHECK_STR_CONTAINS(err.range, "-1 to");
    set("free_list_max", 256);
    CHECK(OPAL_SUCCESS == check("P,256,64:S,4096,256", &err, &eff));
    set("free_list_num", 300);
    CHECK(OPAL_ERR_BAD_PARAM == check("P,256,64:S,4096,256", &err, &eff));
    CHECK_STR_CONTAINS(err.why, "free_list_num (300)");
    reset();

    /* a parameter that is not registered (a CPC not built in) is skipped */
    CHECK(NULL == openib_param_range_find("no_such_parameter"));

    /* registered memory: default queues, 64 fragments per list */
    {
        struct openib_rq_spec rq;
        char bad[128], why[240];
        uint64_t want;

        CHECK(OPAL_SUCCESS == openib_rq_spec_parse("P,256,64,32,16:S,4096,256,64:S,65536,64,16",
                                                   &rq, bad, sizeof(bad), why, sizeof(why)));
        want = (64 + 64) * 256ull + (64 + 256) * 4096ull + (64 + 64) * 65536ull;
        CHECK(want == openib_params_startup_bytes(&rq, 64));
        CHECK(OPENIB_MAILBOX_BYTES + 64 * 256ull + 32 * 2048ull == openib_params_per_peer_bytes(&rq, 16, 32, 2048));
        CHECK(OPENIB_MAILBOX_BYTES + 64 * 256ull == openib_params_per_peer_bytes(&rq, 0, 32, 2048));
        /* the default: one shared queue, small send buffers beside its own */
        CHECK(OPAL_SUCCESS == openib_rq_spec_parse(OPENIB_DEFAULT_RECEIVE_QUEUES, &rq, bad,
                                                   sizeof(bad), why, sizeof(why)));
        CHECK(64 * (256ull + 4096ull) + (64 + 256) * 65536ull == openib_params_startup_bytes(&rq, 64));
        CHECK(OPENIB_MAILBOX_BYTES == openib_params_per_peer_bytes(&rq, 0, 32, 2048));
        CHECK(OPAL_SUCCESS == openib_rq_spec_parse("S,1073741824,4", &rq, bad, sizeof(bad), why,
                                                   sizeof(why)));
        CHECK((64 + 4) * (1ull << 30) + 64 * (256ull + 4096ull) == openib_params_startup_bytes(&rq, 64));
    }
    openib_params_bytes_text(512, text, sizeof(text));
    CHECK(0 == strcmp(text, "512 bytes"));
    openib_params_bytes_text(9 * 1024 * 1024 + 512 * 1024, text, sizeof(text));
    CHECK(0 == strcmp(text, "9.5 MiB"));
    openib_params_bytes_text(68ull << 30, text, sizeof(text));
    CHECK(0 == strcmp(text, "68 GiB"));
    return unit_finish("test_param_check");
}

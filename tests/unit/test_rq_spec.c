/* Receive-queue specification parser: valid forms, old openib forms, and
 * the error text (offending token + reason) for malformed specs. */
#include "opal_config.h"

#include "opal/constants.h"

#include "btl_openib/btl_openib_rq_spec.h"
#include "mca/btl_openib_params.h"
#include "tests/unit/unit.h"

static int parse(const char *s, struct openib_rq_spec *out, char *bad, char *why)
{
    return openib_rq_spec_parse(s, out, bad, 128, why, 160);
}

static void expect_error(const char *spec, const char *bad_token, const char *why_part)
{
    struct openib_rq_spec s;
    char bad[128] = "", why[160] = "";

    CHECK(OPAL_ERR_BAD_PARAM == parse(spec, &s, bad, why));
    CHECK(0 == s.num);
    CHECK_STR_CONTAINS(bad, bad_token);
    CHECK_STR_CONTAINS(why, why_part);
}

int main(void)
{
    struct openib_rq_spec s, t;
    char bad[128], why[160];

    /* the default works and is one shared queue: one QP per peer */
    CHECK(OPAL_SUCCESS == parse(OPENIB_DEFAULT_RECEIVE_QUEUES, &s, bad, why));
    CHECK(1 == s.num);
    CHECK(OPENIB_RQ_SRQ == s.q[0].type && 65536 == s.q[0].size && 256 == s.q[0].count);
    CHECK(64 == s.q[0].low);
    CHECK(openib_rq_spec_has_shared(&s));
    /* the default for devices without SRQs: per peer only, up to the same size */
    CHECK(OPAL_SUCCESS == parse(OPENIB_DEFAULT_RECEIVE_QUEUES_NO_SRQ, &t, bad, why));
    CHECK(3 == t.num);
    CHECK(!openib_rq_spec_has_shared(&t));
    CHECK(s.q[0].size == t.q[2].size);
    for (int q = 0; q < 3; ++q) {
        CHECK(OPENIB_RQ_PP == t.q[q].type);
        CHECK(t.q[q].window > 0 && t.q[q].window < t.q[q].count);
    }

    /* the old openib five-field P form and a short S form */
    CHECK(OPAL_SUCCESS == parse("P,128,256,192,128:S,65536,256", &s, bad, why));
    CHECK(2 == s.num && 128 == s.q[0].window && 256 == s.q[0].count);
    CHECK(64 == s.q[1].low); /* count / 4 */
    CHECK(OPAL_SUCCESS == parse("X,4096,512:X,65536,64", &s, bad, why));

    /* picking a queue by size */
    CHECK(OPAL_SUCCESS == parse("P,256,64,32,16:S,4096,256,64:S,65536,64,16", &s, bad, why));
    CHECK(0 == openib_rq_spec_pick(&s, 1));
    CHECK(0 == openib_rq_spec_pick(&s, 256));
    CHECK(1 == openib_rq_spec_pick(&s, 257));
    CHECK(2 == openib_rq_spec_pick(&s, 65536));
    CHECK(-1 == openib_rq_spec_pick(&s, 65537));

    /* layout hash: equal for equal specs, different when a size changes */
    CHECK(OPAL_SUCCESS == parse("P,256,64:S,4096,256", &s, bad, why));
    CHECK(OPAL_SUCCESS == parse("P,256,64:S,4096,256", &t, bad, why));
    CHECK(openib_rq_spec_hash(&s) == openib_rq_spec_hash(&t));
    CHECK(OPAL_SUCCESS == parse("P,256,64:S,8192,256", &t, bad, why));
    CHECK(openib_rq_spec_hash(&s) != openib_rq_spec_hash(&t));

    /* errors name the token and the reason */
    expect_error("", "", "empty");
    expect_error("Q,256,64", "Q,256,64", "P, S or X");
    expect_error("P,256", "P,256", "<size>,<count>");
    expect_error("P,abc,64", "P,abc,64", "<size> 'abc' is not a non-negative integer");
    expect_error("P,256,-4", "P,256,-4", "not a non-negative integer");
    expect_error("P,16,64", "P,16,64", "buffer size");
    expect_error("P,256,64:S,128,64", "S,128,64", "strictly increase");
    expect_error("P,256,64:X,4096,64", "X,4096,64", "cannot be mixed");
    expect_error("X,256,64:S,4096,64", "S,4096,64", "cannot be mixed");
    expect_error("P,256,64,1,64", "P,256,64,1,64", "credit window");
    expect_error("S,256,64,1,2,3", "S,256,64,1,2,3", "too many fields");
    expect_error("P,256,1", "P,256,1", "at least 2 buffers");
    expect_error("P,1,2:P,2,2:P,3,2:P,4,2:P,5,2:P,6,2:P,7,2:P,8,2:P,9,2", "P,", "buffer size");
    expect_error("P,64,2:P,65,2:P,66,2:P,67,2:P,68,2:P,69,2:P,70,2:P,71,2:P,72,2", "P,72,2",
                 "too many queues");
    /* out of range is said as such, with the maximum (not "not an integer") */
    expect_error("S,4294967296,4", "S,4294967296,4",
                 "<size> 4294967296 is out of range: buffer size must be between 64 and 1073741824");
    expect_error("S,4294967296", "S,4294967296", "<size> 4294967296 is out of range");
    expect_error("S,99999999999999999999999,4", "S,99999", "<size> 99999999999999999999999 is out of range");
    expect_error("S,1073741825,4", "S,1073741825,4", "between 64 and 1073741824 bytes");
    expect_error("S,4096,4294967296", "S,4096,4294967296", "<count> 4294967296 is out of range");
    expect_error("S,4096,16777217", "S,4096,16777217", "at most 16777216 buffers");
    expect_error("S,4096,256,1,4294967296", "S,4096,256,1,4294967296",
                 "<max_pending> 4294967296 is out of range");
    expect_error("P,256,64,4294967296", "P,256,64,4294967296", "<low> 4294967296 is out of range");
    expect_error("P,256,64,1,4294967296", "P,256,64,1,4294967296", "credit window");
    /* P counts: credits are 16-bit serial numbers */
    expect_error("P,256,32768", "P,256,32768",
                 "<count> 32768 is out of range: a P queue holds at most 32767 buffers, because "
                 "credits travel as 16-bit serial numbers");
    expect_error("P,256,65536", "P,256,65536", "at most 32767");
    expect_error("P,256,4294967296", "P,256,4294967296", "at most 32767");
    CHECK(OPAL_SUCCESS == parse("P,256,32767", &s, bad, why));
    CHECK(OPAL_SUCCESS == parse("S,1073741824,4", &s, bad, why));
    /* valid by the parser's rules; the credit window logic handles it */
    CHECK(OPAL_SUCCESS == parse("P,64,4", &s, bad, why));
    return unit_finish("test_rq_spec");
}

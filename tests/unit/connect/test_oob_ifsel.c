/*
 * test_oob_ifsel.c - which addresses the side channel listens on and
 * publishes, on a fake interface list (lo, docker0, virbr0, br-1a2b,
 * veth9, a bridge named lan0, eth0, ib0):
 *   - the default takes eth0 and ib0 only, in list order;
 *   - with only loopback and bridges left, it falls back to loopback and
 *     says so; with nothing at all, nothing;
 *   - include by name and by CIDR (loopback and bridges too when named),
 *     a CIDR that matches nothing here is no error;
 *   - exclude by name and by CIDR, on top of the default;
 *   - errors: both set; an unknown name; bad CIDRs - each naming the
 *     parameter, the wrong part and the valid forms with this host's names.
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <arpa/inet.h>
#include <string.h>

#include "connect/cpc_oob_ifsel.h"
#include "tests/unit/connect/cpc_test.h"

static struct oob_if ifs[8];
static int nif;

static void add(const char *name, const char *addr, bool lo, bool bridge)
{
    struct oob_if *i = &ifs[nif++];

    memset(i, 0, sizeof(*i));
    strcpy(i->name, name);
    inet_pton(AF_INET, addr, &i->addr);
    i->up = true;
    i->loopback = lo;
    i->bridge = bridge;
}

static uint32_t ip(const char *a)
{
    uint32_t v;
    inet_pton(AF_INET, a, &v);
    return v;
}

static int sel(const char *inc, const char *exc, uint32_t *out, bool *fb,
               struct oob_ifsel_err *err)
{
    return oob_ifsel_select(ifs, nif, inc, exc, out, 8, fb, err);
}

static void full_list(void)
{
    nif = 0;
    add("lo", "127.0.0.1", true, false);
    add("docker0", "172.17.0.1", false, true);
    add("virbr0", "192.168.122.1", false, true);
    add("br-1a2b", "172.18.0.1", false, true);
    add("veth9", "169.254.3.3", false, false);
    add("lan0", "10.9.0.1", false, true); /* a bridge by sysfs, whatever its name */
    add("eth0", "10.1.1.5", false, false);
    add("ib0", "192.168.50.5", false, false);
}

static void defaults(void)
{
    struct oob_ifsel_err err;
    uint32_t out[8];
    bool fb = true;

    full_list();
    CHECK_EQ(sel(NULL, NULL, out, &fb, &err), 2);
    CHECK(out[0] == ip("10.1.1.5"));
    CHECK(out[1] == ip("192.168.50.5"));
    CHECK(!fb);
    CHECK_EQ(sel("", " ", out, &fb, &err), 2); /* empty = unset */

    /* only loopback and bridges: loopback, and the caller is told */
    nif = 0;
    add("lo", "127.0.0.1", true, false);
    add("docker0", "172.17.0.1", false, true);
    CHECK_EQ(sel(NULL, NULL, out, &fb, &err), 1);
    CHECK(out[0] == ip("127.0.0.1"));
    CHECK(fb);
    nif = 0;
    CHECK_EQ(sel(NULL, NULL, out, &fb, &err), 0);
    CHECK(!fb);

    CHECK(oob_ifsel_virtual_name("docker0"));
    CHECK(oob_ifsel_virtual_name("virbr1"));
    CHECK(oob_ifsel_virtual_name("br-ffee"));
    CHECK(oob_ifsel_virtual_name("veth12ab"));
    CHECK(!oob_ifsel_virtual_name("eth0"));
    CHECK(!oob_ifsel_virtual_name("ib0"));
    CHECK(!oob_ifsel_virtual_name("bridge")); /* sysfs decides for such names */
}

static void include_exclude(void)
{
    struct oob_ifsel_err err;
    uint32_t out[8];
    bool fb;

    full_list();
    CHECK_EQ(sel("ib0", NULL, out, &fb, &err), 1);
    CHECK(out[0] == ip("192.168.50.5"));
    CHECK_EQ(sel(" lo , docker0", NULL, out, &fb, &err), 2); /* asked for: taken */
    CHECK(out[0] == ip("127.0.0.1"));
    CHECK(out[1] == ip("172.17.0.1"));
    CHECK_EQ(sel("10.0.0.0/8", NULL, out, &fb, &err), 2); /* lan0 and eth0 */
    CHECK(out[0] == ip("10.9.0.1"));
    CHECK(out[1] == ip("10.1.1.5"));
    CHECK_EQ(sel("10.1.1.5/32,ib0", NULL, out, &fb, &err), 2);
    CHECK(out[0] == ip("10.1.1.5"));
    CHECK(out[1] == ip("192.168.50.5"));
    CHECK_EQ(sel("0.0.0.0/0", NULL, out, &fb, &err), nif);
    CHECK_EQ(sel("203.0.113.0/24", NULL, out, &fb, &err), 0); /* other hosts' subnet */

    CHECK_EQ(sel(NULL, "eth0", out, &fb, &err), 1);
    CHECK(out[0] == ip("192.168.50.5"));
    CHECK_EQ(sel(NULL, "192.168.0.0/16", out, &fb, &err), 1);
    CHECK(out[0] == ip("10.1.1.5"));
    /* excluding every real one: the loopback fallback */
    CHECK_EQ(sel(NULL, "eth0,ib0", out, &fb, &err), 1);
    CHECK(out[0] == ip("127.0.0.1"));
    CHECK(fb);
}

static void errors(void)
{
    struct oob_ifsel_err err;
    uint32_t out[8];
    bool fb;
    static const char *const bad_cidr[] = { "10.0.0.0/33", "10.0.0/8", "10.0.0.0/", "10.0.0.0/x",
                                            "300.1.1.1/8", "10.1.1.5" };
    size_t i;

    full_list();
    CHECK_EQ(sel("eth0", "ib0", out, &fb, &err), OPAL_ERR_BAD_PARAM);
    CHECK_STR_HAS(err.topic, "oob if include and exclude");
    CHECK_STR_HAS(err.value, "eth0");
    CHECK_STR_HAS(err.bad, "ib0");
    CHECK_STR_HAS(err.valid, "a.b.c.d/n");

    CHECK_EQ(sel("eth0,eth7", NULL, out, &fb, &err), OPAL_ERR_BAD_PARAM);
    CHECK_STR_HAS(err.topic, "oob if bad value");
    CHECK_STR_HAS(err.param, "btl_openib_oob_if_include");
    CHECK_STR_HAS(err.value, "eth0,eth7");
    CHECK(0 == strcmp(err.bad, "eth7"));
    CHECK_STR_HAS(err.valid, "interface names or CIDR blocks a.b.c.d/n");
    CHECK_STR_HAS(err.valid, "lo, docker0, virbr0, br-1a2b, veth9, lan0, eth0, ib0");

    CHECK_EQ(sel(NULL, "wlan0", out, &fb, &err), OPAL_ERR_BAD_PARAM);
    CHECK_STR_HAS(err.param, "btl_openib_oob_if_exclude");
    CHECK(0 == strcmp(err.bad, "wlan0"));

    for (i = 0; i < sizeof(bad_cidr) / sizeof(bad_cidr[0]); ++i) {
        CHECK_EQ(sel(bad_cidr[i], NULL, out, &fb, &err), OPAL_ERR_BAD_PARAM);
        CHECK(0 == strcmp(err.bad, bad_cidr[i]));
    }
}

static void real_host(void)
{
    struct oob_if real[OOB_IFSEL_MAX_IFS];
    int n = oob_ifsel_scan(real, OOB_IFSEL_MAX_IFS), i;
    bool lo = false;

    /* every host running this test has loopback up */
    for (i = 0; i < n; ++i) {
        lo = lo || (real[i].loopback && real[i].addr == htonl(INADDR_LOOPBACK));
    }
    CHECK(lo);
}

int main(void)
{
    defaults();
    include_exclude();
    errors();
    real_host();
    return test_report("test_oob_ifsel");
}

/*
 * test_cpc_match.c - both ends of a connection pick the same CPC.
 * pick(a, b) == pick(b, a) over many random lists, the pick is the best
 * common CPC under the documented rule, and openib_connect_match() agrees
 * when each side computes it from its own modules and the peer's modex.
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <string.h>

#include "connect/openib_connect.h"
#include "tests/unit/connect/cpc_test.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t) (rng_state % n);
}

/* A list of distinct ids from a small pool (so lists often share some),
 * priorities from a small range (so ties are common). */
static int random_list(struct openib_modex_cpc *l, int max)
{
    int n = (int) rnd((uint32_t) max + 1), i, j;

    for (i = 0; i < n; ++i) {
        uint8_t id;
        bool dup;

        do {
            id = (uint8_t) (1 + rnd(10));
            dup = false;
            for (j = 0; j < i; ++j) {
                dup |= l[j].id == id;
            }
        } while (dup);
        l[i].id = id;
        l[i].priority = (uint8_t) (rnd(4) * 25); /* 0, 25, 50, 75 */
        l[i].blob_len = 0;
    }
    return n;
}

/* The rule spelled out independently: the value every id gets, best wins. */
static int reference_pick(const struct openib_modex_cpc *a, int na,
                          const struct openib_modex_cpc *b, int nb)
{
    int best = -1, best_p = -1, id, i, j;

    for (id = 1; id < 256; ++id) {
        int pa = -1, pb = -1, p;

        for (i = 0; i < na; ++i) {
            if (a[i].id == id && a[i].priority > pa) {
                pa = a[i].priority;
            }
        }
        for (j = 0; j < nb; ++j) {
            if (b[j].id == id && b[j].priority > pb) {
                pb = b[j].priority;
            }
        }
        if (pa < 0 || pb < 0) {
            continue;
        }
        p = pa > pb ? pa : pb;
        if (p > best_p) { /* ids ascend, so ">" keeps the lower id on ties */
            best_p = p;
            best = id;
        }
    }
    return best;
}

static void test_random_agreement(void)
{
    struct openib_modex_cpc a[8], b[8];
    int iter, na, nb, ab, ba, none = 0, some = 0;

    for (iter = 0; iter < 200000; ++iter) {
        na = random_list(a, 8);
        nb = random_list(b, 8);
        ab = openib_connect_pick(a, na, b, nb);
        ba = openib_connect_pick(b, nb, a, na);
        CHECK_EQ(ab, ba);
        CHECK_EQ(ab, reference_pick(a, na, b, nb));
        if (ab < 0) {
            ++none;
        } else {
            ++some;
        }
        if (test_failures > 20) {
            break; /* enough to see what is wrong */
        }
    }
    /* the generator really exercised both outcomes */
    CHECK(none > 1000);
    CHECK(some > 1000);
}

static void test_fixed_cases(void)
{
    const struct openib_modex_cpc a[] = { { 1, 50 }, { 2, 40 }, { 3, 60 } };
    const struct openib_modex_cpc b[] = { { 2, 90 }, { 1, 10 } };
    const struct openib_modex_cpc c[] = { { 3, 60 } };
    const struct openib_modex_cpc d[] = { { 4, 60 } };
    const struct openib_modex_cpc tie1[] = { { 7, 50 }, { 5, 20 } };
    const struct openib_modex_cpc tie2[] = { { 5, 50 }, { 7, 20 } };

    /* rdma_cm (2) counts as 90 because b says so */
    CHECK_EQ(openib_connect_pick(a, 3, b, 2), 2);
    CHECK_EQ(openib_connect_pick(b, 2, a, 3), 2);
    CHECK_EQ(openib_connect_pick(a, 3, c, 1), 3);
    CHECK_EQ(openib_connect_pick(a, 3, d, 1), -1);
    CHECK_EQ(openib_connect_pick(a, 0, b, 2), -1);
    CHECK_EQ(openib_connect_pick(NULL, 3, b, 2), -1);
    /* both at 50 after taking the max: lower id */
    CHECK_EQ(openib_connect_pick(tie1, 2, tie2, 2), 5);
    CHECK_EQ(openib_connect_pick(tie2, 2, tie1, 2), 5);
}

/* Each side: its own modules + the other's modex entry. */
static const struct openib_cpc_component comp_tables[10] = {
#define C(I) { .size = sizeof(struct openib_cpc_component), .abi_version = 2, .name = "c" #I, .id = I }
    C(1), C(2), C(3), C(4), C(5), C(6), C(7), C(8), C(9), C(10),
#undef C
};

static void to_side(const struct openib_modex_cpc *l, int n, struct openib_cpc_module *mods,
                    struct openib_cpc_module **ptrs, struct openib_modex_port *mp)
{
    int i;

    memset(mp, 0, sizeof(*mp));
    for (i = 0; i < n; ++i) {
        openib_cpc_module_init(&mods[i]);
        mods[i].component = &comp_tables[l[i].id - 1];
        mods[i].priority = l[i].priority;
        mods[i].blob_len = 1;
        mods[i].blob[0] = (uint8_t) (100 + l[i].id);
        ptrs[i] = &mods[i];
    }
    CHECK_EQ(openib_connect_modex_fill_port(mp, &(struct openib_cpc_port) OPENIB_CPC_PORT_INITIALIZER,
                                            ptrs, n), OPAL_SUCCESS);
}

static void test_match_both_sides(void)
{
    struct openib_modex_cpc a[8], b[8];
    struct openib_cpc_module ma[8], mb[8], *pa[8], *pb[8];
    struct openib_modex_port xa, xb;
    int iter;

    for (iter = 0; iter < 20000; ++iter) {
        struct openib_cpc_module *la, *lb;
        const struct openib_modex_cpc *ra, *rb;
        int na = random_list(a, 8), nb = random_list(b, 8);
        int rca, rcb, want = openib_connect_pick(a, na, b, nb);

        to_side(a, na, ma, pa, &xa);
        to_side(b, nb, mb, pb, &xb);
        rca = openib_connect_match(pa, na, &xb, &la, &ra); /* side A sees B's modex */
        rcb = openib_connect_match(pb, nb, &xa, &lb, &rb); /* side B sees A's modex */
        if (want < 0) {
            CHECK_EQ(rca, OPAL_ERR_NOT_FOUND);
            CHECK_EQ(rcb, OPAL_ERR_NOT_FOUND);
            continue;
        }
        CHECK_EQ(rca, OPAL_SUCCESS);
        CHECK_EQ(rcb, OPAL_SUCCESS);
        if (OPAL_SUCCESS != rca || OPAL_SUCCESS != rcb) {
            continue;
        }
        CHECK_EQ(la->component->id, want);
        CHECK_EQ(lb->component->id, want);
        CHECK_EQ(ra->id, want);
        CHECK_EQ(rb->id, want);
        /* each side got the other's blob for it */
        CHECK_EQ(ra->blob[0], 100 + want);
        CHECK_EQ(rb->blob[0], 100 + want);
        if (test_failures > 20) {
            break;
        }
    }
}

int main(void)
{
    test_fixed_cases();
    test_random_agreement();
    test_match_both_sides();
    return test_report("test_cpc_match");
}

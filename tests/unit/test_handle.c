/* Registration handles: an RDMA operation is allowed only inside the
 * registered range, edges included, and no address arithmetic wraps; a
 * copy that mixes two handles (read while its source moved) is told from a
 * whole one by its check word; a refusal retried unchanged is counted. */
#include <stdint.h>
#include <string.h>

#include "btl_openib/btl_openib_handle.h"
#include "tests/unit/unit.h"

/* A handle as registration makes it, from a deterministic generator. */
static struct mca_btl_base_registration_handle_t made(uint64_t *seed)
{
    struct mca_btl_base_registration_handle_t h;

    *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
    h.rkey = (uint32_t) (*seed >> 32);
    h.lkey = h.rkey ^ 0x55;
    h.flags = 0;
    h.base = (*seed >> 20) & ~0xfffull; /* page-aligned, like osc's regions */
    *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
    h.len = ((*seed >> 40) + 1) << 12;
    openib_handle_seal(&h);
    return h;
}

/* Every whole handle is taken; every mix of two differing handles, field by
 * field and at each byte boundary (how a move tears a copy), is refused. */
static void check_word(void)
{
    uint64_t seed = 42;
    unsigned torn_taken = 0, whole_refused = 0, mixes = 0;

    for (int i = 0; i < 20000; i++) {
        struct mca_btl_base_registration_handle_t a = made(&seed), b = made(&seed), t, out;

        whole_refused += !openib_handle_take(&a, &out);
        whole_refused += out.rkey != a.rkey || out.base != a.base || out.len != a.len;
        if (a.rkey == b.rkey || a.base == b.base || a.len == b.len) {
            continue;
        }
        for (size_t cut = 1; cut < sizeof(a); cut++) {
            memcpy(&t, &a, cut); /* a's head, b's tail, and the other way */
            memcpy((char *) &t + cut, (char *) &b + cut, sizeof(t) - cut);
            torn_taken += openib_handle_take(&t, &out) && 0 != memcmp(&t, &a, sizeof(t)) &&
                          0 != memcmp(&t, &b, sizeof(t));
            memcpy(&t, &b, cut);
            memcpy((char *) &t + cut, (char *) &a + cut, sizeof(t) - cut);
            torn_taken += openib_handle_take(&t, &out) && 0 != memcmp(&t, &a, sizeof(t)) &&
                          0 != memcmp(&t, &b, sizeof(t));
            mixes += 2;
        }
    }
    CHECK(0 == whole_refused);
    CHECK(mixes > 1000000);
    CHECK(0 == torn_taken);
    {
        /* one region's range with the next one's rkey: the case that passed
         * the range check and was posted */
        struct mca_btl_base_registration_handle_t a = made(&seed), b = made(&seed), out;

        a.rkey = b.rkey;
        CHECK(!openib_handle_take(&a, &out));
        CHECK(openib_handle_covers(&out, out.base, 8)); /* the range alone would pass */
    }
    {
        struct mca_btl_base_registration_handle_t z, out;

        memset(&z, 0, sizeof(z)); /* never registered: refused */
        CHECK(!openib_handle_take(&z, &out));
    }
}

/* The same refusal retried unchanged is counted; any other one starts over. */
static void refusals(void)
{
    struct openib_refusal r = { 0 };
    int a, b;
    uint32_t n = 0;

    CHECK(0 == openib_refusal_note(&r, &a, 0x1000));
    CHECK(1 == openib_refusal_note(&r, &a, 0x1000));
    CHECK(0 == openib_refusal_note(&r, &a, 0x1008)); /* another address */
    CHECK(0 == openib_refusal_note(&r, &b, 0x1008)); /* another handle */
    for (int i = 0; i < OPENIB_REFUSED_RETRIES; i++) {
        n = openib_refusal_note(&r, &b, 0x1008);
    }
    CHECK(OPENIB_REFUSED_RETRIES == n); /* the retry that ends the job */
    r.repeats = UINT32_MAX;
    CHECK(UINT32_MAX == openib_refusal_note(&r, &b, 0x1008)); /* no wrap to "new" */
}

int main(void)
{
    struct mca_btl_base_registration_handle_t h = { .rkey = 7, .base = 0x10000, .len = 0x2000 };

    CHECK(openib_handle_covers(&h, 0x10000, 0x2000));       /* all of it */
    CHECK(openib_handle_covers(&h, 0x10000, 0));
    CHECK(openib_handle_covers(&h, 0x11ff8, 8));            /* the last word */
    CHECK(openib_handle_covers(&h, 0x12000, 0));            /* empty, at the end */
    CHECK(!openib_handle_covers(&h, 0x11ff9, 8));           /* one byte past */
    CHECK(!openib_handle_covers(&h, 0xfff8, 8));            /* before */
    CHECK(!openib_handle_covers(&h, 0x12000, 1));           /* after */
    CHECK(!openib_handle_covers(&h, 0x10000, 0x2001));      /* too long */
    /* the neighbouring page's registration (what osc/rdma's region-table
     * race hands over) */
    CHECK(!openib_handle_covers(&h, 0x12008, 4));
    /* no wrap-around: huge sizes and addresses near the top */
    CHECK(!openib_handle_covers(&h, 0x10000, SIZE_MAX));
    CHECK(!openib_handle_covers(&h, UINT64_MAX - 3, 8));
    h.base = UINT64_MAX - 0xfff;
    h.len = 0x1000;
    CHECK(openib_handle_covers(&h, UINT64_MAX - 7, 8));
    CHECK(!openib_handle_covers(&h, UINT64_MAX - 7, 9));
    check_word();
    refusals();
    return unit_finish("test_handle");
}

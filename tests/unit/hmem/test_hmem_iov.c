/*
 * test_hmem_iov.c - walking an iovec from an offset, in both directions,
 * through the object dispatch and through the built-in defaults: offset
 * past the end, offset exactly at the end, zero-length entries, NULL bases,
 * partial last entry, many entries against a flat reference.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "hmem/openib_hmem_btl.h"
#include "tests/unit/hmem/hmem_test.h"

#define POOL 8192

static unsigned char pool[POOL];    /* the "HMEM" side */
static unsigned char host[POOL + 64];
static struct openib_hmem_object *obj;

static uint32_t rng_state = 12345;
static uint32_t rng(void)
{
    rng_state = rng_state * 1103515245u + 12345u;
    return rng_state >> 8;
}

static void fill_pool(void)
{
    size_t i;

    for (i = 0; i < POOL; ++i) {
        pool[i] = (unsigned char) (i * 7 + 3);
    }
}

/* Reference: the iovec's bytes flattened. */
static size_t flatten(const struct iovec *iov, size_t cnt, unsigned char *out)
{
    size_t i, n = 0;

    for (i = 0; i < cnt; ++i) {
        memcpy(out + n, iov[i].iov_base, iov[i].iov_len);
        n += iov[i].iov_len;
    }
    return n;
}

static void test_basic_edges(void)
{
    struct iovec one = { pool, 100 };
    struct iovec three[3] = { { pool, 10 }, { pool + 100, 20 }, { pool + 200, 30 } };
    ssize_t rc;

    fill_pool();
    /* Whole, middle, len larger than what is left (partial last entry). */
    memset(host, 0, sizeof(host));
    CHECK_EQ(openib_hmem_copy_from_iov(obj, OPENIB_HMEM_SYSTEM, 0, host, 100, &one, 1, 0), 100);
    CHECK(0 == memcmp(host, pool, 100));
    CHECK_EQ(openib_hmem_copy_from_iov(obj, OPENIB_HMEM_SYSTEM, 0, host, 10, &one, 1, 45), 10);
    CHECK(0 == memcmp(host, pool + 45, 10));
    memset(host, 0xCC, sizeof(host));
    CHECK_EQ(openib_hmem_copy_from_iov(obj, OPENIB_HMEM_SYSTEM, 0, host, 500, &one, 1, 90), 10);
    CHECK(0 == memcmp(host, pool + 90, 10));
    CHECK_EQ(host[10], 0xCC); /* nothing written past what was copied */

    /* Offset exactly at the end: 0 bytes, not an error. Past it: -EINVAL,
     * even for a zero-length request. */
    CHECK_EQ(openib_hmem_copy_from_iov(obj, OPENIB_HMEM_SYSTEM, 0, host, 5, &one, 1, 100), 0);
    CHECK_EQ(openib_hmem_copy_from_iov(obj, OPENIB_HMEM_SYSTEM, 0, host, 5, &one, 1, 101), -EINVAL);
    CHECK_EQ(openib_hmem_copy_from_iov(obj, OPENIB_HMEM_SYSTEM, 0, host, 0, &one, 1, 101), -EINVAL);
    CHECK_EQ(openib_hmem_copy_from_iov(obj, OPENIB_HMEM_SYSTEM, 0, host, 0, &one, 1, 50), 0);
    CHECK_EQ(openib_hmem_copy_from_iov(obj, OPENIB_HMEM_SYSTEM, 0, host, 5, three, 3, 60), 0);
    CHECK_EQ(openib_hmem_copy_from_iov(obj, OPENIB_HMEM_SYSTEM, 0, host, 5, three, 3, 61), -EINVAL);
    CHECK_EQ(openib_hmem_copy_from_iov(obj, OPENIB_HMEM_SYSTEM, 0, host, 5, three, 3, UINT64_MAX),
             -EINVAL);
    CHECK_EQ(openib_hmem_copy_to_iov(obj, OPENIB_HMEM_SYSTEM, 0, three, 3, 61, host, 5), -EINVAL);
    CHECK_EQ(openib_hmem_copy_to_iov(obj, OPENIB_HMEM_SYSTEM, 0, three, 3, 60, host, 5), 0);
    /* An empty iovec: offset 0 copies nothing, anything else is past it. */
    CHECK_EQ(openib_hmem_copy_from_iov(obj, OPENIB_HMEM_SYSTEM, 0, host, 5, NULL, 0, 0), 0);
    CHECK_EQ(openib_hmem_copy_from_iov(obj, OPENIB_HMEM_SYSTEM, 0, host, 5, NULL, 0, 1), -EINVAL);

    /* Offsets landing on entry boundaries and inside later entries. */
    memset(host, 0, sizeof(host));
    rc = openib_hmem_copy_from_iov(obj, OPENIB_HMEM_SYSTEM, 0, host, 25, three, 3, 10);
    CHECK_EQ(rc, 25);
    CHECK(0 == memcmp(host, pool + 100, 20));
    CHECK(0 == memcmp(host + 20, pool + 200, 5));
    rc = openib_hmem_copy_from_iov(obj, OPENIB_HMEM_SYSTEM, 0, host, 100, three, 3, 35);
    CHECK_EQ(rc, 25);
    CHECK(0 == memcmp(host, pool + 205, 25));

    /* Bad arguments. */
    CHECK_EQ(openib_hmem_copy_from_iov(obj, OPENIB_HMEM_SYSTEM, 0, host, 5, NULL, 2, 0), -EINVAL);
    CHECK_EQ(openib_hmem_copy_from_iov(obj, OPENIB_HMEM_SYSTEM, 0, NULL, 5, &one, 1, 0), -EINVAL);
    CHECK_EQ(openib_hmem_copy_from_iov(obj, OPENIB_HMEM_SYSTEM, 0, NULL, 0, &one, 1, 0), 0);
    CHECK_EQ(openib_hmem_copy_from_iov(obj, OPENIB_HMEM_SYSTEM, 0, host, (size_t) SSIZE_MAX + 1,
                                       &one, 1, 0),
             -EINVAL);
    CHECK_EQ(openib_hmem_copy_from_iov(NULL, OPENIB_HMEM_SYSTEM, 0, host, 5, &one, 1, 0), -EINVAL);
}

static void test_zero_length_and_null(void)
{
    struct iovec z[7] = {
        { NULL, 0 }, { pool, 0 }, { pool + 10, 5 }, { NULL, 0 },
        { pool + 50, 3 }, { pool + 60, 0 }, { NULL, 0 },
    };
    struct iovec holes[3] = { { pool, 4 }, { NULL, 4 }, { pool + 8, 4 } };
    unsigned char back[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };

    fill_pool();
    memset(host, 0, sizeof(host));
    CHECK_EQ(openib_hmem_copy_from_iov(obj, OPENIB_HMEM_SYSTEM, 0, host, 100, z, 7, 0), 8);
    CHECK(0 == memcmp(host, pool + 10, 5));
    CHECK(0 == memcmp(host + 5, pool + 50, 3));
    /* Offset at the boundary before zero-length entries. */
    CHECK_EQ(openib_hmem_copy_from_iov(obj, OPENIB_HMEM_SYSTEM, 0, host, 100, z, 7, 5), 3);
    CHECK(0 == memcmp(host, pool + 50, 3));
    CHECK_EQ(openib_hmem_copy_from_iov(obj, OPENIB_HMEM_SYSTEM, 0, host, 100, z, 7, 8), 0);
    CHECK_EQ(openib_hmem_copy_from_iov(obj, OPENIB_HMEM_SYSTEM, 0, host, 100, z, 7, 9), -EINVAL);
    /* Only zero-length entries. */
    CHECK_EQ(openib_hmem_copy_from_iov(obj, OPENIB_HMEM_SYSTEM, 0, host, 100, z, 2, 0), 0);

    /* A NULL base in an entry that would be touched: -EFAULT; not touched
     * (the copy ends before it): fine. */
    CHECK_EQ(openib_hmem_copy_from_iov(obj, OPENIB_HMEM_SYSTEM, 0, host, 12, holes, 3, 0), -EFAULT);
    CHECK_EQ(openib_hmem_copy_from_iov(obj, OPENIB_HMEM_SYSTEM, 0, host, 4, holes, 3, 0), 4);
    CHECK_EQ(openib_hmem_copy_from_iov(obj, OPENIB_HMEM_SYSTEM, 0, host, 4, holes, 3, 8), 4);

    /* copy_to through zero-length entries lands in the right places. */
    fill_pool();
    CHECK_EQ(openib_hmem_copy_to_iov(obj, OPENIB_HMEM_SYSTEM, 0, z, 7, 3, back, 8), 5);
    CHECK_EQ(pool[13], 1);
    CHECK_EQ(pool[14], 2);
    CHECK_EQ(pool[50], 3);
    CHECK_EQ(pool[52], 5);
    CHECK_EQ(pool[53], (unsigned char) (53 * 7 + 3)); /* untouched */
}

/* Many entries of random sizes (zero included), random offsets and
 * lengths, both directions, against the flattened reference. */
static void test_many_entries(void)
{
    enum { N = 1000 };
    static struct iovec iov[N];
    static unsigned char flat[POOL], before[POOL];
    size_t total = 0, i, off, len, expect;
    int round;
    ssize_t rc;

    for (i = 0; i < N; ++i) {
        size_t n = (rng() % 4 == 0) ? 0 : rng() % 13 + 1;

        if (total + n > POOL) {
            n = 0;
        }
        iov[i].iov_base = pool + total;
        iov[i].iov_len = n;
        total += n;
    }
    CHECK(total > 4000);
    for (round = 0; round < 300; ++round) {
        fill_pool();
        flatten(iov, N, flat);
        off = rng() % (total + 1);
        len = rng() % 700;
        if (round % 50 == 0) {
            len = total; /* long requests run into the end */
        }
        expect = total - off < len ? total - off : len;

        memset(host, 0xCC, sizeof(host));
        rc = openib_hmem_copy_from_iov(obj, OPENIB_HMEM_SYSTEM, 0, host, len, iov, N, off);
        CHECK_EQ(rc, expect);
        CHECK(0 == memcmp(host, flat + off, expect));
        CHECK_EQ(host[expect], 0xCC);

        for (i = 0; i < len; ++i) {
            host[i] = (unsigned char) rng();
        }
        memcpy(before, pool, POOL);
        rc = openib_hmem_copy_to_iov(obj, OPENIB_HMEM_SYSTEM, 0, iov, N, off, host, len);
        CHECK_EQ(rc, expect);
        flatten(iov, N, flat);
        CHECK(0 == memcmp(flat + off, host, expect));
        CHECK(0 == memcmp(flat, before, off)); /* before the offset: untouched */
        CHECK(0 == memcmp(flat + off + expect, before + off + expect, total - off - expect));
        if (unit_failures) {
            fprintf(stderr, "round %d: off %zu len %zu total %zu\n", round, off, len, total);
            break;
        }
    }
}

/* The built-in defaults themselves (what an override chains to). */
static void test_defaults_direct(void)
{
    struct iovec two[2] = { { pool, 8 }, { pool + 16, 8 } };
    unsigned char in[12] = "abcdefghijk";

    fill_pool();
    CHECK_EQ(openib_hmem_default_copy_to_hmem_iov(OPENIB_HMEM_SYSTEM, 0, two, 2, 4, in, 12), 12);
    CHECK(0 == memcmp(pool + 4, in, 4));
    CHECK(0 == memcmp(pool + 16, in + 4, 8));
    memset(host, 0, 16);
    CHECK_EQ(openib_hmem_default_copy_from_hmem_iov(host, 16, OPENIB_HMEM_SYSTEM, 0, two, 2, 2), 14);
    CHECK(0 == memcmp(host + 2, in, 12));

    /* Interfaces without a built-in copy, and unknown ones. */
    CHECK_EQ(openib_hmem_default_copy_from_hmem_iov(host, 4, OPENIB_HMEM_ROCM, 0, two, 2, 0),
             -ENOSYS);
    CHECK_EQ(openib_hmem_default_copy_to_hmem_iov(OPENIB_HMEM_ZE, 0, two, 2, 0, in, 4), -ENOSYS);
    CHECK_EQ(openib_hmem_copy_from_iov(obj, (enum openib_hmem_iface) 42, 0, host, 4, two, 2, 0),
             -EINVAL);
    if (!openib_hmem_iface_available(OPENIB_HMEM_CUDA)) {
        CHECK_EQ(openib_hmem_copy_from_iov(obj, OPENIB_HMEM_CUDA, 0, host, 4, two, 2, 0), -ENODEV);
        CHECK_EQ(openib_hmem_copy_to_iov(obj, OPENIB_HMEM_CUDA, 0, two, 2, 0, in, 4), -ENODEV);
    }
}

int main(void)
{
    if (0 != openib_hmem_object_create(NULL, "iov", &obj)) {
        return 1;
    }
    test_basic_edges();
    test_zero_length_and_null();
    test_many_entries();
    test_defaults_direct();
    openib_hmem_object_free(obj);
    return unit_finish("test_hmem_iov");
}

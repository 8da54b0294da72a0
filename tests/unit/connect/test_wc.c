/*
 * test_wc.c - the versioned completion record (include/openib/openib_wc.h):
 * building in any order, walking, unknown versions and flags, truncation.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "openib/openib_wc.h"
#include "tests/unit/connect/cpc_test.h"

#define FULL_SIZE (24 + 16 + 8 + 8)

static const struct openib_wc_addr ADDR = {
    .src_qp = 0x123456, .slid = 0x77, .pkey_index = 3, .port_num = 1, .sl = 2,
    .gid_index = 5, .wc_flags = 1,
};
static const struct openib_wc_imm IMM = { .imm_data = 0xdeadbeef };
static const struct openib_wc_ts TS = { .timestamp = 0x0102030405060708ull };

/* A full record, extensions added in the order given. */
static size_t build(uint8_t *buf, size_t cap, const uint32_t *order, int n)
{
    struct openib_wc_builder b;
    int i, rc;

    rc = openib_wc_build_begin(&b, buf, cap, 42, 0, 128, 4096);
    CHECK_EQ(rc, OPENIB_WC_OK);
    for (i = 0; i < n; ++i) {
        const void *ext = order[i] == OPENIB_WC_EXT_ADDR ? (const void *) &ADDR
                        : order[i] == OPENIB_WC_EXT_IMM  ? (const void *) &IMM
                                                         : (const void *) &TS;
        rc = openib_wc_build_add(&b, order[i], ext, openib_wc_ext_size(order[i]));
        CHECK_EQ(rc, OPENIB_WC_OK);
    }
    return openib_wc_build_len(&b);
}

static void set_magic(uint8_t *buf, uint32_t magic)
{
    memcpy(buf + offsetof(struct openib_wc, magic), &magic, sizeof(magic));
}

static uint32_t get_magic(const uint8_t *buf)
{
    uint32_t m;
    memcpy(&m, buf + offsetof(struct openib_wc, magic), sizeof(m));
    return m;
}

static void test_sizes(void)
{
    CHECK_EQ(openib_wc_ext_size(OPENIB_WC_EXT_ADDR), 16);
    CHECK_EQ(openib_wc_ext_size(OPENIB_WC_EXT_IMM), 8);
    CHECK_EQ(openib_wc_ext_size(OPENIB_WC_EXT_TS), 8);
    CHECK_EQ(openib_wc_ext_size(1u << 11), 0);
    CHECK_EQ(openib_wc_ext_size(1u << 3), 0);   /* a version bit, not a flag */
    CHECK_EQ(openib_wc_ext_size(OPENIB_WC_EXT_ADDR | OPENIB_WC_EXT_IMM), 0);
    CHECK_EQ(openib_wc_ext_size(0), 0);
    CHECK_EQ(openib_wc_record_size(OPENIB_WC_VERSION), 24);
    CHECK_EQ(openib_wc_record_size(OPENIB_WC_VERSION | OPENIB_WC_EXT_KNOWN), FULL_SIZE);
    CHECK_EQ(openib_wc_record_size(2), OPENIB_WC_ERR_UNKNOWN);
    CHECK_EQ(openib_wc_record_size(OPENIB_WC_VERSION | (1u << 11)), OPENIB_WC_ERR_UNKNOWN);
}

static void test_base_only(void)
{
    uint8_t buf[64];
    struct openib_wc base;
    struct openib_wc_iter it;
    const void *ext;
    size_t len = build(buf, sizeof(buf), NULL, 0);

    CHECK_EQ(len, 24);
    CHECK_EQ(openib_wc_check(buf, len), 24);
    CHECK_EQ(openib_wc_base(buf, len, &base), OPENIB_WC_OK);
    CHECK_EQ(base.id, 42);
    CHECK_EQ(base.opcode, 128);
    CHECK_EQ(base.length, 4096);
    CHECK_EQ(base.magic, OPENIB_WC_VERSION);
    CHECK_EQ(openib_wc_find(buf, len, OPENIB_WC_EXT_IMM, &ext, NULL), OPENIB_WC_ERR_NOT_FOUND);
    CHECK_EQ(openib_wc_iter_init(&it, buf, len), OPENIB_WC_OK);
    CHECK_EQ(openib_wc_iter_next(&it, NULL, NULL, NULL), 0);
}

static void check_full_record(const uint8_t *buf, size_t len)
{
    struct openib_wc_addr a;
    struct openib_wc_imm im;
    struct openib_wc_ts ts;
    struct openib_wc_iter it;
    const uint32_t want[] = { OPENIB_WC_EXT_ADDR, OPENIB_WC_EXT_IMM, OPENIB_WC_EXT_TS };
    const void *ext;
    size_t ext_len, off = 24;
    uint32_t flag;
    int i;

    CHECK_EQ(openib_wc_check(buf, len), FULL_SIZE);
    CHECK_EQ(get_magic(buf), OPENIB_WC_VERSION | OPENIB_WC_EXT_KNOWN);
    CHECK_EQ(openib_wc_get_addr(buf, len, &a), OPENIB_WC_OK);
    CHECK(0 == memcmp(&a, &ADDR, sizeof(a)));
    CHECK_EQ(openib_wc_get_imm(buf, len, &im), OPENIB_WC_OK);
    CHECK_EQ(im.imm_data, 0xdeadbeef);
    CHECK_EQ(openib_wc_get_ts(buf, len, &ts), OPENIB_WC_OK);
    CHECK_EQ(ts.timestamp, 0x0102030405060708ull);

    /* Iteration: flag order, each right after the previous one. */
    CHECK_EQ(openib_wc_iter_init(&it, buf, len), OPENIB_WC_OK);
    for (i = 0; i < 3; ++i) {
        CHECK_EQ(openib_wc_iter_next(&it, &flag, &ext, &ext_len), 1);
        CHECK_EQ(flag, want[i]);
        CHECK((const uint8_t *) ext == buf + off);
        CHECK_EQ(ext_len, openib_wc_ext_size(want[i]));
        off += ext_len;
    }
    CHECK_EQ(openib_wc_iter_next(&it, &flag, &ext, &ext_len), 0);
}

/* Every insertion order gives the same bytes as the in-order build. */
static void test_order(void)
{
    static const uint32_t orders[6][3] = {
        { OPENIB_WC_EXT_ADDR, OPENIB_WC_EXT_IMM, OPENIB_WC_EXT_TS },
        { OPENIB_WC_EXT_ADDR, OPENIB_WC_EXT_TS, OPENIB_WC_EXT_IMM },
        { OPENIB_WC_EXT_IMM, OPENIB_WC_EXT_ADDR, OPENIB_WC_EXT_TS },
        { OPENIB_WC_EXT_IMM, OPENIB_WC_EXT_TS, OPENIB_WC_EXT_ADDR },
        { OPENIB_WC_EXT_TS, OPENIB_WC_EXT_ADDR, OPENIB_WC_EXT_IMM },
        { OPENIB_WC_EXT_TS, OPENIB_WC_EXT_IMM, OPENIB_WC_EXT_ADDR },
    };
    uint8_t ref[FULL_SIZE], buf[FULL_SIZE];
    int i;

    CHECK_EQ(build(ref, sizeof(ref), orders[0], 3), FULL_SIZE);
    check_full_record(ref, sizeof(ref));
    for (i = 1; i < 6; ++i) {
        memset(buf, 0xee, sizeof(buf));
        CHECK_EQ(build(buf, sizeof(buf), orders[i], 3), FULL_SIZE);
        CHECK(0 == memcmp(buf, ref, sizeof(ref)));
        check_full_record(buf, sizeof(buf));
    }

    /* A subset: IMM only sits right after the base. */
    {
        const uint32_t only_ts_imm[] = { OPENIB_WC_EXT_TS, OPENIB_WC_EXT_IMM };
        const void *ext;
        size_t len = build(buf, sizeof(buf), only_ts_imm, 2);

        CHECK_EQ(len, 24 + 8 + 8);
        CHECK_EQ(openib_wc_find(buf, len, OPENIB_WC_EXT_IMM, &ext, NULL), OPENIB_WC_OK);
        CHECK((const uint8_t *) ext == buf + 24);
        CHECK_EQ(openib_wc_find(buf, len, OPENIB_WC_EXT_TS, &ext, NULL), OPENIB_WC_OK);
        CHECK((const uint8_t *) ext == buf + 32);
        CHECK_EQ(openib_wc_find(buf, len, OPENIB_WC_EXT_ADDR, &ext, NULL),
                 OPENIB_WC_ERR_NOT_FOUND);
    }
}

static void test_builder_errors(void)
{
    uint8_t buf[FULL_SIZE], copy[FULL_SIZE];
    struct openib_wc_builder b;

    CHECK_EQ(openib_wc_build_begin(&b, buf, 23, 1, 0, 0, 0), OPENIB_WC_ERR_NOSPACE);
    CHECK_EQ(openib_wc_build_begin(&b, buf, 24 + 16, 1, 0, 0, 0), OPENIB_WC_OK);
    CHECK_EQ(openib_wc_build_add(&b, OPENIB_WC_EXT_IMM, &IMM, sizeof(IMM)), OPENIB_WC_OK);
    memcpy(copy, buf, sizeof(buf));
    /* 8 bytes left: ADDR (16) does not fit and must leave the record intact. */
    CHECK_EQ(openib_wc_build_add(&b, OPENIB_WC_EXT_ADDR, &ADDR, sizeof(ADDR)),
             OPENIB_WC_ERR_NOSPACE);
    CHECK(0 == memcmp(copy, buf, 24 + 8));
    CHECK_EQ(openib_wc_build_len(&b), 32);
    CHECK_EQ(openib_wc_build_add(&b, OPENIB_WC_EXT_IMM, &IMM, sizeof(IMM)), OPENIB_WC_ERR_INVAL);
    CHECK_EQ(openib_wc_build_add(&b, 1u << 11, &TS, 8), OPENIB_WC_ERR_INVAL);
    CHECK_EQ(openib_wc_build_add(&b, 1u << 2, &TS, 8), OPENIB_WC_ERR_INVAL);
    CHECK_EQ(openib_wc_build_add(&b, OPENIB_WC_EXT_TS | OPENIB_WC_EXT_IMM, &TS, 8),
             OPENIB_WC_ERR_INVAL);
    CHECK_EQ(openib_wc_build_add(&b, OPENIB_WC_EXT_TS, &TS, 4), OPENIB_WC_ERR_INVAL);
    CHECK_EQ(openib_wc_build_add(&b, OPENIB_WC_EXT_TS, &TS, 8), OPENIB_WC_OK);
    CHECK_EQ(openib_wc_build_len(&b), 40);
    CHECK_EQ(openib_wc_check(buf, 40), 40);
}

/* Every prefix of a full record: nothing past len is ever returned. */
static void test_truncation(void)
{
    const uint32_t order[] = { OPENIB_WC_EXT_ADDR, OPENIB_WC_EXT_IMM, OPENIB_WC_EXT_TS };
    const size_t ends[3] = { 24 + 16, 24 + 16 + 8, FULL_SIZE };
    const uint32_t flags[3] = { OPENIB_WC_EXT_ADDR, OPENIB_WC_EXT_IMM, OPENIB_WC_EXT_TS };
    uint8_t full[FULL_SIZE];
    size_t len;
    int i;

    build(full, sizeof(full), order, 3);
    for (len = 0; len < FULL_SIZE; ++len) {
        /* A heap copy of exactly len bytes, so a reader overrunning it shows
         * up under valgrind/ASan, not just in the return codes. */
        uint8_t *p = malloc(len ? len : 1);
        struct openib_wc_iter it;
        struct openib_wc base;
        const void *ext;
        int rc, seen = 0;

        memcpy(p, full, len);
        CHECK_EQ(openib_wc_check(p, len), OPENIB_WC_ERR_TRUNCATED);
        if (len < 24) {
            CHECK_EQ(openib_wc_base(p, len, &base), OPENIB_WC_ERR_TRUNCATED);
            CHECK_EQ(openib_wc_iter_init(&it, p, len), OPENIB_WC_ERR_TRUNCATED);
            CHECK_EQ(openib_wc_find(p, len, OPENIB_WC_EXT_ADDR, &ext, NULL),
                     OPENIB_WC_ERR_TRUNCATED);
            free(p);
            continue;
        }
        CHECK_EQ(openib_wc_base(p, len, &base), OPENIB_WC_OK);
        for (i = 0; i < 3; ++i) {
            rc = openib_wc_find(p, len, flags[i], &ext, NULL);
            CHECK_EQ(rc, len >= ends[i] ? OPENIB_WC_OK : OPENIB_WC_ERR_TRUNCATED);
        }
        CHECK_EQ(openib_wc_iter_init(&it, p, len), OPENIB_WC_OK);
        while (1 == (rc = openib_wc_iter_next(&it, NULL, &ext, NULL))) {
            ++seen;
        }
        CHECK_EQ(rc, OPENIB_WC_ERR_TRUNCATED);
        CHECK_EQ(seen, len >= ends[1] ? 2 : len >= ends[0] ? 1 : 0);
        free(p);
    }
}

static void test_unknown_version(void)
{
    const uint32_t order[] = { OPENIB_WC_EXT_ADDR };
    uint8_t buf[FULL_SIZE];
    struct openib_wc_iter it;
    struct openib_wc base;
    const void *ext;
    uint32_t v;
    size_t len = build(buf, sizeof(buf), order, 1);

    for (v = 0; v < 256; ++v) {
        if (v == OPENIB_WC_VERSION) {
            continue;
        }
        set_magic(buf, v | OPENIB_WC_EXT_ADDR);
        CHECK_EQ(openib_wc_check(buf, len), OPENIB_WC_ERR_UNKNOWN);
        CHECK_EQ(openib_wc_base(buf, len, &base), OPENIB_WC_ERR_UNKNOWN);
        CHECK_EQ(openib_wc_find(buf, len, OPENIB_WC_EXT_ADDR, &ext, NULL), OPENIB_WC_ERR_UNKNOWN);
        CHECK_EQ(openib_wc_iter_init(&it, buf, len), OPENIB_WC_ERR_UNKNOWN);
    }
}

/* A newer writer set a flag we do not know (above ours) and appended its
 * record: the known records are still found, the rest is unreadable. */
static void test_unknown_flags(void)
{
    const uint32_t order[] = { OPENIB_WC_EXT_ADDR, OPENIB_WC_EXT_IMM, OPENIB_WC_EXT_TS };
    const uint32_t unknown[] = { 1u << 11, 1u << 20, 1u << 31 };
    uint8_t buf[FULL_SIZE + 16];
    struct openib_wc_iter it;
    struct openib_wc_ts ts;
    const void *ext;
    int i, rc, seen;

    for (i = 0; i < 3; ++i) {
        size_t len = build(buf, sizeof(buf), order, 3);

        memset(buf + len, 0x5a, 16); /* the newer writer's record */
        len += 16;
        set_magic(buf, OPENIB_WC_VERSION | OPENIB_WC_EXT_KNOWN | unknown[i]);
        CHECK_EQ(openib_wc_check(buf, len), OPENIB_WC_ERR_UNKNOWN);
        CHECK_EQ(openib_wc_record_size(get_magic(buf)), OPENIB_WC_ERR_UNKNOWN);
        CHECK_EQ(openib_wc_get_ts(buf, len, &ts), OPENIB_WC_OK);
        CHECK_EQ(ts.timestamp, TS.timestamp);
        CHECK_EQ(openib_wc_find(buf, len, OPENIB_WC_EXT_ADDR, &ext, NULL), OPENIB_WC_OK);
        CHECK_EQ(openib_wc_find(buf, len, unknown[i], &ext, NULL), OPENIB_WC_ERR_INVAL);

        CHECK_EQ(openib_wc_iter_init(&it, buf, len), OPENIB_WC_OK);
        seen = 0;
        while (1 == (rc = openib_wc_iter_next(&it, NULL, NULL, NULL))) {
            ++seen;
        }
        CHECK_EQ(seen, 3);
        CHECK_EQ(rc, OPENIB_WC_ERR_UNKNOWN);
        /* And it stays an error rather than pretending the record ended. */
        CHECK_EQ(openib_wc_iter_next(&it, NULL, NULL, NULL), OPENIB_WC_ERR_UNKNOWN);
    }

    /* An unknown flag without its record in the buffer: the record is
     * still refused as a whole, the known part still readable. */
    {
        size_t len = build(buf, sizeof(buf), order, 1);

        set_magic(buf, OPENIB_WC_VERSION | OPENIB_WC_EXT_ADDR | (1u << 12));
        CHECK_EQ(openib_wc_check(buf, len), OPENIB_WC_ERR_UNKNOWN);
        CHECK_EQ(openib_wc_find(buf, len, OPENIB_WC_EXT_ADDR, &ext, NULL), OPENIB_WC_OK);
    }
}

/* Unaligned buffers are fine through the copy-out getters. */
static void test_unaligned(void)
{
    const uint32_t order[] = { OPENIB_WC_EXT_TS, OPENIB_WC_EXT_ADDR };
    uint8_t raw[FULL_SIZE + 8];
    struct openib_wc_addr a;
    struct openib_wc_ts ts;
    size_t len = build(raw + 3, sizeof(raw) - 3, order, 2);

    CHECK_EQ(openib_wc_check(raw + 3, len), 24 + 16 + 8);
    CHECK_EQ(openib_wc_get_addr(raw + 3, len, &a), OPENIB_WC_OK);
    CHECK_EQ(a.src_qp, ADDR.src_qp);
    CHECK_EQ(openib_wc_get_ts(raw + 3, len, &ts), OPENIB_WC_OK);
    CHECK_EQ(ts.timestamp, TS.timestamp);
}

int main(void)
{
    test_sizes();
    test_base_only();
    test_order();
    test_builder_errors();
    test_truncation();
    test_unknown_version();
    test_unknown_flags();
    test_unaligned();
    return test_report("test_wc");
}

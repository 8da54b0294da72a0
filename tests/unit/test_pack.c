/*
 * test_pack.c - openib_pack against opal_convertor_pack, byte for byte, at
 * every kind of position ob1 leaves a convertor at: fragments in order
 * after opal_convertor_set_position (the pipelined send), random jumps
 * forward and back, every position of the first blocks. Non-contiguous
 * layouts (vector, negative-stride hvector, indexed, struct with gaps,
 * resized with a negative lb, a vector of structs, absolute addresses from
 * a NULL base) and a contiguous one; each through the plain path (no
 * override) and through the copy_from hook (a counting override: it must
 * see exactly the bytes packed, and positions inside blocks must reach it
 * as an offset into a block). A datatype re-created at the same address
 * with another layout of the same size must not reuse the old cursor.
 */
#include "opal_config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opal/constants.h"
#include "opal/datatype/opal_convertor.h"
#include "opal/datatype/opal_datatype.h"
#include "opal/datatype/opal_datatype_internal.h"
#include "opal/runtime/opal.h"
#include "opal/util/arch.h"

#include "btl_openib/btl_openib_pack.h"
#include "hmem/openib_hmem_btl.h"
#include "tests/unit/hmem/hmem_test.h"

/* ---- the counting override ---- */

static uint64_t ov_bytes, ov_calls, ov_inside;
static const struct openib_hmem_object *hooked_obj;

static ssize_t counting_from(void *dst, size_t len, enum openib_hmem_iface iface, uint64_t dev,
                             const struct iovec *iov, size_t cnt, uint64_t off)
{
    uint64_t o = off;
    size_t i;
    ssize_t rc;

    for (i = 0; i < cnt; ++i) { /* does off land inside an entry? */
        if (o < iov[i].iov_len) {
            ov_inside += o > 0;
            break;
        }
        o -= iov[i].iov_len;
    }
    rc = openib_hmem_default_copy_from_hmem_iov(dst, len, iface, dev, iov, cnt, off);
    if (rc > 0) {
        ov_bytes += (uint64_t) rc;
    }
    ov_calls++;
    return rc;
}

/* ---- layouts ---- */

static opal_datatype_t *new_type(void)
{
    return opal_datatype_create(16);
}

/* count blocks of blocklen elements of old, block starts stride bytes apart
 * (negative: going down). */
static opal_datatype_t *hvector(const opal_datatype_t *old, int count, int blocklen,
                                ptrdiff_t stride)
{
    opal_datatype_t *blk = new_type(), *t = new_type();
    ptrdiff_t ext = old->ub - old->lb;

    opal_datatype_add(blk, old, blocklen, 0, ext);
    opal_datatype_add(t, blk, count, 0, stride);
    OBJ_RELEASE(blk);
    opal_datatype_commit(t);
    return t;
}

struct layout {
    const char *name;
    opal_datatype_t *t;
    size_t count;
    bool absolute;            /* displacements are addresses; base NULL */
};

static unsigned char arena[1 << 21];

/* Where element 0 must sit so that every byte of count elements lies in
 * the arena (lb and extents may be negative). */
static unsigned char *place(const opal_datatype_t *t, size_t count)
{
    ptrdiff_t ext = t->ub - t->lb, lo = t->true_lb, hi = t->true_ub;

    if (count > 1) {
        if (ext < 0) {
            lo += (ptrdiff_t) (count - 1) * ext;
        } else {
            hi += (ptrdiff_t) (count - 1) * ext;
        }
    }
    if (hi - lo + 128 > (ptrdiff_t) sizeof(arena)) {
        fprintf(stderr, "layout too large for the arena\n");
        abort();
    }
    return arena + 64 - lo;
}

static void fill_arena(unsigned salt)
{
    size_t i;

    for (i = 0; i < sizeof(arena); ++i) {
        arena[i] = (unsigned char) (i * 131 + (i >> 9) + salt);
    }
}

static opal_convertor_t *conv_for(const struct layout *l, unsigned char *base)
{
    opal_convertor_t *c = opal_convertor_create(opal_local_arch, 0);

    opal_convertor_prepare_for_send(c, l->t, l->count, l->absolute ? NULL : base);
    return c;
}

/* The whole packed stream, by Open MPI (the reference). */
static unsigned char *reference(const struct layout *l, unsigned char *base, size_t *len)
{
    opal_convertor_t *c = conv_for(l, base);
    unsigned char *ref = malloc(c->local_size + 1);
    struct iovec iov = { ref, c->local_size };
    uint32_t n = 1;

    *len = c->local_size;
    opal_convertor_pack(c, &iov, &n, len);
    OBJ_RELEASE(c);
    return ref;
}

/* ---- scenarios ---- */

static unsigned char out[1 << 21], expect[1 << 21];
static uint64_t packed_total;

/*
 * Pack len bytes at pos (set first, as ob1 does) and compare with what
 * Open MPI's own pack does from a fresh convertor set to the same position:
 * the same start (set_position rounds down inside a basic element), the
 * same bytes, the same count (whole elements), the same end. Returns the
 * end position, or 0 on a mismatch.
 */
static size_t pack_at(const struct openib_hmem_object *h, struct openib_pack_cache **cache,
                      opal_convertor_t *c, const struct layout *l, unsigned char *base,
                      const unsigned char *ref, size_t pos, size_t len)
{
    opal_convertor_t *r = conv_for(l, base);
    size_t p = pos, start, exp_len = len, exp_end, got = len, prev_end;
    struct iovec iov = { expect, len };
    uint32_t n = 1;
    int rc;

    opal_convertor_set_position(r, &p);
    start = r->bConverted;
    opal_convertor_pack(r, &iov, &n, &exp_len);
    exp_end = r->bConverted;
    OBJ_RELEASE(r);
    CHECK_EQ(exp_end, start + exp_len);
    CHECK(0 == memcmp(expect, ref + start, exp_len)); /* the reference agrees */

    prev_end = c->bConverted;
    p = pos;
    opal_convertor_set_position(c, &p);
    CHECK_EQ(c->bConverted, start);
    memset(out, 0xA5, len + 16);
    rc = openib_pack(h, cache, c, out, &got);
    CHECK_EQ(rc, OPAL_SUCCESS);
    CHECK_EQ(got, exp_len);
    CHECK_EQ(c->bConverted, exp_end);
    CHECK_EQ(out[got], 0xA5); /* nothing past what was packed */
    packed_total += got;
    if (OPAL_SUCCESS != rc || got != exp_len || 0 != memcmp(out, ref + start, got)) {
        size_t i;

        for (i = 0; i < got && out[i] == ref[start + i]; ++i) {
        }
        fprintf(stderr, "  mismatch at stream byte %zu (pos %zu len %zu, %s, from %zu)\n", start + i, pos,
                len, h == hooked_obj ? "hooked" : "plain", prev_end);
        CHECK(0);
        return 0;
    }
    return c->bConverted;
}

/* ob1's pipelined send: a first fragment, then max-size ones in order. */
static void pipeline(const struct openib_hmem_object *h, struct openib_pack_cache **cache,
                     const struct layout *l, unsigned char *base, const unsigned char *ref,
                     size_t total, size_t first, size_t frag)
{
    opal_convertor_t *c = conv_for(l, base);
    size_t pos = 0, len = first;

    while (pos < total) {
        size_t end = pack_at(h, cache, c, l, base, ref, pos, len);

        if (end <= pos) {
            fprintf(stderr, "  %s: pipeline %zu+%zu broke at %zu\n", l->name, first, frag, pos);
            break;
        }
        pos = end; /* ob1: the next fragment starts where this one ended */
        len = frag;
    }
    OBJ_RELEASE(c);
}

static uint32_t rng_state = 4242;
static uint32_t rng(void)
{
    rng_state = rng_state * 1103515245u + 12345u;
    return rng_state >> 8;
}

/* Jumps forward and back on one convertor, each set from the start of the
 * data (as set_position does going back): in 4.1 a forward move from inside
 * a loop of the description lands wrong, and ob1 never makes one on a
 * non-contiguous send convertor (its fragments go in order). */
static void jumps(const struct openib_hmem_object *h, struct openib_pack_cache **cache,
                  const struct layout *l, unsigned char *base, const unsigned char *ref,
                  size_t total)
{
    opal_convertor_t *c = conv_for(l, base);
    int i;

    for (i = 0; i < 60; ++i) {
        size_t pos = rng() % total, len = 9 + rng() % 9000, zero = 0;

        opal_convertor_set_position(c, &zero);

        if (0 == pack_at(h, cache, c, l, base, ref, pos, len)) {
            fprintf(stderr, "  %s: jump %d broke\n", l->name, i);
            break;
        }
    }
    OBJ_RELEASE(c);
}

/* Every position of the first bytes, a few bytes each, in order. */
static void every_position(const struct openib_hmem_object *h, struct openib_pack_cache **cache,
                           const struct layout *l, unsigned char *base,
                           const unsigned char *ref, size_t total)
{
    opal_convertor_t *c = conv_for(l, base);
    size_t pos, end = total < 1500 ? total : 1500;

    for (pos = 0; pos < end; ++pos) {
        if (0 == pack_at(h, cache, c, l, base, ref, pos, 9 + pos % 23)) {
            fprintf(stderr, "  %s: position %zu broke\n", l->name, pos);
            break;
        }
    }
    OBJ_RELEASE(c);
}

static void run_layout(const struct layout *l, struct openib_hmem_object *plain,
                       struct openib_hmem_object *hooked, struct openib_pack_cache **cache,
                       bool gaps)
{
    unsigned char *base = l->absolute ? NULL : place(l->t, l->count), *ref;
    struct openib_hmem_object *hs[2] = { plain, hooked };
    int k, failures0 = unit_failures;
    size_t total;

    fill_arena((unsigned) l->count);
    ref = reference(l, base, &total);
    CHECK(total > 0);
    for (k = 0; k < 2; ++k) {
        uint64_t bytes0 = ov_bytes, packed0 = packed_total, inside0 = ov_inside;

        pipeline(hs[k], cache, l, base, ref, total, 32760, 65496);
        pipeline(hs[k], cache, l, base, ref, total, 4000, 1000);
        pipeline(hs[k], cache, l, base, ref, total, 9, 777);
        jumps(hs[k], cache, l, base, ref, total);
        every_position(hs[k], cache, l, base, ref, total);
        if (hs[k] == hooked) {
            /* Every packed byte went through the hook, and positions
             * inside blocks reached it as offsets into a block. */
            CHECK_EQ(ov_bytes - bytes0, packed_total - packed0);
            if (gaps) {
                CHECK(ov_inside > inside0);
            }
        } else {
            CHECK_EQ(ov_bytes, bytes0); /* no override: the hook never ran */
        }
    }
    printf("%-28s %8zu bytes per pass: %s\n", l->name, total,
           failures0 == unit_failures ? "verified" : "MISMATCH");
    free(ref);
}

/*
 * A type freed and re-created at the same address with another layout:
 * same convertor, same base, count, size, lb and ub, same position; only
 * the description differs (B's middle blocks sit 4 bytes further, in A's
 * gaps, so the packed stream has the same shape and only the addresses
 * differ). A cursor keyed on pointers and sizes would pack A's bytes.
 */
static void same_address(struct openib_hmem_object *hooked, struct openib_pack_cache **cache)
{
    opal_datatype_t *a = hvector(&opal_datatype_int4, 128, 127, 128 * 4);
    opal_datatype_t *b = new_type(), *row = new_type();
    struct layout la = { "vector 128x127/128", a, 1, false };
    struct layout lb = { "blocks shifted into gaps", b, 1, false };
    unsigned char *base = arena + 64, *ref_b;
    int failures0 = unit_failures;
    opal_convertor_t *c;
    size_t total, got = 40000;

    opal_datatype_add(row, &opal_datatype_int4, 127, 0, 4);
    opal_datatype_add(b, row, 1, 0, 508);
    opal_datatype_add(b, row, 126, 512 + 4, 512);
    opal_datatype_add(b, row, 1, 127 * 512, 508);
    OBJ_RELEASE(row);
    opal_datatype_commit(b);
    CHECK_EQ(a->size, b->size);
    CHECK_EQ(a->lb, b->lb);
    CHECK_EQ(a->ub, b->ub);
    fill_arena(7);
    ref_b = reference(&lb, base, &total);
    /* A's cursor stands at 40000 after this. */
    c = conv_for(&la, base);
    CHECK_EQ(openib_pack(hooked, cache, c, out, &got), OPAL_SUCCESS);
    CHECK_EQ(got, 40000);
    /* "MPI_Type_free(A); B = MPI_Type_vector(...)" landing on A's memory. */
    OBJ_DESTRUCT(a);
    OBJ_CONSTRUCT(a, opal_datatype_t);
    a->desc.length = b->desc.used + 1;
    a->desc.desc = calloc(a->desc.length, sizeof(dt_elem_desc_t));
    opal_datatype_clone(b, a);
    CHECK(a->desc.desc != NULL);
    opal_convertor_prepare_for_send(c, a, 1, base);
    CHECK_EQ(c->local_size, total);
    CHECK_EQ(pack_at(hooked, cache, c, &lb, base, ref_b, 40000, 20000), 60000);
    CHECK_EQ(pack_at(hooked, cache, c, &lb, base, ref_b, 60000, total - 60000), total);
    OBJ_RELEASE(c);
    OBJ_RELEASE(a);
    OBJ_RELEASE(b);
    free(ref_b);
    printf("%-28s re-created at the same address: %s\n", "vector",
           failures0 == unit_failures ? "new layout packed" : "MISMATCH");
}

int main(void)
{
    union openib_hmem_op op = { .copy_from_hmem_iov = counting_from };
    struct openib_hmem_object *plain, *hooked;
    struct openib_pack_cache *cache = NULL;
    opal_datatype_t *st, *three, *res, *idx, *nest, *abs_t, *contig;
    size_t i;

    alarm(300); /* a hang guard: a broken walk may never end */
    CHECK_EQ(opal_init_util(NULL, NULL), OPAL_SUCCESS);
    CHECK_EQ(openib_hmem_object_create(NULL, "plain", &plain), 0);
    CHECK_EQ(openib_hmem_object_create(NULL, "hooked", &hooked), 0);
    hooked_obj = hooked;
    CHECK_EQ(openib_hmem_set_op(hooked, OPENIB_HMEM_OP_COPY_FROM_HMEM_IOV, &op, 0), 0);

    /* struct { int a; double b; char c[3]; } with gaps, extent 32 */
    st = new_type();
    opal_datatype_add(st, &opal_datatype_int4, 1, 0, 4);
    opal_datatype_add(st, &opal_datatype_float8, 1, 8, 8);
    opal_datatype_add(st, &opal_datatype_int1, 3, 20, 1);
    opal_datatype_resize(st, 0, 32);
    opal_datatype_commit(st);
    /* three ints with lb -4 and extent 20 */
    three = new_type();
    opal_datatype_add(three, &opal_datatype_int4, 3, 0, 4);
    res = new_type();
    opal_datatype_add(res, three, 1, 0, 12);
    opal_datatype_resize(res, -4, 20);
    opal_datatype_commit(res);
    /* indexed: blocks of 1..9 ints at growing, irregular offsets */
    idx = new_type();
    for (i = 0; i < 300; ++i) {
        opal_datatype_add(idx, &opal_datatype_int4, 1 + i % 9, (ptrdiff_t) (i * 48 + i % 5) * 4, 4);
    }
    opal_datatype_commit(idx);
    /* a vector of (2 structs) blocks */
    nest = hvector(st, 50, 2, 3 * 32);
    /* absolute addresses (MPI_BOTTOM): two blocks of the arena */
    abs_t = new_type();
    opal_datatype_add(abs_t, &opal_datatype_int4, 700, (ptrdiff_t) (uintptr_t) (arena + 4096), 4);
    opal_datatype_add(abs_t, &opal_datatype_int4, 300, (ptrdiff_t) (uintptr_t) (arena + 64), 4);
    opal_datatype_commit(abs_t);
    contig = hvector(&opal_datatype_int4, 1, 40000, 0);

    {
        struct layout ls[] = {
            { "vector 128x127/128 int", hvector(&opal_datatype_int4, 128, 127, 128 * 4), 1 },
            { "vector 4000x1/2 int", hvector(&opal_datatype_int4, 4000, 1, 8), 3 },
            { "hvector stride -600 B", hvector(&opal_datatype_int4, 200, 100, -600), 1 },
            { "indexed 300 blocks", idx, 2 },
            { "struct with gaps x3000", st, 3000 },
            { "resized lb -4 x5000", res, 5000 },
            { "vector of structs x40", nest, 40 },
            { "absolute (MPI_BOTTOM)", abs_t, 1, true },
        };
        struct layout lc = { "contiguous 160000 B", contig, 1 };

        for (i = 0; i < sizeof(ls) / sizeof(ls[0]); ++i) {
            run_layout(&ls[i], plain, hooked, &cache, true);
        }
        run_layout(&lc, plain, hooked, &cache, false);
        for (i = 0; i < 3; ++i) { /* the ones made in the table */
            OBJ_RELEASE(ls[i].t);
        }
    }
    same_address(hooked, &cache);

    printf("hook: %llu calls, %llu bytes, %llu starting inside a block\n",
           (unsigned long long) ov_calls, (unsigned long long) ov_bytes,
           (unsigned long long) ov_inside);
    openib_pack_cache_free(&cache);
    CHECK(NULL == cache);
    openib_pack_cache_free(&cache); /* twice: nothing */
    OBJ_RELEASE(st);
    OBJ_RELEASE(three);
    OBJ_RELEASE(res);
    OBJ_RELEASE(idx);
    OBJ_RELEASE(nest);
    OBJ_RELEASE(abs_t);
    OBJ_RELEASE(contig);
    openib_hmem_object_free(hooked);
    openib_hmem_object_free(plain);
    opal_finalize_util();
    return unit_finish("test_pack");
}

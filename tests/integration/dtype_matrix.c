/*
 * dtype_matrix.c - derived datatypes through a BTL, every byte checked.
 *
 * Types (each built with MPI's own constructors; its layout is also written
 * out here as the byte blocks of one element, in type-map order, which is
 * what the checks use):
 *   contiguous   MPI_Type_contiguous(7, MPI_INT)
 *   vector       MPI_Type_vector(32, 6, 8, MPI_INT)
 *   hvector-neg  MPI_Type_create_hvector(16, 5, -28 B, MPI_INT)
 *   indexed      MPI_Type_indexed({3,1,4,1,5} at {0,5,7,13,15}, MPI_INT)
 *   struct       {int @0, double @8, char[3] @20}, resized to extent 32
 *   resized      contiguous(3, MPI_INT) resized to lb -4, extent 20
 *   vec-of-struct MPI_Type_vector(4, 2, 3, struct)
 * Each has a "twin": the same type signature with no gaps (MPI_INT, or the
 * struct's members packed), for receiving into a different type.
 *
 * Every data byte is a function of its index in the message and of the
 * message (a shift by one byte, one element or one block shows), the
 * sender's gaps hold other bytes (packing a gap shows), and the receiver's
 * buffer is pre-filled so that every gap byte is checked to stay untouched.
 *
 * Modes (argv[1]):
 *   p2p [max]  ranks 0 and 1: every type x every size up to max bytes
 *              (default 16 MiB; 4 and 16 MiB only for some types) x the
 *              receive forms Recv, Irecv (posted first), Mprobe/Mrecv,
 *              Sendrecv (both ways), Recv into the twin, Send from the twin
 *   coll       MPI_Alltoallv and MPI_Allgather with derived types (and twin
 *              receive types), every rank
 *   osc        MPI_Put / MPI_Get / MPI_Accumulate with derived origin and
 *              target types on windows from MPI_Win_allocate and
 *              MPI_Win_create, ranks 0 and 1 each target the other
 * Prints one summary line per mode (rank 0):
 *   dtype-matrix p2p: T types x S sizes x F forms, M messages, B bytes verified, E errors
 * plus "noncontig-large rank=R bytes=N": non-contiguous payload above the
 * eager limit this rank sent to another rank (the BTL must have packed it).
 * Exit status 0 only with 0 errors.
 */
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SENTINEL 0xA5      /* receive buffers before a receive */
#define EAGER_LIMIT 32760  /* openib's default btl_eager_limit */

struct blk {
    ptrdiff_t off;
    size_t len;
};

struct dtype {
    const char *name;
    MPI_Datatype t;
    struct blk *blk;          /* one element, type-map order */
    int nblk;
    size_t size;              /* bytes of data per element */
    ptrdiff_t extent;
    ptrdiff_t tlb, tub;       /* true bounds of one element's bytes */
    int contiguous;           /* no gaps, even between elements */
    int ints;                 /* only MPI_INT: accumulate works on it */
    struct dtype *twin;       /* same signature, no gaps */
    int twin_per_elem;        /* twin elements per element */
};

static int rank, nranks;
static long long verified, errors, ops, noncontig_large;
static char first_error[512];

/* ---- layouts ---- */

static void add_blk(struct dtype *d, ptrdiff_t off, size_t len)
{
    d->blk = realloc(d->blk, sizeof(*d->blk) * (d->nblk + 1));
    d->blk[d->nblk].off = off;
    d->blk[d->nblk].len = len;
    d->nblk++;
}

/* Size and true bounds from the blocks; extent from MPI (checked). */
static void finish(struct dtype *d, ptrdiff_t want_lb, ptrdiff_t want_extent)
{
    MPI_Aint lb, extent;
    int i, size;

    MPI_Type_commit(&d->t);
    MPI_Type_get_extent(d->t, &lb, &extent);
    MPI_Type_size(d->t, &size);
    d->size = 0;
    d->tlb = d->blk[0].off;
    d->tub = d->blk[0].off + (ptrdiff_t) d->blk[0].len;
    for (i = 0; i < d->nblk; ++i) {
        d->size += d->blk[i].len;
        if (d->blk[i].off < d->tlb) {
            d->tlb = d->blk[i].off;
        }
        if (d->blk[i].off + (ptrdiff_t) d->blk[i].len > d->tub) {
            d->tub = d->blk[i].off + (ptrdiff_t) d->blk[i].len;
        }
    }
    d->extent = extent;
    if (lb != want_lb || extent != want_extent || (size_t) size != d->size) {
        fprintf(stderr, "rank %d: %s: layout model disagrees with MPI (lb %ld/%ld extent %ld/%ld "
                "size %d/%zu)\n", rank, d->name, (long) lb, (long) want_lb, (long) extent,
                (long) want_extent, size, d->size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

static struct dtype int_twin, struct_twin, types[7];
static const int ntypes = 7;

/* struct { int @0; double @8; char[3] @20 } (packed twin: @0, @4, @12) */
static MPI_Datatype make_struct(int packed)
{
    int bl[3] = { 1, 1, 3 };
    MPI_Aint disp[3] = { 0, packed ? 4 : 8, packed ? 12 : 20 };
    MPI_Datatype ty[3] = { MPI_INT, MPI_DOUBLE, MPI_CHAR }, s, r;

    MPI_Type_create_struct(3, bl, disp, ty, &s);
    MPI_Type_create_resized(s, 0, packed ? 15 : 32, &r);
    MPI_Type_free(&s);
    return r;
}

static void struct_blocks(struct dtype *d, ptrdiff_t base)
{
    add_blk(d, base, 4);
    add_blk(d, base + 8, 8);
    add_blk(d, base + 20, 3);
}

static void build_types(void)
{
    struct dtype *d;
    int i, j;

    int_twin = (struct dtype) { .name = "int", .t = MPI_INT, .contiguous = 1, .ints = 1 };
    add_blk(&int_twin, 0, 4);
    int_twin.t = MPI_INT;
    MPI_Type_dup(MPI_INT, &int_twin.t);
    finish(&int_twin, 0, 4);

    struct_twin = (struct dtype) { .name = "struct-packed", .contiguous = 1 };
    struct_twin.t = make_struct(1);
    add_blk(&struct_twin, 0, 4);
    add_blk(&struct_twin, 4, 8);
    add_blk(&struct_twin, 12, 3);
    finish(&struct_twin, 0, 15);

    d = &types[0];
    *d = (struct dtype) { .name = "contiguous", .contiguous = 1, .ints = 1, .twin = &int_twin,
                          .twin_per_elem = 7 };
    MPI_Type_contiguous(7, MPI_INT, &d->t);
    add_blk(d, 0, 28);
    finish(d, 0, 28);

    d = &types[1];
    *d = (struct dtype) { .name = "vector", .ints = 1, .twin = &int_twin, .twin_per_elem = 192 };
    MPI_Type_vector(32, 6, 8, MPI_INT, &d->t);
    for (i = 0; i < 32; ++i) {
        add_blk(d, i * 32, 24);
    }
    finish(d, 0, (31 * 8 + 6) * 4);

    d = &types[2];
    *d = (struct dtype) { .name = "hvector-neg", .ints = 1, .twin = &int_twin, .twin_per_elem = 80 };
    MPI_Type_create_hvector(16, 5, -28, MPI_INT, &d->t);
    for (i = 0; i < 16; ++i) {
        add_blk(d, -28 * i, 20);
    }
    finish(d, -28 * 15, 28 * 15 + 20);

    d = &types[3];
    *d = (struct dtype) { .name = "indexed", .ints = 1, .twin = &int_twin, .twin_per_elem = 14 };
    {
        int bl[5] = { 3, 1, 4, 1, 5 }, at[5] = { 0, 5, 7, 13, 15 };

        MPI_Type_indexed(5, bl, at, MPI_INT, &d->t);
        for (i = 0; i < 5; ++i) {
            add_blk(d, at[i] * 4, (size_t) bl[i] * 4);
        }
    }
    finish(d, 0, 80);

    d = &types[4];
    *d = (struct dtype) { .name = "struct", .twin = &struct_twin, .twin_per_elem = 1 };
    d->t = make_struct(0);
    struct_blocks(d, 0);
    finish(d, 0, 32);

    d = &types[5];
    *d = (struct dtype) { .name = "resized", .ints = 1, .twin = &int_twin, .twin_per_elem = 3 };
    {
        MPI_Datatype c;

        MPI_Type_contiguous(3, MPI_INT, &c);
        MPI_Type_create_resized(c, -4, 20, &d->t);
        MPI_Type_free(&c);
    }
    add_blk(d, 0, 12);
    finish(d, -4, 20);

    d = &types[6];
    *d = (struct dtype) { .name = "vec-of-struct", .twin = &struct_twin, .twin_per_elem = 8 };
    MPI_Type_vector(4, 2, 3, types[4].t, &d->t);
    for (i = 0; i < 4; ++i) {
        for (j = 0; j < 2; ++j) {
            struct_blocks(d, (ptrdiff_t) (i * 3 + j) * 32);
        }
    }
    finish(d, 0, (3 * 3 + 2) * 32);
}

/* ---- buffers and patterns ---- */

struct buf {
    unsigned char *mem, *base;  /* base: where element 0 starts */
    size_t span;
};

/* Room for count elements (negative lb and extents included) + margins. */
static struct buf buf_for(const struct dtype *d, size_t count)
{
    ptrdiff_t lo = d->tlb, hi = d->tub;
    struct buf b;

    if (count > 1) {
        if (d->extent < 0) {
            lo += (ptrdiff_t) (count - 1) * d->extent;
        } else {
            hi += (ptrdiff_t) (count - 1) * d->extent;
        }
    }
    if (0 == count) {
        lo = hi = 0;
    }
    b.span = (size_t) (hi - lo) + 64;
    b.mem = malloc(b.span);
    if (NULL == b.mem) {
        fprintf(stderr, "rank %d: out of memory (%zu bytes)\n", rank, b.span);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    b.base = b.mem + 32 - lo;
    return b;
}

static inline unsigned char data_byte(size_t i, unsigned seed)
{
    return (unsigned char) (i * 131 + (i >> 8) * 7 + (i >> 16) * 13 + seed * 29 + (seed >> 8));
}

/* Walk the data bytes of count elements in order: fn(position, index). */
#define FOR_EACH_DATA_BYTE(d, count, base, POS, IDX, BODY)                          \
    do {                                                                            \
        size_t IDX = 0, e_;                                                         \
        int k_;                                                                     \
        for (e_ = 0; e_ < (count); ++e_) {                                          \
            for (k_ = 0; k_ < (d)->nblk; ++k_) {                                    \
                unsigned char *p_ = (base) + (ptrdiff_t) e_ * (d)->extent +         \
                                    (d)->blk[k_].off;                               \
                size_t l_;                                                          \
                for (l_ = 0; l_ < (d)->blk[k_].len; ++l_, ++IDX) {                  \
                    unsigned char *POS = p_ + l_;                                   \
                    BODY;                                                           \
                }                                                                   \
            }                                                                       \
        }                                                                           \
    } while (0)

/* Sender: gaps get bytes that are never data, data bytes their pattern. */
static void fill_send(const struct dtype *d, size_t count, struct buf *b, unsigned seed)
{
    size_t i;

    for (i = 0; i < b->span; ++i) {
        b->mem[i] = (unsigned char) (0x3C ^ (i * 17));
    }
    FOR_EACH_DATA_BYTE(d, count, b->base, pos, idx, *pos = data_byte(idx, seed));
}

static void fill_recv(struct buf *b)
{
    memset(b->mem, SENTINEL, b->span);
}

/* Check a received buffer: data bytes, and every other byte untouched. */
static void check_recv(const char *what, const struct dtype *d, size_t count, struct buf *b,
                       unsigned seed)
{
    unsigned char *want = malloc(b->span);
    size_t i, bad = 0, first = (size_t) -1;

    memset(want, SENTINEL, b->span);
    FOR_EACH_DATA_BYTE(d, count, want + (b->base - b->mem), pos, idx, *pos = data_byte(idx, seed));
    for (i = 0; i < b->span; ++i) {
        if (b->mem[i] != want[i]) {
            if (first == (size_t) -1) {
                first = i;
            }
            bad++;
        }
    }
    verified += (long long) (d->size * count);
    if (bad) {
        errors += (long long) bad;
        if (!first_error[0]) {
            snprintf(first_error, sizeof(first_error),
                     "rank %d: %s: %zu bad bytes of %zu (%zu elements of %s); first at byte %ld "
                     "from element 0 (%s): got 0x%02x want 0x%02x",
                     rank, what, bad, b->span, count, d->name,
                     (long) ((b->mem + first) - b->base),
                     want[first] == SENTINEL ? "a gap" : "data", b->mem[first], want[first]);
        }
        fprintf(stderr, "rank %d: FAIL %s: %zu bad bytes (%s x %zu)\n", rank, what, bad, d->name,
                count);
    }
    free(want);
}

/* ---- point to point ---- */

enum form { F_RECV, F_IRECV, F_MPROBE, F_SENDRECV, F_TWIN_RECV, F_TWIN_SEND, F_NUM };
static const char *form_name[F_NUM] = { "recv", "irecv", "mprobe", "sendrecv", "recv-twin",
                                        "send-twin" };

static unsigned next_seed = 1;

static void p2p_one(const struct dtype *d, size_t count, enum form f)
{
    const struct dtype *st = d, *rt = d;
    size_t scount = count, rcount = count;
    unsigned seed = next_seed++;
    char what[160];
    int peer = 1 - rank, tag = (int) (seed & 0x7fff), got;
    struct buf sb, rb;
    MPI_Status status;

    if (F_TWIN_RECV == f) {
        rt = d->twin;
        rcount = count * d->twin_per_elem;
    } else if (F_TWIN_SEND == f) {
        st = d->twin;
        scount = count * d->twin_per_elem;
    }
    snprintf(what, sizeof(what), "p2p %s %s %zu B", form_name[f], d->name, d->size * count);
    sb = buf_for(st, scount);
    rb = buf_for(rt, rcount);
    fill_send(st, scount, &sb, seed + (unsigned) rank * 1000003u);
    fill_recv(&rb);
    if (!st->contiguous && st->size * scount > EAGER_LIMIT) {
        noncontig_large += (long long) (st->size * scount) * (F_SENDRECV == f ? 1 : (0 == rank));
    }
    switch (f) {
    case F_SENDRECV:
        MPI_Sendrecv(sb.base, (int) scount, st->t, peer, tag, rb.base, (int) rcount, rt->t, peer,
                     tag, MPI_COMM_WORLD, &status);
        check_recv(what, rt, rcount, &rb, seed + (unsigned) peer * 1000003u);
        MPI_Get_count(&status, rt->t, &got);
        break;
    case F_IRECV:
        if (0 == rank) {
            MPI_Recv(NULL, 0, MPI_BYTE, 1, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* posted */
            MPI_Send(sb.base, (int) scount, st->t, 1, tag, MPI_COMM_WORLD);
        } else {
            MPI_Request r;

            MPI_Irecv(rb.base, (int) rcount, rt->t, 0, tag, MPI_COMM_WORLD, &r);
            MPI_Send(NULL, 0, MPI_BYTE, 0, tag, MPI_COMM_WORLD);
            MPI_Wait(&r, &status);
        }
        break;
    case F_MPROBE:
        if (0 == rank) {
            MPI_Send(sb.base, (int) scount, st->t, 1, tag, MPI_COMM_WORLD);
        } else {
            MPI_Message msg;

            MPI_Mprobe(0, tag, MPI_COMM_WORLD, &msg, &status);
            MPI_Get_count(&status, rt->t, &got);
            if ((size_t) got != rcount) {
                errors++;
                fprintf(stderr, "rank 1: FAIL %s: Mprobe counted %d, sent %zu\n", what, got,
                        rcount);
            }
            MPI_Mrecv(rb.base, (int) rcount, rt->t, &msg, &status);
        }
        break;
    default:
        if (0 == rank) {
            MPI_Send(sb.base, (int) scount, st->t, 1, tag, MPI_COMM_WORLD);
        } else {
            MPI_Recv(rb.base, (int) rcount, rt->t, 0, tag, MPI_COMM_WORLD, &status);
        }
        break;
    }
    if (1 == rank && F_SENDRECV != f) {
        check_recv(what, rt, rcount, &rb, seed);
        MPI_Get_count(&status, rt->t, &got);
    }
    if (1 == rank || F_SENDRECV == f) {
        if ((size_t) got != rcount) {
            errors++;
            fprintf(stderr, "rank %d: FAIL %s: received count %d, want %zu\n", rank, what, got,
                    rcount);
        }
    }
    ops++;
    free(sb.mem);
    free(rb.mem);
}

/* Message sizes (payload bytes): every protocol boundary of openib on rxe
 * (inline ~ 0.5 KiB, eager-RDMA slot 2 KiB, eager limit 32760, min RDMA
 * pipeline 256 KiB, RDMA pipeline send length 1 MiB), then large ones. */
static const size_t sizes[] = { 0, 1, 100, 500, 2000, 8000, 32000, 33000, 70000, 300000,
                                1100000, 4u << 20, 16u << 20 };
#define NSIZES ((int) (sizeof(sizes) / sizeof(sizes[0])))

/* Bound the total: 4 MiB for every type through Recv, 16 MiB only for
 * the contiguous (RDMA) and vector (the pipelined packing) types. */
static int p2p_wanted(int t, size_t s, enum form f)
{
    if (s <= 1100000) {
        return 1;
    }
    if (s <= (4u << 20)) {
        return F_RECV == f || (1 == t && F_TWIN_RECV == f);
    }
    return F_RECV == f && (0 == t || 1 == t);
}

static void run_p2p(size_t max)
{
    int t, s, f, nsizes = 0;

    for (s = 0; s < NSIZES && sizes[s] <= max; ++s) {
        nsizes++;
    }
    if (rank < 2) {
        for (t = 0; t < ntypes; ++t) {
            for (s = 0; s < nsizes; ++s) {
                size_t count = 0 == sizes[s] ? 0 : (sizes[s] + types[t].size - 1) / types[t].size;

                for (f = 0; f < F_NUM; ++f) {
                    if (p2p_wanted(t, sizes[s], (enum form) f)) {
                        p2p_one(&types[t], count, (enum form) f);
                    }
                }
            }
        }
    }
    {
        long long v[4] = { verified, errors, ops, 0 }, tot[4];

        MPI_Reduce(v, tot, 3, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        if (0 == rank) {
            printf("dtype-matrix p2p: %d types x %d sizes x %d forms, %lld messages, %lld bytes "
                   "verified, %lld errors\n", ntypes, nsizes, F_NUM, tot[2] / 2, tot[0], tot[1]);
        }
    }
}

/* ---- collectives ---- */

static unsigned coll_seed(int src, int dst, unsigned salt)
{
    return salt * 7919u + (unsigned) src * 131u + (unsigned) dst * 17u;
}

/* Alltoallv: rank r sends cnt(r,p) elements to p; send and receive types
 * may differ (same signature). */
static size_t a2a_count(size_t base, int src, int dst)
{
    return base + (size_t) (src * 3 + dst);
}

static void run_alltoallv(const struct dtype *d, size_t base, int twin_recv, unsigned salt)
{
    const struct dtype *rt = twin_recv ? d->twin : d;
    int per = twin_recv ? d->twin_per_elem : 1, p;
    int *scnt = malloc(sizeof(int) * nranks), *sdsp = malloc(sizeof(int) * nranks);
    int *rcnt = malloc(sizeof(int) * nranks), *rdsp = malloc(sizeof(int) * nranks);
    size_t stot = 0, rtot = 0;
    struct buf sb, rb;
    char what[160];

    for (p = 0; p < nranks; ++p) {
        scnt[p] = (int) a2a_count(base, rank, p);
        sdsp[p] = (int) stot;
        stot += (size_t) scnt[p];
        rcnt[p] = (int) (a2a_count(base, p, rank) * (size_t) per);
        rdsp[p] = (int) rtot;
        rtot += (size_t) rcnt[p];
    }
    sb = buf_for(d, stot);
    rb = buf_for(rt, rtot);
    fill_send(d, 0, &sb, 0); /* gaps */
    for (p = 0; p < nranks; ++p) { /* each destination's part has its own pattern */
        unsigned char *part = sb.base + (ptrdiff_t) sdsp[p] * d->extent;

        FOR_EACH_DATA_BYTE(d, (size_t) scnt[p], part, pos, idx,
                           *pos = data_byte(idx, coll_seed(rank, p, salt)));
        if (p != rank && !d->contiguous && d->size * (size_t) scnt[p] > EAGER_LIMIT) {
            noncontig_large += (long long) (d->size * (size_t) scnt[p]);
        }
    }
    fill_recv(&rb);
    MPI_Alltoallv(sb.base, scnt, sdsp, d->t, rb.base, rcnt, rdsp, rt->t, MPI_COMM_WORLD);
    {
        unsigned char *want = malloc(rb.span);
        size_t i, bad = 0, first = 0;

        memset(want, SENTINEL, rb.span);
        for (p = 0; p < nranks; ++p) {
            unsigned char *b = want + (rb.base - rb.mem) + (ptrdiff_t) rdsp[p] * rt->extent;

            FOR_EACH_DATA_BYTE(rt, (size_t) rcnt[p], b, pos, idx,
                               *pos = data_byte(idx, coll_seed(p, rank, salt)));
        }
        for (i = 0; i < rb.span; ++i) {
            if (rb.mem[i] != want[i] && 0 == bad++) {
                first = i;
            }
        }
        verified += (long long) (rt->size * rtot);
        if (bad) {
            errors += (long long) bad;
            snprintf(what, sizeof(what), "alltoallv %s%s base %zu", d->name,
                     twin_recv ? " (twin recv)" : "", base);
            fprintf(stderr, "rank %d: FAIL %s: %zu bad bytes, first at %zu\n", rank, what, bad,
                    first);
        }
        free(want);
    }
    ops++;
    free(sb.mem);
    free(rb.mem);
    free(scnt);
    free(sdsp);
    free(rcnt);
    free(rdsp);
}

static void run_allgather(const struct dtype *d, size_t count, int twin_recv, unsigned salt)
{
    const struct dtype *rt = twin_recv ? d->twin : d;
    size_t per = twin_recv ? (size_t) d->twin_per_elem : 1, rc = count * per;
    struct buf sb = buf_for(d, count), rb = buf_for(rt, rc * (size_t) nranks);
    unsigned char *want = malloc(rb.span);
    size_t i, bad = 0, first = 0;
    int p;

    fill_send(d, count, &sb, coll_seed(rank, 0, salt));
    fill_recv(&rb);
    if (!d->contiguous && d->size * count > EAGER_LIMIT) {
        noncontig_large += (long long) (d->size * count);
    }
    MPI_Allgather(sb.base, (int) count, d->t, rb.base, (int) rc, rt->t, MPI_COMM_WORLD);
    memset(want, SENTINEL, rb.span);
    for (p = 0; p < nranks; ++p) {
        unsigned char *b = want + (rb.base - rb.mem) + (ptrdiff_t) (rc * (size_t) p) * rt->extent;

        FOR_EACH_DATA_BYTE(rt, rc, b, pos, idx, *pos = data_byte(idx, coll_seed(p, 0, salt)));
    }
    for (i = 0; i < rb.span; ++i) {
        if (rb.mem[i] != want[i] && 0 == bad++) {
            first = i;
        }
    }
    verified += (long long) (rt->size * rc * (size_t) nranks);
    if (bad) {
        errors += (long long) bad;
        fprintf(stderr, "rank %d: FAIL allgather %s%s x %zu: %zu bad bytes, first at %zu\n", rank,
                d->name, twin_recv ? " (twin recv)" : "", count, bad, first);
    }
    ops++;
    free(want);
    free(sb.mem);
    free(rb.mem);
}

/* Per-pair / per-rank payload: small (eager) and above the eager limit
 * (the largest for two types only: 4 ranks share 2 emulated CPUs). */
static const size_t coll_bytes[] = { 600, 40000, 150000 };
#define NCOLL ((int) (sizeof(coll_bytes) / sizeof(coll_bytes[0])))

static void run_coll(void)
{
    unsigned salt = 1;
    int t, s, nops = 0;

    for (t = 0; t < ntypes; ++t) {
        for (s = 0; s < NCOLL; ++s) {
            size_t n = (coll_bytes[s] + types[t].size - 1) / types[t].size;

            if (s == NCOLL - 1 && 1 != t && 6 != t) {
                continue; /* the largest: vector and vector of structs only */
            }
            nops += 2;

            run_alltoallv(&types[t], n, s & 1, salt++);
            run_allgather(&types[t], n, !(s & 1), salt++);
        }
    }
    {
        long long v[3] = { verified, errors, ops }, tot[3];

        MPI_Reduce(v, tot, 3, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        if (0 == rank) {
            printf("dtype-matrix coll: %d types x %d sizes x 2 collectives (alltoallv, allgather) "
                   "on %d ranks, %d operations, %lld bytes verified, %lld errors\n", ntypes,
                   NCOLL, nranks, nops, tot[0], tot[1]);
        }
    }
}

/* ---- one-sided ---- */

enum osc_op { O_PUT, O_GET, O_ACC, O_NUM };
static const char *osc_name[O_NUM] = { "put", "get", "accumulate" };

static int32_t int_value(size_t i, unsigned seed)
{
    return (int32_t) ((i * 2654435761u + seed * 40503u) & 0xffff);
}

/* One operation from rank r to rank 1 - r, both at once, each checking its
 * own window (put, accumulate) or its origin buffer (get). */
static void osc_one(const struct dtype *d, size_t count, enum osc_op op, int allocate,
                    unsigned seed)
{
    const struct dtype *ot = O_GET == op ? d->twin : d;
    size_t ocount = O_GET == op ? count * (size_t) d->twin_per_elem : count;
    struct buf wb = buf_for(d, count), ob = buf_for(ot, ocount);
    int peer = 1 - rank;
    unsigned mine = seed + (unsigned) rank * 1000003u, theirs = seed + (unsigned) peer * 1000003u;
    MPI_Aint target_disp = wb.base - wb.mem;
    unsigned char *winmem = NULL;
    char what[160];
    MPI_Win win;

    snprintf(what, sizeof(what), "osc %s %s %s %zu B", osc_name[op],
             allocate ? "win_allocate" : "win_create", d->name, d->size * count);
    if (allocate) {
        MPI_Win_allocate((MPI_Aint) wb.span, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &winmem, &win);
        free(wb.mem);
        wb.base = winmem + (wb.base - wb.mem);
        wb.mem = winmem;
    } else {
        MPI_Win_create(wb.mem, (MPI_Aint) wb.span, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    }
    /* The window: gaps sentinel; data: what get reads / accumulate adds to. */
    fill_recv(&wb);
    if (O_ACC == op) {
        FOR_EACH_DATA_BYTE(d, count, wb.base, pos, idx, if (0 == idx % 4) {
            int32_t v = int_value(idx / 4, mine + 7);
            memcpy(pos, &v, 4);
        });
        fill_send(d, count, &ob, 0);
        FOR_EACH_DATA_BYTE(d, count, ob.base, pos, idx, if (0 == idx % 4) {
            int32_t v = int_value(idx / 4, mine);
            memcpy(pos, &v, 4);
        });
    } else if (O_GET == op) {
        FOR_EACH_DATA_BYTE(d, count, wb.base, pos, idx, *pos = data_byte(idx, mine));
        fill_recv(&ob);
    } else {
        fill_send(d, count, &ob, mine);
    }
    MPI_Win_fence(0, win);
    switch (op) {
    case O_PUT:
        MPI_Put(ob.base, (int) ocount, ot->t, peer, target_disp, (int) count, d->t, win);
        break;
    case O_GET:
        MPI_Get(ob.base, (int) ocount, ot->t, peer, target_disp, (int) count, d->t, win);
        break;
    default:
        MPI_Accumulate(ob.base, (int) ocount, ot->t, peer, target_disp, (int) count, d->t,
                       MPI_SUM, win);
        break;
    }
    MPI_Win_fence(0, win);
    if (O_PUT == op) {
        check_recv(what, d, count, &wb, theirs);
    } else if (O_GET == op) {
        check_recv(what, ot, ocount, &ob, theirs);
    } else {
        unsigned char *want = malloc(wb.span);
        size_t i, bad = 0;

        memset(want, SENTINEL, wb.span);
        FOR_EACH_DATA_BYTE(d, count, want + (wb.base - wb.mem), pos, idx, if (0 == idx % 4) {
            int32_t v = int_value(idx / 4, mine + 7) + int_value(idx / 4, theirs);
            memcpy(pos, &v, 4);
        });
        for (i = 0; i < wb.span; ++i) {
            bad += wb.mem[i] != want[i];
        }
        verified += (long long) (d->size * count);
        if (bad) {
            errors += (long long) bad;
            fprintf(stderr, "rank %d: FAIL %s: %zu bad bytes\n", rank, what, bad);
        }
        free(want);
    }
    ops++;
    MPI_Win_free(&win);
    if (!allocate) {
        free(wb.mem);
    }
    free(ob.mem);
}

/* osc/rdma moves a derived type block by block (one RDMA operation per
 * block on rxe): above 40000 B only the contiguous type. */
static const size_t osc_bytes[] = { 4, 1000, 40000, 300000 };
#define NOSC ((int) (sizeof(osc_bytes) / sizeof(osc_bytes[0])))

static void run_osc(void)
{
    unsigned seed = 1;
    int t, s, op, a, ntested = 0;

    for (t = 0; t < ntypes; ++t) {
        for (s = 0; s < NOSC; ++s) {
            size_t n = (osc_bytes[s] + types[t].size - 1) / types[t].size;

            if (osc_bytes[s] > 40000 && !types[t].contiguous) {
                continue;
            }
            for (op = 0; op < O_NUM; ++op) {
                if (O_ACC == op && !types[t].ints) {
                    continue; /* MPI_SUM needs one predefined type */
                }
                for (a = 0; a < 2; ++a) {
                    osc_one(&types[t], n, (enum osc_op) op, a, seed++);
                    ntested++;
                }
            }
        }
    }
    {
        long long v[3] = { verified, errors, ops }, tot[3];

        MPI_Reduce(v, tot, 3, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        if (0 == rank) {
            printf("dtype-matrix osc: %d types x %d sizes x put/get/accumulate x win_allocate/"
                   "win_create on %d ranks, %d operations, %lld bytes verified, %lld errors\n",
                   ntypes, NOSC, nranks, ntested, tot[0], tot[1]);
        }
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "p2p";
    long long all_errors;
    int i;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (nranks < 2 || (0 != strcmp(mode, "coll") && nranks != 2)) {
        if (0 == rank) {
            fprintf(stderr, "dtype_matrix: p2p and osc need 2 ranks, coll at least 2\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    build_types();
    if (0 == strcmp(mode, "p2p")) {
        run_p2p(argc > 2 ? (size_t) strtoull(argv[2], NULL, 0) : (size_t) 16 << 20);
    } else if (0 == strcmp(mode, "coll")) {
        run_coll();
    } else if (0 == strcmp(mode, "osc")) {
        run_osc();
    } else {
        if (0 == rank) {
            fprintf(stderr, "dtype_matrix: unknown mode %s (p2p, coll, osc)\n", mode);
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (first_error[0]) {
        fprintf(stderr, "%s\n", first_error);
    }
    printf("noncontig-large rank=%d bytes=%lld\n", rank, noncontig_large);
    MPI_Allreduce(&errors, &all_errors, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    for (i = 0; i < ntypes; ++i) {
        MPI_Type_free(&types[i].t);
        free(types[i].blk);
    }
    MPI_Type_free(&int_twin.t);
    MPI_Type_free(&struct_twin.t);
    free(int_twin.blk);
    free(struct_twin.blk);
    MPI_Finalize();
    return all_errors ? 1 : 0;
}

/*
 * mpi_patterns.c - MPI traffic patterns that exercise a BTL, each verifying
 * every byte it receives. Prints "PASS <name>" per pattern, and exits
 * non-zero on the first error.
 *
 *   hosts      each rank prints "rank R of N on HOST" (tests across nodes
 *              check where ranks ran)
 *   masterworker  workers speak first: each sends rank 0 a request before
 *              rank 0 has sent anything (run it first, so these are the
 *              first messages between the ranks); rank 0 takes them with
 *              MPI_ANY_SOURCE as they come, answers each with a task of
 *              8 B to 64 KiB, and checks the results (the task reversed)
 *   storm      every rank sends to every other rank first thing (crossing
 *              connects), then checks what it got
 *   alltoall   MPI_Alltoallv with a strided (non-contiguous) datatype
 *   many       10,000 non-blocking messages in flight per pair, then waitall
 *   probe      MPI_Probe / MPI_Iprobe for size, MPI_Cancel of an unmatched recv
 *   osc        one-sided put/get/accumulate/fetch-and-op/compare-and-swap
 *
 * Usage: mpi_patterns [pattern ...]   (default: all)
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size;

#define FAIL(...)                                                         \
    do {                                                                  \
        fprintf(stderr, "rank %d: FAIL: ", rank);                         \
        fprintf(stderr, __VA_ARGS__);                                     \
        fprintf(stderr, "\n");                                            \
        MPI_Abort(MPI_COMM_WORLD, 1);                                     \
    } while (0)

static uint8_t pat(int src, int dst, size_t i, int salt)
{
    return (uint8_t) (src * 131 + dst * 31 + i * 7 + salt * 13 + (i >> 8));
}

static void hosts(void)
{
    char host[256] = "?";

    gethostname(host, sizeof(host) - 1);
    printf("rank %d of %d on %s\n", rank, size, host);
    fflush(stdout);
}

#define MW_ROUNDS 40
#define MW_MAX 65536
enum { MW_REQ = 301, MW_TASK, MW_RESULT, MW_STOP };

static size_t mw_len(int worker, int round)
{
    static const size_t lens[] = { 8, 100, 3000, 20000, MW_MAX };
    return lens[(worker + round) % 5];
}

static void masterworker(void)
{
    uint8_t *buf = malloc(MW_MAX), *res = malloc(MW_MAX);
    size_t i;

    if (rank == 0) {
        int active = size - 1;

        while (active > 0) {
            int hdr[2], w;
            MPI_Status st;

            MPI_Recv(hdr, 2, MPI_INT, MPI_ANY_SOURCE, MW_REQ, MPI_COMM_WORLD, &st);
            w = st.MPI_SOURCE;
            if (hdr[0] != w || hdr[1] < -1 || hdr[1] >= MW_ROUNDS) {
                FAIL("masterworker: request {%d, %d} from rank %d", hdr[0], hdr[1], w);
            }
            if (hdr[1] >= 0) { /* the result of round hdr[1]: the task reversed */
                size_t n = mw_len(w, hdr[1]);
                MPI_Recv(res, (int) n, MPI_BYTE, w, MW_RESULT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                for (i = 0; i < n; ++i) {
                    if (res[i] != pat(0, w, n - 1 - i, hdr[1])) {
                        FAIL("masterworker: result of round %d from rank %d, byte %zu", hdr[1], w, i);
                    }
                }
            }
            if (hdr[1] + 1 == MW_ROUNDS) {
                MPI_Send(NULL, 0, MPI_BYTE, w, MW_STOP, MPI_COMM_WORLD);
                active--;
            } else {
                size_t n = mw_len(w, hdr[1] + 1);
                for (i = 0; i < n; ++i) {
                    buf[i] = pat(0, w, i, hdr[1] + 1);
                }
                MPI_Send(buf, (int) n, MPI_BYTE, w, MW_TASK, MPI_COMM_WORLD);
            }
        }
    } else {
        int hdr[2] = { rank, -1 }, round = 0;

        MPI_Send(hdr, 2, MPI_INT, 0, MW_REQ, MPI_COMM_WORLD); /* the first word */
        for (;;) {
            MPI_Status st;
            int n;

            MPI_Recv(buf, MW_MAX, MPI_BYTE, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            if (st.MPI_TAG == MW_STOP) {
                break;
            }
            MPI_Get_count(&st, MPI_BYTE, &n);
            if (st.MPI_TAG != MW_TASK || (size_t) n != mw_len(rank, round)) {
                FAIL("masterworker: task %d: tag %d, %d bytes", round, st.MPI_TAG, n);
            }
            for (i = 0; i < (size_t) n; ++i) {
                if (buf[i] != pat(0, rank, i, round)) {
                    FAIL("masterworker: task %d byte %zu", round, i);
                }
                res[n - 1 - i] = buf[i];
            }
            hdr[1] = round;
            MPI_Send(hdr, 2, MPI_INT, 0, MW_REQ, MPI_COMM_WORLD);
            MPI_Send(res, n, MPI_BYTE, 0, MW_RESULT, MPI_COMM_WORLD);
            round++;
        }
        if (round != MW_ROUNDS) {
            FAIL("masterworker: stopped after %d rounds", round);
        }
    }
    free(buf);
    free(res);
}

static void storm(void)
{
    const int n = 1000;
    uint8_t *out = malloc((size_t) n * size), *in = malloc((size_t) n * size);
    MPI_Request *r = malloc(sizeof(*r) * 2 * size);
    int p, k = 0;
    size_t i;

    /* sends first, from everyone to everyone: endpoints connect in both
     * directions at once */
    for (p = 0; p < size; ++p) {
        for (i = 0; i < (size_t) n; ++i) {
            out[(size_t) p * n + i] = pat(rank, p, i, 1);
        }
        if (p != rank) {
            MPI_Isend(out + (size_t) p * n, n, MPI_BYTE, p, 7, MPI_COMM_WORLD, &r[k++]);
        }
    }
    for (p = 0; p < size; ++p) {
        if (p != rank) {
            MPI_Irecv(in + (size_t) p * n, n, MPI_BYTE, p, 7, MPI_COMM_WORLD, &r[k++]);
        }
    }
    MPI_Waitall(k, r, MPI_STATUSES_IGNORE);
    for (p = 0; p < size; ++p) {
        for (i = 0; p != rank && i < (size_t) n; ++i) {
            if (in[(size_t) p * n + i] != pat(p, rank, i, 1)) {
                FAIL("storm: byte %zu from rank %d", i, p);
            }
        }
    }
    free(out);
    free(in);
    free(r);
}

static void alltoall(void)
{
    /* each element: 2 ints used out of every 3 (a strided vector type) */
    const int count = 3000;
    MPI_Datatype vec;
    int *sbuf, *rbuf, *scounts, *sdispls, p, j;
    size_t stride_elems = (size_t) count * 3;

    MPI_Type_vector(count, 2, 3, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    sbuf = calloc(stride_elems * size, sizeof(int));
    rbuf = calloc(stride_elems * size, sizeof(int));
    scounts = malloc(sizeof(int) * size);
    sdispls = malloc(sizeof(int) * size);
    for (p = 0; p < size; ++p) {
        scounts[p] = 1;
        sdispls[p] = p; /* in units of the vector's extent */
        for (j = 0; j < count * 3; ++j) {
            sbuf[p * stride_elems + j] = (j % 3 == 2) ? -1 : rank * 1000003 + p * 1009 + j;
        }
    }
    {
        MPI_Datatype rvec;
        MPI_Aint lb, ext;
        MPI_Type_get_extent(vec, &lb, &ext);
        MPI_Type_create_resized(vec, 0, (MPI_Aint) (stride_elems * sizeof(int)), &rvec);
        MPI_Type_commit(&rvec);
        MPI_Alltoallv(sbuf, scounts, sdispls, rvec, rbuf, scounts, sdispls, rvec, MPI_COMM_WORLD);
        MPI_Type_free(&rvec);
    }
    for (p = 0; p < size; ++p) {
        for (j = 0; j < count * 3; ++j) {
            int want = (j % 3 == 2) ? 0 : p * 1000003 + rank * 1009 + j;
            if (rbuf[p * stride_elems + j] != want) {
                FAIL("alltoall: element %d from rank %d is %d, want %d", j, p,
                     rbuf[p * stride_elems + j], want);
            }
        }
    }
    MPI_Type_free(&vec);
    free(sbuf);
    free(rbuf);
    free(scounts);
    free(sdispls);
}

static void many(void)
{
    const int n = 10000;
    int peer = rank ^ 1, i;
    int *out, *in;
    MPI_Request *r;

    if (peer >= size) {
        return;
    }
    out = malloc(sizeof(int) * n);
    in = malloc(sizeof(int) * n);
    r = malloc(sizeof(*r) * 2 * n);
    for (i = 0; i < n; ++i) {
        out[i] = rank * 100000 + i;
        in[i] = -1;
        MPI_Irecv(&in[i], 1, MPI_INT, peer, i % 32767, MPI_COMM_WORLD, &r[i]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (i = 0; i < n; ++i) {
        MPI_Isend(&out[i], 1, MPI_INT, peer, i % 32767, MPI_COMM_WORLD, &r[n + i]);
    }
    MPI_Waitall(2 * n, r, MPI_STATUSES_IGNORE);
    for (i = 0; i < n; ++i) {
        if (in[i] != peer * 100000 + i) {
            FAIL("many: message %d is %d", i, in[i]);
        }
    }
    free(out);
    free(in);
    free(r);
}

static void probe(void)
{
    int peer = rank ^ 1, flag = 0, count = 0;
    MPI_Status st;
    MPI_Request r;
    char buf[777], got[777];
    size_t i;

    if (peer >= size) {
        return;
    }
    for (i = 0; i < sizeof(buf); ++i) {
        buf[i] = (char) pat(rank, peer, i, 3);
    }
    MPI_Send(buf, sizeof(buf), MPI_CHAR, peer, 42, MPI_COMM_WORLD);
    MPI_Probe(peer, 42, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_CHAR, &count);
    if (count != (int) sizeof(buf) || st.MPI_SOURCE != peer) {
        FAIL("probe: count %d source %d", count, st.MPI_SOURCE);
    }
    MPI_Recv(got, count, MPI_CHAR, peer, 42, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (i = 0; i < sizeof(got); ++i) {
        if ((uint8_t) got[i] != pat(peer, rank, i, 3)) {
            FAIL("probe: byte %zu", i);
        }
    }
    MPI_Iprobe(peer, 43, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    if (flag) {
        FAIL("iprobe found a message that was never sent");
    }
    /* a receive nobody matches can be cancelled */
    MPI_Irecv(got, 1, MPI_CHAR, peer, 99, MPI_COMM_WORLD, &r);
    MPI_Cancel(&r);
    MPI_Wait(&r, &st);
    MPI_Test_cancelled(&st, &flag);
    if (!flag) {
        FAIL("cancel: receive not cancelled");
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/*
 * Contended compare-and-swap: every rank adds 1, cas_rounds times, to rank
 * 0's word (*word there, at displacement disp) with a compare-and-swap loop.
 * A lost update shows when two ranks' swaps are not atomic with each other:
 * osc rdma hands the BTL some of them with a remote handle (done by the
 * device) and some without one (memory mapped here), depending on the window
 * flavour and on where the ranks are.
 */
static void cas_counter(MPI_Win win, int64_t *word, MPI_Aint disp, const char *flavour)
{
    const int cas_rounds = 2000;
    int64_t seen = 0, cmp, swp, old;
    int i;

    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        *word = 0;
        MPI_Win_unlock(0, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    for (i = 0; i < cas_rounds; ++i) {
        do {
            cmp = seen;
            swp = seen + 1;
            MPI_Compare_and_swap(&swp, &cmp, &old, MPI_INT64_T, 0, disp, win);
            MPI_Win_flush(0, win);
            seen = old;
        } while (old != cmp);
        seen = swp;
    }
    MPI_Win_unlock(0, win);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        MPI_Win_unlock(0, win);
        if (*word != (int64_t) size * cas_rounds) {
            FAIL("osc compare_and_swap counter (%s): %lld after %d rounds on %d ranks, want %lld",
                 flavour, (long long) *word, cas_rounds, size, (long long) size * cas_rounds);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void osc(void)
{
    const int n = 4096;
    int64_t *base, *local, one = 1, result = 0, cmp, swp, old;
    MPI_Win win;
    int peer = (rank + 1) % size, from = (rank + size - 1) % size, i;

    MPI_Win_allocate(sizeof(int64_t) * (n + 2), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD,
                     &base, &win);
    local = malloc(sizeof(int64_t) * n);
    for (i = 0; i < n + 2; ++i) {
        base[i] = 0;
    }
    for (i = 0; i < n; ++i) {
        local[i] = (int64_t) rank * 1000000 + i;
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* put to the next rank, fence, check what the previous one put */
    MPI_Win_fence(0, win);
    MPI_Put(local, n, MPI_INT64_T, peer, 0, n, MPI_INT64_T, win);
    MPI_Win_fence(0, win);
    for (i = 0; i < n; ++i) {
        if (base[i] != (int64_t) from * 1000000 + i) {
            FAIL("osc put: element %d is %lld", i, (long long) base[i]);
        }
    }
    /* get it back from the next rank: it holds our data */
    memset(local, 0, sizeof(int64_t) * n);
    MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, win);
    MPI_Get(local, n, MPI_INT64_T, peer, 0, n, MPI_INT64_T, win);
    MPI_Win_unlock(peer, win);
    for (i = 0; i < n; ++i) {
        if (local[i] != (int64_t) rank * 1000000 + i) {
            FAIL("osc get: element %d is %lld", i, (long long) local[i]);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* every rank adds 1 to rank 0's counter, with accumulate and fetch-and-op */
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    MPI_Accumulate(&one, 1, MPI_INT64_T, 0, n, 1, MPI_INT64_T, MPI_SUM, win);
    MPI_Fetch_and_op(&one, &result, MPI_INT64_T, 0, n + 1, MPI_SUM, win);
    MPI_Win_unlock(0, win);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        MPI_Win_unlock(0, win);
        if (base[n] != size || base[n + 1] != size) {
            FAIL("osc accumulate/fetch_and_op: %lld and %lld, want %d", (long long) base[n],
                 (long long) base[n + 1], size);
        }
    }
    if (result < 0 || result >= size) {
        FAIL("osc fetch_and_op returned %lld", (long long) result);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* compare-and-swap: exactly one rank wins 0 -> rank+1 */
    if (rank == 0) {
        base[n + 1] = 0;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    cmp = 0;
    swp = rank + 1;
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    MPI_Compare_and_swap(&swp, &cmp, &old, MPI_INT64_T, 0, n + 1, win);
    MPI_Win_unlock(0, win);
    {
        int won = old == 0, winners = 0;
        MPI_Allreduce(&won, &winners, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (winners != 1) {
            FAIL("osc compare_and_swap: %d winners", winners);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    cas_counter(win, &base[n + 1], n + 1, "MPI_Win_allocate");
    MPI_Win_free(&win);
    free(local);

    /* the same counter on an MPI_Win_create window of MPI_Alloc_mem memory */
    MPI_Alloc_mem(sizeof(int64_t), MPI_INFO_NULL, &base);
    *base = 0;
    MPI_Win_create(base, sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    cas_counter(win, base, 0, "MPI_Win_create");
    MPI_Win_free(&win);
    MPI_Free_mem(base);
}

static const struct {
    const char *name;
    void (*fn)(void);
} patterns[] = {
    { "hosts", hosts }, { "masterworker", masterworker }, { "storm", storm }, { "alltoall", alltoall }, { "many", many }, { "probe", probe }, { "osc", osc },
};

int main(int argc, char **argv)
{
    size_t k;
    int a;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (k = 0; k < sizeof(patterns) / sizeof(patterns[0]); ++k) {
        int run = argc < 2;
        for (a = 1; a < argc; ++a) {
            run |= 0 == strcmp(argv[a], patterns[k].name);
        }
        if (!run) {
            continue;
        }
        patterns[k].fn();
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            printf("PASS %s (%d ranks)\n", patterns[k].name, size);
            fflush(stdout);
        }
    }
    MPI_Finalize();
    return 0;
}

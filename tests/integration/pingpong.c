/*
 * pingpong.c - MPI ping-pong with full verification of every received byte.
 *
 * Part of the openib BTL integration tests.  Rank 0 sends a message of each
 * size to rank 1, which checks it and answers with a message of the same size
 * and a different pattern, which rank 0 checks.  Sizes: 0, every power of two
 * up to the maximum (default 4 MiB), and a few odd sizes around protocol
 * boundaries.  The byte pattern depends on the size, the iteration, the
 * sending rank and the byte's position, so misplaced, stale, truncated or
 * mixed-up messages are detected.  Receive buffers are poisoned before every
 * receive.
 *
 * Output (rank 0), last line:
 *   pingpong: verification PASSED: <n> sizes (<min>..<max> B), <k> iterations,
 *   <m> messages, <b> bytes verified, 0 errors
 * or "pingpong: verification FAILED: ..." (and exit status 1).
 *
 * Usage: pingpong [-n ITERS] [-m MAXBYTES] [-v] [-x] [-H] [-r]
 *   -H  every rank prints "pingpong: rank <r> of <n> on <host name>" first
 *       (tests across nodes check where each rank ran)
 *   -r  rank 1 sends first and rank 0 waits in MPI_Recv (the receive-first
 *       side is then the one whose transport meets the peer first through
 *       its connect request)
 *   -x  self-test of the verifier: rank 1 corrupts one byte of one reply, so
 *       the run must end in "verification FAILED" with exactly 1 error.
 */
#include <mpi.h>

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_SIZES 128
#define TAG_PING 101
#define TAG_PONG 102

static const size_t odd_sizes[] = {3, 7, 13, 127, 1000, 4095, 4097, 12289,
                                   65537, 131071, 1000003, 2097153};

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *) a, y = *(const size_t *) b;
    return (x > y) - (x < y);
}

/* Seed mixing the message's identity; each byte then comes from an LCG. */
static uint32_t pattern_seed(size_t size, int iter, int rank)
{
    uint32_t h = 2166136261u;
    h = (h ^ (uint32_t) size) * 16777619u;
    h = (h ^ (uint32_t) (size >> 32)) * 16777619u;
    h = (h ^ (uint32_t) iter) * 16777619u;
    h = (h ^ (uint32_t) rank) * 16777619u;
    return h | 1u;
}

static void fill(unsigned char *buf, size_t n, size_t size, int iter, int rank)
{
    uint32_t x = pattern_seed(size, iter, rank);
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        buf[i] = (unsigned char) (x >> 24);
    }
}

/* Returns the number of wrong bytes; reports the first one. */
static size_t check(const unsigned char *buf, size_t n, size_t size, int iter, int rank,
                    int me)
{
    uint32_t x = pattern_seed(size, iter, rank);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        unsigned char want = (unsigned char) (x >> 24);
        if (buf[i] != want) {
            if (bad == 0) {
                fprintf(stderr,
                        "pingpong: rank %d: size %zu iteration %d: byte %zu is 0x%02x, "
                        "expected 0x%02x\n",
                        me, size, iter, i, buf[i], want);
            }
            bad++;
        }
    }
    return bad;
}

static void usage(void)
{
    fprintf(stderr, "usage: pingpong [-n ITERS] [-m MAXBYTES] [-v] [-x] [-H] [-r]\n");
}

int main(int argc, char **argv)
{
    int iters = 3, verbose = 0, corrupt = 0, print_host = 0, first = 0, opt;
    size_t maxsize = 4u << 20;

    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);

    while ((opt = getopt(argc, argv, "n:m:vxHrh")) != -1) {
        switch (opt) {
        case 'n':
            iters = atoi(optarg);
            break;
        case 'm':
            maxsize = strtoull(optarg, NULL, 0);
            break;
        case 'v':
            verbose = 1;
            break;
        case 'x':
            corrupt = 1;
            break;
        case 'H':
            print_host = 1;
            break;
        case 'r':
            first = 1; /* rank 1 sends first; rank 0 waits in MPI_Recv */
            break;
        default:
            if (me == 0)
                usage();
            MPI_Finalize();
            return 2;
        }
    }
    if (iters < 1) {
        if (me == 0)
            fprintf(stderr, "pingpong: -n must be >= 1\n");
        MPI_Finalize();
        return 2;
    }
    if (np != 2) {
        if (me == 0)
            fprintf(stderr, "pingpong: needs exactly 2 ranks (got %d)\n", np);
        MPI_Finalize();
        return 2;
    }

    if (print_host) {
        char host[256] = "?";
        gethostname(host, sizeof(host) - 1);
        printf("pingpong: rank %d of %d on %s\n", me, np, host);
        fflush(stdout);
    }

    size_t sizes[MAX_SIZES];
    int nsizes = 0;
    sizes[nsizes++] = 0;
    for (size_t s = 1; s <= maxsize && nsizes < MAX_SIZES; s <<= 1)
        sizes[nsizes++] = s;
    for (size_t i = 0; i < sizeof(odd_sizes) / sizeof(odd_sizes[0]); i++)
        if (odd_sizes[i] <= maxsize && nsizes < MAX_SIZES)
            sizes[nsizes++] = odd_sizes[i];
    qsort(sizes, nsizes, sizeof(sizes[0]), cmp_size);

    unsigned char *sbuf = malloc(maxsize ? maxsize : 1);
    unsigned char *rbuf = malloc(maxsize ? maxsize : 1);
    if (!sbuf || !rbuf) {
        fprintf(stderr, "pingpong: rank %d: out of memory\n", me);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    int peer = 1 - me;
    unsigned long long messages = 0, bytes = 0, errors = 0;

    for (int si = 0; si < nsizes; si++) {
        size_t size = sizes[si];
        double t0 = MPI_Wtime();
        for (int it = 0; it < iters; it++) {
            int leg;
            for (leg = 0; leg < 2; leg++) {
                int sender = leg ? 1 - first : first; /* leg 0: first -> other */
                int tag = leg == 0 ? TAG_PING : TAG_PONG;
                if (me == sender) {
                    fill(sbuf, size, size, it, me);
                    if (corrupt && me == 1 && it == iters - 1 && size > 0 && si == nsizes - 1)
                        sbuf[size / 2] ^= 0x10;
                    MPI_Send(sbuf, (int) size, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
                } else {
                    MPI_Status st;
                    int count = -1;
                    memset(rbuf, 0xA5 ^ (it & 0xff), size);
                    MPI_Recv(rbuf, (int) size, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st);
                    MPI_Get_count(&st, MPI_BYTE, &count);
                    messages++;
                    if (count != (int) size || st.MPI_SOURCE != peer || st.MPI_TAG != tag) {
                        fprintf(stderr,
                                "pingpong: rank %d: size %zu iteration %d: got count %d "
                                "source %d tag %d\n",
                                me, size, it, count, st.MPI_SOURCE, st.MPI_TAG);
                        errors++;
                    } else {
                        size_t bad = check(rbuf, size, size, it, peer, me);
                        errors += bad;
                        bytes += size - bad;
                    }
                }
            }
        }
        double t1 = MPI_Wtime();
        if (verbose && me == 0)
            printf("pingpong: size %8zu: %d round trips, %.1f us half round trip\n", size,
                   iters, (t1 - t0) * 1e6 / (2.0 * iters));
    }

    unsigned long long mine[3] = {messages, bytes, errors}, sum[3];
    MPI_Reduce(mine, sum, 3, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    int rc = 0;
    if (me == 0) {
        unsigned long long expect = 2ull * (unsigned long long) nsizes * (unsigned long long) iters;
        int ok = sum[2] == 0 && sum[0] == expect;
        printf("pingpong: verification %s: %d sizes (%zu..%zu B), %d iterations, "
               "%llu messages, %llu bytes verified, %llu errors\n",
               ok ? "PASSED" : "FAILED", nsizes, sizes[0], sizes[nsizes - 1], iters,
               sum[0], sum[1], sum[2]);
        fflush(stdout);
        rc = ok ? 0 : 1;
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return rc;
}

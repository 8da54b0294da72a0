/*
 * openib_bench.c - small MPI point-to-point benchmark for the openib BTL.
 *
 * Two ranks.  For each message size (0 B, then powers of two up to 1 MiB by
 * default) it takes many samples of:
 *   lat   ping-pong latency: half the round-trip time of one sample, in us
 *   uni   uni-directional bandwidth: rank 0 posts a window of MPI_Isend,
 *         rank 1 a window of MPI_Irecv, one ack per window; one sample is
 *         one window; MiB/s
 *   bi    bi-directional bandwidth: both ranks post a window of MPI_Irecv and
 *         MPI_Isend; bytes moved in both directions per second, MiB/s
 *   rate  message rate: uni-directional windows of small messages, thousand
 *         messages per second
 * (MiB = 2^20 bytes, like perftest's MB/sec.)  For every size and test it
 * reports the number of samples, their median, quartiles (q1, q3: the
 * interquartile range), minimum and maximum, and the mean (from the total
 * time of all samples).  Emulated and shared machines deschedule a rank now
 * and then, which makes single samples hundreds of times slower: the median
 * and the quartiles resist that, the mean and the maximum show it.
 * Quantiles interpolate linearly between order statistics (position
 * p * (n - 1) of the sorted samples).
 *
 * Samples per size: the base count of the test (--lat-iters, --bw-iters,
 * --rate-iters), lowered for large sizes so that one test moves at most
 * --max-bytes, but never below --min-samples (default 100).  Bandwidth
 * windows shrink for large sizes so that one window holds at most
 * --window-bytes.
 *
 * Every received message is checked: its count, and the expected pattern at
 * its first, middle and last byte.  Warm-up iterations (untimed) fill and
 * check the whole message, so filling and checking megabytes under emulation
 * does not count against the transport; --full-every N also fully checks
 * every Nth timed iteration.  Checked messages, fully checked bytes and
 * errors are counted and printed; any error makes the exit status 1.
 *
 * Pairs: with 2N ranks, ranks 0..N-1 each pair with rank i+N and all pairs
 * run at once (osu_mbw_mr-style, for uni, bi and rate only), each window
 * started together: a sample is what all pairs moved in the slowest
 * pair's time.
 *
 * Output: a table, or CSV with --csv (one row per size and test; lines
 * starting with '#' are comments: the hosts of the two ranks, the sample
 * counts, the verification summary).
 */
#include <mpi.h>

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_stats.h"

#define BENCH_VERSION "2.0"
#define TAG_DATA 11
#define TAG_ACK 12
#define MIB (1024.0 * 1024.0)

enum { T_LAT, T_UNI, T_BI, T_RATE, N_TESTS };

static const struct test_desc {
    const char *name;
    const char *unit;
} test_desc[N_TESTS] = {
    [T_LAT] = {.name = "lat", .unit = "us"},
    [T_UNI] = {.name = "uni", .unit = "MiB/s"},
    [T_BI] = {.name = "bi", .unit = "MiB/s"},
    [T_RATE] = {.name = "rate", .unit = "k msg/s"},
};

static struct {
    size_t min_size, max_size, max_bytes, window_bytes;
    size_t lo[N_TESTS], hi[N_TESTS]; /* sizes each test runs at */
    int lat_iters, bw_iters, window, rate_iters, rate_window, warmup, full_every, min_samples;
    size_t big_from;  /* sizes above it take at least big_samples samples instead */
    int big_samples;
    int tests, csv;
} opt = {
    .min_size = 0,
    .max_size = 1u << 20,
    .max_bytes = 16u << 20,
    .window_bytes = 2u << 20,
    .lo = {0, 0, 0, 0},
    .hi = {SIZE_MAX, SIZE_MAX, SIZE_MAX, 4096},
    .lat_iters = 1000,
    .bw_iters = 300,
    .window = 16,
    .rate_iters = 200,
    .rate_window = 64,
    .warmup = 2,
    .full_every = 0,
    .min_samples = 100,
    .big_from = 1u << 20,
    .big_samples = 0, /* 0: min_samples */
    .tests = (1 << T_LAT) | (1 << T_UNI) | (1 << T_BI) | (1 << T_RATE),
    .csv = 0,
};

static int me, peer;
static int pairs = 1;           /* ranks 0..pairs-1 send (lat: ping) to rank + pairs */
static MPI_Comm senders;        /* the pairs' first ranks, for combining their samples */

/* verification counters (this rank) */
static unsigned long long n_checked, n_full, full_bytes, n_errors;

static inline unsigned char pat(size_t i, size_t size, int iter, int rank)
{
    return (unsigned char) ((i * 131u) ^ (i >> 9) ^ (size * 13u) ^ ((unsigned) iter * 71u) ^
                            ((unsigned) rank * 101u) ^ 0x5a);
}

/* Negative iterations are the untimed warm-ups (see the loops). */
static int is_full(int iter)
{
    return iter < 0 || (opt.full_every > 0 && iter % opt.full_every == 0);
}

/* Prepare a send buffer for (size, iter): whole buffer on full iterations,
 * else only the three probe bytes. */
static void prep_send(unsigned char *buf, size_t size, int iter)
{
    if (size == 0)
        return;
    if (is_full(iter)) {
        for (size_t i = 0; i < size; i++)
            buf[i] = pat(i, size, iter, me);
    } else {
        size_t probe[3] = {0, size / 2, size - 1};
        for (int k = 0; k < 3; k++)
            buf[probe[k]] = pat(probe[k], size, iter, me);
    }
}

/* Poison what the next check will look at. */
static void prep_recv(unsigned char *buf, size_t size, int iter)
{
    if (size == 0)
        return;
    if (is_full(iter)) {
        memset(buf, 0xA5, size);
    } else {
        size_t probe[3] = {0, size / 2, size - 1};
        for (int k = 0; k < 3; k++)
            buf[probe[k]] = (unsigned char) ~pat(probe[k], size, iter, peer);
    }
}

static void check_recv(const unsigned char *buf, size_t size, int iter, MPI_Status *st)
{
    int count = -1;
    MPI_Get_count(st, MPI_BYTE, &count);
    n_checked++;
    if (count != (int) size) {
        if (n_errors++ < 5)
            fprintf(stderr, "openib_bench: rank %d: size %zu iter %d: received %d bytes\n", me,
                    size, iter, count);
        return;
    }
    if (size == 0)
        return;
    size_t bad = 0, first = 0;
    if (is_full(iter)) {
        for (size_t i = 0; i < size; i++)
            if (buf[i] != pat(i, size, iter, peer) && bad++ == 0)
                first = i;
        n_full++;
        full_bytes += size;
    } else {
        size_t probe[3] = {0, size / 2, size - 1};
        for (int k = 0; k < 3; k++)
            if (buf[probe[k]] != pat(probe[k], size, iter, peer) && bad++ == 0)
                first = probe[k];
    }
    if (bad) {
        if (n_errors < 5)
            fprintf(stderr,
                    "openib_bench: rank %d: size %zu iter %d: %zu bad byte(s), first at %zu: "
                    "0x%02x, expected 0x%02x\n",
                    me, size, iter, bad, first, buf[first], pat(first, size, iter, peer));
        n_errors++;
    }
}

/* Seconds taken by each timed iteration of the current test. */
static double *itime;

struct stats {
    int n;
    double median, q1, q3, min, max, mean;
};

/* The figure of one sample that took t seconds and moved msgs messages of
 * size bytes (each way for bi). */
static double metric(int test, size_t size, int msgs, double t)
{
    switch (test) {
    case T_LAT: return t * 1e6 / 2.0;
    case T_UNI: return (double) size * msgs / t / MIB;
    case T_BI: return 2.0 * size * msgs / t / MIB;
    default: return msgs / t / 1e3;
    }
}

/* Several pairs: every window starts on a barrier of all ranks (outside
 * the timed interval: pair_barrier), so the pairs' i-th windows run at the
 * same time; together they moved `pairs` windows in the slowest pair's
 * time. Rank 0 takes the senders' window times and makes each sample that
 * time divided by the pairs, so its figure is the pairs' sum (the same as
 * osu_mbw_mr's, window by window). Returns the total time the same way:
 * the sum of the combined samples. */
static double combine_pairs(int n, double total)
{
    double *all = NULL, sum = 0;

    if (pairs == 1 || me >= pairs) {
        return total;
    }
    if (me == 0) {
        all = malloc(sizeof(double) * (size_t) n * (size_t) pairs);
    }
    MPI_Gather(itime, n, MPI_DOUBLE, all, n, MPI_DOUBLE, 0, senders);
    if (me != 0) {
        return total;
    }
    for (int i = 0; i < n; i++) {
        double slowest = 0;
        for (int p = 0; p < pairs; p++)
            if (all[(size_t) p * (size_t) n + (size_t) i] > slowest)
                slowest = all[(size_t) p * (size_t) n + (size_t) i];
        itime[i] = slowest / pairs;
        sum += itime[i];
    }
    free(all);
    return sum;
}

/* With several pairs, before each window: all ranks at once (see
 * combine_pairs). One pair needs no barrier: its ack orders the windows. */
static void pair_barrier(void)
{
    if (pairs > 1)
        MPI_Barrier(MPI_COMM_WORLD);
}

/* Turn the n iteration times in itime into statistics of the test's figure
 * (converted in place: itime is rewritten). Every rank calls it (with
 * several pairs it gathers the senders' samples first); rank 0's figures
 * are the ones printed. */
static struct stats finish_stats(int test, size_t size, int msgs, int n, double total)
{
    struct stats s = {.n = n};

    total = combine_pairs(n, total);
    for (int i = 0; i < n; i++)
        itime[i] = metric(test, size, msgs, itime[i]);
    qsort(itime, (size_t) n, sizeof(double), cmp_double);
    s.min = itime[0];
    s.max = itime[n - 1];
    s.q1 = quantile(itime, n, 0.25);
    s.median = quantile(itime, n, 0.5);
    s.q3 = quantile(itime, n, 0.75);
    s.mean = metric(test, size, msgs, total / n);
    return s;
}

/* samples for a size: the base count, fewer when one test would move more
 * than max_bytes, but at least min_samples (big_samples above big_from) */
static int scaled_iters(int base, size_t size, int per_iter_msgs)
{
    size_t per_iter = (size ? size : 1) * (size_t) per_iter_msgs;
    size_t cap = opt.max_bytes / per_iter;
    int n = base, floor = opt.min_samples;
    if (size > opt.big_from && opt.big_samples > 0)
        floor = opt.big_samples;
    if (cap < (size_t) n)
        n = (int) cap;
    return n < floor ? floor : n;
}

/* Ping-pong; returns the total time of the timed iterations. Never
 * inlined: profile-lat.sh counts instructions inside it by name. */
static __attribute__((noinline)) double run_lat(unsigned char *sbuf, unsigned char *rbuf, size_t size, int iters)
{
    double t0 = 0, ti = 0;
    MPI_Status st;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int it = -opt.warmup; it < iters; it++) {
        int vi = it; /* pattern iteration; negative: warm-up */
        if (it == 0)
            t0 = MPI_Wtime();
        ti = MPI_Wtime();
        if (me < pairs) {
            prep_send(sbuf, size, vi);
            prep_recv(rbuf, size, vi);
            MPI_Send(sbuf, (int) size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD);
            MPI_Recv(rbuf, (int) size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &st);
            check_recv(rbuf, size, vi, &st);
        } else {
            prep_recv(rbuf, size, vi);
            MPI_Recv(rbuf, (int) size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &st);
            check_recv(rbuf, size, vi, &st);
            prep_send(sbuf, size, vi);
            MPI_Send(sbuf, (int) size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD);
        }
        if (it >= 0)
            itime[it] = MPI_Wtime() - ti;
    }
    return MPI_Wtime() - t0;
}

/* Uni-directional windows (rank 0 sends, rank 1 acks each window). */
static double run_uni(unsigned char *sbuf, unsigned char **rbufs, size_t size, int window,
                      int iters, MPI_Request *req, MPI_Status *sts)
{
    double t0 = 0, ti = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int it = -opt.warmup; it < iters; it++) {
        int vi = it;
        pair_barrier();
        if (it == 0)
            t0 = MPI_Wtime();
        ti = MPI_Wtime();
        if (me < pairs) {
            prep_send(sbuf, size, vi);
            for (int w = 0; w < window; w++)
                MPI_Isend(sbuf, (int) size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &req[w]);
            MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
            MPI_Recv(NULL, 0, MPI_BYTE, peer, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            for (int w = 0; w < window; w++) {
                prep_recv(rbufs[w], size, vi);
                MPI_Irecv(rbufs[w], (int) size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD,
                          &req[w]);
            }
            MPI_Waitall(window, req, sts);
            for (int w = 0; w < window; w++)
                check_recv(rbufs[w], size, vi, &sts[w]);
            MPI_Send(NULL, 0, MPI_BYTE, peer, TAG_ACK, MPI_COMM_WORLD);
        }
        if (it >= 0)
            itime[it] = MPI_Wtime() - ti;
    }
    return MPI_Wtime() - t0;
}

/* Bi-directional windows: both ranks send and receive a window. */
static double run_bi(unsigned char *sbuf, unsigned char **rbufs, size_t size, int window,
                     int iters, MPI_Request *req, MPI_Status *sts)
{
    double t0 = 0, ti = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int it = -opt.warmup; it < iters; it++) {
        int vi = it;
        pair_barrier();
        if (it == 0)
            t0 = MPI_Wtime();
        ti = MPI_Wtime();
        prep_send(sbuf, size, vi);
        for (int w = 0; w < window; w++) {
            prep_recv(rbufs[w], size, vi);
            MPI_Irecv(rbufs[w], (int) size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &req[w]);
        }
        for (int w = 0; w < window; w++)
            MPI_Isend(sbuf, (int) size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD,
                      &req[window + w]);
        MPI_Waitall(2 * window, req, sts);
        for (int w = 0; w < window; w++)
            check_recv(rbufs[w], size, vi, &sts[w]);
        if (it >= 0)
            itime[it] = MPI_Wtime() - ti;
    }
    return MPI_Wtime() - t0;
}

static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    switch (*end) {
    case 'k': case 'K': v *= 1024; break;
    case 'm': case 'M': v *= 1024 * 1024; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; break;
    default: break;
    }
    return (size_t) v;
}

static int test_index(const char *name)
{
    if (!strcmp(name, "bw"))
        name = "uni";
    else if (!strcmp(name, "bibw"))
        name = "bi";
    for (int t = 0; t < N_TESTS; t++)
        if (!strcmp(name, test_desc[t].name))
            return t;
    return -1;
}

static int parse_tests(const char *s)
{
    int mask = 0;
    char *dup = strdup(s), *save = NULL;
    for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int t = test_index(tok);
        if (!strcmp(tok, "all")) {
            mask |= (1 << N_TESTS) - 1;
        } else if (t < 0) {
            mask = -1;
            break;
        } else {
            mask |= 1 << t;
        }
    }
    free(dup);
    return mask;
}

/* TEST=LO:HI: run TEST only at sizes LO..HI; 0 when well-formed */
static int parse_test_sizes(const char *s)
{
    char name[16];
    const char *eq = strchr(s, '='), *colon = eq ? strchr(eq, ':') : NULL;
    if (!eq || !colon || (size_t) (eq - s) >= sizeof name)
        return -1;
    memcpy(name, s, (size_t) (eq - s));
    name[eq - s] = '\0';
    int t = test_index(name);
    if (t < 0)
        return -1;
    opt.lo[t] = parse_size(eq + 1);
    opt.hi[t] = parse_size(colon + 1);
    return opt.lo[t] <= opt.hi[t] ? 0 : -1;
}

static void usage(void)
{
    printf("usage: openib_bench [options]   (run with 2 MPI ranks, or 2N for N pairs: uni, bi,\n"
           "                                  rate only; each window starts together)\n"
           "  -t, --tests LIST        lat,uni,bi,rate or all (default all)\n"
           "  -m, --min-size N        smallest size (default 0)\n"
           "  -M, --max-size N        largest size (default 1M); sizes are 0 and powers of 2\n"
           "  -S, --test-sizes T=L:H  run test T only at sizes L..H (repeatable)\n"
           "  -R, --rate-max-size N   the same as -S rate=0:N (default 4K)\n"
           "  -n, --min-samples N     at least N samples per size and test (default %d)\n"
           "      --big-samples N     ...but at least N (fewer) above --big-from (default 1M)\n"
           "      --big-from N\n"
           "  -i, --lat-iters N       ping-pong samples per size (default %d)\n"
           "  -b, --bw-iters N        windows per size, uni and bi (default %d)\n"
           "  -r, --rate-iters N      windows per size for the message rate (default %d)\n"
           "  -B, --max-bytes N       fewer samples where a test would move more than N bytes\n"
           "                          per size (default 16M; never fewer than --min-samples)\n"
           "  -w, --window N          messages per bandwidth window (default %d)\n"
           "  -P, --window-bytes N    at most N bytes per bandwidth window (default 2M)\n"
           "  -W, --rate-window N     messages per message-rate window (default %d)\n"
           "  -x, --warmup N          warm-up iterations/windows (default %d)\n"
           "  -f, --full-every N      also fully check every Nth timed iteration (default %d: only\n"
           "                          the untimed warm-ups are fully checked)\n"
           "      --csv               CSV output\n"
           "  -h, --help\n"
           "Sizes accept K, M, G suffixes (powers of 1024).\n",
           opt.min_samples, opt.lat_iters, opt.bw_iters, opt.rate_iters, opt.window,
           opt.rate_window, opt.warmup, opt.full_every);
}

/* "# rank 0 on HOST, rank P on HOST": where each pair's ranks ran */
static void print_hosts(int np)
{
    char name[MPI_MAX_PROCESSOR_NAME] = "", (*all)[MPI_MAX_PROCESSOR_NAME] = NULL;
    int len = 0;
    MPI_Get_processor_name(name, &len);
    if (me == 0)
        all = calloc((size_t) np, sizeof(*all));
    MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
               MPI_COMM_WORLD);
    if (me == 0) {
        printf("# openib_bench %s: rank 0 on %s, rank %d on %s\n", BENCH_VERSION, all[0], pairs,
               all[pairs]);
        if (pairs > 1)
            printf("# pairs: %d (ranks 0-%d send to ranks %d-%d, each window started together; "
                   "a sample is what all pairs moved in the slowest pair's time)\n",
                   pairs, pairs - 1, pairs, np - 1);
    }
    free(all);
}

/* A test's name in the output: with several pairs, "ratex4" and the like,
 * so one CSV can hold both. */
static void print_row(size_t size, int test, int msgs, const struct stats *s)
{
    const char *f = opt.csv ? "%zu,%s,%s,%d,%d,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g\n"
                            : "%10zu %5s %8s %8d %5d %11.6g %11.6g %11.6g %11.6g %11.6g %11.6g\n";
    char name[16];

    snprintf(name, sizeof(name), pairs > 1 ? "%sx%d" : "%s", test_desc[test].name, pairs);
    printf(f, size, name, test_desc[test].unit, s->n, msgs, s->median, s->q1, s->q3, s->min,
           s->max, s->mean);
}

static int runs_at(int test, size_t size)
{
    return (opt.tests & (1 << test)) && size >= opt.lo[test] && size <= opt.hi[test];
}

int main(int argc, char **argv)
{
    int np;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);

    static struct option lopts[] = {
        {"tests", required_argument, 0, 't'},       {"min-size", required_argument, 0, 'm'},
        {"max-size", required_argument, 0, 'M'},    {"test-sizes", required_argument, 0, 'S'},
        {"rate-max-size", required_argument, 0, 'R'},
        {"min-samples", required_argument, 0, 'n'}, {"lat-iters", required_argument, 0, 'i'},
        {"bw-iters", required_argument, 0, 'b'},    {"rate-iters", required_argument, 0, 'r'},
        {"max-bytes", required_argument, 0, 'B'},   {"window", required_argument, 0, 'w'},
        {"window-bytes", required_argument, 0, 'P'},
        {"rate-window", required_argument, 0, 'W'}, {"warmup", required_argument, 0, 'x'},
        {"full-every", required_argument, 0, 'f'},  {"csv", no_argument, 0, 'C'},
        {"big-samples", required_argument, 0, 'N'}, {"big-from", required_argument, 0, 'F'},
        {"help", no_argument, 0, 'h'},              {0, 0, 0, 0}};
    int c, bad = 0;
    while ((c = getopt_long(argc, argv, "t:m:M:S:R:n:i:b:r:B:w:P:W:x:f:h", lopts, NULL)) != -1) {
        switch (c) {
        case 't': opt.tests = parse_tests(optarg); if (opt.tests <= 0) bad = 1; break;
        case 'm': opt.min_size = parse_size(optarg); break;
        case 'M': opt.max_size = parse_size(optarg); break;
        case 'S': if (parse_test_sizes(optarg)) bad = 1; break;
        case 'R': opt.lo[T_RATE] = 0; opt.hi[T_RATE] = parse_size(optarg); break;
        case 'n': opt.min_samples = atoi(optarg); break;
        case 'i': opt.lat_iters = atoi(optarg); break;
        case 'b': opt.bw_iters = atoi(optarg); break;
        case 'r': opt.rate_iters = atoi(optarg); break;
        case 'B': opt.max_bytes = parse_size(optarg); break;
        case 'w': opt.window = atoi(optarg); break;
        case 'P': opt.window_bytes = parse_size(optarg); break;
        case 'W': opt.rate_window = atoi(optarg); break;
        case 'x': opt.warmup = atoi(optarg); break;
        case 'f': opt.full_every = atoi(optarg); break;
        case 'C': opt.csv = 1; break;
        case 'N': opt.big_samples = atoi(optarg); break;
        case 'F': opt.big_from = parse_size(optarg); break;
        case 'h':
            if (me == 0)
                usage();
            MPI_Finalize();
            return 0;
        default: bad = 1; break;
        }
    }
    if (opt.lat_iters < 1 || opt.bw_iters < 1 || opt.window < 1 || opt.rate_iters < 1 ||
        opt.rate_window < 1 || opt.warmup < 0 || opt.full_every < 0 || opt.min_samples < 1 ||
        opt.min_samples > 1000000 || opt.big_samples < 0 || opt.max_size > (size_t) 1 << 30 ||
        opt.min_size > opt.max_size)
        bad = 1;
    pairs = np / 2;
    if (bad || np < 2 || np % 2 || (pairs > 1 && (opt.tests & (1 << T_LAT)))) {
        if (me == 0) {
            if (np < 2 || np % 2)
                fprintf(stderr, "openib_bench: needs an even number of ranks (got %d)\n", np);
            else if (!bad)
                fprintf(stderr, "openib_bench: several pairs measure uni, bi and rate, not lat\n");
            else
                usage();
        }
        MPI_Finalize();
        return 2;
    }
    peer = me < pairs ? me + pairs : me - pairs;
    MPI_Comm_split(MPI_COMM_WORLD, me < pairs ? 0 : MPI_UNDEFINED, me, &senders);

    int maxwin = opt.window > opt.rate_window ? opt.window : opt.rate_window;
    size_t bufsize = opt.max_size ? opt.max_size : 1;
    unsigned char *sbuf = malloc(bufsize);
    unsigned char **rbufs = calloc((size_t) maxwin, sizeof(*rbufs));
    MPI_Request *req = calloc(2 * (size_t) maxwin, sizeof(*req));
    MPI_Status *sts = calloc(2 * (size_t) maxwin, sizeof(*sts));
    int maxit = opt.min_samples;
    if (opt.lat_iters > maxit)
        maxit = opt.lat_iters;
    if (opt.bw_iters > maxit)
        maxit = opt.bw_iters;
    if (opt.rate_iters > maxit)
        maxit = opt.rate_iters;
    itime = calloc((size_t) maxit + 1, sizeof(*itime));
    /* Receive buffers: one region carved into window slots of the current
     * size; grown when a size needs more. */
    unsigned char *region = NULL;
    size_t region_size = 0;
    if (!sbuf || !rbufs || !req || !sts || !itime) {
        fprintf(stderr, "openib_bench: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(sbuf, 0, bufsize);

    print_hosts(np);
    if (me == 0) {
        printf("# lat: half round trip (us); uni, bi: MiB/s (2^20 B/s; bi counts both "
               "directions); rate: thousand messages/s\n");
        printf("# samples per size: lat %d, uni/bi %d windows of %d (at most %zu B), rate %d "
               "windows of %d; fewer above %zu B per test, never fewer than %d; full check "
               "every %d\n",
               opt.lat_iters, opt.bw_iters, opt.window, opt.window_bytes, opt.rate_iters,
               opt.rate_window, opt.max_bytes, opt.min_samples, opt.full_every);
        printf(opt.csv ? "size,test,unit,samples,msgs_per_sample,median,q1,q3,min,max,mean\n"
                       : "%10s %5s %8s %8s %5s %11s %11s %11s %11s %11s %11s\n",
               "size", "test", "unit", "samples", "msgs", "median", "q1", "q3", "min", "max",
               "mean");
        fflush(stdout);
    }

    unsigned long long tot[4] = {0};
    size_t size = opt.min_size;
    for (;;) {
        struct stats st[N_TESTS];
        int msgs[N_TESTS] = {0};
        /* window for this size: keep the in-flight receive buffers bounded */
        int win = opt.window;
        while (win > 1 && (size_t) win * size > opt.window_bytes)
            win /= 2;
        int need = win;
        if (runs_at(T_RATE, size) && opt.rate_window > need)
            need = opt.rate_window;
        size_t stride = size ? size : 1;
        if ((size_t) need * stride > region_size) {
            free(region);
            region_size = (size_t) need * stride;
            region = malloc(region_size);
            if (!region) {
                fprintf(stderr, "openib_bench: out of memory (%zu B)\n", region_size);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            memset(region, 0, region_size);
        }
        for (int w = 0; w < need; w++)
            rbufs[w] = region + (size_t) w * stride;
        n_checked = n_full = full_bytes = n_errors = 0;

        if (runs_at(T_LAT, size)) {
            int n = scaled_iters(opt.lat_iters, size, 2);
            msgs[T_LAT] = 1;
            st[T_LAT] = finish_stats(T_LAT, size, 1, n, run_lat(sbuf, rbufs[0], size, n));
        }
        if (runs_at(T_UNI, size)) {
            int n = scaled_iters(opt.bw_iters, size, win);
            msgs[T_UNI] = win;
            st[T_UNI] = finish_stats(T_UNI, size, win, n,
                                     run_uni(sbuf, rbufs, size, win, n, req, sts));
        }
        if (runs_at(T_BI, size)) {
            int n = scaled_iters(opt.bw_iters, size, 2 * win);
            msgs[T_BI] = win;
            st[T_BI] = finish_stats(T_BI, size, win, n, run_bi(sbuf, rbufs, size, win, n, req, sts));
        }
        if (runs_at(T_RATE, size)) {
            int n = scaled_iters(opt.rate_iters, size, opt.rate_window);
            msgs[T_RATE] = opt.rate_window;
            st[T_RATE] = finish_stats(T_RATE, size, opt.rate_window, n,
                                      run_uni(sbuf, rbufs, size, opt.rate_window, n, req, sts));
        }

        unsigned long long mine[4] = {n_checked, n_full, full_bytes, n_errors}, sum[4];
        MPI_Reduce(mine, sum, 4, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        if (me == 0) {
            for (int k = 0; k < 4; k++)
                tot[k] += sum[k];
            for (int t = 0; t < N_TESTS; t++)
                if (msgs[t])
                    print_row(size, t, msgs[t], &st[t]);
            fflush(stdout);
        }

        if (size >= opt.max_size)
            break;
        size = size == 0 ? 1 : size * 2;
        if (size > opt.max_size)
            size = opt.max_size;
    }

    int rc = 0;
    if (me == 0) {
        printf("# verification: %llu messages checked (%llu fully, %llu bytes), %llu errors: %s\n",
               tot[0], tot[1], tot[2], tot[3], tot[3] ? "FAILED" : "PASSED");
        fflush(stdout);
        rc = tot[3] ? 1 : 0;
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    free(region);
    free(itime);
    free(rbufs);
    free(req);
    free(sts);
    free(sbuf);
    if (MPI_COMM_NULL != senders)
        MPI_Comm_free(&senders);
    MPI_Finalize();
    return rc;
}

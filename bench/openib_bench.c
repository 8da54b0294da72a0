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
 *
 * The program's files (openib_bench.h says what they share): this one, the
 * sweep over the sizes; openib_bench_options.c, the command line;
 * openib_bench_loops.c, the timing loops; openib_bench_verify.c, message
 * fill and check; openib_bench_stats.c, the statistics;
 * openib_bench_output.c, the table and the CSV.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "openib_bench.h"

int me, peer;
int pairs = 1;
MPI_Comm senders;

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

static int runs_at(int test, size_t size)
{
    return (opt.tests & (1 << test)) && size >= opt.lo[test] && size <= opt.hi[test];
}

/* Receive buffers: one region carved into window slots of the current
 * size; grown when a size needs more. */
static unsigned char *region;
static size_t region_size;

static void carve_slots(unsigned char **rbufs, int need, size_t size)
{
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
}

/* Every test that runs at this size, its rows printed (rank 0); adds all
 * ranks' verification counts of the size to tot. */
static void measure_size(struct xfer x, unsigned long long tot[N_VERIFY])
{
    struct stats st[N_TESTS];
    int msgs[N_TESTS] = {0};
    size_t size = x.size;
    /* window for this size: keep the in-flight receive buffers bounded */
    int win = opt.window;
    while (win > 1 && (size_t) win * size > opt.window_bytes)
        win /= 2;
    int need = win;
    if (runs_at(T_RATE, size) && opt.rate_window > need)
        need = opt.rate_window;
    carve_slots(x.rbufs, need, size);
    verify_reset();

    x.window = win;
    if (runs_at(T_LAT, size)) {
        int n = scaled_iters(opt.lat_iters, size, 2);
        msgs[T_LAT] = 1;
        st[T_LAT] = finish_stats(T_LAT, size, 1, n, run_lat(&x, n));
    }
    if (runs_at(T_UNI, size)) {
        int n = scaled_iters(opt.bw_iters, size, win);
        msgs[T_UNI] = win;
        st[T_UNI] = finish_stats(T_UNI, size, win, n, run_uni(&x, n));
    }
    if (runs_at(T_BI, size)) {
        int n = scaled_iters(opt.bw_iters, size, 2 * win);
        msgs[T_BI] = win;
        st[T_BI] = finish_stats(T_BI, size, win, n, run_bi(&x, n));
    }
    x.window = opt.rate_window;
    if (runs_at(T_RATE, size)) {
        int n = scaled_iters(opt.rate_iters, size, opt.rate_window);
        msgs[T_RATE] = opt.rate_window;
        st[T_RATE] = finish_stats(T_RATE, size, opt.rate_window, n, run_uni(&x, n));
    }

    unsigned long long mine[N_VERIFY], sum[N_VERIFY];
    verify_counts(mine);
    MPI_Reduce(mine, sum, N_VERIFY, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (me == 0) {
        for (int k = 0; k < N_VERIFY; k++)
            tot[k] += sum[k];
        for (int t = 0; t < N_TESTS; t++)
            if (msgs[t])
                print_row(size, t, msgs[t], &st[t]);
        fflush(stdout);
    }
}

int main(int argc, char **argv)
{
    int np;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);

    enum options_result parsed = parse_options(argc, argv);
    if (parsed == OPTIONS_HELP) {
        if (me == 0)
            usage();
        MPI_Finalize();
        return 0;
    }
    int bad = parsed == OPTIONS_BAD;
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
    if (!sbuf || !rbufs || !req || !sts || !itime) {
        fprintf(stderr, "openib_bench: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(sbuf, 0, bufsize);

    print_hosts(np);
    if (me == 0) {
        print_header();
        fflush(stdout);
    }

    unsigned long long tot[N_VERIFY] = {0};
    size_t size = opt.min_size;
    for (;;) {
        struct xfer x = {.sbuf = sbuf, .rbufs = rbufs, .size = size, .req = req, .sts = sts};
        measure_size(x, tot);
        if (size >= opt.max_size)
            break;
        size = size == 0 ? 1 : size * 2;
        if (size > opt.max_size)
            size = opt.max_size;
    }

    int rc = 0;
    if (me == 0) {
        print_verification(tot);
        fflush(stdout);
        rc = tot[V_ERRORS] ? 1 : 0;
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

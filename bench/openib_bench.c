/*
 * openib_bench.c - small MPI point-to-point benchmark for the openib BTL.
 *
 * Two ranks.  For each message size (0 B, then powers of two up to 4 MiB by
 * default) it measures:
 *   lat   ping-pong latency: half the round-trip time, in microseconds
 *   uni   uni-directional bandwidth: rank 0 posts a window of MPI_Isend,
 *         rank 1 a window of MPI_Irecv, one ack per window; MiB/s
 *   bi    bi-directional bandwidth: both ranks post a window of MPI_Irecv and
 *         MPI_Isend; total bytes moved in both directions per second, MiB/s
 *   rate  message rate: uni-directional windows of small messages (sizes up
 *         to --rate-max-size), million messages per second
 * (MiB = 2^20 bytes, like perftest's MB/sec.)  Each figure is computed from
 * the median iteration (one round trip, or one window), which resists the
 * descheduling spikes of emulated or shared machines; the averages over all
 * iterations are printed too (CSV columns *_avg_*).
 *
 * Every received message is checked: its count, and the expected pattern at
 * its first, middle and last byte.  Warm-up iterations (untimed) fill and
 * check the whole message, so filling and checking megabytes under emulation
 * does not count against the transport; --full-every N also fully checks
 * every Nth timed iteration.  Checked messages, fully checked bytes and
 * errors are counted and printed; any error makes the exit status 1.
 *
 * Iteration counts are small by default (the CI runs it inside an emulated
 * guest); large sizes get fewer iterations so that no test moves more than
 * --max-bytes per size.  Output: a table, or CSV with --csv.
 */
#include <mpi.h>

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BENCH_VERSION "1.0"
#define TAG_DATA 11
#define TAG_ACK 12
#define MIB (1024.0 * 1024.0)

enum { T_LAT = 1, T_UNI = 2, T_BI = 4, T_RATE = 8 };

static struct {
    size_t min_size, max_size, max_bytes, rate_max_size;
    int lat_iters, bw_iters, window, rate_iters, rate_window, warmup, full_every;
    int tests, csv;
} opt = {
    .min_size = 0,
    .max_size = 4u << 20,
    .max_bytes = 8u << 20,
    .rate_max_size = 4096,
    .lat_iters = 200,
    .bw_iters = 20,
    .window = 16,
    .rate_iters = 40,
    .rate_window = 64,
    .warmup = 2,
    .full_every = 0,
    .tests = T_LAT | T_UNI | T_BI | T_RATE,
    .csv = 0,
};

static int me, peer;

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

/* Per-iteration times of the current test: emulated guests and shared
 * machines see long descheduling spikes, so the figures reported first are
 * based on the median iteration; the averages are in the CSV too. */
struct timing {
    double total;  /* seconds, all measured iterations */
    double median; /* seconds, median iteration */
    int n;
};
static double *itime;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

static struct timing finish_timing(double total, int n)
{
    struct timing t = {total, 0, n};
    qsort(itime, (size_t) n, sizeof(double), cmp_double);
    t.median = n % 2 ? itime[n / 2] : 0.5 * (itime[n / 2 - 1] + itime[n / 2]);
    return t;
}

/* iterations for a size, so that one test moves at most max_bytes */
static int scaled_iters(int base, size_t size, int per_iter_msgs, int minimum)
{
    size_t per_iter = (size ? size : 1) * (size_t) per_iter_msgs;
    size_t cap = opt.max_bytes / per_iter;
    int n = base;
    if (cap < (size_t) n)
        n = (int) cap;
    return n < minimum ? minimum : n;
}

static struct timing run_lat(unsigned char *sbuf, unsigned char *rbuf, size_t size)
{
    int iters = scaled_iters(opt.lat_iters, size, 2, 2);
    double t0 = 0, ti = 0;
    MPI_Status st;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int it = -opt.warmup; it < iters; it++) {
        int vi = it; /* pattern iteration; negative: warm-up */
        if (it == 0)
            t0 = MPI_Wtime();
        ti = MPI_Wtime();
        if (me == 0) {
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
    return finish_timing(MPI_Wtime() - t0, iters);
}

/* Uni-directional windows (rank 0 sends, rank 1 acks each window). */
static struct timing run_uni(unsigned char *sbuf, unsigned char **rbufs, size_t size,
                             int window, int iters, MPI_Request *req, MPI_Status *sts)
{
    double t0 = 0, ti = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int it = -opt.warmup; it < iters; it++) {
        int vi = it;
        if (it == 0)
            t0 = MPI_Wtime();
        ti = MPI_Wtime();
        if (me == 0) {
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
    return finish_timing(MPI_Wtime() - t0, iters);
}

/* Bi-directional windows: both ranks send and receive a window. */
static struct timing run_bi(unsigned char *sbuf, unsigned char **rbufs, size_t size,
                            int window, int iters, MPI_Request *req, MPI_Status *sts)
{
    double t0 = 0, ti = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int it = -opt.warmup; it < iters; it++) {
        int vi = it;
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
    return finish_timing(MPI_Wtime() - t0, iters);
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

static int parse_tests(const char *s)
{
    int t = 0;
    char *dup = strdup(s), *save = NULL;
    for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (!strcmp(tok, "lat")) t |= T_LAT;
        else if (!strcmp(tok, "uni") || !strcmp(tok, "bw")) t |= T_UNI;
        else if (!strcmp(tok, "bi") || !strcmp(tok, "bibw")) t |= T_BI;
        else if (!strcmp(tok, "rate")) t |= T_RATE;
        else if (!strcmp(tok, "all")) t |= T_LAT | T_UNI | T_BI | T_RATE;
        else t = -1;
        if (t < 0)
            break;
    }
    free(dup);
    return t;
}

static void usage(void)
{
    printf("usage: openib_bench [options]   (run with 2 MPI ranks)\n"
           "  -t, --tests LIST        lat,uni,bi,rate or all (default all)\n"
           "  -m, --min-size N        smallest size (default 0)\n"
           "  -M, --max-size N        largest size (default 4M); sizes are 0 and powers of 2\n"
           "  -i, --lat-iters N       ping-pong iterations (default %d)\n"
           "  -b, --bw-iters N        windows per size, uni and bi (default %d)\n"
           "  -w, --window N          messages per bandwidth window (default %d)\n"
           "  -r, --rate-iters N      windows per size for the message rate (default %d)\n"
           "  -W, --rate-window N     messages per message-rate window (default %d)\n"
           "  -R, --rate-max-size N   message rate for sizes up to N (default %zu)\n"
           "  -B, --max-bytes N       at most N bytes per size and test (default 8M)\n"
           "  -x, --warmup N          warm-up iterations/windows (default %d)\n"
           "  -f, --full-every N      also fully check every Nth timed iteration (default %d: only\n"
           "                          the untimed warm-ups are fully checked)\n"
           "      --csv               CSV output\n"
           "  -h, --help\n"
           "Sizes accept K, M, G suffixes (powers of 1024).\n",
           opt.lat_iters, opt.bw_iters, opt.window, opt.rate_iters, opt.rate_window,
           opt.rate_max_size, opt.warmup, opt.full_every);
}

int main(int argc, char **argv)
{
    int np;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);

    static struct option lopts[] = {
        {"tests", required_argument, 0, 't'},      {"min-size", required_argument, 0, 'm'},
        {"max-size", required_argument, 0, 'M'},   {"lat-iters", required_argument, 0, 'i'},
        {"bw-iters", required_argument, 0, 'b'},   {"window", required_argument, 0, 'w'},
        {"rate-iters", required_argument, 0, 'r'}, {"rate-window", required_argument, 0, 'W'},
        {"rate-max-size", required_argument, 0, 'R'},
        {"max-bytes", required_argument, 0, 'B'},  {"warmup", required_argument, 0, 'x'},
        {"full-every", required_argument, 0, 'f'}, {"csv", no_argument, 0, 'C'},
        {"help", no_argument, 0, 'h'},             {0, 0, 0, 0}};
    int c, bad = 0;
    while ((c = getopt_long(argc, argv, "t:m:M:i:b:w:r:W:R:B:x:f:h", lopts, NULL)) != -1) {
        switch (c) {
        case 't': opt.tests = parse_tests(optarg); if (opt.tests <= 0) bad = 1; break;
        case 'm': opt.min_size = parse_size(optarg); break;
        case 'M': opt.max_size = parse_size(optarg); break;
        case 'i': opt.lat_iters = atoi(optarg); break;
        case 'b': opt.bw_iters = atoi(optarg); break;
        case 'w': opt.window = atoi(optarg); break;
        case 'r': opt.rate_iters = atoi(optarg); break;
        case 'W': opt.rate_window = atoi(optarg); break;
        case 'R': opt.rate_max_size = parse_size(optarg); break;
        case 'B': opt.max_bytes = parse_size(optarg); break;
        case 'x': opt.warmup = atoi(optarg); break;
        case 'f': opt.full_every = atoi(optarg); break;
        case 'C': opt.csv = 1; break;
        case 'h':
            if (me == 0)
                usage();
            MPI_Finalize();
            return 0;
        default: bad = 1; break;
        }
    }
    if (opt.lat_iters < 1 || opt.bw_iters < 1 || opt.window < 1 || opt.rate_iters < 1 ||
        opt.rate_window < 1 || opt.warmup < 0 || opt.full_every < 0 ||
        opt.max_size > (size_t) 1 << 30 || opt.min_size > opt.max_size)
        bad = 1;
    if (bad || np != 2) {
        if (me == 0) {
            if (np != 2)
                fprintf(stderr, "openib_bench: needs exactly 2 ranks (got %d)\n", np);
            else
                usage();
        }
        MPI_Finalize();
        return 2;
    }
    peer = 1 - me;

    int maxwin = opt.window > opt.rate_window ? opt.window : opt.rate_window;
    size_t bufsize = opt.max_size ? opt.max_size : 1;
    unsigned char *sbuf = malloc(bufsize);
    unsigned char **rbufs = calloc((size_t) maxwin, sizeof(*rbufs));
    MPI_Request *req = calloc(2 * (size_t) maxwin, sizeof(*req));
    MPI_Status *sts = calloc(2 * (size_t) maxwin, sizeof(*sts));
    int maxit = opt.lat_iters;
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

    if (me == 0) {
        if (opt.csv) {
            printf("size,lat_us,uni_MiBps,bi_MiBps,rate_Mmsgps,lat_avg_us,uni_avg_MiBps,"
                   "bi_avg_MiBps,rate_avg_Mmsgps,lat_iters,bw_iters,bw_window,checked_msgs,"
                   "full_checked_msgs,errors\n");
        } else {
            printf("# openib_bench %s: 2 ranks; lat = half round trip (us); uni/bi in MiB/s "
                   "(2^20 B/s; bi counts both directions); rate in million msgs/s\n",
                   BENCH_VERSION);
            printf("# iterations: lat %d, uni/bi %d windows of %d, rate %d windows of %d "
                   "(sizes <= %zu); <= %zu B per size and test; full check every %d\n",
                   opt.lat_iters, opt.bw_iters, opt.window, opt.rate_iters, opt.rate_window,
                   opt.rate_max_size, opt.max_bytes, opt.full_every);
            printf("# median iteration (lat also as average; all averages in --csv)\n");
            printf("%10s %10s %10s %10s %10s %10s %9s %7s\n", "size", "lat(us)", "lat(avg)",
                   "uni(MiB/s)", "bi(MiB/s)", "rate(M/s)", "checked", "errors");
        }
        fflush(stdout);
    }

    unsigned long long tot_checked = 0, tot_full = 0, tot_full_bytes = 0, tot_errors = 0;
    size_t size = opt.min_size;
    for (;;) {
        double lat = -1, uni = -1, bi = -1, rate = -1;
        double lat_avg = -1, uni_avg = -1, bi_avg = -1, rate_avg = -1;
        int lat_iters = 0, bw_iters = 0;
        /* window for this size: keep the in-flight receive buffers bounded */
        int win = opt.window;
        while (win > 1 && (size_t) win * size > opt.max_bytes / 2)
            win /= 2;
        int need = win;
        if ((opt.tests & T_RATE) && size <= opt.rate_max_size && opt.rate_window > need)
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

        if (opt.tests & T_LAT) {
            struct timing t = run_lat(sbuf, rbufs[0], size);
            lat_iters = t.n;
            lat = t.median * 1e6 / 2.0;
            lat_avg = t.total * 1e6 / (2.0 * t.n);
        }
        if (opt.tests & T_UNI) {
            bw_iters = scaled_iters(opt.bw_iters, size, win, 2);
            struct timing t = run_uni(sbuf, rbufs, size, win, bw_iters, req, sts);
            uni = (double) size * win / t.median / MIB;
            uni_avg = (double) size * win * t.n / t.total / MIB;
        }
        if (opt.tests & T_BI) {
            int n = scaled_iters(opt.bw_iters, size, 2 * win, 2);
            if (!bw_iters)
                bw_iters = n;
            struct timing t = run_bi(sbuf, rbufs, size, win, n, req, sts);
            bi = 2.0 * size * win / t.median / MIB;
            bi_avg = 2.0 * size * win * t.n / t.total / MIB;
        }
        if ((opt.tests & T_RATE) && size <= opt.rate_max_size) {
            struct timing t = run_uni(sbuf, rbufs, size, opt.rate_window, opt.rate_iters, req, sts);
            rate = (double) opt.rate_window / t.median / 1e6;
            rate_avg = (double) opt.rate_window * t.n / t.total / 1e6;
        }

        unsigned long long mine[4] = {n_checked, n_full, full_bytes, n_errors}, sum[4];
        MPI_Reduce(mine, sum, 4, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        if (me == 0) {
            tot_checked += sum[0];
            tot_full += sum[1];
            tot_full_bytes += sum[2];
            tot_errors += sum[3];
            char f[8][32];
            const double v[8] = {lat, uni, bi, rate, lat_avg, uni_avg, bi_avg, rate_avg};
            for (int k = 0; k < 8; k++) {
                if (v[k] < 0)
                    snprintf(f[k], sizeof f[k], opt.csv ? "" : "-");
                else
                    snprintf(f[k], sizeof f[k], k % 4 == 3 ? "%.4f" : "%.2f", v[k]);
            }
            if (opt.csv)
                printf("%zu,%s,%s,%s,%s,%s,%s,%s,%s,%d,%d,%d,%llu,%llu,%llu\n", size, f[0], f[1],
                       f[2], f[3], f[4], f[5], f[6], f[7], lat_iters, bw_iters, win, sum[0],
                       sum[1], sum[3]);
            else
                printf("%10zu %10s %10s %10s %10s %10s %9llu %7llu\n", size, f[0], f[4], f[1],
                       f[2], f[3], sum[0], sum[3]);
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
        printf("%sverification: %llu messages checked (%llu fully, %llu bytes), %llu errors: %s\n",
               opt.csv ? "# " : "# ", tot_checked, tot_full, tot_full_bytes, tot_errors,
               tot_errors ? "FAILED" : "PASSED");
        fflush(stdout);
        rc = tot_errors ? 1 : 0;
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    free(region);
    free(itime);
    free(rbufs);
    free(req);
    free(sts);
    free(sbuf);
    MPI_Finalize();
    return rc;
}

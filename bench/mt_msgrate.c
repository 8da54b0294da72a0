/*
 * mt_msgrate.c - multi-threaded 8-byte message rate (and single-thread
 * latency) between two MPI ranks.
 *
 * --threads N: N threads per rank.  Thread t of rank 0 streams to thread t
 * of rank 1 on a communicator of its own (MPI_Comm_dup of MPI_COMM_WORLD per
 * thread): a window of --window MPI_Isend of 8 bytes against as many
 * MPI_Irecv, then an ack (8 bytes back); --iters windows per sample.
 * With one thread the main thread does the work itself (so it also runs
 * under MPI_THREAD_SINGLE); with more, N POSIX threads do it and
 * MPI_THREAD_MULTIPLE is needed.
 *
 * Every sample starts with all threads of both ranks together (an
 * MPI_Barrier, then a thread barrier that releases every thread at once)
 * and ends when the last thread of rank 0 has its last ack.  Per sample,
 * rank 0 prints:
 *   rate      aggregate thousand messages/s: N * iters * window messages
 *             over the wall time of the sample
 *   rate_win  the sum over threads of window/median window time (thousand
 *             messages/s): the same traffic seen through each thread's
 *             typical window, so a thread descheduled for a while by a
 *             busy host moves it less than it moves `rate`
 *   rate_p90  the same with each thread's 10th-percentile window time: the
 *             rate of the fast windows, those that ran while both ranks
 *             were on a CPU
 * --tests lat (one thread only) adds ping-pong samples of 8 bytes:
 *   lat       median half round trip of the sample's --lat-iters round
 *             trips, us
 *   lat_p10   their 10th percentile, us: the cost of the path itself when
 *             neither rank waits for a CPU
 *   lat_mean  their mean (total time / 2 / round trips), us
 * On a shared or emulated machine a round trip that has to wait for the
 * host to schedule the other rank takes a scheduler tick (milliseconds)
 * instead of tens of microseconds; the 10th percentile resists that far
 * better than the median.  Quantiles interpolate linearly between order
 * statistics (position p * (n - 1) of the sorted values).
 * Warm-ups (--warmup windows or round trips per thread, untimed) come first.
 *
 * Every message carries a value made from (thread, window, index); the
 * receiver checks each one, and each ack, so a message lost, duplicated,
 * reordered within its communicator or delivered to the wrong thread is
 * counted as an error.  The totals are printed at the end and any error
 * makes the exit status 1.  Exit status 2: bad arguments, not 2 ranks, or
 * the thread level asked for was not provided.
 *
 * Output (rank 0), machine-readable: lines starting with '#' are comments
 * (hosts, settings, thread level asked for and provided, verification),
 * then "test,threads,level,sample,value,unit" rows, one per sample and
 * figure.
 */
#include <mpi.h>

#include <getopt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_stats.h"

#define MT_VERSION "1.0"
#define TAG_DATA 21
#define TAG_ACK 22
#define TAG_PING 23
#define MAX_THREADS 64
#define ACK_MAGIC 0xac4ac4ac4ac4ac4aULL

static const struct level_name {
    const char *name;
    int level;
} level_names[] = {
    {.name = "single", .level = MPI_THREAD_SINGLE},
    {.name = "funneled", .level = MPI_THREAD_FUNNELED},
    {.name = "serialized", .level = MPI_THREAD_SERIALIZED},
    {.name = "multiple", .level = MPI_THREAD_MULTIPLE},
};
#define N_LEVELS (int) (sizeof(level_names) / sizeof(level_names[0]))

static struct {
    int threads, level, samples, iters, window, lat_iters, warmup, lat;
} opt = {
    .threads = 1,
    .level = MPI_THREAD_MULTIPLE,
    .samples = 7,
    .iters = 100,
    .window = 64,
    .lat_iters = 300,
    .warmup = 20,
    .lat = 0,
};

static int me, peer;

/* One streaming thread: its communicator, buffers and what it measured. */
struct worker {
    int id;
    MPI_Comm comm;
    uint64_t *buf;       /* window of 8-byte messages */
    MPI_Request *req;
    double *wtime;       /* seconds of each timed window of this sample */
    uint64_t seq;        /* windows sent or received so far, warm-ups included */
    double end;          /* MPI_Wtime when its last window of the sample ended */
    unsigned long long checked, errors;
    pthread_t tid;
};

static struct worker workers[MAX_THREADS];

/* What the main thread hands the streaming threads for the next step. */
static struct {
    pthread_barrier_t go, done;
    int windows; /* windows to run; 0: exit */
    int timed;
} step;

static const char *level_str(int level)
{
    for (int i = 0; i < N_LEVELS; i++)
        if (level_names[i].level == level)
            return level_names[i].name;
    return "?";
}

/* The value of message `index` of window `seq` of thread `t`. */
static inline uint64_t msg_value(int t, uint64_t seq, int index)
{
    return ((uint64_t) t << 56) ^ (seq << 12) ^ (uint64_t) index ^ 0x5a5a000000000000ULL;
}

static void count_error(struct worker *w, const char *what, uint64_t got, uint64_t want)
{
    if (w->errors++ < 5)
        fprintf(stderr, "mt_msgrate: rank %d thread %d: %s: got 0x%016llx, expected 0x%016llx\n",
                me, w->id, what, (unsigned long long) got, (unsigned long long) want);
}

/* One window: rank 0 sends it and waits for the ack, rank 1 receives and
 * checks it, then acks. */
static void one_window(struct worker *w)
{
    int n = opt.window;
    if (me == 0) {
        for (int i = 0; i < n; i++) {
            w->buf[i] = msg_value(w->id, w->seq, i);
            MPI_Isend(&w->buf[i], 1, MPI_UINT64_T, peer, TAG_DATA, w->comm, &w->req[i]);
        }
        MPI_Waitall(n, w->req, MPI_STATUSES_IGNORE);
        uint64_t ack = 0;
        MPI_Recv(&ack, 1, MPI_UINT64_T, peer, TAG_ACK, w->comm, MPI_STATUS_IGNORE);
        w->checked++;
        if (ack != (msg_value(w->id, w->seq, n) ^ ACK_MAGIC))
            count_error(w, "ack", ack, msg_value(w->id, w->seq, n) ^ ACK_MAGIC);
    } else {
        for (int i = 0; i < n; i++) {
            w->buf[i] = ~msg_value(w->id, w->seq, i); /* poison: a message not written fails */
            MPI_Irecv(&w->buf[i], 1, MPI_UINT64_T, peer, TAG_DATA, w->comm, &w->req[i]);
        }
        MPI_Waitall(n, w->req, MPI_STATUSES_IGNORE);
        for (int i = 0; i < n; i++) {
            w->checked++;
            if (w->buf[i] != msg_value(w->id, w->seq, i))
                count_error(w, "message", w->buf[i], msg_value(w->id, w->seq, i));
        }
        uint64_t ack = msg_value(w->id, w->seq, n) ^ ACK_MAGIC;
        MPI_Send(&ack, 1, MPI_UINT64_T, peer, TAG_ACK, w->comm);
    }
    w->seq++;
}

static void run_windows(struct worker *w, int windows, int timed)
{
    for (int k = 0; k < windows; k++) {
        double t0 = MPI_Wtime();
        one_window(w);
        if (timed)
            w->wtime[k] = MPI_Wtime() - t0;
    }
    w->end = MPI_Wtime();
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    for (;;) {
        pthread_barrier_wait(&step.go);
        if (step.windows == 0)
            return NULL;
        run_windows(w, step.windows, step.timed);
        pthread_barrier_wait(&step.done);
    }
}

/* Run `windows` windows on every thread (both ranks together); returns the
 * seconds from the common start to the end of the slowest thread. */
static double run_step(int windows, int timed)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (opt.threads == 1) {
        run_windows(&workers[0], windows, timed);
    } else {
        step.windows = windows;
        step.timed = timed;
        pthread_barrier_wait(&step.go);
        pthread_barrier_wait(&step.done);
    }
    double end = t0;
    for (int t = 0; t < opt.threads; t++)
        if (workers[t].end > end)
            end = workers[t].end;
    return end - t0;
}

static void sort_doubles(double *v, int n)
{
    qsort(v, (size_t) n, sizeof(*v), cmp_double);
}

static void print_sample(const char *test, int sample, double value, const char *unit)
{
    printf("%s,%d,%s,%d,%.6g,%s\n", test, opt.threads, level_str(opt.level), sample, value, unit);
}

static void rate_sample(int sample)
{
    double secs = run_step(opt.iters, 1);
    if (me != 0)
        return;
    double med = 0, fast = 0;
    for (int t = 0; t < opt.threads; t++) {
        sort_doubles(workers[t].wtime, opt.iters);
        med += opt.window / quantile(workers[t].wtime, opt.iters, 0.5) / 1e3;
        fast += opt.window / quantile(workers[t].wtime, opt.iters, 0.1) / 1e3;
    }
    print_sample("rate", sample, (double) opt.threads * opt.iters * opt.window / secs / 1e3,
                 "k msg/s");
    print_sample("rate_win", sample, med, "k msg/s");
    print_sample("rate_p90", sample, fast, "k msg/s");
}

/* Ping-pong of 8 bytes on thread 0's communicator: `n` round trips, each
 * timed into rt[] when rt is given. */
static void pingpong(int n, double *rt)
{
    struct worker *w = &workers[0];
    for (int k = 0; k < n; k++) {
        uint64_t v = msg_value(0, w->seq, 0), got = ~v;
        double t0 = MPI_Wtime();
        if (me == 0) {
            MPI_Send(&v, 1, MPI_UINT64_T, peer, TAG_PING, w->comm);
            MPI_Recv(&got, 1, MPI_UINT64_T, peer, TAG_PING, w->comm, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&got, 1, MPI_UINT64_T, peer, TAG_PING, w->comm, MPI_STATUS_IGNORE);
            MPI_Send(&got, 1, MPI_UINT64_T, peer, TAG_PING, w->comm);
        }
        if (rt)
            rt[k] = MPI_Wtime() - t0;
        w->checked++;
        if (got != v)
            count_error(w, "ping-pong", got, v);
        w->seq++;
    }
}

static void lat_sample(int sample, double *rt)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    pingpong(opt.lat_iters, rt);
    double secs = MPI_Wtime() - t0;
    if (me != 0)
        return;
    sort_doubles(rt, opt.lat_iters);
    print_sample("lat", sample, quantile(rt, opt.lat_iters, 0.5) * 1e6 / 2, "us");
    print_sample("lat_p10", sample, quantile(rt, opt.lat_iters, 0.1) * 1e6 / 2, "us");
    print_sample("lat_mean", sample, secs * 1e6 / 2 / opt.lat_iters, "us");
}

static void usage(void)
{
    fprintf(stderr,
            "usage: mpirun -np 2 mt_msgrate [options]\n"
            "  --threads N     threads per rank, 1-%d (default 1: the main thread)\n"
            "  --level L       thread level to ask for: single, funneled, serialized or\n"
            "                  multiple (default multiple; more than one thread needs it)\n"
            "  --tests T       rate, or rate,lat (lat: one thread only)\n"
            "  --samples S     samples per figure (default %d)\n"
            "  --iters I       windows per thread per rate sample (default %d)\n"
            "  --window W      8-byte messages per window (default %d)\n"
            "  --lat-iters L   round trips per latency sample (default %d)\n"
            "  --warmup X      untimed windows per thread, and round trips (default %d)\n",
            MAX_THREADS, opt.samples, opt.iters, opt.window, opt.lat_iters, opt.warmup);
}

static int parse_args(int argc, char **argv)
{
    static const struct option lopts[] = {
        {"threads", required_argument, 0, 'n'}, {"level", required_argument, 0, 'l'},
        {"tests", required_argument, 0, 't'},   {"samples", required_argument, 0, 's'},
        {"iters", required_argument, 0, 'i'},   {"window", required_argument, 0, 'w'},
        {"lat-iters", required_argument, 0, 'L'}, {"warmup", required_argument, 0, 'x'},
        {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
    int c, found;
    while ((c = getopt_long(argc, argv, "n:l:t:s:i:w:L:x:h", lopts, NULL)) != -1) {
        switch (c) {
        case 'n': opt.threads = atoi(optarg); break;
        case 'l':
            found = 0;
            for (int i = 0; i < N_LEVELS; i++)
                if (strcmp(optarg, level_names[i].name) == 0) {
                    opt.level = level_names[i].level;
                    found = 1;
                }
            if (!found)
                return -1;
            break;
        case 't':
            if (strcmp(optarg, "rate") == 0)
                opt.lat = 0;
            else if (strcmp(optarg, "rate,lat") == 0 || strcmp(optarg, "lat,rate") == 0)
                opt.lat = 1;
            else
                return -1;
            break;
        case 's': opt.samples = atoi(optarg); break;
        case 'i': opt.iters = atoi(optarg); break;
        case 'w': opt.window = atoi(optarg); break;
        case 'L': opt.lat_iters = atoi(optarg); break;
        case 'x': opt.warmup = atoi(optarg); break;
        case 'h': return 1;
        default: return -1;
        }
    }
    if (optind < argc || opt.threads < 1 || opt.threads > MAX_THREADS || opt.samples < 1 ||
        opt.iters < 1 || opt.window < 1 || opt.window > 4096 || opt.lat_iters < 1 ||
        opt.warmup < 0 || (opt.lat && opt.threads != 1) ||
        (opt.threads > 1 && opt.level != MPI_THREAD_MULTIPLE))
        return -1;
    return 0;
}

/* Communicators, buffers and (more than one thread) the threads. */
static int setup(void)
{
    for (int t = 0; t < opt.threads; t++) {
        struct worker *w = &workers[t];
        w->id = t;
        MPI_Comm_dup(MPI_COMM_WORLD, &w->comm);
        w->buf = calloc((size_t) opt.window, sizeof(*w->buf));
        w->req = calloc((size_t) opt.window, sizeof(*w->req));
        w->wtime = calloc((size_t) opt.iters, sizeof(*w->wtime));
        if (!w->buf || !w->req || !w->wtime)
            return -1;
    }
    if (opt.threads == 1)
        return 0;
    if (pthread_barrier_init(&step.go, NULL, (unsigned) opt.threads + 1) ||
        pthread_barrier_init(&step.done, NULL, (unsigned) opt.threads + 1))
        return -1;
    for (int t = 0; t < opt.threads; t++)
        if (pthread_create(&workers[t].tid, NULL, worker_main, &workers[t]))
            return -1;
    return 0;
}

static void teardown(void)
{
    if (opt.threads > 1) {
        step.windows = 0;
        pthread_barrier_wait(&step.go);
        for (int t = 0; t < opt.threads; t++)
            pthread_join(workers[t].tid, NULL);
        pthread_barrier_destroy(&step.go);
        pthread_barrier_destroy(&step.done);
    }
    for (int t = 0; t < opt.threads; t++) {
        MPI_Comm_free(&workers[t].comm);
        free(workers[t].buf);
        free(workers[t].req);
        free(workers[t].wtime);
    }
}

static void print_header(int provided)
{
    char name[MPI_MAX_PROCESSOR_NAME] = "", all[2][MPI_MAX_PROCESSOR_NAME];
    int len = 0;
    MPI_Get_processor_name(name, &len);
    MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
               MPI_COMM_WORLD);
    if (me != 0)
        return;
    printf("# mt_msgrate %s: rank 0 on %s, rank 1 on %s\n", MT_VERSION, all[0], all[1]);
    printf("# threads %d per rank, thread level asked %s, provided %s\n", opt.threads,
           level_str(opt.level), level_str(provided));
    printf("# rate: %d samples of %d windows of %d x 8 B per thread, after %d untimed windows\n",
           opt.samples, opt.iters, opt.window, opt.warmup);
    if (opt.lat)
        printf("# lat: %d samples of %d round trips of 8 B, after %d untimed\n", opt.samples,
               opt.lat_iters, opt.warmup);
    printf("test,threads,level,sample,value,unit\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int provided = MPI_THREAD_SINGLE, np = 0, rc = 0;
    /* The level is asked for before MPI starts: look for --level first. */
    int pa = parse_args(argc, argv);
    MPI_Init_thread(&argc, &argv, opt.level, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (pa != 0 || np != 2) {
        if (me == 0) {
            if (np != 2)
                fprintf(stderr, "mt_msgrate: needs exactly 2 ranks (got %d)\n", np);
            usage();
        }
        MPI_Finalize();
        return pa == 1 ? 0 : 2;
    }
    if (provided < opt.level) {
        if (me == 0)
            fprintf(stderr, "mt_msgrate: thread level %s asked for, only %s provided\n",
                    level_str(opt.level), level_str(provided));
        MPI_Finalize();
        return 2;
    }
    peer = 1 - me;
    print_header(provided);
    if (setup() != 0) {
        fprintf(stderr, "mt_msgrate: rank %d: out of memory or threads\n", me);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double *rt = opt.lat ? calloc((size_t) opt.lat_iters, sizeof(*rt)) : NULL;
    if (opt.lat && !rt)
        MPI_Abort(MPI_COMM_WORLD, 1);

    if (opt.warmup > 0) {
        run_step(opt.warmup, 0);
        if (opt.lat)
            pingpong(opt.warmup, NULL);
    }
    for (int s = 1; s <= opt.samples; s++) {
        if (opt.lat)
            lat_sample(s, rt);
        rate_sample(s);
        if (me == 0)
            fflush(stdout);
    }

    unsigned long long mine[2] = {0, 0}, sum[2] = {0, 0};
    for (int t = 0; t < opt.threads; t++) {
        mine[0] += workers[t].checked;
        mine[1] += workers[t].errors;
    }
    teardown();
    free(rt);
    MPI_Reduce(mine, sum, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (me == 0) {
        printf("# verification: %llu messages checked, %llu errors: %s\n", sum[0], sum[1],
               sum[1] ? "FAILED" : "PASSED");
        fflush(stdout);
        rc = sum[1] ? 1 : 0;
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return rc;
}

/*
 * openib_bench.h - what the files of openib_bench share (private to the
 * program: openib_bench.c says what it measures). Every file is built in
 * the one mpicc command that makes the program: bench/openib_bench*.c.
 */
#ifndef OPENIB_BENCH_H
#define OPENIB_BENCH_H

#include <mpi.h>

#include <stddef.h>

enum { T_LAT, T_UNI, T_BI, T_RATE, N_TESTS };

/* a test's name on the command line and in the output, and its unit */
struct test_desc {
    const char *name;
    const char *unit;
};
extern const struct test_desc test_desc[N_TESTS];

/* ---- openib_bench_options.c: the command line ---- */

struct bench_options {
    size_t min_size, max_size, max_bytes, window_bytes;
    size_t lo[N_TESTS], hi[N_TESTS]; /* sizes each test runs at */
    int lat_iters, bw_iters, window, rate_iters, rate_window, warmup, full_every, min_samples;
    size_t big_from; /* sizes above it take at least big_samples samples instead */
    int big_samples;
    int tests, csv;
};
extern struct bench_options opt;

enum options_result { OPTIONS_OK, OPTIONS_HELP, OPTIONS_BAD };
/* Parse argv into opt; stops at -h/--help. */
enum options_result parse_options(int argc, char **argv);
void usage(void);

/* ---- openib_bench.c: who this rank is ---- */

extern int me, peer;
extern int pairs;        /* ranks 0..pairs-1 send (lat: ping) to rank + pairs */
extern MPI_Comm senders; /* the pairs' first ranks, for combining their samples */

/* ---- openib_bench_verify.c: message fill and check ---- */

void prep_send(unsigned char *buf, size_t size, int iter);
void prep_recv(unsigned char *buf, size_t size, int iter);
void check_recv(const unsigned char *buf, size_t size, int iter, MPI_Status *st);
/* this rank's counts since the last reset: messages checked, fully
 * checked, fully checked bytes, errors */
enum { V_CHECKED, V_FULL, V_FULL_BYTES, V_ERRORS, N_VERIFY };
void verify_reset(void);
void verify_counts(unsigned long long out[N_VERIFY]);

/* ---- openib_bench_loops.c: the tests' timing loops ---- */

/* Seconds taken by each timed iteration of the current test. */
extern double *itime;

/* What one test moves: a send buffer, receive slots (lat uses the first),
 * the message size and the messages of one window. */
struct xfer {
    unsigned char *sbuf, **rbufs;
    size_t size;
    int window;
    MPI_Request *req; /* 2 * window */
    MPI_Status *sts;  /* 2 * window */
};
/* Each returns the total time of its iters timed iterations, having put
 * each one's time into itime. */
double run_lat(const struct xfer *x, int iters);
double run_uni(const struct xfer *x, int iters);
double run_bi(const struct xfer *x, int iters);

/* ---- openib_bench_stats.c: the samples' statistics ---- */

struct stats {
    int n;
    double median, q1, q3, min, max, mean;
};
struct stats finish_stats(int test, size_t size, int msgs, int n, double total);

/* ---- openib_bench_output.c: the table or CSV ---- */

void print_hosts(int np);
void print_header(void);
void print_row(size_t size, int test, int msgs, const struct stats *s);
void print_verification(const unsigned long long tot[N_VERIFY]);

#endif /* OPENIB_BENCH_H */

/*
 * openib_bench_output.c - what openib_bench prints (rank 0 alone, but for
 * print_hosts, which every rank calls): the comment lines, the header and
 * the rows, as a table or as CSV (--csv).
 */
#include <stdio.h>
#include <stdlib.h>

#include "openib_bench.h"

#define BENCH_VERSION "2.0"

/* "# rank 0 on HOST, rank P on HOST": where each pair's ranks ran */
void print_hosts(int np)
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

/* the units, the sample counts, and the columns' names */
void print_header(void)
{
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
}

/* A test's name in the output: with several pairs, "ratex4" and the like,
 * so one CSV can hold both. */
void print_row(size_t size, int test, int msgs, const struct stats *s)
{
    const char *f = opt.csv ? "%zu,%s,%s,%d,%d,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g\n"
                            : "%10zu %5s %8s %8d %5d %11.6g %11.6g %11.6g %11.6g %11.6g %11.6g\n";
    char name[16];

    snprintf(name, sizeof(name), pairs > 1 ? "%sx%d" : "%s", test_desc[test].name, pairs);
    printf(f, size, name, test_desc[test].unit, s->n, msgs, s->median, s->q1, s->q3, s->min,
           s->max, s->mean);
}

/* all ranks' counts over the whole run */
void print_verification(const unsigned long long tot[N_VERIFY])
{
    printf("# verification: %llu messages checked (%llu fully, %llu bytes), %llu errors: %s\n",
           tot[V_CHECKED], tot[V_FULL], tot[V_FULL_BYTES], tot[V_ERRORS],
           tot[V_ERRORS] ? "FAILED" : "PASSED");
}

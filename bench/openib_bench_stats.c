/*
 * openib_bench_stats.c - openib_bench's statistics: each test's figure
 * from the iteration times, with several pairs first combined window by
 * window, then the quantiles (bench_stats.h), the extremes and the mean.
 */
#include <stdlib.h>

#include "bench_stats.h"
#include "openib_bench.h"

#define MIB (1024.0 * 1024.0)

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

/* Turn the n iteration times in itime into statistics of the test's figure
 * (converted in place: itime is rewritten). Every rank calls it (with
 * several pairs it gathers the senders' samples first); rank 0's figures
 * are the ones printed. */
struct stats finish_stats(int test, size_t size, int msgs, int n, double total)
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

/*
 * bench_stats.h - order statistics shared by the benchmark programs
 * (openib_bench_stats.c, mt_msgrate.c, hmem_copy_bench.c): a qsort
 * comparator and an interpolated quantile of sorted samples. Header-only:
 * each program is built with one compiler command from its own .c files.
 */
#ifndef BENCH_STATS_H
#define BENCH_STATS_H

static inline int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

/* p-quantile of n sorted values, interpolated at position p * (n - 1) */
static inline double quantile(const double *v, int n, double p)
{
    double pos = p * (n - 1);
    int i = (int) pos;
    return i + 1 < n ? v[i] + (pos - i) * (v[i + 1] - v[i]) : v[i];
}

#endif /* BENCH_STATS_H */

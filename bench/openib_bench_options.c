/*
 * openib_bench_options.c - openib_bench's command line: the tests' names,
 * the defaults, parsing and the usage text.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "openib_bench.h"

const struct test_desc test_desc[N_TESTS] = {
    [T_LAT] = {.name = "lat", .unit = "us"},
    [T_UNI] = {.name = "uni", .unit = "MiB/s"},
    [T_BI] = {.name = "bi", .unit = "MiB/s"},
    [T_RATE] = {.name = "rate", .unit = "k msg/s"},
};

struct bench_options opt = {
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

void usage(void)
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
           "  -f, --full-every N      also fully check every Nth timed iteration (default %d: "
           "only\n"
           "                          the untimed warm-ups are fully checked)\n"
           "      --csv               CSV output\n"
           "  -h, --help\n"
           "Sizes accept K, M, G suffixes (powers of 1024).\n",
           opt.min_samples, opt.lat_iters, opt.bw_iters, opt.rate_iters, opt.window,
           opt.rate_window, opt.warmup, opt.full_every);
}

/* OPTIONS_HELP as soon as -h comes (what came before it is not checked),
 * OPTIONS_BAD for a malformed option or a value out of range. The caller
 * prints the usage text: with several ranks, rank 0 alone. */
enum options_result parse_options(int argc, char **argv)
{
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
        case 'h': return OPTIONS_HELP;
        default: bad = 1; break;
        }
    }
    if (opt.lat_iters < 1 || opt.bw_iters < 1 || opt.window < 1 || opt.rate_iters < 1 ||
        opt.rate_window < 1 || opt.warmup < 0 || opt.full_every < 0 || opt.min_samples < 1 ||
        opt.min_samples > 1000000 || opt.big_samples < 0 || opt.max_size > (size_t) 1 << 30 ||
        opt.min_size > opt.max_size)
        bad = 1;
    return bad ? OPTIONS_BAD : OPTIONS_OK;
}

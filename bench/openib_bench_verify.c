/*
 * openib_bench_verify.c - openib_bench's message fill and check: a pattern
 * that depends on the byte, the size, the iteration and the sender; whole
 * messages on full iterations, else three probe bytes; and this rank's
 * counts of what was checked.
 */
#include <stdio.h>
#include <string.h>

#include "openib_bench.h"

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
void prep_send(unsigned char *buf, size_t size, int iter)
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
void prep_recv(unsigned char *buf, size_t size, int iter)
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

void check_recv(const unsigned char *buf, size_t size, int iter, MPI_Status *st)
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

void verify_reset(void)
{
    n_checked = n_full = full_bytes = n_errors = 0;
}

void verify_counts(unsigned long long out[N_VERIFY])
{
    out[V_CHECKED] = n_checked;
    out[V_FULL] = n_full;
    out[V_FULL_BYTES] = full_bytes;
    out[V_ERRORS] = n_errors;
}

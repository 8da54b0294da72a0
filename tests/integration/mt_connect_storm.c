/*
 * mt_connect_storm.c - crossing connects started from several threads at
 * once: right after MPI_Init_thread(MPI_THREAD_MULTIPLE), with no traffic
 * before, every thread of every rank sends to and receives from every other
 * rank at the same moment, so each connection is asked for from both sides
 * and by several threads of each side together. Then the same again on
 * fresh communicators (a duplicate, or a split with the ranks reversed) over
 * the connections now up. Every byte received is checked.
 *
 * Usage: mt_connect_storm [--threads T] [--reps N]   (default 4 threads, 4 reps)
 *
 * Thread t of each rank talks to thread t of every other rank (tag t). Per
 * peer it sends messages of 0 B, 8 B, 4 KiB, 40 KiB and 128 KiB (the larger
 * ones above openib's eager limit, so the first rendezvous also meets a
 * connection being made). Even threads post their receives first, odd
 * threads send first; threads go round the peers in different orders; the
 * 8 B message of odd threads is received with MPI_ANY_SOURCE. The first
 * repetition runs on MPI_COMM_WORLD (making a communicator would connect
 * the ranks first).
 *
 * Output: each rank "mt_connect_storm: rank R of N on HOST"; rank 0
 * "mt_connect_storm: thread level provided MPI_THREAD_MULTIPLE" and last
 * "mt_connect_storm: PASSED ranks=R threads=T reps=N msgs=M bytes=B" or
 * "mt_connect_storm: FAILED ...". Exit status: 0 passed, 1 failed, 2
 * MPI_THREAD_MULTIPLE not provided.
 */
#define _GNU_SOURCE
#include <mpi.h>

#include "mt_start.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const int sizes[] = { 0, 8, 4096, 40000, 131072 };
#define NSIZES ((int) (sizeof(sizes) / sizeof(sizes[0])))
#define ANY_IDX 1 /* the 8 B message: MPI_ANY_SOURCE on odd threads */

static int rank, nranks, nthreads = 4, reps = 4;
static pthread_barrier_t go;

struct thr {
    int id;
    pthread_t tid;
    MPI_Comm comm; /* this repetition's communicator */
    int rep;
    unsigned long long msgs, bytes, errors;
};

static uint8_t pat(int src, int dst, int thr, int rep, int idx, size_t i)
{
    return (uint8_t) (src * 131 + dst * 31 + thr * 17 + rep * 11 + idx * 5 + i * 7 + (i >> 8));
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);

    if (NULL == p) {
        fprintf(stderr, "mt_connect_storm: rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

/* SRC/DST: ranks in MPI_COMM_WORLD (the content does not depend on the
 * communicator's numbering, which the reversed split changes) */
static void check(struct thr *th, int src, int idx, const uint8_t *buf, const MPI_Status *st)
{
    size_t len = (size_t) sizes[idx], bad = 0, first = 0;
    int count;

    MPI_Get_count(st, MPI_BYTE, &count);
    if ((size_t) count != len) {
        if (th->errors++ < 10) {
            fprintf(stderr, "mt_connect_storm: rank %d thread %d rep %d: %d bytes from rank %d, expected %zu\n",
                    rank, th->id, th->rep, count, src, len);
        }
        return;
    }
    for (size_t i = 0; i < len; ++i) {
        if (buf[i] != pat(src, rank, th->id, th->rep, idx, i) && 0 == bad++) {
            first = i;
        }
    }
    if (bad) {
        if (th->errors++ < 10) {
            fprintf(stderr, "mt_connect_storm: rank %d thread %d rep %d: message %d from rank %d: %zu of %zu bytes wrong, first at %zu\n",
                    rank, th->id, th->rep, idx, src, bad, len, first);
        }
        return;
    }
    th->msgs++;
    th->bytes += len;
}

static void *run(void *arg)
{
    struct thr *th = arg;
    int n = nranks - 1, nreq = 0, me, tg = th->id, anytg = 1000 + th->id;
    int *peer_world = xmalloc(sizeof(int) * nranks), *rpeer = xmalloc(sizeof(int) * n);
    MPI_Group wg, cg;
    MPI_Request *req = xmalloc(sizeof(*req) * 2 * n * NSIZES);
    MPI_Status *st = xmalloc(sizeof(*st) * 2 * n * NSIZES);
    uint8_t **rb = xmalloc(sizeof(*rb) * n * NSIZES), **sb = xmalloc(sizeof(*sb) * n * NSIZES);
    char *seen = calloc(nranks, 1);

    /* world rank of each rank of this communicator */
    MPI_Comm_rank(th->comm, &me);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Comm_group(th->comm, &cg);
    for (int i = 0; i < nranks; ++i) {
        peer_world[i] = i;
    }
    MPI_Group_translate_ranks(cg, nranks, peer_world, wg, peer_world);
    MPI_Group_free(&cg);
    MPI_Group_free(&wg);

    pthread_barrier_wait(&go); /* all threads of this rank at once */
    for (int pass = 0; pass < 2; ++pass) {
        /* even threads: receives, then sends; odd threads: the other way round */
        int post_recv = (pass == 0) == ((th->id & 1) == 0);

        for (int k = 1; k < nranks; ++k) {
            int off = (k + th->id - 1) % n + 1;
            int p = (me + ((th->id & 2) ? nranks - off : off)) % nranks;

            if (post_recv) {
                rpeer[k - 1] = p;
                for (int i = 0; i < NSIZES; ++i) {
                    int any = (th->id & 1) && i == ANY_IDX;

                    rb[(k - 1) * NSIZES + i] = xmalloc(sizes[i]);
                    MPI_Irecv(rb[(k - 1) * NSIZES + i], sizes[i], MPI_BYTE,
                              any ? MPI_ANY_SOURCE : p, any ? anytg : tg, th->comm, &req[nreq++]);
                }
            } else {
                for (int i = 0; i < NSIZES; ++i) {
                    uint8_t *b = sb[(k - 1) * NSIZES + i] = xmalloc(sizes[i]);
                    int any = (th->id & 1) && i == ANY_IDX;

                    for (int j = 0; j < sizes[i]; ++j) {
                        b[j] = pat(rank, peer_world[p], th->id, th->rep, i, j);
                    }
                    MPI_Isend(b, sizes[i], MPI_BYTE, p, any ? anytg : tg, th->comm,
                              &req[nreq++]);
                }
            }
        }
    }
    MPI_Waitall(nreq, req, st);

    /* the receives are the first or the second n * NSIZES requests */
    for (int k = 0, base = (th->id & 1) ? n * NSIZES : 0; k < n; ++k) {
        for (int i = 0; i < NSIZES; ++i) {
            const MPI_Status *s = &st[base + k * NSIZES + i];
            int src = s->MPI_SOURCE;

            if ((th->id & 1) && i == ANY_IDX) {
                /* MPI_ANY_SOURCE: from some peer, each once */
                if (src < 0 || src >= nranks || src == me || seen[src]) {
                    if (th->errors++ < 10) {
                        fprintf(stderr, "mt_connect_storm: rank %d thread %d rep %d: MPI_ANY_SOURCE receive from rank %d (not a peer, or twice)\n",
                                rank, th->id, th->rep, src);
                    }
                    continue;
                }
                seen[src] = 1;
            } else if (src != rpeer[k]) {
                if (th->errors++ < 10) {
                    fprintf(stderr, "mt_connect_storm: rank %d thread %d rep %d: message from %d, expected from %d\n",
                            rank, th->id, th->rep, src, rpeer[k]);
                }
                continue;
            }
            check(th, peer_world[src], i, rb[k * NSIZES + i], s);
        }
    }
    for (int i = 0; i < n * NSIZES; ++i) {
        free(rb[i]);
        free(sb[i]);
    }
    free(seen);
    free(sb);
    free(rb);
    free(st);
    free(req);
    free(rpeer);
    free(peer_world);
    return NULL;
}

static int usage(void)
{
    fprintf(stderr, "usage: mt_connect_storm [--threads T] [--reps N]\n");
    return 2;
}

int main(int argc, char **argv)
{
    struct thr *th;
    char host[256] = "?";
    unsigned long long v[3] = { 0, 0, 0 }, tot[3];

    for (int i = 1; i < argc; ++i) {
        if (0 == strcmp(argv[i], "--threads") && i + 1 < argc) {
            nthreads = atoi(argv[++i]);
        } else if (0 == strcmp(argv[i], "--reps") && i + 1 < argc) {
            reps = atoi(argv[++i]);
        } else {
            return usage();
        }
    }
    if (nthreads < 1 || nthreads > 64 || reps < 1) {
        return usage();
    }
    mt_start("mt_connect_storm", &argc, &argv, &rank, &nranks, host, sizeof(host));

    th = calloc(nthreads, sizeof(*th));
    pthread_barrier_init(&go, NULL, nthreads);
    for (int rep = 0; rep < reps; ++rep) {
        for (int t = 0; t < nthreads; ++t) {
            th[t].id = t;
            th[t].rep = rep;
            if (0 == rep) {
                th[t].comm = MPI_COMM_WORLD;
            } else if (rep & 1) {
                MPI_Comm_dup(MPI_COMM_WORLD, &th[t].comm);
            } else {
                MPI_Comm_split(MPI_COMM_WORLD, 0, nranks - rank, &th[t].comm);
            }
        }
        for (int t = 0; t < nthreads; ++t) {
            if (pthread_create(&th[t].tid, NULL, run, &th[t])) {
                fprintf(stderr, "mt_connect_storm: rank %d: pthread_create failed\n", rank);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        }
        for (int t = 0; t < nthreads; ++t) {
            pthread_join(th[t].tid, NULL);
            if (rep > 0) {
                MPI_Comm_free(&th[t].comm);
            }
        }
    }
    for (int t = 0; t < nthreads; ++t) {
        v[0] += th[t].msgs;
        v[1] += th[t].bytes;
        v[2] += th[t].errors;
    }
    MPI_Allreduce(v, tot, 3, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        unsigned long long want = (unsigned long long) reps * nthreads * nranks * (nranks - 1) * NSIZES;

        if (0 == tot[2] && tot[0] == want) {
            printf("mt_connect_storm: PASSED ranks=%d threads=%d reps=%d msgs=%llu bytes=%llu\n",
                   nranks, nthreads, reps, tot[0], tot[1]);
        } else {
            printf("mt_connect_storm: FAILED ranks=%d threads=%d reps=%d msgs=%llu (of %llu) bytes=%llu errors=%llu\n",
                   nranks, nthreads, reps, tot[0], want, tot[1], tot[2]);
        }
        fflush(stdout);
    }
    pthread_barrier_destroy(&go);
    free(th);
    MPI_Finalize();
    return tot[2] || tot[0] != (unsigned long long) reps * nthreads * nranks * (nranks - 1) * NSIZES;
}

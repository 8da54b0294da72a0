/*
 * mt_stress.c - MPI_THREAD_MULTIPLE stress: T threads per rank, every thread
 * doing its own traffic with the same thread of every other rank at the same
 * time as the others, every received byte checked.
 *
 * Usage: mt_stress [--seconds N] [--threads T] [--no-osc] [--only PARTS]
 *                  [--watchdog N] [--backtrace]
 *   --seconds N   run for about N seconds of wall time (default 60); every
 *                 thread runs whole rounds, at least one
 *   --threads T   threads per rank (default 4)
 *   --no-osc      leave out the one-sided part (no window is created)
 *   --only PARTS  run only these parts of each round (a comma-separated list
 *                 of ring, any, storm, probe, osc; to narrow down a failure)
 *   --watchdog N  hang guard: when no thread of this rank has finished a
 *                 step for N seconds, print where every thread is and
 *                 MPI_Abort (default 180; 0 = never)
 *   --backtrace   before that abort, print every thread's backtrace (gdb)
 *
 * Thread t of each rank has its own duplicate of MPI_COMM_WORLD, and shares
 * one more duplicate with the other threads, on which it uses its own tags.
 * One round of thread t, with the same thread of every other rank:
 *   ring     blocking send / posted receive around the ranks (shared
 *            communicator, own tag); then MPI_Sendrecv (own communicator)
 *   any      MPI_ANY_SOURCE receives, posted before the peers send (own
 *            communicator, after a barrier) or not (shared, own tag)
 *   storm    Isend/Irecv of STORM_N messages per peer, sizes from 0 B to
 *            256 KiB around the eager limits of openib, vader and tcp, plus
 *            one message of a strided vector datatype (96 KiB of data),
 *            received as the same vector or as contiguous ints
 *   probe    MPI_Probe / MPI_Iprobe / MPI_Mprobe with MPI_ANY_SOURCE, then
 *            the receive of the size found
 *   osc      on the thread's own window, in one passive-target lock_all
 *            epoch for the whole run: MPI_Get of what the target wrote
 *            locally, MPI_Put into the origin's slot and MPI_Get of it back
 *            after a flush, MPI_Fetch_and_op and MPI_Compare_and_swap
 *            (matching and not) on the origin's own words, MPI_Fetch_and_op
 *            on a word every origin adds to, MPI_Accumulate into an array
 *            every origin adds to; after a barrier each target checks its
 *            whole window. Even threads' windows come from MPI_Win_allocate,
 *            odd threads' from MPI_Win_create on MPI_Alloc_mem memory where
 *            the osc component can make one: osc/rdma reaches those through
 *            the BTL even on the same node, where it reads and writes an
 *            MPI_Win_allocate window directly in shared memory.
 * Each message's content is derived from sender, receiver, thread, round,
 * kind and index, so a byte from a wrong message, offset or round is caught.
 *
 * Stopping: each round starts with an MPI_Allreduce (on the thread's own
 * communicator) of "my time is up"; when any rank's time is up, the same
 * thread of every rank stops after the same round, so no thread waits for a
 * message that will not come.
 *
 * Output: each rank "mt_stress: rank R of N on HOST"; rank 0
 * "mt_stress: thread level provided MPI_THREAD_MULTIPLE", a detail line, and
 * last "mt_stress: PASSED ranks=R threads=T seconds=S msgs=M bytes=B" or
 * "mt_stress: FAILED ...". msgs: point-to-point messages received and
 * checked; bytes: bytes checked (messages and windows), all ranks.
 * Exit status: 0 passed, 1 failed, 2 MPI_THREAD_MULTIPLE not provided (or a
 * bad option), 3 the watchdog's abort.
 */
#define _GNU_SOURCE
#include <mpi.h>

#include "mt_start.h"

#include <pthread.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum kind { K_RING = 1, K_SENDRECV, K_ANY, K_STORM, K_VEC, K_PROBE, K_PUB, K_PUT, K_ACC, K_CAS };
static const char *const kind_name[] = { "?", "ring message", "sendrecv", "any-source message",
                                         "storm message", "vector message", "probe message" };
static const char *const phase_name[] = {
    "start", "ring", "sendrecv", "any (waiting for every peer's message)", "storm", "vector",
    "probe", "osc: publishing (barrier)", "osc: get and put", "osc: fetch_and_op",
    "osc: compare_and_swap", "osc: accumulate", "osc: flush", "osc: read back",
    "osc: flush after read back", "osc: check (barrier)", "agree (allreduce)", "done"
};
enum { P_START, P_RING, P_SENDRECV, P_ANY, P_STORM, P_VEC, P_PROBE, P_OSC_PUB, P_OSC_PUT,
       P_OSC_FOP, P_OSC_CAS, P_OSC_ACC, P_OSC_FLUSH, P_OSC_READ, P_OSC_FLUSH2, P_OSC_CHECK,
       P_AGREE, P_DONE };

/* Sizes around the eager limits: openib-ng's (32 KiB - 8), its largest send
 * (64 KiB - 8), vader's 4 KiB, Open MPI's old openib 12 KiB, tcp's 64 KiB;
 * 100 KiB and 256 KiB go by rendezvous / RDMA everywhere. */
static const int sizes[] = { 0,     1,     8,     100,   1000,  4095,   4096,  4097,
                             12288, 32759, 32760, 32761, 65528, 65529, 100000, 262144 };
#define NSIZES ((int) (sizeof(sizes) / sizeof(sizes[0])))
#define MAX_SIZE 262144
#define STORM_N 8
#define OLD_BUFS 128

/* the strided vector: VEC_COUNT blocks of 3 ints every 5 ints (96 KiB of data) */
#define VEC_COUNT 8192
#define VEC_BLOCK 3
#define VEC_STRIDE 5
#define VEC_INTS (VEC_COUNT * VEC_BLOCK)
#define VEC_EXTENT_INTS ((VEC_COUNT - 1) * VEC_STRIDE + VEC_BLOCK)

/* window layout (bytes, disp_unit 1): the target's own block, one slot per
 * origin, a counter and a CAS word per origin, a total, an accumulate array */
static const int put_sizes[] = { 8, 1000, 4096, 32760, 32768, 65536 };
#define NPUT ((int) (sizeof(put_sizes) / sizeof(put_sizes[0])))
#define PUB_BYTES 16384
#define SLOT_BYTES 65536
#define ACC_N 512

/* the parts of a round (--only) */
static const char *const part_name[] = { "ring", "any", "storm", "probe", "osc" };
#define NPARTS 5
enum { PART_RING = 1, PART_ANY = 2, PART_STORM = 4, PART_PROBE = 8 };

static int rank, nranks, nthreads = 4, seconds = 60, use_osc = 1, watchdog_s = 180, backtrace;
static int parts = PART_RING | PART_ANY | PART_STORM | PART_PROBE;
static double deadline;
static MPI_Comm shared_comm;
static MPI_Datatype vec_type;
static long progress_us; /* last time any thread finished a step (atomic) */
static int threads_done; /* (atomic) */

struct thr {
    int id;
    pthread_t tid;
    MPI_Comm own;
    MPI_Win win;
    unsigned char *wbase;
    int created; /* the window is MPI_Win_create's, on MPI_Alloc_mem memory */
    int64_t *acc_expect;
    unsigned char *anybuf; /* (nranks - 1) * MAX_SIZE */
    long rounds;
    unsigned long long msgs, bytes, osc_ops, errors;
    int phase, peer; /* (atomic) where the thread is, for the watchdog */
    long round;      /* (atomic) */
    /* (atomic) the requests being waited for, for the watchdog */
    struct pend {
        int peer, send, kind, idx, len, done;
    } *pend;
    int npend;
    /* this thread's storm receive buffers of the last rounds (ring), for the
     * report of a wrong message: were its bytes what this process's memory
     * held at that address a round before? */
    struct oldbuf {
        uintptr_t addr;
        size_t len;
        uint32_t seed;
        long round;
        int src, idx;
    } old[OLD_BUFS];
    unsigned nold;
};

static long now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

static void step(struct thr *th, int phase, int peer)
{
    __atomic_store_n(&th->phase, phase, __ATOMIC_RELAXED);
    __atomic_store_n(&th->peer, peer, __ATOMIC_RELAXED);
    __atomic_store_n(&progress_us, now_us(), __ATOMIC_RELAXED);
}

/* request I of the next wait: what it is, for the watchdog (atomic stores:
 * the watchdog may read while the thread writes) */
static void pend_note(struct thr *th, int i, int peer, int send, int kind, int idx, int len)
{
    struct pend *p = &th->pend[i];

    __atomic_store_n(&p->peer, peer, __ATOMIC_RELAXED);
    __atomic_store_n(&p->send, send, __ATOMIC_RELAXED);
    __atomic_store_n(&p->kind, kind, __ATOMIC_RELAXED);
    __atomic_store_n(&p->idx, idx, __ATOMIC_RELAXED);
    __atomic_store_n(&p->len, len, __ATOMIC_RELAXED);
    __atomic_store_n(&p->done, 0, __ATOMIC_RELAXED);
}

/* wait for the N noted requests, noting each as it completes */
static void wait_noted(struct thr *th, int n, MPI_Request *req, MPI_Status *st)
{
    int *idx = malloc(sizeof(*idx) * n), left = n, outc;
    MPI_Status *got = malloc(sizeof(*got) * n);

    __atomic_store_n(&th->npend, n, __ATOMIC_RELEASE);
    while (left > 0) {
        MPI_Waitsome(n, req, &outc, idx, got);
        if (MPI_UNDEFINED == outc) {
            break;
        }
        for (int i = 0; i < outc; ++i) {
            if (st != MPI_STATUSES_IGNORE) {
                st[idx[i]] = got[i];
            }
            __atomic_store_n(&th->pend[idx[i]].done, 1, __ATOMIC_RELAXED);
        }
        left -= outc;
    }
    __atomic_store_n(&th->npend, 0, __ATOMIC_RELEASE);
    free(got);
    free(idx);
}

static uint32_t mix(uint32_t h)
{
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    h ^= h >> 16;
    return h;
}

static uint32_t seed_of(int src, int dst, int thr, long round, int kind, int idx)
{
    uint32_t h = mix((uint32_t) src * 0x9e3779b1u + 1u);

    h = mix(h ^ ((uint32_t) dst * 0x85ebca6bu));
    h = mix(h ^ ((uint32_t) thr * 0xc2b2ae35u));
    h = mix(h ^ (uint32_t) round);
    return mix(h ^ ((uint32_t) kind << 24) ^ (uint32_t) idx);
}

static inline uint8_t pat(uint32_t seed, size_t i)
{
    return (uint8_t) ((seed >> ((i & 3) << 3)) + (i >> 2) * 29u + (i >> 10));
}

static void fill(void *buf, size_t len, uint32_t seed)
{
    uint8_t *b = buf;

    for (size_t i = 0; i < len; ++i) {
        b[i] = pat(seed, i);
    }
}

static inline int32_t pat32(uint32_t seed, size_t j)
{
    return (int32_t) mix(seed + (uint32_t) j * 0x27d4eb2fu);
}

static int msg_size(int src, int dst, int thr, long round, int kind, int idx)
{
    return sizes[seed_of(src, dst, thr, round, kind, idx) % NSIZES];
}

/* note an error (the first few of each thread are printed) */
static void error(struct thr *th, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void error(struct thr *th, const char *fmt, ...)
{
    va_list ap;

    if (th->errors++ < 10) {
        char msg[1024];

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        fprintf(stderr, "mt_stress: rank %d thread %d round %ld: %s\n", rank, th->id,
                th->round, msg);
    }
}

/* Whether the N bytes at P are what an earlier storm receive buffer of this
 * thread held at the same address (its message's bytes at that offset): then
 * they were written into this memory for that earlier message. */
static int old_match(const struct thr *th, const uint8_t *p, size_t n, char *out, size_t outlen)
{
    uintptr_t a = (uintptr_t) p;
    unsigned k = th->nold < OLD_BUFS ? th->nold : OLD_BUFS;

    for (unsigned j = 1; j <= k; ++j) { /* newest first */
        const struct oldbuf *o = &th->old[(th->nold - j) % OLD_BUFS];
        size_t d, i;

        if (a < o->addr || a + n > o->addr + o->len) {
            continue;
        }
        d = a - o->addr;
        for (i = 0; i < n && p[i] == pat(o->seed, d + i); ++i) {
        }
        snprintf(out, outlen, "%p lies at offset %zu of this thread's round-%ld receive buffer "
                 "for rank %d #%d (%zu bytes); %s", (const void *) p, d, o->round, o->src,
                 o->idx, o->len, i == n ? "its bytes ARE that message's bytes at that offset "
                 "(written into this memory for the earlier message)" : "the bytes differ from "
                 "that message's");
        if (i == n) {
            return 1;
        }
    }
    snprintf(out, outlen, "%p lies in none of this thread's last %u storm receive buffers, or "
             "its bytes are none of theirs", (const void *) p, k);
    return 0;
}

/* What wrong bytes hold, for the report: a message's first 4 bytes are its
 * seed (pat()), so they name the message they came from when it is one of
 * this run's (any sender, receiver, thread and kind, rounds near this one),
 * as do 16 bytes equal to such a message's at the same offset; STORM_FILL
 * means the transport never wrote them (do_storm fills its receive buffers
 * with it; osc buffers are not filled); else the first 16 bytes, to match
 * offline against another message's bytes at another offset (pat(): seed
 * byte + 29 per 4 bytes + 1 per KiB). */
#define STORM_FILL 0xd7
static void describe_content(const struct thr *th, const uint8_t *b, size_t len, size_t first,
                             char *out, size_t outlen)
{
    uint32_t got;
    size_t fill = 0;

    for (size_t i = 0; i < len; ++i) {
        fill += b[i] == STORM_FILL;
    }
    if (len - first < 4) {
        snprintf(out, outlen, "buffer %p; %zu bytes still the receive fill", (const void *) b, fill);
        return;
    }
    memcpy(&got, b + first, 4);
    for (int s = 0; s < nranks; ++s) {
        for (int d = 0; d < nranks; ++d) {
            for (int t = 0; t < nthreads; ++t) {
                for (long r = th->round < 4 ? 0 : th->round - 4; r <= th->round + 1; ++r) {
                    for (int k = K_RING; k <= K_CAS; ++k) {
                        for (int i = 0; i < 16; ++i) {
                            uint32_t sd = seed_of(s, d, t, r, k, i);
                            size_t n = len - first < 16 ? len - first : 16, j = 0;
                            const char *how = "the start";

                            /* that message's start, or its bytes at this very
                             * offset (one of its fragments put where it belongs
                             * in it, but in this buffer) */
                            if (sd != got) {
                                while (j < n && b[first + j] == pat(sd, first + j)) {
                                    ++j;
                                }
                                if (j < n) {
                                    continue;
                                }
                                how = "the bytes at this offset";
                            }
                            snprintf(out, outlen, "buffer %p; %zu bytes still the receive fill; "
                                     "at offset %zu: %s of message src %d dst %d thread %d "
                                     "round %ld kind %d #%d", (const void *) b, fill, first, how,
                                     s, d, t, r, k, i);
                            return;
                        }
                    }
                }
            }
        }
    }
    {
        char hex[3 * 16 + 1] = "";
        size_t n = len - first < 16 ? len - first : 16;

        for (size_t i = 0; i < n; ++i) {
            snprintf(hex + 3 * i, sizeof(hex) - 3 * i, " %02x", b[first + i]);
        }
        snprintf(out, outlen, "buffer %p; %zu bytes still the receive fill; at offset %zu: 0x%08x, "
                 "no message's start; bytes there:%s", (const void *) b, fill, first, got, hex);
    }
}

/* check LEN received bytes against the pattern of SEED */
static int verify(struct thr *th, const char *what, int src, const void *buf, size_t len,
                  uint32_t seed)
{
    const uint8_t *b = buf;
    size_t bad = 0, first = 0;

    for (size_t i = 0; i < len; ++i) {
        if (b[i] != pat(seed, i) && 0 == bad++) {
            first = i;
        }
    }
    if (bad) {
        char where[320], at[320];

        describe_content(th, b, len, first, where, sizeof(where));
        (void) old_match(th, b + first, len - first < 16 ? len - first : 16, at, sizeof(at));
        error(th, "%s (rank %d): %zu of %zu bytes wrong, first at offset %zu (0x%02x, not 0x%02x); "
              "%s; the wrong bytes' address: %s", what, src, bad, len, first, b[first],
              pat(seed, first), where, at);
        return 0;
    }
    th->bytes += len;
    return 1;
}

/* a received message: its status says SRC sent LEN bytes, and they are right */
static void verify_msg(struct thr *th, const char *what, int src, const void *buf, int len,
                       uint32_t seed, const MPI_Status *st)
{
    int count;

    MPI_Get_count(st, MPI_BYTE, &count);
    if (st->MPI_SOURCE != src || count != len) {
        error(th, "%s: got %d bytes from rank %d, expected %d bytes from rank %d", what, count,
              st->MPI_SOURCE, len, src);
        return;
    }
    if (verify(th, what, src, buf, (size_t) len, seed)) {
        th->msgs++;
    }
}

static int tag(const struct thr *th, int kind)
{
    return (th->id + 1) * 64 + kind;
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);

    if (NULL == p) {
        fprintf(stderr, "mt_stress: rank %d: out of memory (%zu bytes)\n", rank, n);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

/* --- ring: a posted receive from one side, a blocking send to the other ------------ */
static void do_ring(struct thr *th, long r)
{
    for (int k = 1; k < nranks; ++k) {
        int to = (rank + k) % nranks, from = (rank - k + nranks) % nranks;
        int slen = msg_size(rank, to, th->id, r, K_RING, k);
        int rlen = msg_size(from, rank, th->id, r, K_RING, k);
        uint8_t *sb = xmalloc(slen), *rb = xmalloc(rlen);
        MPI_Request req;
        MPI_Status st;

        step(th, P_RING, from);
        fill(sb, slen, seed_of(rank, to, th->id, r, K_RING, k));
        pend_note(th, 0, from, 0, K_RING, k, rlen);
        MPI_Irecv(rb, rlen, MPI_BYTE, from, tag(th, K_RING), shared_comm, &req);
        MPI_Send(sb, slen, MPI_BYTE, to, tag(th, K_RING), shared_comm);
        wait_noted(th, 1, &req, &st);
        verify_msg(th, "ring", from, rb, rlen, seed_of(from, rank, th->id, r, K_RING, k), &st);

        /* the same pairs with MPI_Sendrecv on the thread's own communicator */
        step(th, P_SENDRECV, from);
        slen = msg_size(rank, to, th->id, r, K_SENDRECV, k);
        rlen = msg_size(from, rank, th->id, r, K_SENDRECV, k);
        free(sb);
        free(rb);
        sb = xmalloc(slen);
        rb = xmalloc(rlen);
        fill(sb, slen, seed_of(rank, to, th->id, r, K_SENDRECV, k));
        MPI_Sendrecv(sb, slen, MPI_BYTE, to, K_SENDRECV, rb, rlen, MPI_BYTE, from, K_SENDRECV,
                     th->own, &st);
        verify_msg(th, "sendrecv", from, rb, rlen, seed_of(from, rank, th->id, r, K_SENDRECV, k),
                   &st);
        free(sb);
        free(rb);
    }
}

/* --- any: one message from every peer, taken with MPI_ANY_SOURCE -------------------- */
static void do_any(struct thr *th, long r)
{
    int n = nranks - 1, nreq = 0;
    int first = (r & 1) == 0; /* even rounds: receives posted before anyone sends */
    MPI_Comm comm = first ? th->own : shared_comm;
    int tg = first ? K_ANY : tag(th, K_ANY);
    MPI_Request *req = xmalloc(sizeof(*req) * 2 * n);
    MPI_Status *st = xmalloc(sizeof(*st) * 2 * n);
    uint8_t **sb = xmalloc(sizeof(*sb) * n);
    char *seen = calloc(nranks, 1);

    step(th, P_ANY, -1);
    for (int i = 0; i < n; ++i) {
        pend_note(th, nreq, MPI_ANY_SOURCE, 0, K_ANY, i, MAX_SIZE);
        MPI_Irecv(th->anybuf + (size_t) i * MAX_SIZE, MAX_SIZE, MPI_BYTE, MPI_ANY_SOURCE, tg, comm,
                  &req[nreq++]);
    }
    if (first) {
        MPI_Barrier(th->own);
    }
    for (int k = 1; k < nranks; ++k) {
        int to = (rank + (th->id & 1 ? nranks - k : k)) % nranks;
        int len = msg_size(rank, to, th->id, r, K_ANY, 0);

        sb[k - 1] = xmalloc(len);
        fill(sb[k - 1], len, seed_of(rank, to, th->id, r, K_ANY, 0));
        pend_note(th, nreq, to, 1, K_ANY, 0, len);
        MPI_Isend(sb[k - 1], len, MPI_BYTE, to, tg, comm, &req[nreq++]);
    }
    wait_noted(th, nreq, req, st);
    for (int i = 0; i < n; ++i) {
        int src = st[i].MPI_SOURCE;

        if (src < 0 || src >= nranks || src == rank || seen[src]) {
            error(th, "any: a message from rank %d (%s)", src,
                  src >= 0 && src < nranks && src != rank ? "a second one" : "not a peer");
            continue;
        }
        seen[src] = 1;
        verify_msg(th, first ? "any (receive first)" : "any", src,
                   th->anybuf + (size_t) i * MAX_SIZE, msg_size(src, rank, th->id, r, K_ANY, 0),
                   seed_of(src, rank, th->id, r, K_ANY, 0), &st[i]);
    }
    for (int i = 0; i < n; ++i) {
        free(sb[i]);
    }
    free(seen);
    free(sb);
    free(st);
    free(req);
}

/* --- storm: STORM_N messages of mixed sizes and one vector per peer, all at once ----- */
static void vec_fill(int32_t *buf, uint32_t seed)
{
    for (size_t b = 0, j = 0; b < VEC_COUNT; ++b) {
        for (size_t e = 0; e < VEC_BLOCK; ++e, ++j) {
            buf[b * VEC_STRIDE + e] = pat32(seed, j);
        }
    }
}

static void vec_verify(struct thr *th, int src, const int32_t *buf, int as_vector, uint32_t seed,
                       const MPI_Status *st)
{
    size_t bad = 0, first = 0, gaps = 0;
    int count;

    MPI_Get_count(st, MPI_INT, &count);
    if (st->MPI_SOURCE != src || count != VEC_INTS) {
        error(th, "vector: %d ints from rank %d, expected %d from rank %d", count, st->MPI_SOURCE,
              VEC_INTS, src);
        return;
    }
    if (as_vector) {
        for (size_t b = 0, j = 0; b < VEC_COUNT; ++b) {
            for (size_t e = 0; e < VEC_STRIDE && b * VEC_STRIDE + e < VEC_EXTENT_INTS; ++e) {
                int32_t v = buf[b * VEC_STRIDE + e];

                if (e >= VEC_BLOCK) {
                    gaps += v != (int32_t) 0xa5a5a5a5;
                } else if (v != pat32(seed, j++) && 0 == bad++) {
                    first = j - 1;
                }
            }
        }
    } else {
        for (size_t j = 0; j < VEC_INTS; ++j) {
            if (buf[j] != pat32(seed, j) && 0 == bad++) {
                first = j;
            }
        }
    }
    if (bad || gaps) {
        error(th, "vector (received as %s) from rank %d: %zu of %d ints wrong (first: #%zu), %zu gap ints written",
              as_vector ? "vector" : "ints", src, bad, VEC_INTS, first, gaps);
        return;
    }
    th->msgs++;
    th->bytes += VEC_INTS * sizeof(int32_t);
}

static void do_storm(struct thr *th, long r)
{
    int n = nranks - 1, per = STORM_N + 1, nreq = 0;
    int on_own = (r & 1) == 0, as_vector = (r >> 1) & 1;
    MPI_Comm comm = on_own ? th->own : shared_comm;
    int tg = on_own ? K_STORM : tag(th, K_STORM), vtg = on_own ? K_VEC : tag(th, K_VEC);
    MPI_Request *req = xmalloc(sizeof(*req) * 2 * n * per);
    MPI_Status *st = xmalloc(sizeof(*st) * 2 * n * per);
    void **rb = xmalloc(sizeof(*rb) * n * per), **sb = xmalloc(sizeof(*sb) * n * per);
    size_t vbytes = VEC_EXTENT_INTS * sizeof(int32_t);

    step(th, P_STORM, -1);
    for (int k = 1; k < nranks; ++k) {
        int from = (rank - k + nranks) % nranks;

        for (int i = 0; i < STORM_N; ++i) {
            int len = msg_size(from, rank, th->id, r, K_STORM, i);

            rb[(k - 1) * per + i] = xmalloc(len);
            memset(rb[(k - 1) * per + i], STORM_FILL, len);
            pend_note(th, nreq, from, 0, K_STORM, i, len);
            MPI_Irecv(rb[(k - 1) * per + i], len, MPI_BYTE, from, tg, comm, &req[nreq++]);
        }
        rb[(k - 1) * per + STORM_N] = xmalloc(as_vector ? vbytes : VEC_INTS * sizeof(int32_t));
        pend_note(th, nreq, from, 0, K_VEC, as_vector, VEC_INTS * sizeof(int32_t));
        if (as_vector) {
            memset(rb[(k - 1) * per + STORM_N], 0xa5, vbytes);
            MPI_Irecv(rb[(k - 1) * per + STORM_N], 1, vec_type, from, vtg, comm, &req[nreq++]);
        } else {
            MPI_Irecv(rb[(k - 1) * per + STORM_N], VEC_INTS, MPI_INT, from, vtg, comm,
                      &req[nreq++]);
        }
    }
    for (int k = 1; k < nranks; ++k) {
        /* odd threads go round the other way: the peers' sends cross */
        int to = (rank + (th->id & 1 ? nranks - k : k)) % nranks;

        for (int i = 0; i < STORM_N; ++i) {
            int len = msg_size(rank, to, th->id, r, K_STORM, i);

            sb[(k - 1) * per + i] = xmalloc(len);
            fill(sb[(k - 1) * per + i], len, seed_of(rank, to, th->id, r, K_STORM, i));
            pend_note(th, nreq, to, 1, K_STORM, i, len);
            MPI_Isend(sb[(k - 1) * per + i], len, MPI_BYTE, to, tg, comm, &req[nreq++]);
        }
        sb[(k - 1) * per + STORM_N] = xmalloc(vbytes);
        vec_fill(sb[(k - 1) * per + STORM_N], seed_of(rank, to, th->id, r, K_VEC, 0));
        pend_note(th, nreq, to, 1, K_VEC, 1, VEC_INTS * sizeof(int32_t));
        MPI_Isend(sb[(k - 1) * per + STORM_N], 1, vec_type, to, vtg, comm, &req[nreq++]);
    }
    wait_noted(th, nreq, req, st);
    step(th, P_VEC, -1);
    for (int k = 1; k < nranks; ++k) {
        int from = (rank - k + nranks) % nranks;

        for (int i = 0; i < STORM_N; ++i) {
            verify_msg(th, "storm", from, rb[(k - 1) * per + i],
                       msg_size(from, rank, th->id, r, K_STORM, i),
                       seed_of(from, rank, th->id, r, K_STORM, i), &st[(k - 1) * per + i]);
        }
        vec_verify(th, from, rb[(k - 1) * per + STORM_N], as_vector,
                   seed_of(from, rank, th->id, r, K_VEC, 0), &st[(k - 1) * per + STORM_N]);
    }
    for (int k = 1; k < nranks; ++k) {
        int from = (rank - k + nranks) % nranks;

        for (int i = 0; i < STORM_N; ++i) {
            struct oldbuf *o = &th->old[th->nold++ % OLD_BUFS];

            *o = (struct oldbuf) {
                .addr = (uintptr_t) rb[(k - 1) * per + i],
                .len = (size_t) msg_size(from, rank, th->id, r, K_STORM, i),
                .seed = seed_of(from, rank, th->id, r, K_STORM, i),
                .round = r, .src = from, .idx = i,
            };
        }
    }
    for (int i = 0; i < n * per; ++i) {
        free(rb[i]);
        free(sb[i]);
    }
    free(sb);
    free(rb);
    free(st);
    free(req);
}

/* --- probe: find each peer's message with a probe, then receive what it said -------- */
static void do_probe(struct thr *th, long r)
{
    int n = nranks - 1, how = (int) (r % 3); /* 0 Probe, 1 Iprobe, 2 Mprobe */
    MPI_Comm comm = (r & 1) == 0 ? th->own : shared_comm;
    int tg = (r & 1) == 0 ? K_PROBE : tag(th, K_PROBE);
    MPI_Request *req = xmalloc(sizeof(*req) * n);
    uint8_t **sb = xmalloc(sizeof(*sb) * n);
    char *seen = calloc(nranks, 1);

    step(th, P_PROBE, -1);
    for (int k = 1; k < nranks; ++k) {
        int to = (rank + k) % nranks;
        int len = msg_size(rank, to, th->id, r, K_PROBE, 0);

        sb[k - 1] = xmalloc(len);
        fill(sb[k - 1], len, seed_of(rank, to, th->id, r, K_PROBE, 0));
        pend_note(th, k - 1, to, 1, K_PROBE, 0, len);
        MPI_Isend(sb[k - 1], len, MPI_BYTE, to, tg, comm, &req[k - 1]);
    }
    __atomic_store_n(&th->npend, n, __ATOMIC_RELEASE); /* shown while probing */
    for (int i = 0; i < n; ++i) {
        MPI_Status st;
        MPI_Message msg = MPI_MESSAGE_NULL;
        int flag = 0, count, src;
        uint8_t *rb;

        if (0 == how) {
            MPI_Probe(MPI_ANY_SOURCE, tg, comm, &st);
        } else if (1 == how) {
            while (MPI_Iprobe(MPI_ANY_SOURCE, tg, comm, &flag, &st), !flag) {
                sched_yield();
            }
        } else {
            MPI_Mprobe(MPI_ANY_SOURCE, tg, comm, &msg, &st);
        }
        src = st.MPI_SOURCE;
        MPI_Get_count(&st, MPI_BYTE, &count);
        if (src < 0 || src >= nranks || src == rank || seen[src] ||
            count != msg_size(src, rank, th->id, r, K_PROBE, 0)) {
            error(th, "probe: found %d bytes from rank %d (a peer's only message, of %d bytes?)",
                  count, src, src >= 0 && src < nranks ? msg_size(src, rank, th->id, r, K_PROBE, 0) : -1);
            MPI_Abort(MPI_COMM_WORLD, 1); /* receiving it could hang */
        }
        seen[src] = 1;
        rb = xmalloc(count);
        if (2 == how) {
            MPI_Mrecv(rb, count, MPI_BYTE, &msg, &st);
        } else {
            MPI_Recv(rb, count, MPI_BYTE, src, tg, comm, &st);
        }
        verify_msg(th, "probe", src, rb, count, seed_of(src, rank, th->id, r, K_PROBE, 0), &st);
        free(rb);
    }
    wait_noted(th, n, req, MPI_STATUSES_IGNORE);
    for (int i = 0; i < n; ++i) {
        free(sb[i]);
    }
    free(seen);
    free(sb);
    free(req);
}

/* --- osc ----------------------------------------------------------------------------- */
static MPI_Aint slot_off(int o) { return PUB_BYTES + (MPI_Aint) o * SLOT_BYTES; }
static MPI_Aint cnt_off(int o) { return slot_off(nranks) + (MPI_Aint) o * 8; }
static MPI_Aint cas_off(int o) { return cnt_off(nranks) + (MPI_Aint) o * 8; }
static MPI_Aint total_off(void) { return cas_off(nranks); }
static MPI_Aint acc_off(void) { return total_off() + 8; }
static MPI_Aint win_bytes(void) { return acc_off() + ACC_N * 8; }

static int put_len(int o, int target, int thr, long r)
{
    return put_sizes[seed_of(o, target, thr, r, K_PUT, 1) % NPUT];
}

static int64_t cas_val(int o, int target, int thr, long r)
{
    return r < 0 ? 0 : (int64_t) (seed_of(o, target, thr, r, K_CAS, 0) | 1u);
}

static int64_t acc_val(int o, int target, int thr, long r, int i)
{
    return (int64_t) ((seed_of(o, target, thr, r, K_ACC, 0) + (uint32_t) i * 40503u) & 0xffff);
}

static void do_osc(struct thr *th, long r, uint8_t *getbuf, uint8_t *putbuf, uint8_t *chkbuf,
                   int64_t *accbuf)
{
    MPI_Win w = th->win;
    int64_t *words = (int64_t *) th->wbase;

    /* what the others will read: written locally, then published */
    step(th, P_OSC_PUB, -1);
    fill(th->wbase, PUB_BYTES, seed_of(rank, rank, th->id, r, K_PUB, 0));
    MPI_Win_sync(w);
    MPI_Barrier(th->own);

    for (int k = 1; k < nranks; ++k) {
        int p = (rank + (th->id & 1 ? nranks - k : k)) % nranks;
        int plen = put_len(rank, p, th->id, r);
        int64_t add = r + 1, one = 1, fcnt = -1, ftot = -1, cres = -1, cres2 = -1;
        int64_t cmp = cas_val(rank, p, th->id, r - 1), nv = cas_val(rank, p, th->id, r);
        int64_t wrong = nv ^ 2, nv2 = 12345;

        step(th, P_OSC_PUT, p);
        fill(putbuf, plen, seed_of(rank, p, th->id, r, K_PUT, 0));
        for (int i = 0; i < ACC_N; ++i) {
            accbuf[i] = acc_val(rank, p, th->id, r, i);
        }
        MPI_Get(getbuf, PUB_BYTES, MPI_BYTE, p, 0, PUB_BYTES, MPI_BYTE, w);
        MPI_Put(putbuf, plen, MPI_BYTE, p, slot_off(rank), plen, MPI_BYTE, w);
        step(th, P_OSC_FOP, p);
        MPI_Fetch_and_op(&add, &fcnt, MPI_INT64_T, p, cnt_off(rank), MPI_SUM, w);
        MPI_Fetch_and_op(&one, &ftot, MPI_INT64_T, p, total_off(), MPI_SUM, w);
        step(th, P_OSC_CAS, p);
        MPI_Compare_and_swap(&nv, &cmp, &cres, MPI_INT64_T, p, cas_off(rank), w);
        step(th, P_OSC_ACC, p);
        MPI_Accumulate(accbuf, ACC_N, MPI_INT64_T, p, acc_off(), ACC_N, MPI_INT64_T, MPI_SUM, w);
        step(th, P_OSC_FLUSH, p);
        MPI_Win_flush(p, w);
        th->osc_ops += 6;
        verify(th, "osc get of the target's block", p, getbuf, PUB_BYTES,
               seed_of(p, p, th->id, r, K_PUB, 0));
        if (fcnt != r * (r + 1) / 2) {
            error(th, "osc fetch_and_op at rank %d fetched %lld, not %lld", p, (long long) fcnt,
                  (long long) (r * (r + 1) / 2));
        }
        if (ftot < r * (nranks - 1) || ftot >= (r + 1) * (nranks - 1)) {
            error(th, "osc fetch_and_op on the shared total at rank %d fetched %lld, not in [%ld, %ld)",
                  p, (long long) ftot, r * (nranks - 1), (r + 1) * (nranks - 1));
        }
        if (cres != cmp) {
            error(th, "osc compare_and_swap at rank %d found %lld, not %lld", p, (long long) cres,
                  (long long) cmp);
        }

        /* read back what was put (complete at the target since the flush), and a
         * compare_and_swap that must not match */
        step(th, P_OSC_READ, p);
        MPI_Get(chkbuf, plen, MPI_BYTE, p, slot_off(rank), plen, MPI_BYTE, w);
        MPI_Compare_and_swap(&nv2, &wrong, &cres2, MPI_INT64_T, p, cas_off(rank), w);
        step(th, P_OSC_FLUSH2, p);
        MPI_Win_flush(p, w);
        th->osc_ops += 2;
        verify(th, "osc get of what was put", p, chkbuf, plen,
               seed_of(rank, p, th->id, r, K_PUT, 0));
        if (cres2 != nv) {
            error(th, "osc compare_and_swap (no match) at rank %d found %lld, not %lld", p,
                  (long long) cres2, (long long) nv);
        }
    }

    /* every origin is done with this round: check the whole window locally */
    step(th, P_OSC_CHECK, -1);
    MPI_Barrier(th->own);
    MPI_Win_sync(w);
    for (int o = 0; o < nranks; ++o) {
        if (o == rank) {
            continue;
        }
        verify(th, "osc put (seen at the target)", o, th->wbase + slot_off(o),
               put_len(o, rank, th->id, r), seed_of(o, rank, th->id, r, K_PUT, 0));
        if (words[cnt_off(o) / 8] != (r + 1) * (r + 2) / 2) {
            error(th, "osc: rank %d's counter here is %lld, not %lld", o,
                  (long long) words[cnt_off(o) / 8], (long long) ((r + 1) * (r + 2) / 2));
        }
        if (words[cas_off(o) / 8] != cas_val(o, rank, th->id, r)) {
            error(th, "osc: rank %d's compare_and_swap word here is %lld, not %lld", o,
                  (long long) words[cas_off(o) / 8], (long long) cas_val(o, rank, th->id, r));
        }
        for (int i = 0; i < ACC_N; ++i) {
            th->acc_expect[i] += acc_val(o, rank, th->id, r, i);
        }
    }
    if (words[total_off() / 8] != (r + 1) * (nranks - 1)) {
        error(th, "osc: the shared total here is %lld, not %ld", (long long) words[total_off() / 8],
              (r + 1) * (nranks - 1));
    }
    for (int i = 0; i < ACC_N; ++i) {
        if (words[acc_off() / 8 + i] != th->acc_expect[i]) {
            error(th, "osc accumulate: element %d here is %lld, not %lld", i,
                  (long long) words[acc_off() / 8 + i], (long long) th->acc_expect[i]);
            break;
        }
    }
    th->bytes += ACC_N * 8;
}

static void *run(void *arg)
{
    struct thr *th = arg;
    uint8_t *getbuf = NULL, *putbuf = NULL, *chkbuf = NULL;
    int64_t *accbuf = NULL;

    if (use_osc) {
        getbuf = xmalloc(PUB_BYTES);
        putbuf = xmalloc(SLOT_BYTES);
        chkbuf = xmalloc(SLOT_BYTES);
        accbuf = xmalloc(ACC_N * sizeof(int64_t));
        MPI_Win_lock_all(0, th->win);
    }
    for (long r = 0;; ++r) {
        int stop;

        __atomic_store_n(&th->round, r, __ATOMIC_RELAXED);
        step(th, P_AGREE, -1);
        stop = r > 0 && MPI_Wtime() >= deadline;
        MPI_Allreduce(MPI_IN_PLACE, &stop, 1, MPI_INT, MPI_MAX, th->own);
        if (stop) {
            break;
        }
        if (parts & PART_RING) {
            do_ring(th, r);
        }
        if (parts & PART_ANY) {
            do_any(th, r);
        }
        if (parts & PART_STORM) {
            do_storm(th, r);
        }
        if (parts & PART_PROBE) {
            do_probe(th, r);
        }
        if (use_osc) {
            do_osc(th, r, getbuf, putbuf, chkbuf, accbuf);
        }
        th->rounds = r + 1;
    }
    if (use_osc) {
        MPI_Win_unlock_all(th->win);
    }
    step(th, P_DONE, -1);
    free(accbuf);
    free(chkbuf);
    free(putbuf);
    free(getbuf);
    __atomic_add_fetch(&threads_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static int usage(void)
{
    fprintf(stderr, "usage: mt_stress [--seconds N] [--threads T] [--no-osc] [--only PARTS]\n"
                    "                 [--watchdog N] [--backtrace]\n");
    return 2;
}

int main(int argc, char **argv)
{
    struct thr *th;
    char host[256] = "?";
    unsigned long long v[5], tot[5];
    long rmin, rmax;
    double start;
    int created_ok = 1;

    for (int i = 1; i < argc; ++i) {
        if (0 == strcmp(argv[i], "--seconds") && i + 1 < argc) {
            seconds = atoi(argv[++i]);
        } else if (0 == strcmp(argv[i], "--threads") && i + 1 < argc) {
            nthreads = atoi(argv[++i]);
        } else if (0 == strcmp(argv[i], "--watchdog") && i + 1 < argc) {
            watchdog_s = atoi(argv[++i]);
        } else if (0 == strcmp(argv[i], "--no-osc")) {
            use_osc = 0;
        } else if (0 == strcmp(argv[i], "--backtrace")) {
            backtrace = 1;
        } else if (0 == strcmp(argv[i], "--only") && i + 1 < argc) {
            char *list = argv[++i], *tok, *save = NULL;

            parts = 0;
            use_osc = 0;
            for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                int k;

                for (k = 0; k < NPARTS && strcmp(tok, part_name[k]); ++k) {
                }
                if (k == NPARTS) {
                    return usage();
                }
                if (k == NPARTS - 1) {
                    use_osc = 1;
                } else {
                    parts |= 1 << k;
                }
            }
        } else {
            return usage();
        }
    }
    if (seconds < 0 || nthreads < 1 || nthreads > 64 || watchdog_s < 0) {
        return usage();
    }

    mt_start("mt_stress", &argc, &argv, &rank, &nranks, host, sizeof(host));

    MPI_Type_vector(VEC_COUNT, VEC_BLOCK, VEC_STRIDE, MPI_INT, &vec_type);
    MPI_Type_commit(&vec_type);
    MPI_Comm_dup(MPI_COMM_WORLD, &shared_comm);
    th = calloc(nthreads, sizeof(*th));
    for (int t = 0; t < nthreads; ++t) {
        th[t].id = t;
        MPI_Comm_dup(MPI_COMM_WORLD, &th[t].own);
        th[t].anybuf = xmalloc((size_t) (nranks - 1) * MAX_SIZE);
        th[t].pend = calloc(2 * (nranks - 1) * (STORM_N + 1), sizeof(*th[t].pend));
        if (use_osc) {
            /* odd threads: MPI_Win_create (see the top of this file) */
            th[t].created = 0;
            if (t & 1 && created_ok) {
                int rc;

                MPI_Alloc_mem(win_bytes(), MPI_INFO_NULL, &th[t].wbase);
                /* without an RDMA BTL (osc/sm, or osc/pt2pt which refuses
                 * MPI_THREAD_MULTIPLE) there is no such window: say so below */
                MPI_Comm_set_errhandler(th[t].own, MPI_ERRORS_RETURN);
                rc = MPI_Win_create(th[t].wbase, win_bytes(), 1, MPI_INFO_NULL, th[t].own,
                                    &th[t].win);
                MPI_Comm_set_errhandler(th[t].own, MPI_ERRORS_ARE_FATAL);
                th[t].created = MPI_SUCCESS == rc;
                if (!th[t].created) {
                    MPI_Free_mem(th[t].wbase);
                    created_ok = 0;
                }
            }
            if (!th[t].created) {
                MPI_Win_allocate(win_bytes(), 1, MPI_INFO_NULL, th[t].own, &th[t].wbase, &th[t].win);
            }
            memset(th[t].wbase, 0, win_bytes());
            th[t].acc_expect = calloc(ACC_N, sizeof(int64_t));
        }
    }
    MPI_Barrier(MPI_COMM_WORLD); /* windows zeroed everywhere before any access */

    start = MPI_Wtime();
    deadline = start + seconds;
    __atomic_store_n(&progress_us, now_us(), __ATOMIC_RELAXED);
    for (int t = 0; t < nthreads; ++t) {
        if (pthread_create(&th[t].tid, NULL, run, &th[t])) {
            fprintf(stderr, "mt_stress: rank %d: pthread_create failed\n", rank);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    /* the hang guard: a thread stuck for watchdog_s says where, and the job ends */
    while (__atomic_load_n(&threads_done, __ATOMIC_ACQUIRE) < nthreads) {
        struct timespec ts = { 0, 200 * 1000 * 1000 };
        long idle = now_us() - __atomic_load_n(&progress_us, __ATOMIC_RELAXED);

        nanosleep(&ts, NULL);
        if (watchdog_s > 0 && idle > watchdog_s * 1000000L) {
            fprintf(stderr, "mt_stress: rank %d (%s): no thread made progress for %d s (--watchdog); where they are:\n",
                    rank, host, watchdog_s);
            for (int t = 0; t < nthreads; ++t) {
                int np = __atomic_load_n(&th[t].npend, __ATOMIC_ACQUIRE), shown = 0;

                fprintf(stderr, "mt_stress: rank %d thread %d: round %ld, %s (peer %d)\n", rank, t,
                        __atomic_load_n(&th[t].round, __ATOMIC_RELAXED),
                        phase_name[__atomic_load_n(&th[t].phase, __ATOMIC_RELAXED)],
                        __atomic_load_n(&th[t].peer, __ATOMIC_RELAXED));
                for (int i = 0; i < np; ++i) {
                    struct pend *p = &th[t].pend[i];

                    if (__atomic_load_n(&p->done, __ATOMIC_RELAXED)) {
                        continue;
                    }
                    if (shown++ == 12) {
                        fprintf(stderr, "mt_stress: rank %d thread %d:   ...\n", rank, t);
                        break;
                    }
                    fprintf(stderr, "mt_stress: rank %d thread %d:   not complete: %s rank %d, %s #%d, %d bytes\n",
                            rank, t, __atomic_load_n(&p->send, __ATOMIC_RELAXED) ? "send to" : "receive from",
                            __atomic_load_n(&p->peer, __ATOMIC_RELAXED),
                            kind_name[__atomic_load_n(&p->kind, __ATOMIC_RELAXED)],
                            __atomic_load_n(&p->idx, __ATOMIC_RELAXED),
                            __atomic_load_n(&p->len, __ATOMIC_RELAXED));
                }
            }
            if (backtrace) {
                char cmd[256];

                fflush(stderr);
                snprintf(cmd, sizeof(cmd),
                         "gdb -p %d -batch -ex 'thread apply all bt' </dev/null 2>/dev/null |"
                         " sed 's/^/[rank %d bt] /' >&2",
                         (int) getpid(), rank);
                if (system(cmd)) {
                    fprintf(stderr, "mt_stress: rank %d: no backtrace (is gdb installed?)\n", rank);
                }
            }
            fprintf(stderr, "mt_stress: rank %d: aborting\n", rank);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
    rmin = LONG_MAX;
    rmax = 0;
    memset(v, 0, sizeof(v));
    for (int t = 0; t < nthreads; ++t) {
        pthread_join(th[t].tid, NULL);
        v[0] += th[t].msgs;
        v[1] += th[t].bytes;
        v[2] += th[t].osc_ops;
        v[3] += th[t].errors;
        rmin = th[t].rounds < rmin ? th[t].rounds : rmin;
        rmax = th[t].rounds > rmax ? th[t].rounds : rmax;
    }
    v[4] = 0;
    MPI_Allreduce(v, tot, 5, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &rmin, 1, MPI_LONG, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &rmax, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("mt_stress: detail rounds per thread %ld..%ld, %llu osc operations, %s, %.1f s\n",
               rmin, rmax, tot[2],
               !use_osc ? "no osc"
               : nthreads < 2 ? "osc on MPI_Win_allocate windows"
               : created_ok ? "osc on MPI_Win_allocate and MPI_Win_create windows"
                            : "osc on MPI_Win_allocate windows only (MPI_Win_create failed)",
               MPI_Wtime() - start);
        if (0 == tot[3] && tot[0] + tot[2] > 0) {
            printf("mt_stress: PASSED ranks=%d threads=%d seconds=%d msgs=%llu bytes=%llu\n",
                   nranks, nthreads, seconds, tot[0], tot[1]);
        } else {
            printf("mt_stress: FAILED ranks=%d threads=%d seconds=%d msgs=%llu bytes=%llu errors=%llu\n",
                   nranks, nthreads, seconds, tot[0], tot[1], tot[3]);
        }
        fflush(stdout);
    }

    for (int t = 0; t < nthreads; ++t) {
        if (use_osc) {
            MPI_Win_free(&th[t].win);
            if (th[t].created) {
                MPI_Free_mem(th[t].wbase);
            }
            free(th[t].acc_expect);
        }
        MPI_Comm_free(&th[t].own);
        free(th[t].anybuf);
        free(th[t].pend);
    }
    MPI_Comm_free(&shared_comm);
    MPI_Type_free(&vec_type);
    free(th);
    MPI_Finalize();
    return tot[3] || 0 == tot[0] + tot[2] ? 1 : 0;
}

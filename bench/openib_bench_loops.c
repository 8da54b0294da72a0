/*
 * openib_bench_loops.c - openib_bench's timing loops: one loop, shared by
 * every test, around what one iteration of each test moves (a ping-pong,
 * a uni-directional window, a bi-directional window).
 */
#include "openib_bench.h"

#define TAG_DATA 11
#define TAG_ACK 12

double *itime;

/* One iteration of a test; iter is the pattern iteration (negative: a
 * warm-up). */
typedef void iteration_fn(const struct xfer *x, int iter);

/* With several pairs, before each window: all ranks at once (see
 * combine_pairs). One pair needs no barrier: its ack orders the windows;
 * lat runs with one pair only. */
static void pair_barrier(void)
{
    if (pairs > 1)
        MPI_Barrier(MPI_COMM_WORLD);
}

/* opt.warmup untimed iterations, then iters timed ones, each one's time
 * into itime; returns the total time of the timed ones. */
static double timed_loop(iteration_fn *one, const struct xfer *x, int iters)
{
    double t0 = 0, ti = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int it = -opt.warmup; it < iters; it++) {
        pair_barrier();
        if (it == 0)
            t0 = MPI_Wtime();
        ti = MPI_Wtime();
        one(x, it);
        if (it >= 0)
            itime[it] = MPI_Wtime() - ti;
    }
    return MPI_Wtime() - t0;
}

/* Ping-pong: the first rank of a pair sends first. */
static void lat_once(const struct xfer *x, int iter)
{
    unsigned char *rbuf = x->rbufs[0];
    MPI_Status st;
    if (me < pairs) {
        prep_send(x->sbuf, x->size, iter);
        prep_recv(rbuf, x->size, iter);
        MPI_Send(x->sbuf, (int) x->size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD);
        MPI_Recv(rbuf, (int) x->size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &st);
        check_recv(rbuf, x->size, iter, &st);
    } else {
        prep_recv(rbuf, x->size, iter);
        MPI_Recv(rbuf, (int) x->size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &st);
        check_recv(rbuf, x->size, iter, &st);
        prep_send(x->sbuf, x->size, iter);
        MPI_Send(x->sbuf, (int) x->size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD);
    }
}

/* Uni-directional window (the first rank sends, its peer acks the window). */
static void uni_once(const struct xfer *x, int iter)
{
    if (me < pairs) {
        prep_send(x->sbuf, x->size, iter);
        for (int w = 0; w < x->window; w++)
            MPI_Isend(x->sbuf, (int) x->size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD,
                      &x->req[w]);
        MPI_Waitall(x->window, x->req, MPI_STATUSES_IGNORE);
        MPI_Recv(NULL, 0, MPI_BYTE, peer, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        for (int w = 0; w < x->window; w++) {
            prep_recv(x->rbufs[w], x->size, iter);
            MPI_Irecv(x->rbufs[w], (int) x->size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD,
                      &x->req[w]);
        }
        MPI_Waitall(x->window, x->req, x->sts);
        for (int w = 0; w < x->window; w++)
            check_recv(x->rbufs[w], x->size, iter, &x->sts[w]);
        MPI_Send(NULL, 0, MPI_BYTE, peer, TAG_ACK, MPI_COMM_WORLD);
    }
}

/* Bi-directional window: both ranks send and receive a window. */
static void bi_once(const struct xfer *x, int iter)
{
    prep_send(x->sbuf, x->size, iter);
    for (int w = 0; w < x->window; w++) {
        prep_recv(x->rbufs[w], x->size, iter);
        MPI_Irecv(x->rbufs[w], (int) x->size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD,
                  &x->req[w]);
    }
    for (int w = 0; w < x->window; w++)
        MPI_Isend(x->sbuf, (int) x->size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD,
                  &x->req[x->window + w]);
    MPI_Waitall(2 * x->window, x->req, x->sts);
    for (int w = 0; w < x->window; w++)
        check_recv(x->rbufs[w], x->size, iter, &x->sts[w]);
}

/* Never inlined: profile-lat.sh counts instructions inside it by name. */
__attribute__((noinline)) double run_lat(const struct xfer *x, int iters)
{
    return timed_loop(lat_once, x, iters);
}

double run_uni(const struct xfer *x, int iters)
{
    return timed_loop(uni_once, x, iters);
}

double run_bi(const struct xfer *x, int iters)
{
    return timed_loop(bi_once, x, iters);
}

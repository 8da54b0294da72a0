/*
 * openib_bench_loops.c - openib_bench's timing loops: a ping-pong, and
 * uni- and bi-directional windows.
 */
#include "openib_bench.h"

#define TAG_DATA 11
#define TAG_ACK 12

double *itime;

/* With several pairs, before each window: all ranks at once (see
 * combine_pairs). One pair needs no barrier: its ack orders the windows. */
static void pair_barrier(void)
{
    if (pairs > 1)
        MPI_Barrier(MPI_COMM_WORLD);
}

/* Ping-pong; returns the total time of the timed iterations. Never
 * inlined: profile-lat.sh counts instructions inside it by name. */
__attribute__((noinline)) double run_lat(const struct xfer *x, int iters)
{
    unsigned char *sbuf = x->sbuf, *rbuf = x->rbufs[0];
    size_t size = x->size;
    double t0 = 0, ti = 0;
    MPI_Status st;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int it = -opt.warmup; it < iters; it++) {
        int vi = it; /* pattern iteration; negative: warm-up */
        if (it == 0)
            t0 = MPI_Wtime();
        ti = MPI_Wtime();
        if (me < pairs) {
            prep_send(sbuf, size, vi);
            prep_recv(rbuf, size, vi);
            MPI_Send(sbuf, (int) size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD);
            MPI_Recv(rbuf, (int) size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &st);
            check_recv(rbuf, size, vi, &st);
        } else {
            prep_recv(rbuf, size, vi);
            MPI_Recv(rbuf, (int) size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &st);
            check_recv(rbuf, size, vi, &st);
            prep_send(sbuf, size, vi);
            MPI_Send(sbuf, (int) size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD);
        }
        if (it >= 0)
            itime[it] = MPI_Wtime() - ti;
    }
    return MPI_Wtime() - t0;
}

/* Uni-directional windows (rank 0 sends, rank 1 acks each window). */
double run_uni(const struct xfer *x, int iters)
{
    unsigned char *sbuf = x->sbuf, **rbufs = x->rbufs;
    size_t size = x->size;
    int window = x->window;
    MPI_Request *req = x->req;
    MPI_Status *sts = x->sts;
    double t0 = 0, ti = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int it = -opt.warmup; it < iters; it++) {
        int vi = it;
        pair_barrier();
        if (it == 0)
            t0 = MPI_Wtime();
        ti = MPI_Wtime();
        if (me < pairs) {
            prep_send(sbuf, size, vi);
            for (int w = 0; w < window; w++)
                MPI_Isend(sbuf, (int) size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &req[w]);
            MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
            MPI_Recv(NULL, 0, MPI_BYTE, peer, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            for (int w = 0; w < window; w++) {
                prep_recv(rbufs[w], size, vi);
                MPI_Irecv(rbufs[w], (int) size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD,
                          &req[w]);
            }
            MPI_Waitall(window, req, sts);
            for (int w = 0; w < window; w++)
                check_recv(rbufs[w], size, vi, &sts[w]);
            MPI_Send(NULL, 0, MPI_BYTE, peer, TAG_ACK, MPI_COMM_WORLD);
        }
        if (it >= 0)
            itime[it] = MPI_Wtime() - ti;
    }
    return MPI_Wtime() - t0;
}

/* Bi-directional windows: both ranks send and receive a window. */
double run_bi(const struct xfer *x, int iters)
{
    unsigned char *sbuf = x->sbuf, **rbufs = x->rbufs;
    size_t size = x->size;
    int window = x->window;
    MPI_Request *req = x->req;
    MPI_Status *sts = x->sts;
    double t0 = 0, ti = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int it = -opt.warmup; it < iters; it++) {
        int vi = it;
        pair_barrier();
        if (it == 0)
            t0 = MPI_Wtime();
        ti = MPI_Wtime();
        prep_send(sbuf, size, vi);
        for (int w = 0; w < window; w++) {
            prep_recv(rbufs[w], size, vi);
            MPI_Irecv(rbufs[w], (int) size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &req[w]);
        }
        for (int w = 0; w < window; w++)
            MPI_Isend(sbuf, (int) size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD,
                      &req[window + w]);
        MPI_Waitall(2 * window, req, sts);
        for (int w = 0; w < window; w++)
            check_recv(rbufs[w], size, vi, &sts[w]);
        if (it >= 0)
            itime[it] = MPI_Wtime() - ti;
    }
    return MPI_Wtime() - t0;
}

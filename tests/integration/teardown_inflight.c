/*
 * teardown_inflight.c - finalize (and free communicators) with traffic
 * still in flight at the transport level.
 *
 * Every rank first talks with every other one (so eager-RDMA rings exist),
 * then, on a duplicated communicator, sends its right neighbour a burst of
 * small messages (inline sends and ring writes whose work requests are
 * not reaped yet), eager ones and a large one (RDMA rendezvous), frees the
 * communicator while those are still pending, waits, checks every byte,
 * does a one-sided put + accumulate round, and calls MPI_Finalize at once:
 * credit returns, unreaped sends and the rendezvous' control messages are
 * still in the queues when the endpoints are torn down.
 *
 * Output (rank 0): "teardown: PASSED <n> ranks, <bytes> bytes verified" or
 * "teardown: FAILED ..." (exit status 1).
 */
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SMALL 200
#define EAGER 4
#define EAGER_SIZE 20000
#define LARGE_SIZE (2 * 1024 * 1024)
#define WARM 24

static unsigned char byte_of(int from, int msg, size_t i)
{
    return (unsigned char) ((from * 73 + msg * 31 + (int) i * 7 + 5) & 0xff);
}

static void fill(unsigned char *b, size_t n, int from, int msg)
{
    for (size_t i = 0; i < n; ++i) {
        b[i] = byte_of(from, msg, i);
    }
}

static long check(const unsigned char *b, size_t n, int from, int msg)
{
    long bad = 0;

    for (size_t i = 0; i < n; ++i) {
        bad += b[i] != byte_of(from, msg, i);
    }
    return bad;
}

int main(int argc, char **argv)
{
    int rank, n, right, left, i, k, nreq = 0;
    long errors = 0, all_errors = 0;
    size_t verified = 0, all_verified = 0;
    unsigned char small_out[SMALL][8], small_in[SMALL][8], *eager_out, *eager_in, *large_out, *large_in;
    MPI_Request req[2 * (SMALL + EAGER + 1)];
    MPI_Comm dup;
    MPI_Win win;
    int64_t *winbuf, one = 1;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    right = (rank + 1) % n;
    left = (rank + n - 1) % n;

    /* everyone with everyone: connections and eager-RDMA rings */
    for (k = 0; k < n; ++k) {
        int peer = (rank + k) % n, from = (rank + n - k) % n;
        unsigned char out[8], in[8];
        if (0 == k) {
            continue;
        }
        for (i = 0; i < WARM; ++i) {
            fill(out, sizeof(out), rank, i);
            MPI_Sendrecv(out, sizeof(out), MPI_BYTE, peer, 1, in, sizeof(in), MPI_BYTE, from, 1,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            errors += check(in, sizeof(in), from, i);
            verified += sizeof(in);
        }
    }

    /* the burst, on a communicator freed while it is under way */
    eager_out = malloc(EAGER * EAGER_SIZE);
    eager_in = malloc(EAGER * EAGER_SIZE);
    large_out = malloc(LARGE_SIZE);
    large_in = malloc(LARGE_SIZE);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    for (i = 0; i < SMALL; ++i) {
        MPI_Irecv(small_in[i], 8, MPI_BYTE, left, 10 + i, dup, &req[nreq++]);
    }
    for (i = 0; i < EAGER; ++i) {
        MPI_Irecv(eager_in + (size_t) i * EAGER_SIZE, EAGER_SIZE, MPI_BYTE, left, 1000 + i, dup, &req[nreq++]);
    }
    MPI_Irecv(large_in, LARGE_SIZE, MPI_BYTE, left, 2000, dup, &req[nreq++]);
    for (i = 0; i < SMALL; ++i) {
        fill(small_out[i], 8, rank, 10 + i);
        MPI_Isend(small_out[i], 8, MPI_BYTE, right, 10 + i, dup, &req[nreq++]);
    }
    for (i = 0; i < EAGER; ++i) {
        fill(eager_out + (size_t) i * EAGER_SIZE, EAGER_SIZE, rank, 1000 + i);
        MPI_Isend(eager_out + (size_t) i * EAGER_SIZE, EAGER_SIZE, MPI_BYTE, right, 1000 + i, dup, &req[nreq++]);
    }
    fill(large_out, LARGE_SIZE, rank, 2000);
    MPI_Isend(large_out, LARGE_SIZE, MPI_BYTE, right, 2000, dup, &req[nreq++]);
    MPI_Comm_free(&dup); /* pending operations complete normally */
    MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
    for (i = 0; i < SMALL; ++i) {
        errors += check(small_in[i], 8, left, 10 + i);
    }
    for (i = 0; i < EAGER; ++i) {
        errors += check(eager_in + (size_t) i * EAGER_SIZE, EAGER_SIZE, left, 1000 + i);
    }
    errors += check(large_in, LARGE_SIZE, left, 2000);
    verified += SMALL * 8 + EAGER * EAGER_SIZE + LARGE_SIZE;

    /* one-sided: a put and an accumulate into the right neighbour */
    MPI_Win_allocate(2 * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &winbuf, &win);
    winbuf[0] = winbuf[1] = 0;
    MPI_Win_fence(0, win);
    {
        int64_t v = rank + 1;
        MPI_Put(&v, 1, MPI_INT64_T, right, 0, 1, MPI_INT64_T, win);
        MPI_Accumulate(&one, 1, MPI_INT64_T, right, 1, 1, MPI_INT64_T, MPI_SUM, win);
    }
    MPI_Win_fence(0, win);
    errors += winbuf[0] != left + 1;
    errors += winbuf[1] != 1;
    verified += 2 * sizeof(int64_t);
    MPI_Win_free(&win);

    /* a last burst to the right and straight on to MPI_Finalize: the
     * sends are complete for MPI, not yet reaped by the transport */
    for (i = 0; i < SMALL; ++i) {
        unsigned char b[8];
        fill(b, 8, rank, 5000 + i);
        if (rank % 2) {
            MPI_Recv(small_in[i], 8, MPI_BYTE, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(b, 8, MPI_BYTE, right, 3, MPI_COMM_WORLD);
        } else {
            MPI_Send(b, 8, MPI_BYTE, right, 3, MPI_COMM_WORLD);
            MPI_Recv(small_in[i], 8, MPI_BYTE, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        errors += check(small_in[i], 8, left, 5000 + i);
        verified += 8;
    }
    MPI_Reduce(&errors, &all_errors, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&verified, &all_verified, 1, MPI_UNSIGNED_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("teardown: %s %d ranks, %zu bytes verified, %ld errors\n",
               all_errors ? "FAILED" : "PASSED", n, all_verified, all_errors);
        fflush(stdout);
    }
    free(eager_out);
    free(eager_in);
    free(large_out);
    free(large_in);
    MPI_Finalize();
    return all_errors ? 1 : 0;
}

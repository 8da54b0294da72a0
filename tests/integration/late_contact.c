/*
 * late_contact.c - first contact just before MPI_Finalize, one way.
 *
 * The lower half of the ranks (senders) each send one message to every rank
 * of the upper half (receivers) straight after MPI_Init (each send starts
 * a connection) and go on into MPI_Finalize, where they wait for the
 * receivers, progressing. A receiver first computes for WAIT_MS without
 * calling MPI, then receives; the moment its last message is in (a message
 * can arrive before its side of the connection is up) it checks the bytes
 * and calls MPI_Finalize, which everyone else entered already, so its
 * connections may still be being made when it closes them. One it closed
 * without a goodbye would be seen by the sender as lost and fail the job.
 *
 * Usage: late_contact [WAIT_MS]   (default 500; an even number of ranks)
 * Output: one line per receiver, "late_contact: rank R on HOST: PASSED
 * <n> messages from <m> senders, <bytes> bytes verified, 0 errors" (or
 * FAILED, exit status 1).
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LEN 64

static unsigned char byte_of(int from, int to, int i)
{
    return (unsigned char) ((from * 37 + to * 11 + i * 7 + 1) & 0xff);
}

int main(int argc, char **argv)
{
    int rank, nprocs, half, i, j, errors = 0;
    long wait_ms = argc > 1 ? atol(argv[1]) : 500;
    char host[MPI_MAX_PROCESSOR_NAME];
    unsigned char (*bufs)[LEN];
    MPI_Request *reqs;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (nprocs < 2 || nprocs % 2) {
        if (0 == rank) {
            fprintf(stderr, "late_contact: needs an even number of ranks\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    half = nprocs / 2;
    bufs = calloc((size_t) half, sizeof(*bufs));
    reqs = calloc((size_t) half, sizeof(*reqs));
    if (NULL == bufs || NULL == reqs) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (rank < half) {
        for (j = 0; j < half; ++j) {
            for (i = 0; i < LEN; ++i) {
                bufs[j][i] = byte_of(rank, half + j, i);
            }
            MPI_Isend(bufs[j], LEN, MPI_BYTE, half + j, 5, MPI_COMM_WORLD, &reqs[j]);
        }
        MPI_Waitall(half, reqs, MPI_STATUSES_IGNORE);
    } else {
        int len;

        usleep((useconds_t) wait_ms * 1000); /* computing, outside MPI */
        for (j = 0; j < half; ++j) {
            MPI_Irecv(bufs[j], LEN, MPI_BYTE, j, 5, MPI_COMM_WORLD, &reqs[j]);
        }
        MPI_Waitall(half, reqs, MPI_STATUSES_IGNORE);
        for (j = 0; j < half; ++j) {
            for (i = 0; i < LEN; ++i) {
                errors += bufs[j][i] != byte_of(j, rank, i);
            }
        }
        MPI_Get_processor_name(host, &len);
        printf("late_contact: rank %d on %s: %s %d messages from %d senders, %d bytes verified, "
               "%d errors\n", rank, host, errors ? "FAILED" : "PASSED", half, half, half * LEN,
               errors);
        fflush(stdout);
    }
    free(bufs);
    free(reqs);
    MPI_Finalize();
    return errors ? 1 : 0;
}

/*
 * cpc_slow_peer.c - a peer that does not progress while the other connects:
 * rank 0 sleeps DELAY seconds right after MPI_Init (so connection requests
 * wait unanswered in its kernel), then receives one int from rank 1, which
 * sends it first thing. Prints "PASS slow-peer" on success.
 *
 * Usage: cpc_slow_peer [DELAY]   (default 5 s)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
    int rank, x = 0;
    double delay = argc > 1 ? atof(argv[1]) : 5;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (0 == rank) {
        struct timespec t = { (time_t) delay, (long) ((delay - (time_t) delay) * 1e9) };
        nanosleep(&t, NULL); /* no MPI call, so no progress */
        MPI_Recv(&x, 1, MPI_INT, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (7 != x) {
            fprintf(stderr, "FAIL slow-peer: got %d\n", x);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        printf("PASS slow-peer (rank 0 slept %.1f s)\n", delay);
    } else if (1 == rank) {
        x = 7;
        MPI_Send(&x, 1, MPI_INT, 0, 5, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}

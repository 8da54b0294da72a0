/*
 * cpc_slow_peer.c - a peer that does not progress while the other connects.
 * Rank 1 sends BYTES to rank 0 first thing after MPI_Init (so rank 1
 * initiates the connection); rank 0, right after MPI_Init:
 *
 *   DELAY   computes (sleeps) DELAY seconds without any MPI call, then
 *           receives and checks every byte, and sends BYTES back, which
 *           rank 1 checks: "PASS slow-peer" (rank 0) and "PASS slow-peer
 *           reply" (rank 1);
 *   exit    exits at once without MPI_Finalize (run it with
 *           --mca orte_allowed_exit_without_sync 1 so the job goes on):
 *           rank 1 must fail with a reason, the job must end;
 *   stop    stops itself (SIGSTOP): alive for the kernel, silent for
 *           everything else; rank 1 must give up on its timeout.
 *
 * Usage: cpc_slow_peer [DELAY|exit|stop] [BYTES]   (default 5 s, 4 bytes)
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static unsigned char pattern(long i, int salt)
{
    return (unsigned char) (i * 131 + i / 251 + salt);
}

static long check(const unsigned char *b, long n, int salt)
{
    long i, bad = 0;

    for (i = 0; i < n; ++i) {
        bad += b[i] != pattern(i, salt);
    }
    return bad;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "5";
    long n = argc > 2 ? atol(argv[2]) : 4, i, bad;
    unsigned char *buf;
    int rank;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    buf = malloc(n > 0 ? (size_t) n : 1);
    if (0 == rank) {
        if (0 == strcmp(mode, "exit")) {
            _exit(0); /* gone: sockets and listeners close with the process */
        }
        if (0 == strcmp(mode, "stop")) {
            /* the test kills it by this pid once the job is over */
            printf("slow-peer: rank 0 pid %ld stops\n", (long) getpid());
            fflush(stdout);
            raise(SIGSTOP);
        } else {
            double delay = atof(mode);
            struct timespec t = { (time_t) delay, (long) ((delay - (time_t) delay) * 1e9) };
            nanosleep(&t, NULL); /* no MPI call, so no progress */
        }
        memset(buf, 0, (size_t) n);
        MPI_Recv(buf, (int) n, MPI_BYTE, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        bad = check(buf, n, 7);
        if (bad) {
            fprintf(stderr, "FAIL slow-peer: %ld of %ld bytes wrong\n", bad, n);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        for (i = 0; i < n; ++i) {
            buf[i] = pattern(i, 9);
        }
        MPI_Send(buf, (int) n, MPI_BYTE, 1, 6, MPI_COMM_WORLD);
        printf("PASS slow-peer (rank 0 slept %s s, %ld bytes verified)\n", mode, n);
    } else if (1 == rank) {
        for (i = 0; i < n; ++i) {
            buf[i] = pattern(i, 7);
        }
        MPI_Send(buf, (int) n, MPI_BYTE, 0, 5, MPI_COMM_WORLD);
        memset(buf, 0, (size_t) n);
        MPI_Recv(buf, (int) n, MPI_BYTE, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        bad = check(buf, n, 9);
        if (bad) {
            fprintf(stderr, "FAIL slow-peer reply: %ld of %ld bytes wrong\n", bad, n);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        printf("PASS slow-peer reply (%ld bytes verified)\n", n);
    }
    fflush(stdout);
    free(buf);
    MPI_Finalize();
    return 0;
}

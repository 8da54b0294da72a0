/*
 * verified_alltoall.c - a long-running all-to-all that checks every byte,
 * for tests that do something to the job while it runs
 * (t-security-hostile.sh, t-security-hostile-ud.sh).
 *
 * Each rank first prints "verified_alltoall: rank R pid P name JOBID.VPID
 * host H" (the process name as ORTE gives it to the process, so a test can
 * name the rank the way the wire does), then runs rounds: every rank sends every
 * other rank a message of a size that cycles from 1 B to 200 KiB (eager and
 * rendezvous), receive-first, with contents that depend on round, source,
 * destination and offset; every byte received is checked. Rounds go on
 * until STOPFILE exists (rank 0 looks, everyone learns it by broadcast) or
 * MAXSECS have passed (a hang guard). Rank 0 prints
 * "verified_alltoall: PASSED rounds=N bytes=B errors=0" (or FAILED) and
 * the exit status is non-zero on any error.
 *
 * Usage: verified_alltoall STOPFILE MAXSECS
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const size_t sizes[] = { 1, 100, 4096, 12289, 65536 + 13, 200 * 1024 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static uint8_t pat(long round, int src, int dst, size_t i)
{
    return (uint8_t) (round * 131 + src * 31 + dst * 7 + i * 13 + (i >> 8));
}

int main(int argc, char **argv)
{
    int rank, size, stop = 0;
    long round = 0, errors = 0, bytes = 0, all_errors = 0, all_bytes = 0;
    double t0, maxsecs;
    char host[256];
    const char *jobid = getenv("OMPI_MCA_ess_base_jobid"), *vpid = getenv("OMPI_MCA_ess_base_vpid");

    if (argc != 3) {
        fprintf(stderr, "usage: verified_alltoall STOPFILE MAXSECS\n");
        return 2;
    }
    maxsecs = atof(argv[2]);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    gethostname(host, sizeof(host));
    host[sizeof(host) - 1] = '\0';
    printf("verified_alltoall: rank %d pid %ld name %s.%s host %s\n", rank, (long) getpid(),
           jobid ? jobid : "?", vpid ? vpid : "?", host);
    fflush(stdout);
    t0 = MPI_Wtime();

    while (!stop) {
        size_t len = sizes[round % NSIZES];
        uint8_t *sbuf = malloc(len * (size_t) size), *rbuf = malloc(len * (size_t) size);
        MPI_Request *req = malloc(sizeof(MPI_Request) * 2 * (size_t) size);
        int n = 0, p;

        memset(rbuf, 0, len * (size_t) size);
        for (p = 0; p < size; ++p) {
            if (p != rank) {
                MPI_Irecv(rbuf + p * len, (int) len, MPI_BYTE, p, (int) (round & 0x7fff),
                          MPI_COMM_WORLD, &req[n++]);
            }
        }
        for (p = 0; p < size; ++p) {
            if (p != rank) {
                for (size_t i = 0; i < len; ++i) {
                    sbuf[p * len + i] = pat(round, rank, p, i);
                }
                MPI_Isend(sbuf + p * len, (int) len, MPI_BYTE, p, (int) (round & 0x7fff),
                          MPI_COMM_WORLD, &req[n++]);
            }
        }
        MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
        for (p = 0; p < size; ++p) {
            if (p == rank) {
                continue;
            }
            for (size_t i = 0; i < len; ++i) {
                if (rbuf[p * len + i] != pat(round, p, rank, i)) {
                    if (errors < 10) {
                        fprintf(stderr, "verified_alltoall: rank %d round %ld: byte %zu from "
                                "rank %d is %u, want %u\n", rank, round, i, p,
                                rbuf[p * len + i], pat(round, p, rank, i));
                    }
                    errors++;
                }
            }
            bytes += (long) len;
        }
        free(sbuf);
        free(rbuf);
        free(req);
        round++;
        if (0 == rank) {
            struct stat st;
            stop = 0 == stat(argv[1], &st) || MPI_Wtime() - t0 > maxsecs;
            if (!stop) {
                usleep(20000); /* leave the cores some room for the test's other work */
            }
        }
        MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    MPI_Reduce(&errors, &all_errors, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&bytes, &all_bytes, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("verified_alltoall: %s rounds=%ld bytes=%ld errors=%ld\n",
               0 == all_errors ? "PASSED" : "FAILED", round, all_bytes, all_errors);
    }
    MPI_Finalize();
    return 0 == all_errors ? 0 : 1;
}

/*
 * oneway_burst.c - a one-way burst of small messages right after connect.
 *
 * Rank 0 sends COUNT messages of SIZE bytes to rank 1 straight after
 * MPI_Init (its first send starts the connection); rank 1 only receives:
 * no MPI message ever goes back, so the sender learns about freed receive
 * buffers only from explicit credit returns. Every byte is checked.
 *
 * Usage: oneway_burst COUNT SIZE [poll]
 *   poll: rank 1 polls with MPI_Iprobe and sleeps 10 ms whenever nothing
 *         is there (an application checking for work now and then). Each
 *         MPI_Iprobe is one progress call, so the responder takes its share
 *         of the handshake in small steps and receives much of the burst
 *         before its side of the connection is up.
 * Output (rank 1): "oneway: PASSED <count> messages of <size> B, <bytes>
 * bytes verified, 0 errors" or "oneway: FAILED ..." (exit status 1).
 */
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned char byte_of(long msg, size_t i)
{
    return (unsigned char) ((msg * 131 + (long) i * 7 + 1) & 0xff);
}

int main(int argc, char **argv)
{
    long count, m, errors = 0;
    size_t size, i;
    unsigned char *buf;
    int rank, nprocs;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc < 3 || argc > 4 || nprocs != 2) {
        if (0 == rank) {
            fprintf(stderr, "usage: mpirun -np 2 oneway_burst COUNT SIZE [poll]\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    count = atol(argv[1]);
    size = (size_t) atol(argv[2]);
    buf = malloc(size ? size : 1);
    if (NULL == buf) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (m = 0; m < count; ++m) {
        if (0 == rank) {
            for (i = 0; i < size; ++i) {
                buf[i] = byte_of(m, i);
            }
            MPI_Send(buf, (int) size, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
        } else {
            MPI_Status st;
            int got;

            memset(buf, 0xee, size);
            if (4 == argc) {
                int flag = 0;

                while (MPI_Iprobe(0, 7, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE), !flag) {
                    usleep(10000);
                }
            }
            MPI_Recv(buf, (int) size, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_BYTE, &got);
            if ((size_t) got != size) {
                errors++;
                continue;
            }
            for (i = 0; i < size; ++i) {
                if (buf[i] != byte_of(m, i)) {
                    if (errors < 5) {
                        fprintf(stderr, "message %ld byte %zu: got %u, want %u\n", m, i, buf[i],
                                byte_of(m, i));
                    }
                    errors++;
                }
            }
        }
    }
    if (1 == rank) {
        printf("oneway: %s %ld messages of %zu B, %zu bytes verified, %ld errors\n",
               errors ? "FAILED" : "PASSED", count, size, (size_t) count * size, errors);
        fflush(stdout);
    }
    free(buf);
    MPI_Finalize();
    return errors ? 1 : 0;
}

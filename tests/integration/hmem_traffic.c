/*
 * hmem_traffic.c - traffic whose every payload byte the BTL must copy,
 * contiguous and strided, in both directions between two ranks, every byte
 * verified: eager messages, and a strided message of ~100 KB (rendezvous,
 * then pipelined fragments, each starting inside a 508-byte block: the
 * BTL packs it at positions inside blocks, never by RDMA).
 * Prints "hmem-expect rank=R bytes=B": the payload bytes this rank sent,
 * which is what an HMEM copy override must have seen.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define BIG_ROWS 200 /* 101600 payload bytes: 3 eager limits */

static const int sizes[] = { 1, 7, 64, 255, 256, 257, 1000, 1024, 2000 };

int main(int argc, char **argv)
{
    int rank, size, peer, k, it, i, errors = 0;
    long long sent = 0;
    uint8_t *out, *in;
    int *vout, *vin, *bout, *bin;
    MPI_Datatype vec, big;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    peer = rank ^ 1;
    out = malloc(4096);
    in = malloc(4096);
    vout = malloc(3 * 100 * sizeof(int));
    vin = malloc(3 * 100 * sizeof(int));
    bout = malloc(BIG_ROWS * 128 * sizeof(int));
    bin = malloc(BIG_ROWS * 128 * sizeof(int));
    MPI_Type_vector(100, 2, 3, MPI_INT, &vec); /* 800 payload bytes in 1200 */
    MPI_Type_commit(&vec);
    MPI_Type_vector(BIG_ROWS, 127, 128, MPI_INT, &big); /* rows of 508 B, 4 B gaps */
    MPI_Type_commit(&big);
    for (it = 0; it < 3 && peer < size; ++it) {
        for (k = 0; k < (int) (sizeof(sizes) / sizeof(sizes[0])); ++k) {
            for (i = 0; i < sizes[k]; ++i) {
                out[i] = (uint8_t) (rank * 37 + i * 11 + k + it);
            }
            MPI_Sendrecv(out, sizes[k], MPI_BYTE, peer, k, in, sizes[k], MPI_BYTE, peer, k,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            sent += sizes[k];
            for (i = 0; i < sizes[k]; ++i) {
                errors += in[i] != (uint8_t) (peer * 37 + i * 11 + k + it);
            }
        }
        for (i = 0; i < 300; ++i) {
            vout[i] = rank * 100000 + i + it;
            vin[i] = -1;
        }
        MPI_Sendrecv(vout, 1, vec, peer, 99, vin, 1, vec, peer, 99, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        sent += 800;
        for (i = 0; i < 300; ++i) {
            int want = (i % 3 == 2) ? -1 : peer * 100000 + i + it;
            errors += vin[i] != want;
        }
        for (i = 0; i < BIG_ROWS * 128; ++i) {
            bout[i] = rank * 1000000 + i * 3 + it;
            bin[i] = -1;
        }
        MPI_Sendrecv(bout, 1, big, peer, 98, bin, 1, big, peer, 98, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        sent += BIG_ROWS * 127 * sizeof(int);
        for (i = 0; i < BIG_ROWS * 128; ++i) {
            int want = (i % 128 == 127) ? -1 : peer * 1000000 + i * 3 + it;
            errors += bin[i] != want;
        }
    }
    printf("hmem-expect rank=%d bytes=%lld errors=%d\n", rank, sent, errors);
    MPI_Type_free(&vec);
    MPI_Type_free(&big);
    MPI_Finalize();
    return errors != 0;
}

/*
 * dtype_order.c - the fragments of one message must reach the receiver in
 * the order they were sent.
 *
 * Messages of a nested type (a vector of a resized struct with gaps) of
 * 96-168 KB are sent in several fragments; their sizes sweep so that the
 * last, short fragment is small enough for the peer's eager-RDMA ring while
 * the ones before it go through the shared receive queue. Were the last
 * one delivered first, Open MPI 4.1's receive convertor would have to jump
 * forward inside the nested type, which it gets wrong (corrupted data or a
 * crash in the unpack). Every byte of every receive buffer is checked, gaps
 * included.
 *
 * Usage: dtype_order [ROUNDS]
 * Output (rank 1): "dtype-order: <n> messages, <bytes> bytes checked, <k>
 * corrupted" and exit status 1 when k > 0.
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXTENT 32 /* the resized struct */
#define ROW 352   /* one vector element: 4 blocks of 2 structs, stride 3 */
#define FILL 0xA5

static unsigned char source_byte(size_t i, int n, int round)
{
    return (unsigned char) (i * 131 + (i >> 8) * 7 + (size_t) n + (size_t) round);
}

/* The bytes the type covers in element e: {int@0, double@8, char[3]@20}
 * of structs (i * 3 + j) for i < 4, j < 2. */
static void mark_data(unsigned char *want, const unsigned char *src, int n)
{
    for (int e = 0; e < n; ++e) {
        for (int i = 0; i < 4; ++i) {
            for (int j = 0; j < 2; ++j) {
                size_t o = (size_t) e * ROW + (size_t) (i * 3 + j) * EXTENT;
                memcpy(want + o, src + o, 4);
                memcpy(want + o + 8, src + o + 8, 8);
                memcpy(want + o + 20, src + o + 20, 3);
            }
        }
    }
}

int main(int argc, char **argv)
{
    int rank, rounds = argc > 1 ? atoi(argv[1]) : 2, blen[3] = { 1, 1, 3 };
    MPI_Aint disp[3] = { 0, 8, 20 };
    MPI_Datatype types[3] = { MPI_INT, MPI_DOUBLE, MPI_CHAR }, s, st, vec;
    long corrupted = 0, messages = 0;
    size_t checked = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Type_create_struct(3, blen, disp, types, &s);
    MPI_Type_create_resized(s, 0, EXTENT, &st);
    MPI_Type_vector(4, 2, 3, st, &vec);
    MPI_Type_commit(&vec);
    for (int r = 0; r < rounds; ++r) {
        for (int n = 800; n < 1400; n += 7) { /* 120 B of data per element */
            size_t span = (size_t) n * ROW;
            unsigned char *buf = malloc(span), *src = malloc(span);

            for (size_t i = 0; i < span; ++i) {
                src[i] = source_byte(i, n, r);
            }
            if (0 == rank) {
                memcpy(buf, src, span);
                MPI_Send(buf, n, vec, 1, n, MPI_COMM_WORLD);
            } else {
                unsigned char *want = malloc(span);
                size_t bad = 0;

                memset(want, FILL, span);
                mark_data(want, src, n);
                memset(buf, FILL, span);
                MPI_Recv(buf, n, vec, 0, n, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                for (size_t i = 0; i < span; ++i) {
                    bad += buf[i] != want[i];
                }
                if (bad) {
                    if (corrupted < 5) {
                        printf("dtype-order: %d elements, round %d: %zu bytes wrong\n", n, r, bad);
                    }
                    corrupted++;
                }
                checked += span;
                free(want);
            }
            messages++;
            free(buf);
            free(src);
        }
    }
    if (1 == rank) {
        printf("dtype-order: %ld messages, %zu bytes checked, %ld corrupted\n", messages, checked,
               corrupted);
        fflush(stdout);
    }
    MPI_Type_free(&vec);
    MPI_Type_free(&st);
    MPI_Type_free(&s);
    MPI_Finalize();
    return corrupted ? 1 : 0;
}

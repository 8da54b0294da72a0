/*
 * thread_level.c - MPI_Init_thread at a requested level, then one verified
 * exchange between ranks 0 and 1 (1 KiB each way).
 *
 * Usage: thread_level single|serialized|multiple
 * Output (rank 0): "thread_level: asked <level>, provided <level>, exchange PASSED"
 */
#include <mpi.h>

#include <stdio.h>
#include <string.h>

static const char *name(int level)
{
    switch (level) {
    case MPI_THREAD_SINGLE: return "single";
    case MPI_THREAD_FUNNELED: return "funneled";
    case MPI_THREAD_SERIALIZED: return "serialized";
    case MPI_THREAD_MULTIPLE: return "multiple";
    default: return "?";
    }
}

int main(int argc, char **argv)
{
    int want = MPI_THREAD_SINGLE, got, rank, size, i, bad = 0;
    unsigned char buf[1024];

    if (argc > 1 && 0 == strcmp(argv[1], "multiple")) {
        want = MPI_THREAD_MULTIPLE;
    } else if (argc > 1 && 0 == strcmp(argv[1], "serialized")) {
        want = MPI_THREAD_SERIALIZED;
    }
    MPI_Init_thread(&argc, &argv, want, &got);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size >= 2 && rank < 2) {
        int peer = 1 - rank;

        for (i = 0; i < (int) sizeof(buf); ++i) {
            buf[i] = (unsigned char) (i * 7 + rank);
        }
        MPI_Sendrecv_replace(buf, sizeof(buf), MPI_BYTE, peer, 5, peer, 5, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
        for (i = 0; i < (int) sizeof(buf); ++i) {
            bad += buf[i] != (unsigned char) (i * 7 + peer);
        }
    }
    if (0 == rank) {
        printf("thread_level: asked %s, provided %s, exchange %s\n", name(want), name(got),
               bad ? "FAILED" : "PASSED");
    }
    MPI_Finalize();
    return bad ? 1 : 0;
}

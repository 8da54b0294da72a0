/*
 * mt_start.h - how the thread programs (mt_stress.c, mt_connect_storm.c)
 * start: MPI_THREAD_MULTIPLE or nothing, 2 ranks or more, and the lines the
 * scripts check (threads_lib.sh): "PROG: rank R of N on HOST" from every
 * rank, "PROG: thread level provided MPI_THREAD_MULTIPLE" from rank 0.
 * Without MPI_THREAD_MULTIPLE the program exits with status 2.
 */
#ifndef MT_START_H
#define MT_START_H

#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char *mt_level_name(int l)
{
    return l == MPI_THREAD_SINGLE       ? "MPI_THREAD_SINGLE"
           : l == MPI_THREAD_FUNNELED   ? "MPI_THREAD_FUNNELED"
           : l == MPI_THREAD_SERIALIZED ? "MPI_THREAD_SERIALIZED"
           : l == MPI_THREAD_MULTIPLE   ? "MPI_THREAD_MULTIPLE"
                                        : "?";
}

/* MPI_Init_thread and the checks above; host (len bytes) gets the node name */
static void mt_start(const char *prog, int *argc, char ***argv, int *rank, int *nranks, char *host,
                     size_t len)
{
    int provided;

    MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, nranks);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (0 == *rank) {
            fprintf(stderr, "%s: MPI_THREAD_MULTIPLE was asked for, %s provided: cannot run\n", prog,
                    mt_level_name(provided));
        }
        MPI_Finalize();
        exit(2);
    }
    if (*nranks < 2) {
        fprintf(stderr, "%s: needs 2 ranks or more\n", prog);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    snprintf(host, len, "?");
    gethostname(host, len - 1);
    host[len - 1] = '\0';
    printf("%s: rank %d of %d on %s\n", prog, *rank, *nranks, host);
    if (0 == *rank) {
        printf("%s: thread level provided %s\n", prog, mt_level_name(provided));
    }
    fflush(stdout);
}

#endif /* MT_START_H */

/*
 * hmem_device.c - MPI traffic to and from "device" memory of the fake CUDA
 * driver used by the unit tests (tests/unit/hmem/hmem_fake_cuda.c), loaded
 * by the component through OPENIB_HMEM_CUDA_LIBRARY. Rank 1 receives a
 * rendezvous-sized message into device memory (the NIC cannot register it:
 * the RDMA get is staged through a host bounce buffer and copied with the
 * HMEM hook), then sends it back from device memory. Every byte verified.
 * Prints "hmem-device rank=R htod=N dtoh=N errors=E" (the fake driver's
 * copy counters as this process saw them).
 */
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

struct fake_cuda_stats {
    unsigned long dtoh, htod, push, pop, attr, no_ctx_errors;
};

int main(int argc, char **argv)
{
    const char *lib = getenv("OPENIB_HMEM_CUDA_LIBRARY");
    void *(*arena)(int, size_t *);
    struct fake_cuda_stats *st;
    size_t len, n = 48 * 1024, i;
    uint8_t *dev, *host;
    int rank, errors = 0;
    void *h;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    h = lib ? dlopen(lib, RTLD_NOW | RTLD_GLOBAL) : NULL;
    arena = h ? (void *(*)(int, size_t *)) dlsym(h, "fake_cuda_arena") : NULL;
    st = h ? dlsym(h, "fake_cuda_stats") : NULL;
    if (!arena || !st) {
        fprintf(stderr, "rank %d: fake CUDA driver not loadable from '%s'\n", rank,
                lib ? lib : "(unset)");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    dev = arena(0, &len);
    host = malloc(n);
    if (len < n) {
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    if (rank == 0) {
        for (i = 0; i < n; ++i) {
            host[i] = (uint8_t) (i * 7 + 3);
        }
        MPI_Send(host, (int) n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
        MPI_Recv(host, (int) n, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (i = 0; i < n; ++i) {
            errors += host[i] != (uint8_t) (i * 7 + 4);
        }
    } else if (rank == 1) {
        MPI_Recv(dev, (int) n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (i = 0; i < n; ++i) {
            errors += dev[i] != (uint8_t) (i * 7 + 3);
            dev[i] += 1;
        }
        MPI_Send(dev, (int) n, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
    }
    printf("hmem-device rank=%d htod=%lu dtoh=%lu errors=%d\n", rank, st->htod, st->dtoh, errors);
    MPI_Finalize();
    return errors != 0;
}

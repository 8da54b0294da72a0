/*
 * hmem_osc.c - one-sided RDMA whose LOCAL buffer is device memory of the
 * fake CUDA driver (loaded by the component through OPENIB_HMEM_CUDA_LIBRARY):
 * the NIC cannot register it, so openib stages the get and the put through
 * a registered host bounce buffer, filled/emptied with the HMEM copy hooks.
 * Windows are MPI_Win_create'd host memory, so osc/rdma reaches them over
 * the BTL even on one node. Prints "hmem-osc rank=R htod=N dtoh=N errors=E".
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
    const size_t n = 32 * 1024;
    void *(*arena)(int, size_t *);
    struct fake_cuda_stats *st;
    uint8_t *win_mem, *dev;
    size_t len, i;
    int rank, errors = 0;
    MPI_Win win;
    void *h;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    h = lib ? dlopen(lib, RTLD_NOW | RTLD_GLOBAL) : NULL;
    arena = h ? (void *(*)(int, size_t *)) dlsym(h, "fake_cuda_arena") : NULL;
    st = h ? dlsym(h, "fake_cuda_stats") : NULL;
    if (!arena || !st) {
        fprintf(stderr, "rank %d: fake CUDA driver not loadable\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    dev = arena(0, &len);
    win_mem = malloc(n);
    for (i = 0; i < n; ++i) {
        win_mem[i] = (uint8_t) (rank * 101 + i * 13);
    }
    MPI_Win_create(win_mem, n, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    if (rank == 1) {
        /* get rank 0's window into device memory */
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        MPI_Get(dev, (int) n, MPI_BYTE, 0, 0, (int) n, MPI_BYTE, win);
        MPI_Win_unlock(0, win);
        for (i = 0; i < n; ++i) {
            errors += dev[i] != (uint8_t) (0 * 101 + i * 13);
        }
        /* put from device memory into rank 0's window */
        for (i = 0; i < n; ++i) {
            dev[i] = (uint8_t) (i * 5 + 77);
        }
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        MPI_Put(dev, (int) n, MPI_BYTE, 0, 0, (int) n, MPI_BYTE, win);
        MPI_Win_unlock(0, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        for (i = 0; i < n; ++i) {
            errors += win_mem[i] != (uint8_t) (i * 5 + 77);
        }
        MPI_Win_unlock(0, win);
    }
    MPI_Win_free(&win);
    printf("hmem-osc rank=%d htod=%lu dtoh=%lu errors=%d\n", rank, st->htod, st->dtoh, errors);
    free(win_mem);
    MPI_Finalize();
    return errors != 0;
}

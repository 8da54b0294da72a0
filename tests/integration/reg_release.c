/*
 * reg_release: memory given back to the kernel and mapped again at the
 * same addresses is never reached through a registration of the old pages.
 *
 * Open MPI's registration cache (grdma) is invalidated from the memory
 * hooks, and under MPI_THREAD_MULTIPLE that invalidation can miss a
 * registration (btl_openib/btl_openib_release_log.h). That race cannot be
 * produced on demand, so this program produces its outcome: with
 * --no-grdma-hook it removes grdma's own hook, and every invalidation is
 * missed. openib must still see what was released (its own log, replayed
 * before each lookup).
 *
 * Rank 0 sends rank 1 a message from a mapping, releases the pages (munmap
 * and a fresh mapping at the same address, or madvise(MADV_DONTNEED)),
 * writes new bytes there and sends again. Then the other way round: rank 1
 * receives into a mapping, its pages are released and it receives again.
 * The size goes by RDMA read, whose registrations the cache keeps
 * (mpi_leave_pinned). Every received byte is checked; a registration of the
 * old pages would deliver the first message's bytes again (send side) or
 * leave the receive buffer as it was filled (receive side).
 *
 * Prints "reg_release: PASSED cases=N bytes=B" or the cases that failed.
 */
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* from Open MPI's libopen-pal (opal/memoryhooks/memory.h,
 * opal/mca/rcache/base/rcache_base_mem_cb.h) */
typedef void(opal_mem_hooks_callback_fn_t)(void *buf, size_t length, void *cbdata, bool extra);
int opal_mem_hooks_unregister_release(opal_mem_hooks_callback_fn_t *func);
void mca_rcache_base_mem_cb(void *base, size_t size, void *cbdata, bool from_alloc);

#define LEN (256 * 1024) /* above the eager limit, below the RDMA pipeline: one RDMA read */
#define MAP_LEN (LEN + 4096)
#define ROUNDS 3

enum release { BY_MUNMAP, BY_MADVISE };
static const char *const release_name[] = { "munmap", "madvise" };

static int rank, failures;
static long long checked;

static unsigned char pattern(int round, size_t i)
{
    return (unsigned char) (0x3b * (round + 1) + i * 7 + (i >> 12));
}

static void *map_at(void *where)
{
    void *p = mmap(where, MAP_LEN, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | (where ? MAP_FIXED : 0), -1, 0);

    if (MAP_FAILED == p) {
        perror("reg_release: mmap");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* the pages behind [p, p + MAP_LEN) are replaced; the address stays */
static void *release(void *p, enum release how)
{
    if (BY_MUNMAP == how) {
        if (munmap(p, MAP_LEN)) {
            perror("reg_release: munmap");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        return map_at(p);
    }
    if (madvise(p, MAP_LEN, MADV_DONTNEED)) {
        perror("reg_release: madvise");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

static void check(const char *what, const unsigned char *b, int round)
{
    size_t bad = 0, first = 0;

    for (size_t i = 0; i < LEN; ++i) {
        if (b[i] != pattern(round, i) && 0 == bad++) {
            first = i;
        }
    }
    if (bad) {
        failures++;
        printf("reg_release: rank %d: %s round %d: %zu of %d bytes wrong, first at %zu "
               "(0x%02x, not 0x%02x; round 0 wrote 0x%02x there)\n", rank, what, round, bad,
               LEN, first, b[first], pattern(round, first), pattern(0, first));
    }
    checked += LEN;
}

/* SENDER's buffer lives at one address whose pages are released between
 * rounds; the other rank's buffer stays as it is. Rank 0 sends, rank 1
 * receives and checks. */
static void one_case(int sender, enum release how)
{
    char what[64];
    unsigned char *p = NULL, *other = NULL;

    snprintf(what, sizeof(what), "%s side, %s", sender == 0 ? "send" : "receive",
             release_name[how]);
    if (rank != sender && NULL == (other = malloc(LEN))) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int round = 0; round < ROUNDS; ++round) {
        unsigned char *b = other;

        if (rank == sender) {
            b = p = round ? release(p, how) : map_at(NULL);
        }
        if (0 == rank) {
            for (size_t i = 0; i < LEN; ++i) {
                b[i] = pattern(round, i);
            }
            MPI_Send(b, LEN, MPI_BYTE, 1, round, MPI_COMM_WORLD);
        } else {
            memset(b, 0xd7, LEN);
            MPI_Recv(b, LEN, MPI_BYTE, 0, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            check(what, b, round);
        }
    }
    if (p) {
        munmap(p, MAP_LEN);
    }
    free(other);
}

int main(int argc, char **argv)
{
    int size, cases = 0, all;
    long long bytes;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (0 == rank) {
            fprintf(stderr, "reg_release: needs 2 ranks\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (argc > 1 && 0 == strcmp(argv[1], "--no-grdma-hook")) {
        /* registered when openib made its registration cache, in MPI_Init */
        if (0 != opal_mem_hooks_unregister_release(mca_rcache_base_mem_cb)) {
            printf("reg_release: rank %d: grdma's memory hook was not registered\n", rank);
            failures++;
        } else if (0 == rank) {
            printf("reg_release: grdma's memory hook removed\n");
        }
    }
    for (int sender = 0; sender < 2; ++sender) {
        for (int how = BY_MUNMAP; how <= BY_MADVISE; ++how) {
            one_case(sender, (enum release) how);
            cases++;
        }
    }
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Reduce(&checked, &bytes, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (0 == rank) {
        if (all) {
            printf("reg_release: FAILED: %d errors\n", all);
        } else {
            printf("reg_release: PASSED cases=%d bytes=%lld\n", cases, bytes);
        }
    }
    MPI_Finalize();
    return all ? 1 : 0;
}

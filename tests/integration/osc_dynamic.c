/*
 * osc_dynamic.c - one-sided communication on dynamic windows
 * (MPI_Win_create_dynamic + MPI_Win_attach/detach), every value checked.
 *
 * Usage: mpirun -np N osc_dynamic TEST... (TEST: llist[-live], chase[-live],
 *                                          flushget, dtype, reattach)
 *   llist     every rank appends ELEMS elements, each allocated and attached
 *             as it goes, to one linked list whose tail lives on rank 0:
 *             MPI_Fetch_and_op(MPI_REPLACE) swaps the tail, MPI_Get reads
 *             the old tail's address from its owner's directory (itself
 *             attached), MPI_Put links it, and an MPI_Compare_and_swap loop
 *             counts the appends. Rank 0 then walks the list with MPI_Get:
 *             every element exactly once, and the count right.
 *             llist-live and chase-live attach each element just before
 *             appending it, while the other ranks use the window. (Open MPI
 *             4.1's osc/rdma races there when all ranks share a node: it
 *             reads a peer's region table from shared memory, and uses an
 *             entry after letting go of the table's lock, so a concurrent
 *             attach can hand it the neighbouring region's registration.
 *             openib refuses such an operation, the caller gets an error,
 *             the connection stays up; across nodes there is no race.)
 *   chase     the same list built the other classic way: each element's
 *             next pointer is a {32-bit rank, address} pair; a rank claims
 *             the tail with a 32-bit MPI_Compare_and_swap on the rank half
 *             (chasing forward with MPI_Fetch_and_op(MPI_NO_OP) when its
 *             tail is stale) and fills in the address with
 *             MPI_Fetch_and_op(MPI_REPLACE); every operation under its own
 *             shared lock; elements are freed only after MPI_Win_free.
 *   flushget  each rank attaches a buffer; everyone puts into its right
 *             neighbour's, flushes, gets it back and checks it.
 *   dtype     put and get of a strided (vector) type into a neighbour's
 *             attached buffer; the gaps must stay untouched.
 *   reattach  ROUNDS times: attach fresh memory, put/get through it,
 *             detach and free it; every other round re-attaches the same
 *             buffer instead, so a registration of a range that was
 *             detached before must be valid again.
 * Prints "PASS <test> (<n> ranks)" per test, or "FAIL <test>: ..." and
 * exits 1.
 */
#include <mpi.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ELEMS 48
#define WORDS 4096
#define ROUNDS 24

static int rank, nprocs;

static int report(const char *test, long errors)
{
    long all = 0;

    MPI_Allreduce(&errors, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        if (all) {
            printf("FAIL %s: %ld errors\n", test, all);
        } else {
            printf("PASS %s (%d ranks)\n", test, nprocs);
        }
        fflush(stdout);
    }
    return all ? 1 : 0;
}

static MPI_Aint addr_of(const void *p)
{
    MPI_Aint a;

    MPI_Get_address(p, &a);
    return a;
}

/* ---- llist ---- */

/* An element id is owner * ELEMS + index; -1 ends the list. */
struct elem {
    int64_t value; /* its own id */
    int64_t next;
};

/* live: each element is attached right before it is appended, while the
 * others read and write the window; otherwise all are attached first. */
static int test_llist(bool live)
{
    MPI_Win win;
    struct elem *mine[ELEMS];
    MPI_Aint *dir;        /* dir[i]: the address of my element i (attached) */
    int64_t *shared = NULL; /* rank 0: [0] tail id, [1] append count */
    MPI_Aint dir_addr, shared_addr = 0, *dirs;
    long errors = 0;
    int i;

    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Alloc_mem(ELEMS * sizeof(MPI_Aint), MPI_INFO_NULL, &dir);
    memset(dir, 0, ELEMS * sizeof(MPI_Aint));
    MPI_Win_attach(win, dir, ELEMS * sizeof(MPI_Aint));
    dir_addr = addr_of(dir);
    dirs = malloc(sizeof(MPI_Aint) * (size_t) nprocs);
    MPI_Allgather(&dir_addr, 1, MPI_AINT, dirs, 1, MPI_AINT, MPI_COMM_WORLD);
    if (0 == rank) {
        MPI_Alloc_mem(2 * sizeof(int64_t), MPI_INFO_NULL, &shared);
        shared[0] = -1;
        shared[1] = 0;
        MPI_Win_attach(win, shared, 2 * sizeof(int64_t));
        shared_addr = addr_of(shared);
    }
    MPI_Bcast(&shared_addr, 1, MPI_AINT, 0, MPI_COMM_WORLD);
    for (i = 0; i < ELEMS && !live; ++i) {
        MPI_Alloc_mem(sizeof(struct elem), MPI_INFO_NULL, &mine[i]);
        mine[i]->value = (int64_t) rank * ELEMS + i;
        mine[i]->next = -1;
        MPI_Win_attach(win, mine[i], sizeof(struct elem));
        dir[i] = addr_of(mine[i]);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    MPI_Win_lock_all(0, win);
    for (i = 0; i < ELEMS; ++i) {
        int64_t id = (int64_t) rank * ELEMS + i, old, count, seen;

        if (live) {
            MPI_Alloc_mem(sizeof(struct elem), MPI_INFO_NULL, &mine[i]);
            mine[i]->value = id;
            mine[i]->next = -1;
            MPI_Win_attach(win, mine[i], sizeof(struct elem));
            dir[i] = addr_of(mine[i]);
            MPI_Win_sync(win);
        }
        /* swap ourselves in as the tail */
        MPI_Fetch_and_op(&id, &old, MPI_INT64_T, 0, shared_addr, MPI_REPLACE, win);
        MPI_Win_flush(0, win);
        if (old >= 0) {
            int owner = (int) (old / ELEMS);
            MPI_Aint where;

            MPI_Get(&where, 1, MPI_AINT, owner, dirs[owner] + (MPI_Aint) ((old % ELEMS) * sizeof(MPI_Aint)),
                    1, MPI_AINT, win);
            MPI_Win_flush(owner, win);
            MPI_Put(&id, 1, MPI_INT64_T, owner, where + (MPI_Aint) offsetof(struct elem, next), 1,
                    MPI_INT64_T, win);
            MPI_Win_flush(owner, win);
        }
        /* count the append with a compare-and-swap loop */
        MPI_Get(&count, 1, MPI_INT64_T, 0, shared_addr + (MPI_Aint) sizeof(int64_t), 1, MPI_INT64_T, win);
        MPI_Win_flush(0, win);
        for (;;) {
            int64_t next = count + 1;
            MPI_Compare_and_swap(&next, &count, &seen, MPI_INT64_T, 0,
                                 shared_addr + (MPI_Aint) sizeof(int64_t), win);
            MPI_Win_flush(0, win);
            if (seen == count) {
                break;
            }
            count = seen;
        }
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);

    if (0 == rank) {
        long n = 0, starts = 0;
        int64_t total = nprocs * ELEMS, k;
        char *has_pred = calloc((size_t) total, 1), *seen = calloc((size_t) total, 1);
        struct elem *all = malloc(sizeof(struct elem) * (size_t) total);

        MPI_Win_lock_all(0, win);
        /* read every element through the directories; the list's head is
         * the one element nobody points at (exactly one) */
        for (k = 0; k < total; ++k) {
            int owner = (int) (k / ELEMS);
            MPI_Aint where;
            MPI_Get(&where, 1, MPI_AINT, owner, dirs[owner] + (MPI_Aint) ((k % ELEMS) * sizeof(MPI_Aint)), 1,
                    MPI_AINT, win);
            MPI_Win_flush(owner, win);
            MPI_Get(&all[k], sizeof(struct elem), MPI_BYTE, owner, where, sizeof(struct elem), MPI_BYTE, win);
            MPI_Win_flush(owner, win);
            if (all[k].value != k) {
                fprintf(stderr, "llist: element %lld reads as %lld\n", (long long) k,
                        (long long) all[k].value);
                errors++;
            }
        }
        if (shared[1] != total) {
            fprintf(stderr, "llist: %lld appends counted, want %lld\n", (long long) shared[1],
                    (long long) total);
            errors++;
        }
        MPI_Win_unlock_all(win);
        for (k = 0; k < total; ++k) {
            if (all[k].next >= 0 && all[k].next < total) {
                has_pred[all[k].next]++;
            } else if (all[k].next != -1) {
                errors++;
            }
        }
        for (k = 0; k < total; ++k) {
            if (!has_pred[k]) {
                int64_t c = k;
                starts++;
                while (c >= 0 && c < total && !seen[c] && n <= total) {
                    seen[c] = 1;
                    n++;
                    c = all[c].next;
                }
            }
        }
        if (1 != starts || n != total) {
            fprintf(stderr, "llist: %ld list heads, %ld of %lld elements reachable\n", starts, n,
                    (long long) total);
            errors++;
        }
        free(has_pred);
        free(seen);
        free(all);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (i = 0; i < ELEMS; ++i) {
        MPI_Win_detach(win, mine[i]);
        MPI_Free_mem(mine[i]);
    }
    MPI_Win_detach(win, dir);
    MPI_Free_mem(dir);
    if (0 == rank) {
        MPI_Win_detach(win, shared);
        MPI_Free_mem(shared);
    }
    MPI_Win_free(&win);
    free(dirs);
    return report(live ? "llist-live" : "llist", errors);
}

/* ---- chase ---- */

struct cnode {
    int value;          /* the owner's rank; -1 for the head */
    int next_rank;      /* -1: the end */
    MPI_Aint next_addr; /* 0 until the appender has written it */
};

static struct cnode **cnodes;
static int ncnodes;

static MPI_Aint new_cnode(MPI_Win win, int value)
{
    struct cnode *c;

    MPI_Alloc_mem(sizeof(*c), MPI_INFO_NULL, &c);
    c->value = value;
    c->next_rank = -1;
    c->next_addr = 0;
    MPI_Win_attach(win, c, sizeof(*c));
    cnodes[ncnodes++] = c;
    return addr_of(c);
}

static int test_chase(bool live)
{
    const int nil = -1;
    MPI_Win win;
    MPI_Aint head, tail_addr, pre[ELEMS];
    int tail_rank = 0, i;
    long errors = 0;

    cnodes = malloc(sizeof(*cnodes) * (ELEMS + 1));
    ncnodes = 0;
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    head = 0 == rank ? new_cnode(win, -1) : 0;
    MPI_Bcast(&head, 1, MPI_AINT, 0, MPI_COMM_WORLD);
    for (i = 0; i < ELEMS && !live; ++i) {
        pre[i] = new_cnode(win, rank);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    tail_addr = head;
    for (i = 0; i < ELEMS; ++i) {
        MPI_Aint mine = live ? new_cnode(win, rank) : pre[i];
        bool linked = false;

        while (!linked) {
            int seen = nil;

            MPI_Win_lock(MPI_LOCK_SHARED, tail_rank, MPI_MODE_NOCHECK, win);
            MPI_Compare_and_swap(&rank, &nil, &seen, MPI_INT, tail_rank,
                                 tail_addr + (MPI_Aint) offsetof(struct cnode, next_rank), win);
            MPI_Win_unlock(tail_rank, win);
            if (seen == nil) {
                MPI_Aint old;

                MPI_Win_lock(MPI_LOCK_SHARED, tail_rank, MPI_MODE_NOCHECK, win);
                MPI_Fetch_and_op(&mine, &old, MPI_AINT, tail_rank,
                                 tail_addr + (MPI_Aint) offsetof(struct cnode, next_addr), MPI_REPLACE, win);
                MPI_Win_unlock(tail_rank, win);
                tail_rank = rank;
                tail_addr = mine;
                linked = true;
            } else {
                MPI_Aint next = 0;

                /* someone else is the tail's successor: wait for its address */
                while (0 == next) {
                    MPI_Win_lock(MPI_LOCK_SHARED, tail_rank, MPI_MODE_NOCHECK, win);
                    MPI_Fetch_and_op(NULL, &next, MPI_AINT, tail_rank,
                                     tail_addr + (MPI_Aint) offsetof(struct cnode, next_addr), MPI_NO_OP, win);
                    MPI_Win_unlock(tail_rank, win);
                }
                tail_rank = seen;
                tail_addr = next;
            }
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        int *per_rank = calloc((size_t) nprocs, sizeof(int)), r = 0;
        MPI_Aint at = head;
        long n = 0;

        while (r >= 0 && n <= (long) nprocs * ELEMS) {
            struct cnode c;

            MPI_Win_lock(MPI_LOCK_SHARED, r, MPI_MODE_NOCHECK, win);
            MPI_Get(&c, sizeof(c), MPI_BYTE, r, at, sizeof(c), MPI_BYTE, win);
            MPI_Win_unlock(r, win);
            if (n > 0) {
                if (c.value != r || c.value < 0 || c.value >= nprocs) {
                    errors++;
                } else {
                    per_rank[c.value]++;
                }
            } else if (c.value != -1) {
                errors++;
            }
            n++;
            r = c.next_rank;
            at = c.next_addr;
        }
        for (r = 0; r < nprocs; ++r) {
            if (per_rank[r] != ELEMS) {
                fprintf(stderr, "chase: rank %d has %d elements in the list, want %d\n", r,
                        per_rank[r], ELEMS);
                errors++;
            }
        }
        free(per_rank);
    }
    MPI_Win_free(&win);
    for (i = 0; i < ncnodes; ++i) {
        MPI_Free_mem(cnodes[i]);
    }
    free(cnodes);
    return report(live ? "chase-live" : "chase", errors);
}

/* ---- flushget, dtype, reattach: a buffer per rank, used by the left neighbour ---- */

static int64_t word(int owner, int round, int i)
{
    return ((int64_t) owner << 40) ^ ((int64_t) round << 24) ^ (int64_t) i * 2654435761u;
}

/* Put WORDS words (or every other word with a vector type) into the right
 * neighbour's attached buffer, flush, get them back, compare; then the
 * owner checks what arrived, gaps included. */
static long exchange(MPI_Win win, int64_t *buf, int round, bool strided)
{
    int right = (rank + 1) % nprocs, left = (rank + nprocs - 1) % nprocs;
    int64_t *out = malloc(sizeof(int64_t) * WORDS), *back = malloc(sizeof(int64_t) * WORDS);
    MPI_Aint remote, mine = addr_of(buf);
    MPI_Datatype vec;
    long errors = 0;
    int i, n = strided ? WORDS / 2 : WORDS;

    MPI_Type_vector(WORDS / 2, 1, 2, MPI_INT64_T, &vec);
    MPI_Type_commit(&vec);
    for (i = 0; i < WORDS; ++i) {
        buf[i] = -7; /* the gaps of the strided case keep this */
        out[i] = word(right, round, i);
        back[i] = 0;
    }
    MPI_Sendrecv(&mine, 1, MPI_AINT, left, 9, &remote, 1, MPI_AINT, right, 9, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD); /* buffers initialised everywhere */
    MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
    if (strided) {
        MPI_Put(out, n, MPI_INT64_T, right, remote, 1, vec, win);
    } else {
        MPI_Put(out, n, MPI_INT64_T, right, remote, n, MPI_INT64_T, win);
    }
    MPI_Win_flush(right, win);
    if (strided) {
        MPI_Get(back, n, MPI_INT64_T, right, remote, 1, vec, win);
    } else {
        MPI_Get(back, n, MPI_INT64_T, right, remote, n, MPI_INT64_T, win);
    }
    MPI_Win_unlock(right, win);
    for (i = 0; i < n; ++i) {
        if (back[i] != out[i]) {
            if (errors < 3) {
                fprintf(stderr, "rank %d round %d: got back word %d = %lld, want %lld\n", rank,
                        round, i, (long long) back[i], (long long) out[i]);
            }
            errors++;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD); /* every put is in */
    for (i = 0; i < WORDS; ++i) {
        int64_t want = strided ? (i % 2 ? -7 : word(rank, round, i / 2)) : word(rank, round, i);
        if (buf[i] != want) {
            if (errors < 3) {
                fprintf(stderr, "rank %d round %d: word %d = %lld, want %lld\n", rank, round, i,
                        (long long) buf[i], (long long) want);
            }
            errors++;
        }
    }
    MPI_Type_free(&vec);
    free(out);
    free(back);
    return errors;
}

static int test_buffer(const char *name, bool strided, int rounds, bool reattach)
{
    MPI_Win win;
    int64_t *keep = NULL;
    long errors = 0;
    int r;

    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    for (r = 0; r < rounds; ++r) {
        int64_t *buf;

        /* odd rounds of reattach: the same buffer as the round before */
        if (reattach && (r % 2) && keep) {
            buf = keep;
        } else {
            if (keep) {
                MPI_Free_mem(keep);
            }
            MPI_Alloc_mem(sizeof(int64_t) * WORDS, MPI_INFO_NULL, &buf);
        }
        MPI_Win_attach(win, buf, sizeof(int64_t) * WORDS);
        errors += exchange(win, buf, r, strided);
        MPI_Barrier(MPI_COMM_WORLD); /* nobody uses it any more */
        MPI_Win_detach(win, buf);
        keep = buf;
    }
    if (keep) {
        MPI_Free_mem(keep);
    }
    MPI_Win_free(&win);
    return report(name, errors);
}

int main(int argc, char **argv)
{
    int i, failed = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    for (i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "llist") || !strcmp(argv[i], "llist-live")) {
            failed |= test_llist(!strcmp(argv[i], "llist-live"));
        } else if (!strcmp(argv[i], "chase") || !strcmp(argv[i], "chase-live")) {
            failed |= test_chase(!strcmp(argv[i], "chase-live"));
        } else if (!strcmp(argv[i], "flushget")) {
            failed |= test_buffer("flushget", false, 1, false);
        } else if (!strcmp(argv[i], "dtype")) {
            failed |= test_buffer("dtype", true, 2, false);
        } else if (!strcmp(argv[i], "reattach")) {
            failed |= test_buffer("reattach", false, ROUNDS, true);
        } else {
            if (0 == rank) {
                fprintf(stderr, "unknown test %s\n", argv[i]);
            }
            failed = 1;
        }
    }
    MPI_Finalize();
    return failed;
}

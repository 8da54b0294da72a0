/*
 * conn_setup.c - what connecting costs, whatever the transport: the time
 * of the first all-to-all (every connection made on demand) against the
 * second (all connected), and how much each process's resident memory grew
 * per peer while connecting. Run with any number of ranks, on any PML/BTL.
 *
 * Times: from just after MPI_Init (its fence releases all ranks together;
 * Open MPI 4.1 connects nothing before the first message to a remote
 * peer) to the end of each all-to-all of 1-byte messages, receive-first;
 * the slowest rank's. Memory: the resident set after the first all-to-all
 * minus before it (read outside the timed span), divided by the peers; the
 * median over ranks. The resident set is counted page by page
 * (/proc/self/smaps_rollup), not read from VmRSS: the kernel's per-thread
 * counters behind VmRSS add the pages a driver maps into a process (rxe's
 * queues, mapped whole when a QP is created) only when that thread next
 * takes enough page faults, so VmRSS missed anywhere from none to all of
 * them from one run to the next. Where openib
 * runs, its own count of what a peer costs (btl_openib_host_bytes_per_peer,
 * MPI_T) is printed beside it; elsewhere 0.
 *
 * Output (rank 0):
 *   # conn_setup: N ranks on HOST (k), HOST (k)
 *   ranks,first_alltoall_ms,connected_alltoall_ms,rss_bytes_per_peer,openib_bytes_per_peer
 *   N,...
 *   # verification: all 1-byte messages matched: PASSED   (or FAILED, exit 1)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tests/integration/mpit_read.h"

static long rss_bytes(void)
{
    char line[256];
    long kb = -1;
    FILE *f = fopen("/proc/self/smaps_rollup", "r");

    while (f && fgets(line, sizeof(line), f)) {
        if (1 == sscanf(line, "Rss: %ld kB", &kb)) {
            break;
        }
    }
    if (f) {
        fclose(f);
    }
    return kb * 1024;
}

/* One all-to-all of 1-byte messages; returns the wrong ones. */
static int alltoall(int rank, int size, unsigned char *in, unsigned char *out, MPI_Request *req,
                    int round)
{
    int p, n = 0, bad = 0;

    for (p = 0; p < size; ++p) {
        if (p != rank) {
            in[p] = 0;
            MPI_Irecv(&in[p], 1, MPI_BYTE, p, round, MPI_COMM_WORLD, &req[n++]);
        }
    }
    for (p = 0; p < size; ++p) {
        if (p != rank) {
            out[p] = (unsigned char) (rank * 7 + p * 3 + round + 1);
            MPI_Isend(&out[p], 1, MPI_BYTE, p, round, MPI_COMM_WORLD, &req[n++]);
        }
    }
    MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
    for (p = 0; p < size; ++p) {
        bad += p != rank && in[p] != (unsigned char) (p * 7 + rank * 3 + round + 1);
    }
    return bad;
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *) a, y = *(const long *) b;

    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    static const char *const names[] = { "host_bytes_per_peer" };
    int rank, size, p, provided, bad = 0, all_bad = 0, len;
    double t0, t1, t2, d[2], dmax[2];
    long rss0, rss1, per_peer, *all_pp = NULL;
    unsigned long long ours = 0;
    unsigned char *in, *out;
    MPI_Request *req;
    MPI_T_pvar_session session;
    MPI_T_pvar_handle handle[1];
    char host[MPI_MAX_PROCESSOR_NAME], *hosts = NULL;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    in = calloc((size_t) size, 1);
    out = calloc((size_t) size, 1);
    req = calloc(2 * (size_t) size, sizeof(*req));
    rss0 = rss_bytes(); /* a page walk: before the clock starts */
    t0 = MPI_Wtime();

    bad += alltoall(rank, size, in, out, req, 1);
    t1 = MPI_Wtime();
    rss1 = rss_bytes();
    bad += alltoall(rank, size, in, out, req, 2);
    t2 = MPI_Wtime();

    /* MPI_T only now: its handles allocate nothing on the first path */
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session_create(&session);
    if (0 == mpit_open_handles(session, names, 1, handle, -1)) {
        ours = mpit_read(session, names, 1, handle, "host_bytes_per_peer");
        MPI_T_pvar_handle_free(session, &handle[0]);
    }
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();

    d[0] = (t1 - t0) * 1e3;
    d[1] = (t2 - t1) * 1e3;
    per_peer = size > 1 ? (rss1 - rss0) / (size - 1) : 0;
    MPI_Reduce(d, dmax, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&bad, &all_bad, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (0 == rank) {
        all_pp = malloc((size_t) size * sizeof(*all_pp));
        hosts = malloc((size_t) size * MPI_MAX_PROCESSOR_NAME);
    }
    MPI_Gather(&per_peer, 1, MPI_LONG, all_pp, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    memset(host, 0, sizeof(host));
    MPI_Get_processor_name(host, &len);
    MPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
               MPI_COMM_WORLD);
    if (0 == rank) {
        printf("# conn_setup: %d ranks on", size);
        for (p = 0; p < size; ++p) {
            const char *h = hosts + (size_t) p * MPI_MAX_PROCESSOR_NAME;
            int k = 0, q;

            for (q = 0; q < p && strcmp(h, hosts + (size_t) q * MPI_MAX_PROCESSOR_NAME); ++q) {
            }
            if (q < p) {
                continue; /* named already */
            }
            for (q = p; q < size; ++q) {
                k += 0 == strcmp(h, hosts + (size_t) q * MPI_MAX_PROCESSOR_NAME);
            }
            printf("%s %s (%d)", p ? "," : "", h, k);
        }
        printf("\nranks,first_alltoall_ms,connected_alltoall_ms,rss_bytes_per_peer,openib_bytes_per_peer\n");
        qsort(all_pp, (size_t) size, sizeof(*all_pp), cmp_long);
        printf("%d,%.3f,%.3f,%ld,%llu\n", size, dmax[0], dmax[1], all_pp[size / 2], ours);
        printf("# verification: %d wrong messages: %s\n", all_bad, all_bad ? "FAILED" : "PASSED");
    }
    MPI_Finalize();
    return all_bad ? 1 : 0;
}

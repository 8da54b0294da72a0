/*
 * mpit_counters.c - openib's MPI_T performance variables read by an
 * application, checked against what it sent.
 *
 * 2 ranks. Rank 0 connects with one message, then sends 10 small messages
 * (fragment-less inline sends), 20 more (rank 1 then offers an eager-RDMA
 * ring), 10 through the ring, a 1 MiB message (RDMA get by rank 1), a
 * 4 KiB MPI_Put and an MPI_Fetch_and_op on a created window; rank 1 also
 * takes a one-way burst of 200 (credit returns). Around each phase the
 * ranks read the btl_openib_* variables with MPI_T_pvar_read and check the
 * differences: exact counts where the path is certain, lower bounds where
 * Open MPI adds its own traffic.
 *
 * Output: "mpit: rank R: ok <what>" per check, and from rank 0
 * "mpit: PASSED <n> checks" or "mpit: FAILED <n> of <m> checks" (exit 1).
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpit_read.h"

static int rank;
static MPI_T_pvar_session session;
static int checks, failures;

/* The variables read, each with a handle kept for the whole run: a
 * counter's handle counts from when it was allocated (MPI_T), so all are
 * allocated before any traffic (open_handles) and then read as totals. */
static const char *const names[] = {
    "peers_connected", "connections_oob", "connect_usec_oob", "connect_usec_max_oob", "peer_qps",
    "registered_bytes_per_peer", "peer_registered_bytes", "sent_inline_messages",
    "sent_inline_bytes", "received_messages", "received_bytes", "ring_offers_made",
    "ring_offers_taken", "sent_ring_messages", "received_ring_messages", "rdma_gets",
    "rdma_get_bytes", "reg_cache_misses", "reg_pinned_bytes", "rdma_puts", "rdma_put_bytes",
    "atomics", "credit_messages", "connection_failures", "side_channel_ud_sessions",
    "side_channel_tcp_connections",
};
#define NNAMES (int) (sizeof(names) / sizeof(names[0]))
static MPI_T_pvar_handle handles[NNAMES];

static void open_handles(void)
{
    failures += mpit_open_handles(session, names, NNAMES, handles, rank);
}

/* Read btl_openib_<name>. */
static unsigned long long pv(const char *name)
{
    return mpit_read(session, names, NNAMES, handles, name);
}

static void check(int ok, const char *what, unsigned long long got)
{
    checks++;
    if (ok) {
        printf("mpit: rank %d: ok %s (%llu)\n", rank, what, got);
    } else {
        printf("mpit: rank %d: WRONG %s (%llu)\n", rank, what, got);
        failures++;
    }
    fflush(stdout);
}

static void msgs(int count, int tag)
{
    char b[8] = "1234567";
    int i;

    for (i = 0; i < count; ++i) {
        if (0 == rank) {
            MPI_Send(b, 8, MPI_BYTE, 1, tag, MPI_COMM_WORLD);
        } else {
            MPI_Recv(b, 8, MPI_BYTE, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
}

/* rank 1 answers once: rank 0 then has handled everything rank 1 sent
 * before (openib delivers each peer's messages in order), and rank 1 has
 * read its counters before rank 0 sends more (a receive may take messages
 * that arrived after the one it waited for) */
static void turn(void)
{
    char c = 0;

    if (0 == rank) {
        MPI_Recv(&c, 1, MPI_BYTE, 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Send(&c, 1, MPI_BYTE, 0, 99, MPI_COMM_WORLD);
    }
}

/* Rank 0 connects first, and rank 1's side channel accepts the session on
 * its own thread, whatever rank 1's main thread is doing: a counter counts
 * from its handle's allocation, so rank 1 must have its handles before
 * rank 0 sends. MPI itself cannot say so without connecting (btl
 * openib,self only), so rank 1 creates the file $MPIT_READY (both ranks
 * are on one node) and rank 0 waits for it, for at most 60 s. */
static void handles_ready(void)
{
    const char *path = getenv("MPIT_READY");
    FILE *f;
    int i;

    if (NULL == path) {
        return;
    }
    if (1 == rank) {
        f = fopen(path, "w");
        if (f) {
            fclose(f);
        }
        return;
    }
    for (i = 0; i < 6000 && 0 != access(path, F_OK); ++i) {
        usleep(10000);
    }
}

int main(int argc, char **argv)
{
    unsigned long long a, b, c, d, e, f;
    int provided, all[2];
    char *big;
    MPI_Win win;
    long long *wbuf, one = 1, old = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session_create(&session);
    open_handles();
    handles_ready();

    /* connect */
    check(0 == pv("peers_connected"), "no peer connected before the first message", pv("peers_connected"));
    msgs(1, 1);
    turn();
    a = pv("connections_oob");
    check(1 == a, "connections_oob is 1", a);
    check(pv("connect_usec_oob") > 0, "connect_usec_oob > 0", pv("connect_usec_oob"));
    check(pv("connect_usec_max_oob") > 0 && pv("connect_usec_max_oob") <= pv("connect_usec_oob"),
          "0 < connect_usec_max_oob <= connect_usec_oob", pv("connect_usec_max_oob"));
    check(1 == pv("peers_connected"), "peers_connected is 1", pv("peers_connected"));
    /* one handshake, over the UD side channel: one session each side
     * (rank 1's counted too: handles_ready) */
    check(1 == pv("side_channel_ud_sessions"), "side_channel_ud_sessions is 1",
          pv("side_channel_ud_sessions"));
    check(0 == pv("side_channel_tcp_connections"), "side_channel_tcp_connections is 0",
          pv("side_channel_tcp_connections"));
    check(3 == pv("peer_qps"), "peer_qps is 3 (one per receive queue)", pv("peer_qps"));
    check(pv("registered_bytes_per_peer") > 0 &&
              pv("registered_bytes_per_peer") == pv("peer_registered_bytes"),
          "registered_bytes_per_peer = peer_registered_bytes > 0", pv("registered_bytes_per_peer"));

    /* 10 small messages: inline, no fragment */
    a = pv("sent_inline_messages");
    b = pv("sent_inline_bytes");
    c = pv("received_messages");
    d = pv("received_bytes");
    msgs(10, 2);
    if (0 == rank) {
        e = pv("sent_inline_bytes") - b;
        check(10 == pv("sent_inline_messages") - a, "10 inline messages sent", pv("sent_inline_messages") - a);
        check(e >= 10 * 8 && 0 == e % 10, "inline bytes: 10 equal messages of >= 8 B", e);
    } else {
        check(10 == pv("received_messages") - c, "10 messages received", pv("received_messages") - c);
        check(pv("received_bytes") - d >= 80, "at least 80 bytes received", pv("received_bytes") - d);
    }
    turn(); /* rank 1 counted before rank 0 sends on */

    /* 20 more: past the 16-message threshold rank 1 offers a ring */
    msgs(20, 3);
    turn();
    if (1 == rank) {
        check(1 == pv("ring_offers_made"), "rank 1 offered 1 ring", pv("ring_offers_made"));
    } else {
        check(1 == pv("ring_offers_taken"), "rank 0 took 1 ring", pv("ring_offers_taken"));
    }
    a = pv("sent_ring_messages");
    b = pv("received_ring_messages");
    msgs(10, 4);
    if (0 == rank) {
        check(10 == pv("sent_ring_messages") - a, "10 messages written into the ring", pv("sent_ring_messages") - a);
    } else {
        check(10 == pv("received_ring_messages") - b, "10 messages taken from the ring",
              pv("received_ring_messages") - b);
    }
    turn();

    /* 1 MiB: the RDMA-get rendezvous */
    big = malloc(1 << 20);
    memset(big, 7, 1 << 20);
    a = pv("rdma_gets");
    b = pv("rdma_get_bytes");
    c = pv("reg_cache_misses");
    if (0 == rank) {
        MPI_Send(big, 1 << 20, MPI_BYTE, 1, 5, MPI_COMM_WORLD);
    } else {
        MPI_Recv(big, 1 << 20, MPI_BYTE, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        check(pv("rdma_gets") - a >= 1, "rdma_gets: at least 1", pv("rdma_gets") - a);
        check((1 << 20) == pv("rdma_get_bytes") - b, "rdma_get_bytes: 1 MiB", pv("rdma_get_bytes") - b);
    }
    check(pv("reg_cache_misses") > c, "the 1 MiB buffer was registered (a cache miss)", pv("reg_cache_misses") - c);
    check(pv("reg_pinned_bytes") >= (1 << 20), "at least 1 MiB pinned", pv("reg_pinned_bytes"));
    turn();

    /* one-sided: a 4 KiB put and a fetch-and-op on a created window */
    wbuf = calloc(1024, sizeof(*wbuf));
    MPI_Win_create(wbuf, 1024 * sizeof(*wbuf), sizeof(*wbuf), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    a = pv("rdma_puts");
    b = pv("rdma_put_bytes");
    c = pv("atomics");
    MPI_Win_lock(MPI_LOCK_SHARED, 1 - rank, 0, win);
    if (0 == rank) {
        MPI_Put(big, 4096, MPI_BYTE, 1, 0, 4096, MPI_BYTE, win);
        MPI_Fetch_and_op(&one, &old, MPI_LONG_LONG, 1, 600, MPI_SUM, win);
    }
    MPI_Win_unlock(1 - rank, win);
    if (0 == rank) {
        check(pv("rdma_puts") - a >= 1, "rdma_puts: at least 1", pv("rdma_puts") - a);
        check(pv("rdma_put_bytes") - b >= 4096, "rdma_put_bytes: at least 4 KiB", pv("rdma_put_bytes") - b);
        check(pv("atomics") - c >= 1, "atomics: at least 1", pv("atomics") - c);
    }
    MPI_Win_free(&win);

    /* a one-way burst: rank 1 returns credits without sending anything */
    a = pv("credit_messages");
    msgs(200, 6);
    if (1 == rank) {
        check(pv("credit_messages") - a >= 1, "credit_messages: rank 1 returned credits",
              pv("credit_messages") - a);
    }
    turn();
    f = pv("connection_failures");
    check(0 == f, "no connection failed", f);

    all[0] = checks;
    all[1] = failures;
    MPI_Allreduce(MPI_IN_PLACE, all, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        if (all[1]) {
            printf("mpit: FAILED %d of %d checks\n", all[1], all[0]);
        } else {
            printf("mpit: PASSED %d checks\n", all[0]);
        }
        fflush(stdout);
    }
    for (provided = 0; provided < NNAMES; ++provided) {
        if (MPI_T_PVAR_HANDLE_NULL != handles[provided]) {
            MPI_T_pvar_handle_free(session, &handles[provided]);
        }
    }
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    free(big);
    free(wbuf);
    MPI_Finalize();
    return all[1] ? 1 : 0;
}

/*
 * scale_alltoall.c - an all-to-all among many ranks, every byte checked,
 * then what openib says the connections cost (MPI_T).
 *
 * Each rank prints "rank R of N on HOST". ROUNDS rounds follow; in each,
 * every rank exchanges K messages with every other rank, receive-first
 * (odd rounds take them from MPI_ANY_SOURCE, matched by tag), of sizes that
 * depend on round, source, destination and k (1 B up to MAXSIZE, default
 * 200 KiB: inline, eager, rendezvous), with contents that depend on the
 * same; every byte received is checked. MODE "all" posts the whole
 * exchange at once; "pairwise" goes through the peers in N-1 steps, one
 * partner each way per step (rank+s, rank-s), as pairwise all-to-all
 * algorithms do: every connection is still made, but only one exchange
 * per rank is in flight. Then each rank prints
 *   "scale: rank R peers P qps Q host_bytes_per_peer B peer_host_bytes T
 *    connections C failures F closed_idle I"
 * from the btl_openib_* variables, and rank 0 prints
 * "scale: PASSED ranks=N rounds=R bytes=B errors=0" (or FAILED, exit 1).
 *
 * Usage: scale_alltoall ROUNDS [all|pairwise] [MAXSIZE] [K]   (defaults: all, 204800, 1)
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpit_read.h"

static const size_t sizes[] = { 1, 100, 4000, 12289, 40000, 65536 + 13, 200 * 1024 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static const char *const names[] = {
    "peers_connected", "peer_qps", "host_bytes_per_peer", "peer_host_bytes",
    "connections_oob", "connections_rdma_cm", "connections_xoob", "connection_failures",
    "connections_closed_idle", "side_channel_ud_sessions", "side_channel_tcp_connections",
};
#define NNAMES (int) (sizeof(names) / sizeof(names[0]))

static size_t max_size = 200 * 1024;

static size_t msg_size(int round, int src, int dst, int k)
{
    size_t sz = sizes[(size_t) (round + 3 * src + 5 * dst + k) % NSIZES];

    return sz > max_size ? max_size : sz;
}

static uint8_t pat(int round, int src, int dst, int k, size_t i)
{
    return (uint8_t) (round * 131 + src * 31 + dst * 7 + k * 17 + i * 13 + (i >> 8));
}

/* Post the K receives from src (tag src * K + k; odd rounds from
 * MPI_ANY_SOURCE); returns how many. */
static int post_recvs(int r, int rank, int src, int K, uint8_t **rbuf, MPI_Request *req)
{
    int k;

    for (k = 0; k < K; ++k) {
        MPI_Irecv(rbuf[src * K + k], (int) msg_size(r, src, rank, k), MPI_BYTE,
                  (r & 1) ? MPI_ANY_SOURCE : src, src * K + k, MPI_COMM_WORLD, &req[k]);
    }
    return K;
}

/* Fill and post the K sends to dst; returns how many. */
static int post_sends(int r, int rank, int dst, int K, uint8_t **sbuf, MPI_Request *req)
{
    int k;

    for (k = 0; k < K; ++k) {
        size_t i, sz = msg_size(r, rank, dst, k);

        for (i = 0; i < sz; ++i) {
            sbuf[dst * K + k][i] = pat(r, rank, dst, k, i);
        }
        MPI_Isend(sbuf[dst * K + k], (int) sz, MPI_BYTE, dst, rank * K + k, MPI_COMM_WORLD,
                  &req[k]);
    }
    return K;
}

/* Check what came from src; returns the bytes. */
static unsigned long long check(int r, int rank, int src, int K, uint8_t **rbuf, long *errors)
{
    unsigned long long bytes = 0;
    int k;

    for (k = 0; k < K; ++k) {
        size_t i, sz = msg_size(r, src, rank, k);

        for (i = 0; i < sz; ++i) {
            if (rbuf[src * K + k][i] != pat(r, src, rank, k, i)) {
                if (*errors < 5) {
                    fprintf(stderr, "scale: rank %d: round %d from %d (message %d) byte %zu of %zu wrong\n",
                            rank, r, src, k, i, sz);
                }
                (*errors)++;
                break;
            }
        }
        bytes += sz;
    }
    return bytes;
}

int main(int argc, char **argv)
{
    int rank, size, rounds, r, p, provided, len, K = 1, pairwise = 0;
    long errors = 0, all_errors = 0;
    unsigned long long bytes = 0, all_bytes = 0;
    char host[MPI_MAX_PROCESSOR_NAME];
    MPI_T_pvar_session session;
    MPI_T_pvar_handle handles[NNAMES];
    uint8_t **rbuf, **sbuf;
    MPI_Request *req;
    int missing;

    if (argc < 2 || (rounds = atoi(argv[1])) < 1) {
        fprintf(stderr, "usage: scale_alltoall ROUNDS [all|pairwise] [MAXSIZE] [K]\n");
        return 2;
    }
    pairwise = argc > 2 && 0 == strcmp(argv[2], "pairwise");
    if (argc > 3) {
        max_size = (size_t) atol(argv[3]);
    }
    if (argc > 4 && (K = atoi(argv[4])) < 1) {
        K = 1;
    }
    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(host, &len);
    printf("rank %d of %d on %s\n", rank, size, host);
    fflush(stdout);
    MPI_T_pvar_session_create(&session);
    missing = mpit_open_handles(session, names, NNAMES, handles, rank);

    rbuf = calloc((size_t) size * K, sizeof(*rbuf));
    sbuf = calloc((size_t) size * K, sizeof(*sbuf));
    req = calloc(2 * (size_t) size * K, sizeof(*req));
    for (p = 0; p < size * K; ++p) {
        rbuf[p] = malloc(max_size);
        sbuf[p] = malloc(max_size);
    }
    for (r = 0; r < rounds; ++r) {
        int n = 0, s;

        if (pairwise) {
            for (s = 1; s < size; ++s) {
                int dst = (rank + s) % size, src = (rank - s + size) % size;

                n = post_recvs(r, rank, src, K, rbuf, req);
                n += post_sends(r, rank, dst, K, sbuf, req + n);
                MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
                bytes += check(r, rank, src, K, rbuf, &errors);
            }
            continue;
        }
        /* receive first: every receive, then every send */
        for (s = 1; s < size; ++s) {
            n += post_recvs(r, rank, (rank - s + size) % size, K, rbuf, req + n);
        }
        for (s = 1; s < size; ++s) {
            n += post_sends(r, rank, (rank + s) % size, K, sbuf, req + n);
        }
        MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
        for (p = 0; p < size; ++p) {
            if (p != rank) {
                bytes += check(r, rank, p, K, rbuf, &errors);
            }
        }
    }
    printf("scale: rank %d peers %llu qps %llu host_bytes_per_peer %llu peer_host_bytes %llu "
           "connections %llu failures %llu closed_idle %llu ud_sessions %llu tcp_connections "
           "%llu\n", rank,
           mpit_read(session, names, NNAMES, handles, "peers_connected"),
           mpit_read(session, names, NNAMES, handles, "peer_qps"),
           mpit_read(session, names, NNAMES, handles, "host_bytes_per_peer"),
           mpit_read(session, names, NNAMES, handles, "peer_host_bytes"),
           mpit_read(session, names, NNAMES, handles, "connections_oob") +
               mpit_read(session, names, NNAMES, handles, "connections_rdma_cm") +
               mpit_read(session, names, NNAMES, handles, "connections_xoob"),
           mpit_read(session, names, NNAMES, handles, "connection_failures"),
           mpit_read(session, names, NNAMES, handles, "connections_closed_idle"),
           mpit_read(session, names, NNAMES, handles, "side_channel_ud_sessions"),
           mpit_read(session, names, NNAMES, handles, "side_channel_tcp_connections"));
    fflush(stdout);
    errors += missing;
    MPI_Reduce(&errors, &all_errors, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&bytes, &all_bytes, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("scale: %s ranks=%d rounds=%d bytes=%llu errors=%ld\n",
               all_errors ? "FAILED" : "PASSED", size, rounds, all_bytes, all_errors);
    }
    for (p = 0; p < NNAMES; ++p) {
        if (MPI_T_PVAR_HANDLE_NULL != handles[p]) {
            MPI_T_pvar_handle_free(session, &handles[p]);
        }
    }
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    MPI_Finalize();
    return all_errors ? 1 : 0;
}

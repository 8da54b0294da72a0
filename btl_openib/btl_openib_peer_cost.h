/*
 * btl_openib_peer_cost.h - what one connected peer costs in host memory,
 * added up from what was allocated for it (MPI_T: host_bytes_per_peer;
 * btl_openib_verbose 10 when a connection comes up).
 */
#ifndef BTL_OPENIB_PEER_COST_H
#define BTL_OPENIB_PEER_COST_H

#include <stdint.h>

#include "btl_openib/btl_openib.h"

struct openib_peer_cost {
    uint64_t endpoint;   /* the endpoint struct, reclaim rings, mailbox, table entries */
    uint64_t send_queue; /* the QPs' send queues (estimated, see below) */
    uint64_t recv;       /* per-peer (P) receive buffers, their descriptors and RQs */
    uint64_t ring;       /* our eager-RDMA ring for it (only the busiest peers have one) */
    int qps;
};

/* Host bytes of an RC send queue with these granted capacities. The
 * provider allocates it and verbs does not say how much, so this follows
 * the provider's layout: by default the one HCAs use (mlx5: 64-byte blocks
 * of a control and an address segment, then the SGEs or the inline data;
 * the queue rounded to a power of two); with slot_header > 0 a ring of
 * max_send_wr + 1 slots, each slot_header bytes plus the SGEs or the
 * inline data, both rounded to powers of two, plus a page of indices
 * (rxe; the device table gives the header: btl_openib_device_defaults.c).
 * The conn bench (bench/conn_setup.c) measures the process's resident
 * pages beside the count; on rxe they include these queues, and matched
 * it exactly (README, "Scale"). */
uint64_t openib_send_queue_bytes(const struct ibv_qp_cap *cap, int slot_header);

void openib_peer_cost(const mca_btl_openib_endpoint_t *ep, struct openib_peer_cost *out);

/* endpoint + send_queue + recv: what one more peer costs, the ring aside */
static inline uint64_t openib_peer_cost_bytes(const struct openib_peer_cost *c)
{
    return c->endpoint + c->send_queue + c->recv;
}

#endif

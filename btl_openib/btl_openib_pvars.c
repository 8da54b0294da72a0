/*
 * btl_openib_pvars.c - the BTL's counters as MPI_T performance variables.
 *
 * Every variable is process-wide: the ports' statistics summed (the
 * highest for high-water marks), the devices' registration counters, or
 * the endpoints' resources counted when read. They are read-only and
 * continuous (always counting), listed by
 * `ompi_info --param btl openib --level 9` and read by applications with
 * MPI_T_pvar_read. Before MPI_Init (no port yet) they read 0.
 */
#include "opal_config.h"

#include <stddef.h>

#include "opal/constants.h"
#include "opal/mca/base/mca_base_pvar.h"

#include "btl_openib/btl_openib.h"
#include "btl_openib/btl_openib_credits.h"
#include "btl_openib/btl_openib_lock.h"
#include "btl_openib/btl_openib_peer_cost.h"
#include "btl_openib/btl_openib_pvars.h"

enum how { SUM, MAX };

/* A port statistic: its offset in struct openib_stats. */
struct port_var {
    const char *name;
    const char *desc;
    int var_class;
    enum how how;
    size_t offset;
};

#define STAT(field) offsetof(struct openib_stats, field)
#define CPC_VARS(cpc, k)                                                                      \
    { "connections_" cpc, "Connections made with the " cpc " CPC",                            \
      MCA_BASE_PVAR_CLASS_COUNTER, SUM, STAT(conn_made[k]) },                                 \
    { "connect_usec_" cpc, "Microseconds the " cpc " CPC's connections took, summed (divide " \
      "by connections_" cpc " for the mean)", MCA_BASE_PVAR_CLASS_COUNTER, SUM,               \
      STAT(conn_usec_sum[k]) },                                                               \
    { "connect_usec_max_" cpc, "Microseconds of the " cpc " CPC's slowest connection",        \
      MCA_BASE_PVAR_CLASS_HIGHWATERMARK, MAX, STAT(conn_usec_max[k]) }

static const struct port_var port_vars[] = {
    { "sent_queue_messages", "Messages sent from a fragment into one of the peer's receive queues",
      MCA_BASE_PVAR_CLASS_COUNTER, SUM, STAT(queue_msgs) },
    { "sent_queue_bytes", "Bytes (upper-layer header and payload) of sent_queue_messages",
      MCA_BASE_PVAR_CLASS_COUNTER, SUM, STAT(queue_bytes) },
    { "sent_inline_messages", "Small messages sent inline straight from the caller's memory, with no fragment (sendi)",
      MCA_BASE_PVAR_CLASS_COUNTER, SUM, STAT(frag_inline_msgs) },
    { "sent_inline_bytes", "Bytes of sent_inline_messages",
      MCA_BASE_PVAR_CLASS_COUNTER, SUM, STAT(frag_inline_bytes) },
    { "sent_ring_messages", "Messages RDMA-written into a peer's eager-RDMA ring",
      MCA_BASE_PVAR_CLASS_COUNTER, SUM, STAT(eager_rdma_sends) },
    { "sent_ring_bytes", "Bytes of sent_ring_messages",
      MCA_BASE_PVAR_CLASS_COUNTER, SUM, STAT(ring_bytes) },
    { "received_messages", "Messages received (all paths)",
      MCA_BASE_PVAR_CLASS_COUNTER, SUM, STAT(recvs) },
    { "received_bytes", "Bytes of received_messages",
      MCA_BASE_PVAR_CLASS_COUNTER, SUM, STAT(recv_bytes) },
    { "received_ring_messages", "Messages taken from our eager-RDMA rings",
      MCA_BASE_PVAR_CLASS_COUNTER, SUM, STAT(eager_rdma_recvs) },
    { "rdma_gets", "RDMA reads posted", MCA_BASE_PVAR_CLASS_COUNTER, SUM, STAT(gets) },
    { "rdma_get_bytes", "Bytes of rdma_gets", MCA_BASE_PVAR_CLASS_COUNTER, SUM, STAT(get_bytes) },
    { "rdma_puts", "RDMA writes posted (upper-layer puts)", MCA_BASE_PVAR_CLASS_COUNTER, SUM, STAT(puts) },
    { "rdma_put_bytes", "Bytes of rdma_puts", MCA_BASE_PVAR_CLASS_COUNTER, SUM, STAT(put_bytes) },
    { "atomics", "Atomic operations posted (fetch-and-add, compare-and-swap)",
      MCA_BASE_PVAR_CLASS_COUNTER, SUM, STAT(atomics) },
    { "credit_stalls", "Sends that had to wait for a credit or a send work request",
      MCA_BASE_PVAR_CLASS_COUNTER, SUM, STAT(queued_for_credits) },
    { "receive_buffer_stalls", "Times a shared receive queue ran low (its limit event; it then grows)",
      MCA_BASE_PVAR_CLASS_COUNTER, SUM, STAT(srq_low) },
    { "credit_messages", "Credit returns RDMA-written to a peer's mailbox (no receive buffer used)",
      MCA_BASE_PVAR_CLASS_COUNTER, SUM, STAT(credit_writes) },
    { "ring_offers_made", "Eager-RDMA rings offered to peers",
      MCA_BASE_PVAR_CLASS_COUNTER, SUM, STAT(eager_rdma_rings) },
    { "ring_offers_taken", "Eager-RDMA rings peers offered and this process now writes into",
      MCA_BASE_PVAR_CLASS_COUNTER, SUM, STAT(ring_offers_taken) },
    CPC_VARS("oob", 0),
    CPC_VARS("rdma_cm", 1),
    CPC_VARS("xoob", 2),
    { "connection_failures", "Connections that failed or were lost",
      MCA_BASE_PVAR_CLASS_COUNTER, SUM, STAT(conn_failed) },
    { "connections_closed_idle", "Idle connections closed cleanly because a port had more than btl_openib_max_peers connected peers (each reopens when a message needs it)",
      MCA_BASE_PVAR_CLASS_COUNTER, SUM, STAT(conn_closed_idle) },
    { "received_short_dropped", "Receives too short to hold openib's header, dropped (no openib sender makes one)",
      MCA_BASE_PVAR_CLASS_COUNTER, SUM, STAT(recv_short) },
};

static int read_port_var(const struct mca_base_pvar_t *pvar, void *value, void *obj)
{
    const struct port_var *v = pvar->ctx;
    unsigned long long r = 0;
    int i;

    (void) obj;
    openib_lock_take(); /* MPI_T reads from any thread, the counters move under the lock */
    for (i = 0; i < mca_btl_openib_component.num_modules; ++i) {
        const char *s = (const char *) &mca_btl_openib_component.modules[i]->stats;
        uint64_t x = *(const uint64_t *) (s + v->offset);

        r = v->how == SUM ? r + x : (x > r ? x : r);
    }
    openib_lock_drop();
    *(unsigned long long *) value = r;
    return OPAL_SUCCESS;
}

/* ---- the registration cache (per device) ---- */

enum reg_what { REG_HITS, REG_MISSES, REG_PINNED };

static int read_reg_var(const struct mca_base_pvar_t *pvar, void *value, void *obj)
{
    enum reg_what what = (enum reg_what) (uintptr_t) pvar->ctx;
    unsigned long long r = 0;
    int i;

    (void) obj;
    openib_lock_take();
    for (i = 0; i < mca_btl_openib_component.num_devices; ++i) {
        const struct openib_device *d = mca_btl_openib_component.devices[i];

        if (NULL == d) {
            continue;
        }
        r += what == REG_HITS     ? d->reg_requests - d->reg_misses
             : what == REG_MISSES ? d->reg_misses
                                  : (unsigned long long) opal_atomic_add_fetch_64(
                                        (volatile int64_t *) &d->reg_pinned_bytes, 0);
    }
    openib_lock_drop();
    *(unsigned long long *) value = r;
    return OPAL_SUCCESS;
}

/* ---- what the connected peers cost, counted when read ---- */

enum peer_what { PEERS, PEER_QPS, PEER_BYTES, BYTES_PER_PEER, HOST_BYTES, HOST_BYTES_PER_PEER };

/* Memory registered for one connected peer: its credit mailbox and the
 * buffer we keep for writing credits, its per-peer receive buffers, and
 * the eager-RDMA ring we polled for it. */
static uint64_t peer_registered(const mca_btl_openib_endpoint_t *ep)
{
    const struct openib_rq_spec *rq = &mca_btl_openib_component.rq;
    uint64_t b = OPENIB_MAILBOX_BYTES;
    int q;

    for (q = 0; q < rq->num; ++q) {
        if (openib_queue_is_pp(q)) {
            b += (uint64_t) rq->q[q].count * rq->q[q].size;
        }
    }
    if (ep->eager.ring_mr) {
        b += ep->eager.ring_mr->length;
    }
    return b;
}

static int read_peer_var(const struct mca_base_pvar_t *pvar, void *value, void *obj)
{
    enum peer_what what = (enum peer_what) (uintptr_t) pvar->ctx;
    unsigned long long peers = 0, qps = 0, bytes = 0, host = 0;
    int i, j, q;

    (void) obj;
    openib_lock_take();
    for (i = 0; i < mca_btl_openib_component.num_modules; ++i) {
        mca_btl_openib_module_t *m = mca_btl_openib_component.modules[i];

        for (j = 0; j < opal_pointer_array_get_size(&m->endpoints); ++j) {
            const mca_btl_openib_endpoint_t *ep = opal_pointer_array_get_item(&m->endpoints, j);

            if (NULL == ep || ep->is_self || ep->conn.state != OPENIB_CONN_CONNECTED) {
                continue;
            }
            struct openib_peer_cost c;

            peers++;
            for (q = 0; q < ep->num_qps && !ep->xrc; ++q) {
                qps += NULL != ep->qps[q].qp;
            }
            bytes += peer_registered(ep);
            openib_peer_cost(ep, &c);
            host += openib_peer_cost_bytes(&c);
        }
    }
    openib_lock_drop();
    *(unsigned long long *) value = what == PEERS                 ? peers
                                    : what == PEER_QPS            ? qps
                                    : what == PEER_BYTES          ? bytes
                                    : what == BYTES_PER_PEER      ? (peers ? bytes / peers : 0)
                                    : what == HOST_BYTES          ? host
                                                                  : (peers ? host / peers : 0);
    return OPAL_SUCCESS;
}

/* ---- the oob CPC's side channel ---- */

enum side_what { SIDE_UD, SIDE_TCP };

static int read_side_var(const struct mca_base_pvar_t *pvar, void *value, void *obj)
{
    unsigned long long ud, tcp;

    (void) obj;
    openib_connect_side_channel_counts(&ud, &tcp);
    *(unsigned long long *) value = SIDE_UD == (enum side_what) (uintptr_t) pvar->ctx ? ud : tcp;
    return OPAL_SUCCESS;
}

struct computed_var {
    const char *name;
    const char *desc;
    int var_class;
    mca_base_get_value_fn_t read;
    uintptr_t what;
};

static const struct computed_var computed_vars[] = {
    { "reg_cache_hits", "Memory registrations served by the registration cache",
      MCA_BASE_PVAR_CLASS_COUNTER, read_reg_var, REG_HITS },
    { "reg_cache_misses", "Memory registrations that had to pin memory",
      MCA_BASE_PVAR_CLASS_COUNTER, read_reg_var, REG_MISSES },
    { "reg_pinned_bytes", "Bytes pinned through the registration cache now (fragments and user buffers)",
      MCA_BASE_PVAR_CLASS_LEVEL, read_reg_var, REG_PINNED },
    { "peers_connected", "Peers with a connection up now",
      MCA_BASE_PVAR_CLASS_LEVEL, read_peer_var, PEERS },
    { "peer_qps", "Queue pairs of the connected peers now",
      MCA_BASE_PVAR_CLASS_LEVEL, read_peer_var, PEER_QPS },
    { "peer_registered_bytes", "Memory registered for the connected peers now (credit mailboxes, per-peer receive buffers, eager-RDMA rings)",
      MCA_BASE_PVAR_CLASS_LEVEL, read_peer_var, PEER_BYTES },
    { "registered_bytes_per_peer", "peer_registered_bytes / peers_connected: what one more peer costs in registered memory",
      MCA_BASE_PVAR_CLASS_LEVEL, read_peer_var, BYTES_PER_PEER },
    { "peer_host_bytes", "Host memory of the connected peers now: endpoints, their QPs' send queues (as HCAs lay them out, from the capacities granted), credit mailboxes, per-peer receive buffers; not eager-RDMA rings (peer_registered_bytes has those)",
      MCA_BASE_PVAR_CLASS_LEVEL, read_peer_var, HOST_BYTES },
    { "host_bytes_per_peer", "peer_host_bytes / peers_connected: what one more peer costs in host memory",
      MCA_BASE_PVAR_CLASS_LEVEL, read_peer_var, HOST_BYTES_PER_PEER },
    { "side_channel_ud_sessions", "Handshake sessions of the oob CPC over its UD side channel (opened and accepted)",
      MCA_BASE_PVAR_CLASS_COUNTER, read_side_var, SIDE_UD },
    { "side_channel_tcp_connections", "TCP connections of the oob and xoob side channel (one per handshake over TCP, opened and accepted)",
      MCA_BASE_PVAR_CLASS_COUNTER, read_side_var, SIDE_TCP },
};

/* Every counter is a read-only, continuous unsigned long long, bound to no
 * object; they differ in name, class, reader and what the reader gets. */
static int register_one(const struct mca_base_component_2_1_0_t *c, const char *name,
                        const char *desc, int var_class,
                        mca_base_get_value_fn_t read, void *ctx)
{
    return mca_base_component_pvar_register(c, name, desc, OPAL_INFO_LVL_9, var_class,
                                            MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL,
                                            MCA_BASE_VAR_BIND_NO_OBJECT,
                                            MCA_BASE_PVAR_FLAG_READONLY |
                                                MCA_BASE_PVAR_FLAG_CONTINUOUS,
                                            read, NULL, NULL, ctx);
}

int openib_pvars_register(const struct mca_base_component_2_1_0_t *c)
{
    size_t i;
    int rc;

    for (i = 0; i < sizeof(port_vars) / sizeof(port_vars[0]); ++i) {
        rc = register_one(c, port_vars[i].name, port_vars[i].desc, port_vars[i].var_class,
                          read_port_var, (void *) &port_vars[i]);
        if (rc < 0) {
            return rc;
        }
    }
    for (i = 0; i < sizeof(computed_vars) / sizeof(computed_vars[0]); ++i) {
        rc = register_one(c, computed_vars[i].name, computed_vars[i].desc,
                          computed_vars[i].var_class, computed_vars[i].read,
                          (void *) computed_vars[i].what);
        if (rc < 0) {
            return rc;
        }
    }
    return OPAL_SUCCESS;
}

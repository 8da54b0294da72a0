/*
 * cpc_rdma_cm.h - the rdma_cm CPC's pieces, shared by its files only:
 *   cpc_rdma_cm.c       component and module: parameters, query, listener
 *   cpc_rdma_cm_addr.c  which IPv4 address a port answers on
 *   cpc_rdma_cm_conn.c  the handshake (described there): bookkeeping and the
 *                       endpoints; its other files (initiator, responder,
 *                       iwarp, events) are listed in cpc_rdma_cm_conn.h
 *   cpc_rdma_cm_listen.c  the listeners' channel and the thread that says
 *                       "busy" for a process that is not in MPI
 * Its modex blob and private-data formats: wire/rdma_cm_wire.[ch].
 */
#ifndef CPC_RDMA_CM_H
#define CPC_RDMA_CM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "openib/openib_cpc.h"
#include "connect/cpc_auth.h"
#include "connect/cpc_internal.h"
#include "wire/rdma_cm_wire.h"

struct rdma_cm_id;

/* ---- addresses (cpc_rdma_cm_addr.c) ---- */

/* The port's IPv4 address (network order): port->ipv4, else its
 * IPv4-mapped GID, else its network interface's address. */
int rcm_port_ipv4(const struct openib_cpc_port *port, uint32_t *ip, char *why,
                  size_t why_len) CPC_HIDDEN;

/* ---- the module and the handshake (cpc_rdma_cm_conn.c) ---- */

/* Every cm_id's context starts with one of these, so an event handler can
 * tell a listener (and the ids born from it, which inherit its context)
 * from an endpoint's id. */
enum rcm_tag { RCM_TAG_LISTENER = 0x4c697374, RCM_TAG_EP = 0x45706e74 };

struct rcm_module;

/* A copy of what we need from one event (it is acknowledged before use). */
struct rcm_event {
    int type;                    /* enum rdma_cm_event_type */
    int status;
    struct rdma_cm_id *id;
    struct rdma_cm_id *listen_id;
    struct rcm_module *mod;      /* CONNECT_REQUEST: the listener's module */
    uint32_t qp_num;
    uint8_t responder_resources; /* CONNECT_REQUEST: what the initiator offers */
    uint8_t initiator_depth;
    uint8_t priv[RCM_PRIV_MAX];
    size_t priv_len;
};

struct rcm_listen_ctx {
    uint32_t tag;                             /* RCM_TAG_LISTENER */
    struct rcm_module *mod;
};

struct rcm_module {
    struct openib_cpc_module base;            /* first: the framework sees this */
    struct rdma_cm_id *listen_id;
    struct rcm_listen_ctx lctx;               /* listen_id's context */
    uint32_t ip;                              /* network order */
    uint16_t tcp_port;                        /* host order */
    void *btl;                                /* for endpoint_for_peer */
    const struct openib_cpc_btl_ops *btl_ops; /* learned at endpoint_init */
    /* iWARP: the CM moves the QPs; each QP gets a connection of its own.
     * The RDMA read depths we offer: the device's limits. */
    bool iwarp;
    uint8_t max_rd_atom;                      /* responder resources */
    uint8_t max_init_rd_atom;                 /* initiator depth */
};

/* How many times one connection (or a listener) may meet a local port in
 * use. The rdma_cm picks the local port at random in its own port space;
 * an iWARP device that runs its connections over the host's TCP (siw; any,
 * when no iWARP port mapper, iwpmd, keeps the two spaces apart) then binds
 * a TCP socket to it and connects, which fails when the host's TCP holds
 * the port (a listener) or the same address pair (a socket of an earlier
 * connection in TIME_WAIT, 60 s on Linux: a busy job leaves many to each
 * peer's listener). rdma_connect then fails at once: nothing was sent and
 * the QP was not touched, so a fresh cm_id, with another port, costs only
 * a local address and route resolution. With a fraction f of the range
 * unusable, N tries all fail with probability f^N: 64 keeps that
 * negligible even when most of a narrow range is held, and fails with a
 * clear reason when all of it is. */
#define RCM_PORT_TRIES 64

struct rcm_params {
    int port;      /* listening port, 0 = ephemeral */
    int timeout_s; /* silence bound: no answer at all from the peer */
    int retries;
};
extern struct rcm_params rcm_params CPC_HIDDEN;

/* The process's one event channel (non-blocking), shared by every module,
 * for the endpoints' cm_ids. Each reference also holds the listeners'
 * channel and its thread (cpc_rdma_cm_listen.c). */
struct rdma_event_channel *rcm_channel_get(char *why, size_t why_len) CPC_HIDDEN;
void rcm_channel_put(void) CPC_HIDDEN;

/* ---- the listeners' channel (cpc_rdma_cm_listen.c) ---- */

/* Start (first reference) or reference the listeners' channel and its
 * thread; NULL with why filled on failure. */
struct rdma_event_channel *rcm_listen_get(char *why, size_t why_len) CPC_HIDDEN;
void rcm_listen_put(void) CPC_HIDDEN;
/* The channel every listener is created on (after rcm_listen_get). */
struct rdma_event_channel *rcm_listen_channel(void) CPC_HIDDEN;
/* After destroying mod's listener: drop (destroy) its requests still
 * queued, which point at mod. */
void rcm_listen_forget(const struct rcm_module *mod) CPC_HIDDEN;
/* The oldest connection request the thread queued and has not answered
 * "busy"; false when none (one atomic load). The caller owns ev->id: it
 * must answer it, and move it to the main channel before accepting it. */
bool rcm_listen_take(struct rcm_event *ev) CPC_HIDDEN;
/* Our process name, for the thread's REJ(BUSY) header. */
void rcm_listen_set_local_id(const void *id) CPC_HIDDEN;

int rcm_endpoint_init(struct openib_cpc_module *m, struct openib_cpc_endpoint *cep) CPC_HIDDEN;
int rcm_start_connect(struct openib_cpc_module *m, struct openib_cpc_endpoint *cep) CPC_HIDDEN;
int rcm_endpoint_finalize(struct openib_cpc_module *m, struct openib_cpc_endpoint *cep) CPC_HIDDEN;
void rcm_conn_finalize(void) CPC_HIDDEN;

#endif

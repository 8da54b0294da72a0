/*
 * cpc_rdma_cm.h - the rdma_cm CPC's pieces, shared by its files only:
 *   cpc_rdma_cm.c       component and module: parameters, query, listener
 *   cpc_rdma_cm_addr.c  which IPv4 address a port answers on
 *   cpc_rdma_cm_wire.c  the private-data format (pure; unit-tested)
 *   cpc_rdma_cm_conn.c  the handshake: events, crossing rule, timers
 */
#ifndef CPC_RDMA_CM_H
#define CPC_RDMA_CM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "openib/openib_cpc.h"
#include "connect/cpc_internal.h"

struct rdma_cm_id;

#define RCM_ID_LEN 8 /* opal_process_name_t */

/* ---- modex blob: version, 0, TCP port (big-endian), IPv4 (network order) ---- */
#define RCM_BLOB_VERSION 1
#define RCM_BLOB_LEN 8

/* ---- private data (cpc_rdma_cm_wire.c has the layout and the reasons) ---- */

/* What librdmacm lets a consumer carry on the IB CM (InfiniBand and RoCE):
 * a REQ has 92 bytes, of which rdma_cm's own header takes 36. */
#define RCM_REQ_PRIV_MAX 56
#define RCM_REP_PRIV_MAX 196
#define RCM_REJ_PRIV_MAX 148

#define RCM_HDR_LEN 11
#define RCM_BODY_LEN(nqps) (14 + 6 * (nqps))
#define RCM_BODY_MAX RCM_BODY_LEN(OPENIB_CPC_MAX_QPS)
#define RCM_CHUNK_MAX (RCM_REQ_PRIV_MAX - RCM_HDR_LEN)
#define RCM_CHUNKS(len) (((len) + RCM_CHUNK_MAX - 1) / RCM_CHUNK_MAX)
#define RCM_MAX_CHUNKS RCM_CHUNKS(RCM_BODY_MAX)

enum rcm_type { RCM_REQ = 1, RCM_REP = 2, RCM_REJ = 3 };
enum rcm_reason {
    RCM_REJ_CROSS = 1,       /* crossing connects: the sender keeps initiating */
    RCM_REJ_LATER = 2,       /* not now (no endpoint for you yet, or our answer
                                failed): try again after a back-off */
    RCM_REJ_MORE = 3,        /* chunk stored: send the next one */
    RCM_REJ_BAD = 4,         /* refused for good */
};

struct rcm_msg {
    enum rcm_type type;
    uint8_t src[RCM_ID_LEN];     /* the sender's process name bytes */
    uint8_t arg;                 /* REQ: chunk << 4 | count; REP: 0; REJ: reason */
    const uint8_t *rest;         /* what follows the header */
    size_t rest_len;
};

size_t rcm_hdr_encode(uint8_t *p, enum rcm_type type, const void *src, uint8_t arg) CPC_HIDDEN;
int rcm_msg_decode(const uint8_t *p, size_t len, struct rcm_msg *out) CPC_HIDDEN;
/* The QP data without qpn[0] (that one rides in conn_param.qp_num), nor the
 * GID, LID and MTU (the peer's modex already has them). Returns the length,
 * RCM_BODY_LEN(num_qps), or 0 when q cannot be carried. */
size_t rcm_body_encode(const struct openib_cpc_qp_info *q, uint8_t *body) CPC_HIDDEN;
/* Fills num_qps, qpn, psn, rq_layout and the mailbox; len must cover
 * RCM_BODY_LEN(num_qps). */
int rcm_body_decode(const uint8_t *body, size_t len, uint32_t qpn0,
                    struct openib_cpc_qp_info *q) CPC_HIDDEN;

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
};

struct rcm_params {
    int port;      /* listening port, 0 = ephemeral */
    int timeout_s; /* one whole connection */
    int retries;
};
extern struct rcm_params rcm_params CPC_HIDDEN;

/* The process's one event channel (non-blocking), shared by every module. */
struct rdma_event_channel *rcm_channel_get(char *why, size_t why_len) CPC_HIDDEN;
void rcm_channel_put(void) CPC_HIDDEN;

int rcm_endpoint_init(struct openib_cpc_module *m, struct openib_cpc_endpoint *cep) CPC_HIDDEN;
int rcm_start_connect(struct openib_cpc_module *m, struct openib_cpc_endpoint *cep) CPC_HIDDEN;
int rcm_endpoint_finalize(struct openib_cpc_module *m, struct openib_cpc_endpoint *cep) CPC_HIDDEN;
void rcm_conn_finalize(void) CPC_HIDDEN;

#endif

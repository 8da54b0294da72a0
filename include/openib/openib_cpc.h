/*
 * openib_cpc.h - the connection pseudo-component (CPC) interface.
 *
 * A CPC is one way of wiring an RC connection between two BTL endpoints
 * (oob: a TCP side channel; rdma_cm: librdmacm; xoob: XRC over a TCP side
 * channel). The BTL owns the verbs objects (PD, CQs, QPs, receive buffers);
 * a CPC only exchanges the data each side needs and tells the BTL when to
 * move QPs along and when the connection is usable.
 *
 *   component  one per CPC kind, a static const table:
 *              register -> init -> query (per port) -> finalize
 *   module     one per (CPC, port), returned by query: priority 0-100, a
 *              modex blob of at most 255 bytes, per-endpoint hooks
 *   endpoint   the CPC's view of one BTL endpoint (struct openib_cpc_endpoint)
 *
 * Every struct here is versioned by its leading `size` field; the rules are in
 * openib_abi.h. Version history:
 *   v1  first release.
 *   v2  component: `aliases`; module: `describe`; port: `ipv4`.
 *   v3  btl_ops: `peer_qp_info`, `connect_established` (a CM that moves the
 *       QPs itself, iWARP); module: `uses_cts` given its meaning; port caps:
 *       OPENIB_PORT_CAP_IWARP.
 *   v4  port: `traffic_class`, `service_level` (for a CPC's own packets).
 *   v5  component: `progress`, `set_wake` (a CPC's own asynchronous work:
 *       handshake messages, timers, a passive side, driven by the BTL's
 *       progress instead of calls the BTL knows by name).
 *   v6  port: `xrc`, the BTL's XRC objects (struct openib_cpc_xrc_ops), for
 *       a CPC that connects XRC: xoob, or a plug-in.
 * A plug-in built against v1 headers keeps working: the framework reads the
 * v2 fields only when the caller's size says they are there.
 */
#ifndef OPENIB_CPC_H
#define OPENIB_CPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "openib/openib_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define OPENIB_CPC_ABI_VERSION 6

/* Return codes: these are Open MPI's OPAL_* values (opal/constants.h), spelled
 * out so plug-ins need no Open MPI headers. */
#define OPENIB_CPC_SUCCESS            0
#define OPENIB_CPC_ERROR             -1
#define OPENIB_CPC_ERR_OUT_OF_RESOURCE -2
#define OPENIB_CPC_ERR_BAD_PARAM     -5
#define OPENIB_CPC_ERR_NOT_SUPPORTED -8
#define OPENIB_CPC_ERR_UNREACH      -12

#define OPENIB_CPC_NAME_MAX 32
#define OPENIB_CPC_BLOB_MAX 255
#define OPENIB_CPC_WHY_MAX 160

/* Stable wire ids of the CPCs: carried in the modex, never renumbered or
 * reused. 64..127 are for out-of-tree and test plug-ins. */
enum openib_cpc_id {
    OPENIB_CPC_ID_OOB = 1,
    OPENIB_CPC_ID_RDMA_CM = 2,
    OPENIB_CPC_ID_XOOB = 3,
    OPENIB_CPC_ID_PLUGIN_FIRST = 64,
    OPENIB_CPC_ID_PLUGIN_LAST = 127,
};

/* Device capabilities a CPC may need to decide in query(). */
#define OPENIB_PORT_CAP_XRC (1u << 0)
#define OPENIB_PORT_CAP_SRQ (1u << 1)
/* The port's transport is iWARP: its RC QPs are connected only by the iWARP
 * connection manager (MPA over TCP), never by ibv_modify_qp to RTR/RTS from
 * user space. A CPC that moves QPs by hand must decline such a port. */
#define OPENIB_PORT_CAP_IWARP (1u << 2)

struct ibv_context;
struct openib_cpc_endpoint;
struct ibv_pd;
struct openib_cpc_xrc_ops;

/*
 * The port a CPC is asked about (BTL -> CPC, read-only for the CPC).
 * Rules: openib_abi.h. v1 ends at `btl`; v2 added `ipv4`; v4 added
 * `traffic_class` and `service_level`; v6 `xrc` (check with
 * OPENIB_HAS_FIELD).
 */
struct openib_cpc_port {
    uint32_t size;               /* v1: sizeof as the BTL was compiled */
    uint32_t caps;               /* v1: OPENIB_PORT_CAP_* */
    const char *dev_name;        /* v1: e.g. "rxe0" */
    uint8_t port_num;            /* v1: 1-based verbs port number */
    uint8_t link_layer;          /* v1: IBV_LINK_LAYER_* */
    uint16_t lid;                /* v1: 0 on Ethernet link layers */
    uint32_t mtu;                /* v1: active path MTU in bytes */
    uint8_t gid[16];             /* v1: the GID the BTL uses on this port */
    uint64_t subnet_prefix;      /* v1: host byte order */
    int gid_index;               /* v1 */
    struct ibv_context *ctx;     /* v1 */
    struct ibv_pd *pd;           /* v1 */
    void *btl;                   /* v1: opaque BTL module */
    uint32_t ipv4;               /* v2: network byte order, 0 = none known */
    uint8_t traffic_class;       /* v4: btl_openib_traffic_class: the GRH TClass
                                    (RoCE v2: IP TOS) of packets the CPC itself
                                    sends, as of the BTL's own */
    uint8_t service_level;       /* v4: btl_openib_ib_service_level, likewise */
    const struct openib_cpc_xrc_ops *xrc; /* v6: set only with OPENIB_PORT_CAP_XRC */
};
#define OPENIB_CPC_PORT_V1_SIZE OPENIB_SIZE_THROUGH(struct openib_cpc_port, btl)

/*
 * What one side of a connection tells the other (filled by the BTL).
 * Rules: openib_abi.h. The CPC carries it on its own wire format.
 */
#define OPENIB_CPC_MAX_QPS 8
struct openib_cpc_qp_info {
    uint32_t size;               /* v1 */
    uint32_t mtu;                /* v1: path MTU in bytes */
    uint8_t gid[16];             /* v1 */
    uint16_t lid;                /* v1 */
    uint8_t num_qps;             /* v1: <= OPENIB_CPC_MAX_QPS */
    uint8_t pad;                 /* v1: zero */
    uint32_t qpn[OPENIB_CPC_MAX_QPS];  /* v1 */
    uint32_t psn[OPENIB_CPC_MAX_QPS];  /* v1 */
    uint32_t rq_layout;          /* v1: hash of the receive-queue spec; both
                                    sides must agree */
    uint32_t mailbox_rkey;       /* v1: rkey of the credit mailbox */
    uint64_t mailbox_addr;       /* v1: where the peer RDMA-writes returned
                                    credits (one uint32 per queue) */
};
#define OPENIB_CPC_QP_INFO_INITIALIZER { .size = sizeof(struct openib_cpc_qp_info) }

/*
 * Calls from a CPC back into the BTL (BTL -> CPC table, read-only).
 * Rules: openib_abi.h. v1 ends at `endpoint_for_peer`; v3 added
 * `peer_qp_info` and `connect_established` (check with OPENIB_HAS_FIELD).
 */
struct openib_cpc_btl_ops {
    uint32_t size;
    /* Our side's QP data for this endpoint (creates the QPs if needed). */
    int (*local_qp_info)(void *btl_ep, struct openib_cpc_qp_info *out);
    /* Move our QPs to RTR with the peer's data; `to_rts` also moves to RTS. */
    int (*connect_qps)(void *btl_ep, const struct openib_cpc_qp_info *peer, bool to_rts);
    /* Move our QPs from RTR to RTS. */
    int (*qps_to_rts)(void *btl_ep);
    /* Post receive buffers once our QPs are locally connected (not for CTS CPCs). */
    int (*post_recvs)(void *btl_ep);
    /* Both sides are connected: the endpoint may send. */
    void (*connect_complete)(void *btl_ep);
    /* The connection failed; `why` is shown to the user with the peer's name. */
    void (*connect_failed)(void *btl_ep, int rc, const char *why);
    /* The CPC view of the local endpoint for a peer that contacted us, the
     * peer identified by the process-name bytes it sent. NULL with `why`
     * filled when there is none (yet): the peer should retry. */
    struct openib_cpc_endpoint *(*endpoint_for_peer)(void *btl, const void *peer_id,
                                                     size_t peer_id_len, char *why,
                                                     size_t why_len);
    /* v3: for a CM that moves the QPs itself (iWARP): check the peer's data
     * (queue layout) and keep what the BTL needs of it (credit mailbox);
     * the QPs are not touched. Instead of connect_qps. */
    int (*peer_qp_info)(void *btl_ep, const struct openib_cpc_qp_info *peer);
    /* v3: for a module with uses_cts, instead of connect_complete: the CM
     * connected every QP. `initiator`: this side sent the connection
     * requests; it sends first (a CTS message on every QP) and is
     * connected. The other side sends nothing (no data, no credit write,
     * no RDMA) until a message arrived on every QP; then it is connected. */
    void (*connect_established)(void *btl_ep, bool initiator);
};
#define OPENIB_CPC_BTL_OPS_V1_SIZE \
    OPENIB_SIZE_THROUGH(struct openib_cpc_btl_ops, endpoint_for_peer)

/*
 * One side of an XRC connection as the other side needs it (filled by the
 * side it describes; the CPC carries it on its own wire format).
 * Rules: openib_abi.h. v6: all members below.
 */
struct openib_cpc_xrc_peer {
    uint32_t size;
    uint32_t qpn;                /* initiator: its send QP; responder: its target QP */
    uint32_t psn;                /* the initiator's send PSN */
    uint32_t mtu;                /* path MTU in bytes */
    uint8_t gid[16];
    uint16_t lid;
};
#define OPENIB_CPC_XRC_PEER_INITIALIZER { .size = sizeof(struct openib_cpc_xrc_peer) }

/*
 * The BTL's XRC objects (BTL -> CPC table, read-only), reached through
 * openib_cpc_port.xrc. XRC sends are one-way and a send QP is shared by
 * every endpoint to one remote node, so the CPC owns the sharing (which
 * endpoints use which send QP, and how its send WQEs are split) and the
 * BTL owns the verbs objects. Rules: openib_abi.h. v6: all members below.
 */
struct openib_cpc_xrc_ops {
    uint32_t size;
    /* The port's XRC SRQ numbers (one per receive queue, up to max, count in
     * *n) and the queue layout hash; either output may be NULL.
     * NOT_SUPPORTED when the port has no XRC SRQs. */
    int (*port_srqs)(void *btl, uint32_t *srqn, int max, int *n, uint32_t *rq_layout);
    /* A send QP in INIT for a remote node that `sharers` endpoints use;
     * *wqe_cap is how many send WQEs it holds. */
    int (*send_qp_create)(void *btl, int sharers, void **qp, uint32_t *qpn, uint32_t *psn,
                          uint32_t *wqe_cap);
    /* The send QP to RTR and RTS towards the peer's target QP. */
    int (*send_qp_connect)(void *btl, void *qp, uint32_t psn,
                           const struct openib_cpc_xrc_peer *tgt, char *why, size_t why_len);
    void (*send_qp_destroy)(void *btl, void *qp);
    /* Responder: the target QP (in RTR) for an initiator's send QP, made,
     * or found again for a repeated request. */
    int (*tgt_qp_get)(void *btl, const struct openib_cpc_xrc_peer *initiator,
                      uint32_t *tgt_qpn, char *why, size_t why_len);
    /* The endpoint sends on the shared send QP `qp` (connected) into the
     * peer's SRQs srqn[0..nsrq). *per_q: in, the send WQEs per queue the CPC
     * set aside on the QP for this endpoint; out, how many it takes (the
     * BTL may take fewer). */
    int (*ep_attach)(void *btl_ep, void *qp, const uint32_t *srqn, int nsrq, uint32_t *per_q,
                     char *why, size_t why_len);
    /* Undo ep_attach before endpoint teardown; the QP stays the CPC's. */
    void (*ep_detach)(void *btl_ep);
};

/*
 * The CPC's view of one BTL endpoint (BTL -> CPC; the CPC owns only
 * `cpc_private`). Rules: openib_abi.h. v1: all members below.
 */
struct openib_cpc_endpoint {
    uint32_t size;
    void *btl_ep;                           /* opaque, handed back in btl_ops */
    const struct openib_cpc_btl_ops *btl_ops;
    const char *peer_desc;                  /* "rank 3 on node17", for messages */
    const void *local_id;                   /* our process name bytes */
    const void *peer_id;                    /* the peer's process name bytes */
    uint8_t id_len;                         /* length of both ids */
    const uint8_t *peer_blob;               /* the peer port's blob for this CPC */
    uint8_t peer_blob_len;
    const struct openib_cpc_port *peer_port;/* the peer port's identity (decoded modex) */
    void *cpc_private;                      /* the CPC's per-endpoint state */
};

struct openib_cpc_module;

/*
 * CPC component table: one `static const` instance per CPC.
 * Rules: openib_abi.h. v1 ends at `finalize`; v2 added `aliases`; v5
 * `progress` and `set_wake` (check with OPENIB_HAS_FIELD).
 */
struct openib_cpc_component {
    uint32_t size;               /* v1 */
    uint32_t abi_version;        /* v1: OPENIB_CPC_ABI_VERSION the CPC was built with */
    const char *name;            /* v1: "oob", "rdma_cm", "xoob" */
    uint8_t id;                  /* v1: enum openib_cpc_id; stable on the wire */
    uint8_t default_priority;    /* v1: 0..100, overridable by
                                    btl_openib_connect_<name>_priority */
    /* v1: register MCA parameters only. May be NULL. */
    void (*register_params)(const struct openib_cpc_component *self);
    /* v1: once per process; NOT_SUPPORTED removes this CPC quietly for the
     * rest of the process; other errors propagate. `why` explains a decline.
     * May be NULL. */
    int (*init)(char *why, size_t why_len);
    /* v1: per port; on success *out is a module for this port. NOT_SUPPORTED
     * declines this port (with `why`); other errors propagate. Required. */
    int (*query)(const struct openib_cpc_port *port, int priority,
                 struct openib_cpc_module **out, char *why, size_t why_len);
    /* v1: once at shutdown, after every module is finalized. May be NULL. */
    int (*finalize)(void);
    /* v2: NULL-terminated other names accepted in include/exclude lists. */
    const char *const *aliases;
    /* v5: the CPC's own work (messages that arrived, timers, a passive
     * side's requests), run by the BTL's progress in the thread that drives
     * MPI, with the BTL's lock held: btl_ops may be called from here. Called
     * every few progress calls with `urgent` false, and on the next progress
     * call with `urgent` true after the CPC asked through its wake function.
     * Must not block. Returns the number of events handled. Only while init
     * has succeeded and finalize has not run. May be NULL. */
    int (*progress)(bool urgent);
    /* v5: called once after a successful init with the function the CPC's
     * own threads call (any thread, any time, lock-free) when they queued
     * work for `progress`: without it, a process that calls MPI rarely would
     * see that work only every few progress calls. May be NULL. */
    void (*set_wake)(void (*wake)(void));
};
#define OPENIB_CPC_COMPONENT_V1_SIZE OPENIB_SIZE_THROUGH(struct openib_cpc_component, finalize)

/*
 * CPC module: one per (CPC, port), owned by the CPC.
 * Rules: openib_abi.h. v1 ends at `uses_cts`; v2 added `describe`.
 */
struct openib_cpc_module {
    uint32_t size;                                   /* v1 */
    const struct openib_cpc_component *component;    /* v1 */
    uint8_t priority;                                /* v1: 0..100 */
    uint8_t blob_len;                                /* v1: <= 255 */
    uint8_t blob[OPENIB_CPC_BLOB_MAX];               /* v1: published in the modex */
    int (*endpoint_init)(struct openib_cpc_module *m, struct openib_cpc_endpoint *ep);   /* v1 */
    int (*start_connect)(struct openib_cpc_module *m, struct openib_cpc_endpoint *ep);   /* v1 */
    int (*endpoint_finalize)(struct openib_cpc_module *m, struct openib_cpc_endpoint *ep); /* v1 */
    int (*finalize)(struct openib_cpc_module *m);    /* v1 */
    /* v1 (meaning given in v3): the transport's rule that the side that
     * initiated a connection sends first, as iWARP's MPA (RFC 5044 7.1.2:
     * the responder sends nothing before the initiator's first message).
     * The CPC then reports btl_ops->connect_established, not
     * connect_complete, and the BTL keeps the rule (see there). */
    bool uses_cts;
    /* v2: one line about the module for verbose output; may be NULL. */
    int (*describe)(const struct openib_cpc_module *m, char *buf, size_t len);
};
#define OPENIB_CPC_MODULE_V1_SIZE OPENIB_SIZE_THROUGH(struct openib_cpc_module, uses_cts)

#define OPENIB_CPC_PORT_INITIALIZER { .size = sizeof(struct openib_cpc_port) }
#define OPENIB_CPC_ENDPOINT_INITIALIZER { .size = sizeof(struct openib_cpc_endpoint) }
#define OPENIB_CPC_MODULE_INITIALIZER { .size = sizeof(struct openib_cpc_module) }

/* openib_cpc_port_init() and _destroy(), and the same of openib_cpc_endpoint,
 * openib_cpc_module and openib_cpc_qp_info (OPENIB_ABI_SIZED_FUNCTIONS,
 * openib_abi.h): int X_init(struct X *), void X_destroy(struct X *). */
OPENIB_ABI_SIZED_FUNCTIONS(openib_cpc_port)
OPENIB_ABI_SIZED_FUNCTIONS(openib_cpc_endpoint)
OPENIB_ABI_SIZED_FUNCTIONS(openib_cpc_module)
OPENIB_ABI_SIZED_FUNCTIONS(openib_cpc_qp_info)

/* Entry point a CPC plug-in library exports (dlsym name below): returns its
 * component table. */
#define OPENIB_CPC_PLUGIN_SYMBOL "openib_cpc_plugin_component"
typedef const struct openib_cpc_component *(*openib_cpc_plugin_fn)(void);

#ifdef __cplusplus
}
#endif
#endif /* OPENIB_CPC_H */

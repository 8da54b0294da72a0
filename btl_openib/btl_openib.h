/*
 * btl_openib.h - the openib BTL's component, device, module and endpoint.
 *
 * One module per active verbs port. Endpoints are created CLOSED at
 * add_procs and connected lazily by a CPC on the first send. Each endpoint
 * has one RC QP per receive queue of btl_openib_receive_queues.
 */
#ifndef BTL_OPENIB_H
#define BTL_OPENIB_H

#include "opal_config.h"

#include <infiniband/verbs.h>
#include <pthread.h>

#include "opal/class/opal_free_list.h"
#include "opal/class/opal_hash_table.h"
#include "opal/class/opal_list.h"
#include "opal/class/opal_pointer_array.h"
#include "opal/mca/btl/btl.h"
#include "opal/mca/rcache/rcache.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"

#include "openib/openib_cpc.h"
#include "connect/openib_connect.h"
#include "btl_openib/btl_openib_device_defaults.h"
#include "btl_openib/btl_openib_handle.h"
#include "btl_openib/btl_openib_rq_spec.h"
#include "btl_openib/btl_openib_lazy.h"
#include "btl_openib/btl_openib_release_log.h"

#define OPENIB_MAX_CPCS 4
/* Scatter/gather entries a send work request uses at most: our header,
 * the PML's, the payload (btl_openib_limits.c skips a device with fewer). */
#define OPENIB_SEND_MAX_SGE 3
/* Slots of the QP-number cache in front of qp_map (btl_openib_qp_map.h):
 * 256 x 16 bytes per port, enough that the peers a process talks to at
 * once rarely share one. */
#define OPENIB_QPN_CACHE 256
/* Idle closes under way at once per port (btl_openib_peer_limit.c). */
#define OPENIB_MAX_PARKING 8

/* An endpoint's part in closing an idle connection. */
enum openib_park {
    OPENIB_PARK_NONE = 0,
    OPENIB_PARK_ASKED,     /* we sent CLOSE_REQ and wait for the answer */
    OPENIB_PARK_CLOSER,    /* the peer agreed: we close (at the next progress) */
    OPENIB_PARK_RESPONDER, /* we agreed: we close once the peer has closed */
};

struct openib_pack_cache;

/* A verbs device: one per ibv_context, shared by its ports' modules. */
struct openib_device {
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_device_attr attr;
    mca_rcache_base_module_t *rcache;
    struct openib_hmem_object *hmem;
    char name[64];
    int refcount;
    bool xrc;
    struct openib_device_choice defaults; /* what the device table says of it, looked up
                                            once at open (btl_openib_device_defaults.c) */
    struct ibv_xrcd *xrcd;               /* XRC: the node-wide domain (btl_openib_xrc.c) */
    int xrcd_fd;                         /* XRC: its file, open while the domain is */
    int reg_errno;                       /* the last ibv_reg_mr failure, for the user */
    size_t reg_failed_bytes;
    /* registration cache (MPI_T): requests, those that pinned, bytes pinned
     * now (atomic: the cache's invalidation changes it without our lock) */
    uint64_t reg_requests, reg_misses;
    volatile int64_t reg_pinned_bytes;
    /* how far the cache has caught up with the memory the process released
     * (btl_openib_release_log.h says why it has to) */
    struct openib_release_cursor released;
};

/* Our registration: the rcache's record plus the verbs MR behind it. */
struct openib_reg {
    mca_rcache_base_registration_t base;
    struct ibv_mr *mr;
    mca_btl_base_registration_handle_t *handle_view;
};


/* A bounce handle: the handle ob1 sees, plus where the memory lives. */
struct openib_bounce_handle {
    mca_btl_base_registration_handle_t h;   /* first: ob1 holds &h */
    int iface;                              /* enum openib_hmem_iface */
    uint64_t device;
};

/* Slots of the per-CPC connection counters: oob, rdma_cm, xoob, others. */
#define OPENIB_STATS_CPCS 4

/* Statistics of a port: shown at verbose >= 10 on finalize, used by tests,
 * read through MPI_T (btl_openib_pvars.c, summed over the ports). */
struct openib_stats {
    uint64_t sends, send_bytes, recvs, recv_bytes;
    uint64_t puts, gets, atomics, credit_writes, inline_sends, queued_for_credits;
    uint64_t inplace_sends, bounced;
    uint64_t eager_rdma_sends, eager_rdma_frag_sends, eager_rdma_recvs, eager_rdma_rings;
    uint64_t packed_bytes;   /* non-contiguous payload packed into fragments */
    /* messages by path (bytes: PML header and payload) */
    uint64_t queue_msgs, queue_bytes;    /* from a fragment, into a receive queue */
    uint64_t frag_inline_msgs, frag_inline_bytes; /* fragment-less inline sendi */
    uint64_t ring_bytes;                 /* RDMA-written into an eager ring */
    uint64_t put_bytes, get_bytes;
    uint64_t srq_low;                    /* a shared queue's limit event */
    uint64_t ring_offers_taken;          /* rings peers offered us */
    uint64_t recv_short;                 /* receives too short for our header: dropped */
    uint64_t conn_made[OPENIB_STATS_CPCS], conn_failed;
    uint64_t conn_closed_idle;           /* idle connections closed (btl_openib_max_peers) */
    uint64_t conn_usec_sum[OPENIB_STATS_CPCS], conn_usec_max[OPENIB_STATS_CPCS];
};

enum openib_frag_kind {
    OPENIB_FRAG_SEND,
    OPENIB_FRAG_RECV,
    OPENIB_FRAG_RDMA,
    OPENIB_FRAG_MARKER,   /* teardown: its completion ends a QP's work (btl_openib_teardown.c) */
    OPENIB_FRAG_MARKER_DONE, /* a marker whose completion came (or that was never queued),
                                held by its endpoint until its QPs are destroyed */
};

/* What a free list's item initializer needs to know about its list. */
struct openib_frag_list_ctx {
    struct mca_btl_openib_module *m;
    opal_free_list_t *home;
    enum openib_frag_kind kind;
    uint8_t qp;
    uint32_t size;                       /* each item's registered buffer, bytes */
};

typedef struct mca_btl_openib_module {
    mca_btl_base_module_t super;
    struct openib_device *dev;
    uint8_t port_num;
    struct ibv_port_attr port_attr;
    int gid_index;
    union ibv_gid gid;
    uint32_t ipv4;                       /* from a RoCE v2 IPv4 GID, network order */
    struct ibv_cq *cq;
    int cq_recv;                         /* CQ entries kept for receives (btl_openib_cq.h) */
    int32_t send_budget;                 /* send WRs the port may still post (btl_openib_cq.h) */
    int32_t send_budget_total;
    struct ibv_srq *srq[OPENIB_MAX_QUEUES]; /* S queues; XRC SRQs for X queues */
    uint32_t srq_wr[OPENIB_MAX_QUEUES];  /* buffers posted to each (grows on its limit event) */
    struct openib_xrc_tgt *xrc_tgts;     /* XRC: target QPs made for remote send QPs */
    struct openib_cpc_port cpc_port;
    struct openib_cpc_module *cpcs[OPENIB_MAX_CPCS];
    int num_cpcs;
    uint32_t max_inline;
    int eager_rdma_num;                  /* peers with a ring: the parameter, or the device
                                            table's value (btl_openib_device_defaults.c) */
    int index;                           /* among our modules */
    bool frags_ready;
    bool finalized;
    opal_free_list_t send_frags[OPENIB_MAX_QUEUES];  /* registered, one size class per queue */
    /* Smaller send buffers for queue 0, when its buffers are large
     * (btl_openib_frag.c): a queue's receive buffer size says what may
     * arrive, not what each sender must hold for a small message. */
    opal_free_list_t send_small[OPENIB_SEND_SMALL_CLASSES];
    int num_send_small;
    opal_free_list_t recv_frags[OPENIB_MAX_QUEUES];
    opal_free_list_t rdma_frags;         /* put/get/atomic descriptors */
    /* Endpoints' credit mailboxes, carved from registered chunks: a peer
     * costs 2 x OPENIB_MAILBOX_ENTRIES words, not two MRs and their pages. */
    opal_free_list_t mailboxes;
    struct openib_frag_list_ctx fl_ctx[2 * OPENIB_MAX_QUEUES + 1 + OPENIB_SEND_SMALL_CLASSES];
    opal_pointer_array_t endpoints;      /* every endpoint of this module */
    opal_proc_table_t peers;             /* process name -> endpoint (btl_openib_proc.c) */
    opal_hash_table_t qp_map;            /* local QP number -> endpoint */
    struct openib_qpn_slot {             /* qp_map's answers, direct-mapped */
        uint32_t qpn;
        struct mca_btl_base_endpoint_t *ep;
    } qpn_cache[OPENIB_QPN_CACHE];       /* (btl_openib_qp_map.h) */
    opal_list_t stalled;                 /* endpoints with sends waiting for credits */
    struct mca_btl_base_endpoint_t **eager_eps; /* endpoints whose ring we poll */
    int num_eager;
    mca_btl_base_module_error_cb_fn_t error_cb;
    struct openib_pack_cache *pack_cache; /* hooked packing's cursors (btl_openib_pack.c) */
    /* btl_openib_max_peers (btl_openib_peer_limit.c) */
    opal_list_t lru;                     /* connected peers' lru_items, least recently
                                            used first (only while max_peers > 0) */
    struct mca_btl_base_endpoint_t *parking[OPENIB_MAX_PARKING]; /* idle closes agreed */
    int num_parking;
    bool over_limit;                     /* more peers than allowed, none idle yet */
    uint64_t limit_next_usec;            /* when to look for an idle one again */
    struct openib_stats stats;
} mca_btl_openib_module_t;

/* One RC QP of an endpoint and its flow control. */
struct openib_ep_qp {
    struct ibv_qp *qp;
    uint32_t psn;
    int32_t sd_wqe;          /* send WQEs we may still post */
    /* Selective signaling: a signaled WQE's completion also frees the
     * unsignaled ones posted before it (RC completes in order). */
    uint32_t unsignaled;     /* posted unsignaled since the last signaled WQE */
    uint32_t *reclaim;       /* ring: WQEs each pending signaled WQE frees */
    uint32_t sq_bytes;       /* its send queue's size (btl_openib_peer_cost.h) */
    uint32_t reclaim_head, reclaim_tail, reclaim_size;
    /* Per-peer (P) queues: the peer posted `count` buffers for us. */
    uint32_t sent;           /* sends posted to the peer's buffers, ever */
    uint32_t peer_returned;  /* buffers the peer reposted, ever (learned) */
    uint32_t reposted;       /* buffers we reposted for the peer, ever */
    uint32_t advertised;     /* the last `reposted` value the peer was told */
};

/* Eager RDMA (btl_openib_eager_rdma.c): per direction, a ring of slots the
 * receiver polls in memory. */
struct openib_eager_rdma {
    /* receiving: our ring, written by the peer */
    char *ring;
    struct ibv_mr *ring_mr;
    volatile uint32_t *next_seq; /* the next slot's footer seq: what polling reads */
    uint32_t recv_slot;        /* that slot's index */
    uint32_t recv_n;           /* messages taken from the ring, ever */
    uint32_t recv_advertised;  /* the last recv_n the peer was told */
    uint32_t seen;             /* messages received the other way (threshold) */
    bool offered;
    bool busy;                 /* a message of this ring is being delivered */
    /* sending: the peer's ring (peer_rkey 0: none) */
    uint64_t peer_addr;
    uint32_t peer_rkey, peer_slots, peer_slot_size;
    uint32_t sent_n;           /* messages written, ever */
    uint32_t peer_returned;    /* slots the peer consumed, ever (learned) */
};



struct mca_btl_base_endpoint_t {
    opal_list_item_t super;              /* on module->stalled */
    mca_btl_openib_module_t *module;
    opal_proc_t *proc;
    opal_process_name_t name;
    /* What the CPC needs of the peer's port, taken from its modex entry
     * (the entry itself, with every CPC's blob, is not kept per peer). */
    struct openib_cpc_port peer_cpc_port;
    char peer_dev_name[32];              /* peer_cpc_port.dev_name points here */
    struct openib_cpc_module *cpc;
    struct openib_modex_cpc remote_cpc;
    struct openib_cpc_endpoint cpc_ep;
    struct openib_lazy_conn conn;
    struct openib_ep_qp qps[OPENIB_MAX_QUEUES];
    int num_qps;
    /* Messages to the peer leave in the order they were handed to us and
     * are delivered in that order (btl_openib_order.c): */
    opal_list_t pending;                 /* frags waiting for a WQE or a credit, FIFO */
    uint16_t send_seq;                   /* the next message's seq */
    uint16_t recv_seq;                   /* the seq delivered next */
    opal_list_t held;                    /* received early (ahead of recv_seq), by seq */
    uint32_t cts_wait;                   /* uses_cts: bit q set until a message
                                            arrived on QP q (btl_openib_cts.h) */
    bool cts_established;                /* uses_cts responder: the CM connected all */
    bool qps_created;
    bool cq_reserved;                    /* its per-peer receives have CQ room */
    uint8_t park;                        /* enum openib_park */
    long park_deadline_ms;               /* a responder closes by then whatever the peer does */
    opal_list_item_t lru_item;           /* on module->lru (super is on `stalled`) */
    bool lru_linked;
    bool is_self;                        /* loopback: QPs connected to themselves */
    bool closing;                        /* being torn down: nothing new is posted */
    bool quiesced;                       /* its QPs' work is all completed (teardown) */
    int markers;                         /* teardown markers not completed yet */
    bool iwarp_broken;                   /* closing, an iWARP QP reported an error
                                          * (btl_openib_teardown.c, wait_markers) */
    opal_list_t marker_frags;            /* every marker of this connection, until its
                                            QPs are destroyed (btl_openib_teardown.c) */
    int32_t rdma_outstanding;            /* put/get/atomics not yet completed */
    struct openib_refusal refused;       /* the last RDMA refused for its handle
                                            (btl_openib_rdma.c, remote_covered) */
    bool stalled;
    int index;                           /* in module->endpoints */
    /* Credit mailbox: the peer RDMA-writes its `reposted` counters here. */
    opal_free_list_item_t *mailbox_item; /* from module->mailboxes: mailbox, then credit_src */
    volatile uint32_t *mailbox;
    uint32_t *credit_src;                /* what we RDMA-write to the peer */
    uint32_t mailbox_lkey, mailbox_rkey;
    uint64_t peer_mailbox_addr;
    uint32_t peer_mailbox_rkey;
    struct openib_eager_rdma eager;
    uint64_t conn_t0_usec;               /* when the connection started (statistics) */
    /* XRC (xoob): qps[q].qp is the remote node's shared send QP; each WR
     * names the peer's SRQ for queue q (btl_openib_xrc.c). */
    bool xrc;
    uint32_t xrc_srqn[OPENIB_MAX_QUEUES];
    char desc[96];                       /* "rank 1 (node) port rxe0:1" */
};
typedef struct mca_btl_base_endpoint_t mca_btl_openib_endpoint_t;
typedef struct mca_btl_base_endpoint_t mca_btl_base_endpoint_t;

struct mca_btl_openib_component {
    mca_btl_base_component_3_0_0_t super;
    int num_modules;
    mca_btl_openib_module_t **modules;
    struct openib_device **devices;
    int num_devices;
    struct openib_rq_spec rq;
    int pp_queue[OPENIB_MAX_QUEUES];     /* indices of rq's per-peer (P) queues */
    int num_pp;
    int output;                          /* opal_output stream for verbose */
    struct openib_hmem_object *hmem_root;
    bool told_user;                      /* a help text already said why openib stops */
};
typedef struct mca_btl_openib_component mca_btl_openib_component_t;

extern mca_btl_openib_component_t mca_btl_openib_component;
/* Writable: mca_btl_base_param_register stores the btl_openib_* limits into it. */
extern mca_btl_openib_module_t openib_module_template;

#define OPENIB_VERBOSE(lvl, ...)                                                 \
    do {                                                                         \
        if (openib_params.verbose >= (lvl)) {                                    \
            opal_output(mca_btl_openib_component.output, "openib: " __VA_ARGS__); \
        }                                                                        \
    } while (0)

/* device / port discovery (btl_openib_device.c) */
int openib_devices_open(void);
void openib_devices_close(void);

/* module setup and teardown (btl_openib_module_init.c) */
int openib_module_init(mca_btl_openib_module_t *m);
int openib_module_fini(mca_btl_openib_module_t *m);

/* endpoints (btl_openib_endpoint.c) */
mca_btl_openib_endpoint_t *openib_endpoint_create(mca_btl_openib_module_t *m, opal_proc_t *proc,
                                                  const struct openib_modex_port *peer);
void openib_endpoint_destroy(mca_btl_openib_endpoint_t *ep);
int openib_endpoint_reset(mca_btl_openib_endpoint_t *ep);
/* The connection attempt starts now, unless it started earlier (the time
 * to connect is counted from here). */
void openib_endpoint_note_started(mca_btl_openib_endpoint_t *ep);
/* The endpoint's QPs (one per receive queue) in INIT, with its credit
 * mailbox and CQ room; once per connection. */
int openib_endpoint_create_qps(mca_btl_openib_endpoint_t *ep);
/* what a CPC calls back into (btl_openib_endpoint_cpc.c) */
extern const struct openib_cpc_btl_ops openib_cpc_btl_ops;
/* The loopback endpoint needs no CPC: its QPs connect to themselves. */
int openib_endpoint_self_connect(mca_btl_openib_endpoint_t *ep);

/* modex (btl_openib_modex.c) */
int openib_modex_send(void);
int openib_modex_recv(opal_proc_t *proc, struct openib_modex_port *ports, int max, int *n);

/* progress (btl_openib_progress.c) */
int openib_component_progress(void);
/* Poll m's CQ once and handle what completed; returns how many. */
int openib_progress_cq(mca_btl_openib_module_t *m);
/* Handle everything m's CQ holds now (at most its size in completions, so
 * a peer's steady traffic cannot keep it going). */
void openib_progress_cq_drain(mca_btl_openib_module_t *m);
/* Hand a received message to its owner: the PML's callback for PML tags,
 * ours for OPENIB_TAG_EAGER_RDMA. data/len: after our wire header; ep may
 * be NULL (XRC receives come from a node, not an endpoint). */
void openib_deliver(mca_btl_openib_module_t *m, mca_btl_openib_endpoint_t *ep, uint8_t tag,
                    void *data, size_t len);

/* help (btl_openib_component.c) */
void openib_show_help(const char *topic, bool want_error_header, ...);

/* A device in use has no shared receive queues, or must not use them
 * (the device table's per_peer_queues: iWARP), why says which: unless the
 * user set btl_openib_receive_queues, every module uses the per-peer
 * default (OPENIB_DEFAULT_RECEIVE_QUEUES_NO_SRQ); said at verbose 10.
 * Called before the first module is made (btl_openib_device.c). */
int openib_component_queues_without_srq(const char *device, const char *why);

#endif /* BTL_OPENIB_H */

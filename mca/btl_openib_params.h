/*
 * btl_openib_params.h - the component's own MCA parameters (btl_openib_*).
 * Names follow the old openib BTL where one existed, so site settings keep
 * working. The CPC framework and the HMEM hooks register theirs separately.
 */
#ifndef BTL_OPENIB_PARAMS_H
#define BTL_OPENIB_PARAMS_H

#include <stdbool.h>
#include <stdint.h>

struct openib_params {
    int verbose;              /* btl_openib_verbose: 0 quiet .. 100 everything */
    char *if_include;         /* "dev" or "dev:port", comma-separated */
    char *if_exclude;
    char *receive_queues;     /* P/S/X queue specification */
    int cq_size;              /* completion queue entries per port */
    int max_inline_data;      /* -1: ask the device */
    int gid_index;            /* -1: pick automatically (RoCE v2 IPv4 first) */
    int ib_timeout;           /* local ACK timeout exponent (4.096 us * 2^n) */
    int ib_retry_count;       /* transport retries before a QP errors */
    int ib_rnr_retry;         /* 7 = retry forever on receiver-not-ready */
    int ib_service_level;     /* InfiniBand SL of our QPs' address vector (0-15) */
    int traffic_class;        /* GRH traffic class (RoCE: DSCP << 2 | ECN) */
    int max_send_wr;          /* send work requests per QP */
    int free_list_num;        /* fragments preallocated per size class */
    int free_list_max;        /* -1: unlimited */
    int free_list_inc;
    int flush_timeout;        /* seconds btl_flush waits for outstanding RDMA */
    int poll_batch;           /* completions taken per ibv_poll_cq call */
    int eager_rdma_num;       /* peers per port that get an eager-RDMA ring; 0: off */
    int max_peers;            /* connected peers per port before idle ones close; 0: no limit */
    int eager_rdma_threshold; /* messages from a peer before it gets one */
    int eager_rdma_slots;     /* slots per ring */
    int eager_rdma_slot_size; /* bytes per slot (message + 16-byte footer) */
    int want_fork_support;    /* 1: ibv_fork_init before any verbs resource */
    char *version;            /* read-only: our version string */
};

extern struct openib_params openib_params;

struct mca_base_component_2_1_0_t;
int openib_params_register(const struct mca_base_component_2_1_0_t *c);

/* Read any numeric btl_openib_<name> variable back from Open MPI
 * (an openib_param_get_fn, see btl_openib_param_check.h); user_set: its
 * value does not come from the default. */
bool openib_params_get(void *ctx, const char *name, int64_t *value, bool *user_set);
bool openib_params_user_set(const char *name);
/* Open MPI's index of the variable btl_openib_<name>, or -1 when none is
 * registered (a CPC or feature that is not built). */
int openib_params_index(const char *name);

/* The default receive-queue specification (works on IB, RoCE, iWARP, rxe).
 * One shared queue, so one QP per peer: a peer then costs a QP and an
 * endpoint, never receive buffers (each queue needs a QP of its own per
 * peer, since a QP feeds exactly one SRQ). 64 KiB buffers keep the
 * eager/rendezvous sizes of the earlier three-queue default; small
 * messages are sent from small buffers (btl_openib_frag.c), and the
 * queue's 256 buffers (16 MiB per port, growing to 4x on its limit event)
 * are shared by all peers: UCX's RC transport holds about 32 MiB
 * (4095 x 8 KiB) for the same purpose. */
#define OPENIB_DEFAULT_RECEIVE_QUEUES "S,65536,256,64"
/* The default where a device in use has no shared receive queues: the same
 * three sizes, per peer. Fewer large buffers than the shared default holds
 * for all peers together (8 x 64 KiB, 32 x 4 KiB: about 670 KiB per peer),
 * since here every peer pays for its own. */
#define OPENIB_DEFAULT_RECEIVE_QUEUES_NO_SRQ "P,256,64,32,16:P,4096,32,16,8:P,65536,8,4,2"

#endif

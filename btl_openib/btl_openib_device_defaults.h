/*
 * btl_openib_device_defaults.h - what a kind of device needs differently,
 * in one table (btl_openib_device_defaults.c), keyed by vendor, part and
 * transport. This is the job the old openib's device-params file did;
 * nothing elsewhere in the BTL tests for a particular device.
 *
 * An entry only raises defaults: a parameter the user set (command line,
 * environment or a parameter file) always wins, and a value is still
 * fitted to the device's limits like any other.
 *
 * Device-free (plain numbers in, an entry out) so the lookup is
 * unit-tested.
 */
#ifndef BTL_OPENIB_DEVICE_DEFAULTS_H
#define BTL_OPENIB_DEVICE_DEFAULTS_H

#include <stdbool.h>
#include <stdint.h>

#define OPENIB_DEVICE_ANY UINT32_MAX

struct openib_device_defaults {
    const char *kind;        /* for verbose output: "Soft-iWARP (siw)" */
    uint32_t vendor_id;      /* ibv_device_attr.vendor_id, or OPENIB_DEVICE_ANY */
    uint32_t vendor_part_id; /* ibv_device_attr.vendor_part_id, or OPENIB_DEVICE_ANY */
    int transport;           /* IBV_TRANSPORT_*, or -1 for any */
    const char *why;         /* the reason for its cq_size or eager_rdma_num, said at
                                verbose 10 with the value */
    /* The values; each is left to its parameter when "unset". */
    int cq_size;             /* the completion queue has at least this many entries; 0: unset */
    int eager_rdma_num;      /* btl_openib_eager_rdma_num for this device; -1: unset */
    int read_sink_remote_write; /* 1: every registration is remotely writable, as the
                                   sink of an RDMA read must be; -1: unset (no) */
    int per_peer_queues;     /* 1: the default receive queues are per-peer ones (flow
                                controlled by credits), not shared; -1: unset (no) */
    int max_inline_data;     /* inline bytes when btl_openib_max_inline_data is -1;
                                -1: unset (the BTL's own default) */
    int sq_slot_header;      /* > 0: the provider's send queue is a ring of
                                max_send_wr + 1 slots (one kept empty) rounded up
                                to a power of two, each slot this many bytes of
                                header plus the larger of the SGEs and the inline
                                room, rounded up to a power of two, plus a page of
                                indices (btl_openib_peer_cost.c); 0: unset (an
                                HCA's layout) */
};

/* What the table says about a device: every entry that matches counts,
 * and the first one (the table lists specific entries before general ones)
 * that sets a value decides it; *_from names that entry (for its kind and
 * why). Returns false when no entry matches (*out is then all unset). */
struct openib_device_choice {
    int cq_size;                       /* 0: unset */
    const struct openib_device_defaults *cq_from;
    int eager_rdma_num;                /* -1: unset */
    const struct openib_device_defaults *eager_from;
    int read_sink_remote_write;        /* -1: unset */
    int per_peer_queues;               /* -1: unset */
    int max_inline_data;               /* -1: unset */
    const struct openib_device_defaults *inline_from;
    int sq_slot_header;                /* 0: unset */
};
bool openib_device_defaults_find(uint32_t vendor_id, uint32_t vendor_part_id, int transport,
                                 struct openib_device_choice *out);

#endif

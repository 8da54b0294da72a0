/*
 * btl_openib_param_check.h - the valid range of every numeric btl_openib_*
 * parameter (ours, the CPCs' and the standard BTL ones Open MPI registers
 * for us), and the checks between parameters that need no device.
 *
 * One table row per parameter: name, min, max, and the reason a user sees
 * when a value is outside. Device-free: the checks read values through a
 * callback, so the unit tests drive them without Open MPI's variable system.
 * Limits that depend on the device or port (max_cqe, the GID table, ...)
 * are checked when the port opens (btl_openib/btl_openib_limits.c).
 */
#ifndef BTL_OPENIB_PARAM_CHECK_H
#define BTL_OPENIB_PARAM_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "btl_openib/btl_openib_rq_spec.h"
#include "wire/data_hdr.h"

/* Our wire header in front of every send fragment. */
#define OPENIB_PARAM_HDR_BYTES ((uint32_t) sizeof(struct openib_hdr))

struct openib_param_range {
    const char *name;   /* after "btl_openib_" */
    int64_t min, max;
    int64_t multiple;   /* > 1: the value must also be a multiple of it */
    bool size_max_ok;   /* SIZE_MAX (Open MPI's "no limit", from 0) is accepted */
    const char *why;
};

extern const struct openib_param_range openib_param_ranges[];
extern const size_t openib_num_param_ranges;

/* Reads one parameter by its short name: false when no such parameter is
 * registered (a CPC that is not built in). Values above INT64_MAX (size_t)
 * are reported as INT64_MAX. user_set: not Open MPI's default value. */
typedef bool (*openib_param_get_fn)(void *ctx, const char *name, int64_t *value,
                                    bool *user_set);

/* What a help text needs to say about a rejected value. */
struct openib_param_error {
    char name[64];      /* full name, e.g. btl_openib_ib_timeout */
    char value[32];
    char range[160];
    char why[400];
};

/* What the checks computed for the send path. */
struct openib_param_effective {
    uint64_t max_send_size;   /* bytes, at most the largest buffer - our header */
    uint64_t eager_limit;     /* at most max_send_size */
};

const struct openib_param_range *openib_param_range_find(const char *name);
bool openib_param_in_range(const struct openib_param_range *r, int64_t value);
/* "1 to 31", "-1 to 255", "a multiple of 8 from 64 to 65536" */
void openib_param_range_text(const struct openib_param_range *r, char *buf, size_t len);

/* Every table row, then the relations between parameters and with the
 * parsed receive queues. OPAL_SUCCESS, or OPAL_ERR_BAD_PARAM with *err
 * filled for the first problem found. */
int openib_params_check(openib_param_get_fn get, void *ctx, const struct openib_rq_spec *rq,
                        struct openib_param_error *err, struct openib_param_effective *eff);

/* Bytes one port registers at start-up (fragment lists and shared receive
 * queues), and what each connected peer adds (its P-queue buffers, the
 * credit mailbox, and an eager-RDMA ring when it gets one). Saturates
 * instead of overflowing. */
uint64_t openib_params_startup_bytes(const struct openib_rq_spec *rq, int64_t free_list_num);
uint64_t openib_params_per_peer_bytes(const struct openib_rq_spec *rq, int64_t eager_rdma_num,
                                      int64_t eager_slots, int64_t eager_slot_size);

/* "64 KiB", "1.5 GiB", "12 bytes": for help texts. */
void openib_params_bytes_text(uint64_t bytes, char *buf, size_t len);

#endif

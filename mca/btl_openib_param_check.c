/*
 * btl_openib_param_check.c - valid ranges of the numeric parameters, and
 * the checks between them (see btl_openib_param_check.h).
 */
#include "opal_config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "opal/constants.h"

#include "mca/btl_openib_param_check.h"
#include "wire/eager_ring.h"

#define I32 INT32_MAX
#define U32 ((int64_t) UINT32_MAX)
#define ANY INT64_MAX

/* Reasons shared by several rows. */
#define WHY_SECONDS "seconds; 0 would give up at once, and a day is far longer than any handshake takes"
#define WHY_RETRIES "a count of retries (0: none)"
#define WHY_RDMA_LIMIT                                                                  \
    "one RDMA operation is one work request, whose scatter/gather length is 32 bits; "  \
    "the device's own max_msg_sz is checked when the port opens (0: as large as the "   \
    "device allows)"

/* Every numeric parameter that a user can set, with the reason for its
 * range. The CPC priorities are not here: the CPC framework checks them
 * (one per CPC, plug-ins included). */
const struct openib_param_range openib_param_ranges[] = {
    /* ours (mca/btl_openib_params.c) */
    { "verbose", 0, 100, 0, false,
      "0 is quiet, 10 shows devices, ports and CPC choices, 100 every connection step" },
    { "cq_size", 1, I32, 0, false,
      "a completion queue needs at least one entry (it is raised to hold the shared "
      "queues' receives and two QPs' sends; the device's max_cqe is checked when the port "
      "opens)" },
    { "max_inline_data", -1, 65536, 0, false,
      "-1 is up to 128 bytes (48 on rxe, device table), fitted to the device; inline data is copied into the send work request, which no "
      "device makes larger than a few KiB (the port's own limit is checked when it opens)" },
    { "gid_index", -1, 255, 0, false,
      "-1 picks the GID automatically; the GID index in a packet's routing header is 8 bits "
      "(the port's GID table is checked when it opens)" },
    { "ib_timeout", 1, 31, 0, false,
      "the local ACK timeout is 4.096 us * 2^value, a 5-bit field; 0 would turn the timeout "
      "off, so a lost packet or a dead peer would stall the connection forever" },
    { "ib_retry_count", 0, 7, 0, false,
      "transport retries before a queue pair fails, a 3-bit field" },
    { "ib_rnr_retry", 0, 7, 0, false,
      "receiver-not-ready retries, a 3-bit field (7: retry forever)" },
    { "ib_service_level", 0, 15, 0, false,
      "the InfiniBand service level is a 4-bit field of the address vector" },
    { "traffic_class", 0, 255, 0, false,
      "the 8-bit traffic class of the routing header (IPv4 TOS / IPv6 traffic class on "
      "RoCE v2: DSCP in the upper 6 bits, ECN in the lower 2)" },
    { "max_send_wr", 2, 1 << 20, 0, false,
      "one send work request per QP is held back for credit returns so flow control can "
      "always make progress; data needs at least one more (the device's max_qp_wr is "
      "checked when the port opens)" },
    { "free_list_num", 0, I32, 0, false,
      "fragments allocated up front per size class; 0 allocates them on first use" },
    { "free_list_max", -1, I32, 0, false,
      "-1 is unlimited; a limit must hold what the receive queues post (checked against "
      "btl_openib_receive_queues and btl_openib_free_list_num)" },
    { "free_list_inc", 1, I32, 0, false,
      "a fragment list grows by this many when it runs out; with 0 it could never grow, "
      "and every peer that connects needs <count> more receive buffers on each P queue" },
    { "flush_timeout", 1, 86400, 0, false,
      "seconds; 0 would give up at once, and a day is far longer than any RDMA operation takes" },
    { "max_peers", 0, I32, 0, false,
      "0 keeps every connection; N closes a port's least recently used idle connection "
      "while it has more than N connected peers (reopened when needed)" },
    { "poll_batch", 1, 64, 0, false,
      "completions taken per poll of a completion queue, into an array of 64" },
    { "eager_rdma_num", 0, 65536, 0, false,
      "peers per port with an eager-RDMA ring; 0 turns eager RDMA off" },
    { "eager_rdma_threshold", 1, I32, 0, false,
      "messages received from a peer before it is offered a ring" },
    { "eager_rdma_slots", OPENIB_EAGER_MIN_SLOTS, OPENIB_EAGER_MAX_SLOTS, 0, false,
      "a ring needs two slots to pipeline; slot credits travel as 16-bit serial numbers" },
    { "eager_rdma_slot_size", OPENIB_EAGER_MIN_SLOT, OPENIB_EAGER_MAX_SLOT, 8, false,
      "a slot holds a message and its 16-byte footer, 8-byte aligned" },
    { "want_fork_support", -1, 1, 0, false,
      "-1 (default) and 0: no fork support; 1: call ibv_fork_init, and fail if it cannot "
      "be enabled" },
    /* the CPCs' (connect/cpc_*.c) */
    { "connect_oob_timeout", 1, 86400, 0, false, WHY_SECONDS },
    { "connect_oob_retries", 0, I32, 0, false, WHY_RETRIES },
    { "connect_rdma_cm_port", 0, 65535, 0, false,
      "a TCP port number (rdma_cm port space); 0 lets the system pick a free one" },
    { "connect_rdma_cm_timeout", 1, 86400, 0, false, WHY_SECONDS },
    { "connect_rdma_cm_retries", 0, I32, 0, false, WHY_RETRIES },
    { "connect_xoob_timeout", 1, 86400, 0, false, WHY_SECONDS },
    { "connect_xoob_retries", 0, I32, 0, false, WHY_RETRIES },
    /* the standard BTL ones (mca_btl_base_param_register) */
    { "eager_limit", 128, ANY, 0, false,
      "the limit includes ob1's header (up to 64 bytes with our registration handle), "
      "and a message within it is sent as one fragment, so it may not exceed "
      "btl_openib_max_send_size" },
    { "rndv_eager_limit", 0, ANY, 0, false,
      "the first fragment of a rendezvous carries at most btl_openib_eager_limit bytes" },
    { "max_send_size", 128, ANY, 0, false,
      "a send fragment carries ob1's header (up to 64 bytes) and must fit the largest "
      "receive buffer of btl_openib_receive_queues after our 8-byte header" },
    { "rdma_pipeline_send_length", 0, ANY, 0, false, "any length in bytes" },
    { "rdma_pipeline_frag_size", 1, ANY, 0, false,
      "bytes per RDMA fragment of the pipeline; 0 would never move any data" },
    { "min_rdma_pipeline_size", 0, ANY, 0, false,
      "any size (Open MPI raises it to eager_limit + rdma_pipeline_send_length)" },
    { "get_limit", 1, U32, 0, true, WHY_RDMA_LIMIT },
    { "put_limit", 1, U32, 0, true, WHY_RDMA_LIMIT },
    { "exclusivity", 0, U32, 0, false,
      "any value: it only ranks openib against other BTLs that reach the same peer" },
    { "latency", 0, U32, 0, false, "any value: it only weighs openib against other BTLs" },
    { "bandwidth", 0, U32, 0, false, "any value: it only weighs openib against other BTLs" },
};
const size_t openib_num_param_ranges = sizeof(openib_param_ranges) / sizeof(openib_param_ranges[0]);

const struct openib_param_range *openib_param_range_find(const char *name)
{
    size_t i;

    for (i = 0; i < openib_num_param_ranges; ++i) {
        if (0 == strcmp(openib_param_ranges[i].name, name)) {
            return &openib_param_ranges[i];
        }
    }
    return NULL;
}

bool openib_param_in_range(const struct openib_param_range *r, int64_t value)
{
    if (r->size_max_ok && value == INT64_MAX) {
        return true;
    }
    if (value < r->min || value > r->max) {
        return false;
    }
    return r->multiple <= 1 || value % r->multiple == 0;
}

void openib_param_range_text(const struct openib_param_range *r, char *buf, size_t len)
{
    if (r->max == INT64_MAX) {
        snprintf(buf, len, "%" PRId64 " or more", r->min);
    } else if (r->multiple > 1) {
        snprintf(buf, len, "a multiple of %" PRId64 " from %" PRId64 " to %" PRId64, r->multiple,
                 r->min, r->max);
    } else {
        snprintf(buf, len, "%" PRId64 " to %" PRId64, r->min, r->max);
    }
}

static int reject(struct openib_param_error *err, const char *name, int64_t value,
                  const char *range, const char *why)
{
    snprintf(err->name, sizeof(err->name), "btl_openib_%s", name);
    snprintf(err->value, sizeof(err->value), "%" PRId64, value);
    snprintf(err->range, sizeof(err->range), "%s", range);
    snprintf(err->why, sizeof(err->why), "%s", why);
    return OPAL_ERR_BAD_PARAM;
}

/* A value with its source; a parameter that is not registered reads as
 * the given fallback, set by default. */
static int64_t read_param(openib_param_get_fn get, void *ctx, const char *name, int64_t fallback,
                          bool *user_set)
{
    int64_t v;
    bool set = false;

    if (!get(ctx, name, &v, &set)) {
        v = fallback;
        set = false;
    }
    if (user_set) {
        *user_set = set;
    }
    return v;
}

/* The send sizes: eager_limit <= max_send_size <= largest buffer - header. */
static int check_send_sizes(openib_param_get_fn get, void *ctx, const struct openib_rq_spec *rq,
                            struct openib_param_error *err, struct openib_param_effective *eff)
{
    uint64_t largest = rq->num > 0 ? rq->q[rq->num - 1].size - OPENIB_PARAM_HDR_BYTES : 0;
    bool set_max, set_eager, set_rndv;
    int64_t max_send = read_param(get, ctx, "max_send_size", (int64_t) largest, &set_max);
    int64_t eager = read_param(get, ctx, "eager_limit", 0, &set_eager);
    int64_t rndv = read_param(get, ctx, "rndv_eager_limit", 0, &set_rndv);
    char range[160], why[400];

    /* The PML's control messages (ob1's RDMA rendezvous header with our
     * registration handle is about 80 bytes) must fit in one fragment, or
     * it waits forever for a descriptor it can never get. */
    if (rq->num > 0 && largest < 128) {
        snprintf(err->name, sizeof(err->name), "btl_openib_receive_queues");
        snprintf(err->value, sizeof(err->value), "largest buffer %u B", rq->q[rq->num - 1].size);
        snprintf(err->range, sizeof(err->range), "a largest queue of at least %u bytes",
                 128 + OPENIB_PARAM_HDR_BYTES);
        snprintf(err->why, sizeof(err->why),
                 "a send fragment must carry at least 128 bytes after our %u-byte header: "
                 "Open MPI's control messages (its RDMA rendezvous header is about 80 "
                 "bytes) each go in one fragment; add a larger queue, e.g. :S,65536,64",
                 OPENIB_PARAM_HDR_BYTES);
        return OPAL_ERR_BAD_PARAM;
    }
    if (set_max && (uint64_t) max_send > largest) {
        snprintf(range, sizeof(range), "128 to %" PRIu64, largest);
        snprintf(why, sizeof(why),
                 "a send fragment must fit the largest receive buffer of "
                 "btl_openib_receive_queues (%" PRIu64 " bytes) after our %u-byte header",
                 largest + OPENIB_PARAM_HDR_BYTES, OPENIB_PARAM_HDR_BYTES);
        return reject(err, "max_send_size", max_send, range, why);
    }
    eff->max_send_size = set_max ? (uint64_t) max_send : largest;
    if (set_eager && (uint64_t) eager > eff->max_send_size) {
        snprintf(range, sizeof(range), "128 to %" PRIu64 " (btl_openib_max_send_size%s)",
                 eff->max_send_size, set_max ? "" : ", from btl_openib_receive_queues");
        return reject(err, "eager_limit", eager, range,
                      "a message within the eager limit is sent as one fragment, so the "
                      "limit may not exceed the largest send fragment");
    }
    eff->eager_limit = (uint64_t) eager < eff->max_send_size ? (uint64_t) eager
                                                              : eff->max_send_size;
    if (set_rndv && (uint64_t) rndv > eff->eager_limit) {
        snprintf(range, sizeof(range), "0 to %" PRIu64 " (btl_openib_eager_limit)",
                 eff->eager_limit);
        return reject(err, "rndv_eager_limit", rndv, range,
                      "the first fragment of a rendezvous carries at most eager_limit bytes");
    }
    return OPAL_SUCCESS;
}

/* free_list_max must leave room for what the lists must hold: the initial
 * fragments, an S queue's buffers (posted from one list at start-up) and a
 * P queue's buffers for one peer. */
static int check_free_lists(openib_param_get_fn get, void *ctx, const struct openib_rq_spec *rq,
                            struct openib_param_error *err)
{
    int64_t max = read_param(get, ctx, "free_list_max", -1, NULL);
    int64_t num = read_param(get, ctx, "free_list_num", 0, NULL);
    int64_t need = num;
    char range[160], why[400];
    int q, worst = -1;

    if (max == -1) {
        return OPAL_SUCCESS;
    }
    for (q = 0; q < rq->num; ++q) {
        if ((int64_t) rq->q[q].count > need) {
            need = rq->q[q].count;
            worst = q;
        }
    }
    if (max >= need) {
        return OPAL_SUCCESS;
    }
    snprintf(range, sizeof(range), "-1 (unlimited), or %" PRId64 " to %d", need, INT32_MAX);
    if (worst >= 0) {
        snprintf(why, sizeof(why),
                 "the %c queue of %u-byte buffers in btl_openib_receive_queues posts %u "
                 "buffers%s, all from one fragment list",
                 (char) rq->q[worst].type, rq->q[worst].size, rq->q[worst].count,
                 rq->q[worst].type == OPENIB_RQ_PP ? " for each peer" : "");
    } else {
        snprintf(why, sizeof(why),
                 "btl_openib_free_list_num (%" PRId64 ") fragments are allocated up front", num);
    }
    return reject(err, "free_list_max", max, range, why);
}

int openib_params_check(openib_param_get_fn get, void *ctx, const struct openib_rq_spec *rq,
                        struct openib_param_error *err, struct openib_param_effective *eff)
{
    char range[160];
    size_t i;
    int rc;

    memset(eff, 0, sizeof(*eff));
    for (i = 0; i < openib_num_param_ranges; ++i) {
        const struct openib_param_range *r = &openib_param_ranges[i];
        int64_t v;
        bool set;

        if (!get(ctx, r->name, &v, &set) || openib_param_in_range(r, v)) {
            continue;
        }
        openib_param_range_text(r, range, sizeof(range));
        return reject(err, r->name, v, range, r->why);
    }
    rc = check_send_sizes(get, ctx, rq, err, eff);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    return check_free_lists(get, ctx, rq, err);
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
    return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

uint64_t openib_params_startup_bytes(const struct openib_rq_spec *rq, int64_t free_list_num)
{
    static const uint32_t small[OPENIB_SEND_SMALL_CLASSES] = OPENIB_SEND_SMALL_SIZES;
    uint64_t total = 0, num = free_list_num > 0 ? (uint64_t) free_list_num : 0;
    int q;

    /* small send buffers for queue 0 (btl_openib_frag.c) */
    for (q = 0; q < OPENIB_SEND_SMALL_CLASSES && rq->num > 0; ++q) {
        if (small[q] < rq->q[0].size) {
            total = sat_add(total, sat_mul(num, small[q]));
        }
    }
    for (q = 0; q < rq->num; ++q) {
        uint64_t recv = rq->q[q].type == OPENIB_RQ_PP ? num : rq->q[q].count;

        /* one send list and one receive list per queue (btl_openib_frag.c) */
        total = sat_add(total, sat_mul(num + recv, rq->q[q].size));
    }
    return total;
}

uint64_t openib_params_per_peer_bytes(const struct openib_rq_spec *rq, int64_t eager_rdma_num,
                                      int64_t eager_slots, int64_t eager_slot_size)
{
    uint64_t total = OPENIB_MAILBOX_BYTES; /* carved from registered chunks */
    int q;

    for (q = 0; q < rq->num; ++q) {
        if (rq->q[q].type == OPENIB_RQ_PP) {
            total = sat_add(total, sat_mul(rq->q[q].count, rq->q[q].size));
        }
    }
    if (eager_rdma_num > 0 && eager_slots > 0 && eager_slot_size > 0) {
        total = sat_add(total, sat_mul((uint64_t) eager_slots, (uint64_t) eager_slot_size));
    }
    return total;
}

void openib_params_bytes_text(uint64_t bytes, char *buf, size_t len)
{
    static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    double v = (double) bytes;
    int u = -1;

    if (bytes < 1024) {
        snprintf(buf, len, "%" PRIu64 " bytes", bytes);
        return;
    }
    while (v >= 1024 && u < 5) {
        v /= 1024;
        ++u;
    }
    snprintf(buf, len, v < 10 ? "%.1f %s" : "%.0f %s", v, unit[u]);
}

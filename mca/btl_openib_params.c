/*
 * btl_openib_params.c - registration of the component's MCA parameters.
 */
#include "opal_config.h"

#include <stdio.h>
#include <string.h>

#include "opal/mca/base/mca_base_var.h"
#include "opal/constants.h"

#include "openib_config.h"
#include "mca/btl_openib_params.h"
#include "mca/btl_openib_param_check.h"

/* Zero until openib_params_register sets each default from its row. */
struct openib_params openib_params;

static char openib_version_string[] = OPENIB_VERSION_STRING " (out-of-tree, for Open MPI " OPENIB_OMPI_VERSION_STRING ")";
static char openib_default_queues[] = OPENIB_DEFAULT_RECEIVE_QUEUES;

/* One row per integer parameter: its name, default, storage, level and
 * help, so a default stands beside what it sets. INT_PARAM writes the name
 * once, for both the variable (btl_openib_<name>) and its storage
 * (openib_params.<name>). */
struct int_param {
    const char *name;
    int dflt;
    int *storage;
    mca_base_var_info_lvl_t level;
    const char *help;
};
#define INT_PARAM(name_, dflt_, level_, help_) \
    { #name_, dflt_, &openib_params.name_, level_, help_ }

/* The help line ends with the valid range from the table the start-up
 * check uses, so ompi_info and the check never disagree. */
static int reg_int(const struct mca_base_component_2_1_0_t *c, const struct int_param *p)
{
    const struct openib_param_range *r = openib_param_range_find(p->name);
    char desc[512], range[160];

    if (r) {
        openib_param_range_text(r, range, sizeof(range));
        snprintf(desc, sizeof(desc), "%s (valid: %s)", p->help, range);
    } else {
        snprintf(desc, sizeof(desc), "%s", p->help);
    }
    *p->storage = p->dflt;
    return mca_base_component_var_register(c, p->name, desc, MCA_BASE_VAR_TYPE_INT, NULL, 0,
                                           0, p->level, MCA_BASE_VAR_SCOPE_READONLY, p->storage);
}

static int reg_string(const struct mca_base_component_2_1_0_t *c, const char *name,
                      const char *help, char **storage, mca_base_var_info_lvl_t level, int flags)
{
    return mca_base_component_var_register(c, name, help, MCA_BASE_VAR_TYPE_STRING, NULL, 0,
                                           flags, level, MCA_BASE_VAR_SCOPE_READONLY, storage);
}

int openib_params_register(const struct mca_base_component_2_1_0_t *c)
{
    const struct int_param ints[] = {
        INT_PARAM(verbose, 0, OPAL_INFO_LVL_3,
          "How much openib explains itself (0 = quiet, 10 = devices, ports and CPC choices, 100 = every connection step)"),
        INT_PARAM(cq_size, 8192, OPAL_INFO_LVL_5,
          "Completion queue entries per port (raised automatically to fit the queues)"),
        INT_PARAM(max_inline_data, -1, OPAL_INFO_LVL_5,
          "Largest message sent inline in the work request (-1 = up to 128 bytes, 48 on rxe (device table), fitted to the device; 0 = never)"),
        INT_PARAM(gid_index, -1, OPAL_INFO_LVL_4,
          "GID table index to use on each port (-1 = automatic: RoCE v2 IPv4 GID if present, else index 0)"),
        /* 4.096 us * 2^18 = about 1.07 s per try. Shorter ACK timeouts fire
         * spuriously when a congested fabric pauses a link (PFC, credit stalls on
         * large IB fabrics) or a software device queues for long, and each
         * spurious retry resends whole messages; UCX's RC default is 1 s too. A dead
         * peer is still noticed within (ib_retry_count + 1) tries, about 9 s. */
        INT_PARAM(ib_timeout, 18, OPAL_INFO_LVL_5,
          "Local ACK timeout exponent: 4.096 us * 2^value"),
        INT_PARAM(ib_retry_count, 7, OPAL_INFO_LVL_5,
          "Transport retries before a queue pair fails"),
        INT_PARAM(ib_rnr_retry, 7, OPAL_INFO_LVL_5,
          "Receiver-not-ready retries (7 = retry forever)"),
        INT_PARAM(ib_service_level, 0, OPAL_INFO_LVL_4,
          "InfiniBand service level (SL) of our connections; the fabric maps it to a virtual lane (0 = the default lane)"),
        INT_PARAM(traffic_class, 0, OPAL_INFO_LVL_4,
          "Traffic class of our packets' routing header: on RoCE v2 the IP TOS byte, DSCP in the upper 6 bits (e.g. DSCP 26 = 104); on InfiniBand the GRH TClass when a GRH is used (0 = best effort)"),
        /* Per QP, so per peer: 127 WRs of up to 128 inline bytes is about
         * 32 KiB of send queue as HCAs lay it out (64-byte blocks), 256 WRs of
         * 512 would be 160 KiB. 127 in flight still covers a 64-message window
         * (osu_bw) with room for ring and credit writes. 127, not 128: a
         * provider whose ring keeps one slot empty to tell full from empty
         * rounds max_send_wr + 1 up to a power of two (rxe), so 128 would
         * double its queue; 127 fills the same power of two everywhere. */
        INT_PARAM(max_send_wr, 127, OPAL_INFO_LVL_5,
          "Send work requests per queue pair (one is kept for credit returns)"),
        INT_PARAM(free_list_num, 64, OPAL_INFO_LVL_5,
          "Fragments preallocated per size class"),
        INT_PARAM(free_list_max, -1, OPAL_INFO_LVL_5,
          "Most fragments per size class (-1 = unlimited)"),
        INT_PARAM(free_list_inc, 64, OPAL_INFO_LVL_5,
          "Fragments added when a size class runs out"),
        /* flush waits on the device, not on the peer: a dead peer ends the
         * operations sooner through the QP's retries (ib_timeout x retry count) */
        INT_PARAM(flush_timeout, 120, OPAL_INFO_LVL_5,
          "Seconds btl_flush (MPI one-sided synchronization) waits for outstanding RDMA operations before it reports an error: a guard against a device that stops completing (a peer that does not answer ends them sooner, through the queue pair's retries). Connection attempts are bounded by btl_openib_connect_<cpc>_timeout"),
        INT_PARAM(poll_batch, 16, OPAL_INFO_LVL_6,
          "Completions taken per poll of a completion queue"),
        INT_PARAM(max_peers, 0, OPAL_INFO_LVL_4,
          "Connected peers per port beyond which the least recently used idle connection is closed cleanly and reopened when needed (0 = no limit)"),
        INT_PARAM(eager_rdma_num, 16, OPAL_INFO_LVL_4,
          "Peers per port whose small messages arrive by RDMA write into a ring this process polls (0 = never; each ring is eager_rdma_slots * eager_rdma_slot_size bytes)"),
        INT_PARAM(eager_rdma_threshold, 16, OPAL_INFO_LVL_5,
          "Messages received from a peer before it is offered an eager-RDMA ring"),
        INT_PARAM(eager_rdma_slots, 32, OPAL_INFO_LVL_5,
          "Slots in each eager-RDMA ring"),
        INT_PARAM(eager_rdma_slot_size, 2048, OPAL_INFO_LVL_5,
          "Bytes per eager-RDMA slot; messages up to this size minus 16 (and within max_inline_data) use the ring"),
        INT_PARAM(want_fork_support, -1, OPAL_INFO_LVL_4,
          "Fork support for verbs memory (the old openib's name): -1 or 0 = no, "
          "1 = call ibv_fork_init before any verbs resource and disable openib if it fails"),
    };
    size_t i;
    int rc;

    for (i = 0; i < sizeof(ints) / sizeof(ints[0]); ++i) {
        rc = reg_int(c, &ints[i]);
        if (rc < 0) {
            return rc;
        }
    }

    openib_params.version = openib_version_string;
    rc = reg_string(c, "version", "Version of this openib component (openib-ng, not Open MPI's own openib)",
                    &openib_params.version, OPAL_INFO_LVL_1, MCA_BASE_VAR_FLAG_DEFAULT_ONLY);
    if (rc < 0) {
        return rc;
    }
    rc = reg_string(c, "if_include", "Comma-separated devices or device:port to use (e.g. mlx5_0,rxe0:1); exclusive with if_exclude",
                    &openib_params.if_include, OPAL_INFO_LVL_1, 0);
    if (rc < 0) {
        return rc;
    }
    rc = reg_string(c, "if_exclude", "Comma-separated devices or device:port not to use; exclusive with if_include",
                    &openib_params.if_exclude, OPAL_INFO_LVL_1, 0);
    if (rc < 0) {
        return rc;
    }
    openib_params.receive_queues = openib_default_queues;
    rc = reg_string(c, "receive_queues",
                    "Receive queues, colon-separated: P,<size>,<count>[,<low>[,<window>[,<reserve>]]] (per-peer), "
                    "S,<size>,<count>[,<low>[,<max_pending>]] (shared), X,... (XRC, same fields as S; not mixable with P/S)",
                    &openib_params.receive_queues, OPAL_INFO_LVL_4, 0);
    return rc < 0 ? rc : OPAL_SUCCESS;
}

int openib_params_index(const char *name)
{
    char full[128];
    int idx;

    snprintf(full, sizeof(full), "btl_openib_%s", name);
    return OPAL_SUCCESS == mca_base_var_find_by_name(full, &idx) ? idx : -1;
}

/* The variable btl_openib_<name>, or NULL when none is registered. */
static const mca_base_var_t *find_var(const char *name)
{
    const mca_base_var_t *var = NULL;
    int idx = openib_params_index(name);

    return idx >= 0 && OPAL_SUCCESS == mca_base_var_get(idx, &var) ? var : NULL;
}

/* Open MPI's variable system behind the range checks: any btl_openib_*
 * variable (ours, the CPCs', the standard BTL ones), by its short name. */
bool openib_params_get(void *ctx, const char *name, int64_t *value, bool *user_set)
{
    const mca_base_var_t *var = find_var(name);
    const mca_base_var_storage_t *st;

    (void) ctx;
    if (NULL == var || NULL == var->mbv_storage) {
        return false;
    }
    st = var->mbv_storage;
#define CLAMP64(x) ((x) > (uint64_t) INT64_MAX ? INT64_MAX : (int64_t) (x))
    switch (var->mbv_type) {
    case MCA_BASE_VAR_TYPE_INT: *value = st->intval; break;
    case MCA_BASE_VAR_TYPE_INT32_T: *value = st->int32tval; break;
    case MCA_BASE_VAR_TYPE_LONG: *value = st->longval; break;
    case MCA_BASE_VAR_TYPE_INT64_T: *value = st->int64tval; break;
    case MCA_BASE_VAR_TYPE_UNSIGNED_INT: *value = st->uintval; break;
    case MCA_BASE_VAR_TYPE_UINT32_T: *value = st->uint32tval; break;
    case MCA_BASE_VAR_TYPE_SIZE_T: *value = CLAMP64((uint64_t) st->sizetval); break;
    case MCA_BASE_VAR_TYPE_UNSIGNED_LONG: *value = CLAMP64((uint64_t) st->ulval); break;
    case MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG: *value = CLAMP64((uint64_t) st->ullval); break;
    case MCA_BASE_VAR_TYPE_UINT64_T: *value = CLAMP64(st->uint64tval); break;
    default:
        return false; /* not a number: strings and flags are checked elsewhere */
    }
#undef CLAMP64
    if (user_set) {
        *user_set = MCA_BASE_VAR_SOURCE_DEFAULT != var->mbv_source;
    }
    return true;
}

bool openib_params_user_set(const char *name)
{
    const mca_base_var_t *var = find_var(name);

    return NULL != var && MCA_BASE_VAR_SOURCE_DEFAULT != var->mbv_source;
}

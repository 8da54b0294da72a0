/*
 * btl_openib_limits.c - the parameters' limits that depend on the device
 * or port, checked when a port opens (the static ranges are checked at
 * start-up, mca/btl_openib_param_check.c). A value the user set beyond the
 * device's limit disables openib with a help text naming the parameter,
 * the device and port, and the limit; a default beyond it is lowered to fit.
 */
#include "opal_config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "opal/constants.h"

#include "btl_openib/btl_openib.h"
#include "btl_openib/btl_openib_limits.h"
#include "mca/btl_openib_params.h"

static int over_limit(const mca_btl_openib_module_t *m, const char *name, const char *value,
                      const char *range, const char *why)
{
    char full[64], where[96];

    snprintf(full, sizeof(full), "btl_openib_%s", name);
    snprintf(where, sizeof(where), "device %s port %d", m->dev->name, m->port_num);
    openib_show_help("param-device-limit", true, full, opal_process_info.nodename, where, value,
                     range, why);
    return OPAL_ERR_BAD_PARAM;
}

static int check_gid_index(const mca_btl_openib_module_t *m)
{
    static const uint8_t zero[16];
    char value[16], range[64], why[160];
    union ibv_gid gid;
    int idx = openib_params.gid_index;

    if (idx < 0) {
        return OPAL_SUCCESS;
    }
    snprintf(value, sizeof(value), "%d", idx);
    snprintf(range, sizeof(range), "-1 (automatic), or 0 to %d", m->port_attr.gid_tbl_len - 1);
    if (idx >= m->port_attr.gid_tbl_len) {
        snprintf(why, sizeof(why), "the port's GID table has %d entries",
                 m->port_attr.gid_tbl_len);
        return over_limit(m, "gid_index", value, range, why);
    }
    if (ibv_query_gid(m->dev->ctx, m->port_num, idx, &gid) || 0 == memcmp(gid.raw, zero, 16)) {
        return over_limit(m, "gid_index", value, range,
                          "that entry of the port's GID table is empty (no address is "
                          "configured for it); ibv_devinfo -v lists the GIDs");
    }
    return OPAL_SUCCESS;
}

/* An int parameter against a device limit: the user's value is an error,
 * the default is lowered. */
static int fit_int(const mca_btl_openib_module_t *m, const char *name, int *param, int min,
                   int limit, const char *why)
{
    char value[16], range[48];

    if (*param <= limit) {
        return OPAL_SUCCESS;
    }
    if (!openib_params_user_set(name)) {
        OPENIB_VERBOSE(10, "%s:%d: btl_openib_%s lowered from %d to the device's %d",
                       m->dev->name, m->port_num, name, *param, limit);
        *param = limit;
        return OPAL_SUCCESS;
    }
    snprintf(value, sizeof(value), "%d", *param);
    snprintf(range, sizeof(range), "%d to %d", min, limit);
    return over_limit(m, name, value, range, why);
}

static int check_queue_counts(const mca_btl_openib_module_t *m)
{
    const struct openib_rq_spec *rq = &mca_btl_openib_component.rq;
    const struct ibv_device_attr *da = &m->dev->attr;
    char value[48], range[48], why[160];
    int q;

    for (q = 0; q < rq->num; ++q) {
        bool pp = rq->q[q].type == OPENIB_RQ_PP;
        int limit = pp ? da->max_qp_wr : da->max_srq_wr;

        if (rq->q[q].count <= (uint32_t) limit) {
            continue;
        }
        /* create_srqs() fits a default S/X queue to the device */
        if (!pp && !openib_params_user_set("receive_queues")) {
            continue;
        }
        snprintf(value, sizeof(value), "%s", openib_params.receive_queues);
        snprintf(range, sizeof(range), "<count> of a %c queue: 2 to %d", (char) rq->q[q].type,
                 limit);
        snprintf(why, sizeof(why), "the %c queue of %u-byte buffers posts %u buffers, but %s "
                 "holds at most %d (%s)", (char) rq->q[q].type, rq->q[q].size, rq->q[q].count,
                 pp ? "a queue pair" : "a shared receive queue", limit,
                 pp ? "max_qp_wr" : "max_srq_wr");
        return over_limit(m, "receive_queues", value, range, why);
    }
    return OPAL_SUCCESS;
}

/* get/put limits: one work request moves at most the port's max_msg_sz
 * (and an SGE length is 32 bits). Open MPI turns 0 into SIZE_MAX. */
static int fit_rdma_limit(mca_btl_openib_module_t *m, const char *name, size_t *limit)
{
    uint64_t cap = m->port_attr.max_msg_sz ? m->port_attr.max_msg_sz : UINT32_MAX;
    char value[32], range[48], why[160];

    if (cap > UINT32_MAX) {
        cap = UINT32_MAX;
    }
    if (*limit <= cap) {
        return OPAL_SUCCESS;
    }
    if (SIZE_MAX == *limit || !openib_params_user_set(name)) {
        *limit = (size_t) cap;
        return OPAL_SUCCESS;
    }
    snprintf(value, sizeof(value), "%zu", *limit);
    snprintf(range, sizeof(range), "1 to %" PRIu64, cap);
    snprintf(why, sizeof(why), "one RDMA operation is one work request, and this port moves at "
             "most %" PRIu64 " bytes in one (max_msg_sz)", cap);
    return over_limit(m, name, value, range, why);
}

int openib_limits_check_port(mca_btl_openib_module_t *m)
{
    const struct ibv_device_attr *da = &m->dev->attr;
    int rc;

    /* A send carries up to 3 pieces in one work request (our header, the
     * PML's header, the payload; an eager-RDMA write: the PML's header,
     * the payload, the footer) and an RDMA read or write one. A device
     * that takes fewer scatter/gather entries is skipped, not overrun. */
    if (da->max_sge < OPENIB_SEND_MAX_SGE) {
        OPENIB_VERBOSE(1, "%s:%d: skipped: a work request takes at most %d scatter/gather "
                       "entries on this device (max_sge), and openib's sends need %d",
                       m->dev->name, m->port_num, da->max_sge, OPENIB_SEND_MAX_SGE);
        return OPAL_ERR_NOT_SUPPORTED;
    }

    rc = check_gid_index(m);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    rc = fit_int(m, "cq_size", &openib_params.cq_size, 1, da->max_cqe,
                 "a completion queue of this device holds at most max_cqe entries");
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    rc = fit_int(m, "max_send_wr", &openib_params.max_send_wr, 2, da->max_qp_wr,
                 "a queue pair of this device holds at most max_qp_wr work requests");
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    rc = check_queue_counts(m);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    rc = fit_rdma_limit(m, "get_limit", &m->super.btl_get_limit);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    return fit_rdma_limit(m, "put_limit", &m->super.btl_put_limit);
}

int openib_limits_check_inline(const mca_btl_openib_module_t *m, uint32_t device_max)
{
    char value[16], range[48], why[160];

    if (openib_params.max_inline_data < 0 ||
        (uint32_t) openib_params.max_inline_data <= device_max) {
        return OPAL_SUCCESS;
    }
    snprintf(value, sizeof(value), "%d", openib_params.max_inline_data);
    snprintf(range, sizeof(range), "-1 (the device's maximum), or 0 to %u", device_max);
    snprintf(why, sizeof(why), "a send work request of this device holds at most %u bytes of "
             "inline data", device_max);
    return over_limit(m, "max_inline_data", value, range, why);
}

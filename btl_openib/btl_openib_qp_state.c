/*
 * btl_openib_qp_state.c - QP state changes and CQ room (see the header).
 */
#include "opal_config.h"

#include <errno.h>
#include <string.h>

#include "opal/constants.h"

#include "common/openib_errno.h"
#include "btl_openib/btl_openib_qp_state.h"
#include "mca/btl_openib_params.h"

/* More outstanding RDMA reads/atomics than this buys nothing on any device
 * we know and costs responder resources. */
#define RD_ATOMIC_MAX 16

static enum ibv_mtu mtu_to_enum(uint32_t bytes)
{
    if (bytes >= 4096) return IBV_MTU_4096;
    if (bytes >= 2048) return IBV_MTU_2048;
    if (bytes >= 1024) return IBV_MTU_1024;
    if (bytes >= 512) return IBV_MTU_512;
    return IBV_MTU_256;
}

/* The verbs edge of every state change: ibv_modify_qp returns an errno
 * value; callers get an OPAL code and find the verbs' reason in errno for
 * their messages (ibv_modify_qp documents that its result is errno, but a
 * provider may return one without setting it). */
static int modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
    int rc = ibv_modify_qp(qp, a, mask);

    if (OPAL_UNLIKELY(0 != rc)) {
        errno = rc;
    }
    return openib_err_from_errno(rc);
}

/* The smaller of the two ports' MTUs. */
static uint32_t path_mtu(const mca_btl_openib_module_t *m, uint32_t peer)
{
    uint32_t mine = 128u << m->port_attr.active_mtu;

    return peer && peer < mine ? peer : mine;
}

int openib_qp_to_init(const mca_btl_openib_module_t *m, struct ibv_qp *qp)
{
    struct ibv_qp_attr a = {
        .qp_state = IBV_QPS_INIT,
        .pkey_index = 0,
        .port_num = m->port_num,
        .qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                           IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
    };

    return modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                 IBV_QP_ACCESS_FLAGS);
}

int openib_qp_to_rtr(const mca_btl_openib_module_t *m, struct ibv_qp *qp,
                     const struct openib_qp_peer *peer, bool responder)
{
    static const uint8_t zero[16];
    struct ibv_qp_attr a = {
        .qp_state = IBV_QPS_RTR,
        .path_mtu = mtu_to_enum(path_mtu(m, peer->mtu)),
        .dest_qp_num = peer->qpn,
        .rq_psn = peer->psn,
        .ah_attr = {
            .dlid = peer->lid,
            .sl = (uint8_t) openib_params.ib_service_level,
            .port_num = m->port_num,
        },
    };
    int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;

    /* A GRH is required on Ethernet (RoCE) and between IB subnets. */
    if (m->port_attr.link_layer == IBV_LINK_LAYER_ETHERNET ||
        (memcmp(peer->gid, zero, 16) && memcmp(peer->gid, m->gid.raw, 8))) {
        a.ah_attr.is_global = 1;
        memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
        a.ah_attr.grh.sgid_index = (uint8_t) m->gid_index;
        a.ah_attr.grh.hop_limit = 64;
        a.ah_attr.grh.traffic_class = (uint8_t) openib_params.traffic_class;
    }
    if (responder) {
        a.max_dest_rd_atomic = m->dev->attr.max_qp_rd_atom > RD_ATOMIC_MAX
                                   ? RD_ATOMIC_MAX : m->dev->attr.max_qp_rd_atom;
        a.min_rnr_timer = 12; /* 0.64 ms */
        mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    }
    return modify_qp(qp, &a, mask);
}

int openib_qp_to_rts(const mca_btl_openib_module_t *m, struct ibv_qp *qp, uint32_t sq_psn)
{
    struct ibv_qp_attr a = {
        .qp_state = IBV_QPS_RTS,
        .timeout = (uint8_t) openib_params.ib_timeout,
        .retry_cnt = (uint8_t) openib_params.ib_retry_count,
        .rnr_retry = (uint8_t) openib_params.ib_rnr_retry,
        .sq_psn = sq_psn,
        .max_rd_atomic = m->dev->attr.max_qp_init_rd_atom > RD_ATOMIC_MAX
                             ? RD_ATOMIC_MAX : m->dev->attr.max_qp_init_rd_atom,
    };

    return modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                 IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

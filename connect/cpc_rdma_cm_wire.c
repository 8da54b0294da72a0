/*
 * cpc_rdma_cm_wire.c - what the rdma_cm CPC puts in the IB CM's private data.
 *
 * Room (InfiniBand and RoCE; measured against librdmacm, see cpc_rdma_cm.h):
 * REQ 56 bytes, REP 196, REJ 148. The header is 11 bytes:
 *
 *   [0]     0xa7: ours (another rdma_cm user's request is refused)
 *   [1]     version << 4 | type (REQ 1, REP 2, REJ 3)
 *   [2..9]  the sender's process name (the responder looks its endpoint up)
 *   [10]    REQ: chunk index << 4 | chunk count; REP: 0; REJ: the reason
 *
 * The body, all big-endian, carries what the peer's modex does not have:
 *
 *   [0]           number of QPs n (1..8)
 *   [1..4]        rq_layout (both sides must agree; the BTL checks)
 *   [5..8]        credit mailbox rkey
 *   [9..16]       credit mailbox address
 *   [17..17+3n)   PSN of each QP, 24 bits each
 *   then          QPN of QPs 1..n-1, 24 bits each
 *
 * QP 0's number travels in conn_param.qp_num (QP-less rdma_cm needs it there
 * anyway); GID, LID and MTU come from the peer's modex port. So the body is
 * 14 + 6n bytes: 32 for the default three queues, and it fits one REQ for up
 * to five queues (44 of 45 bytes). Six to eight queues take two REQs: the
 * responder stores the first chunk and rejects it with MORE, and the
 * initiator sends the next on a fresh cm_id (cpc_rdma_cm_conn.c). The REP
 * always carries the whole body in one go (at most 73 of 196 bytes).
 *
 * REJ(BUSY), from the responder's listener thread while its process is not
 * in MPI (cpc_rdma_cm_listen.c): the header, then
 *
 *   [11]    marker version (1)
 *   [12]    0 (reserved)
 *
 * A reader that finds another marker version, or a BUSY cut short, does not
 * guess (cpc_rdma_cm_conn.c fails the connection with the reason).
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <string.h>

#include "connect/cpc_rdma_cm.h"
#include "connect/cpc_wire_be.h"

#define RCM_MAGIC 0xa7
#define RCM_WIRE_VERSION 1

size_t rcm_hdr_encode(uint8_t *p, enum rcm_type type, const void *src, uint8_t arg)
{
    p[0] = RCM_MAGIC;
    p[1] = (uint8_t) (RCM_WIRE_VERSION << 4 | type);
    memcpy(p + 2, src, RCM_ID_LEN);
    p[10] = arg;
    return RCM_HDR_LEN;
}

int rcm_msg_decode(const uint8_t *p, size_t len, struct rcm_msg *out)
{
    uint8_t type;

    if (NULL == p || len < RCM_HDR_LEN || p[0] != RCM_MAGIC || p[1] >> 4 != RCM_WIRE_VERSION) {
        return OPAL_ERR_BAD_PARAM;
    }
    type = p[1] & 0x0f;
    if (type < RCM_REQ || type > RCM_REJ) {
        return OPAL_ERR_BAD_PARAM;
    }
    out->type = (enum rcm_type) type;
    memcpy(out->src, p + 2, RCM_ID_LEN);
    out->arg = p[10];
    out->rest = p + RCM_HDR_LEN;
    out->rest_len = len - RCM_HDR_LEN;
    if (RCM_REQ == out->type) {
        unsigned idx = out->arg >> 4, n = out->arg & 0x0f;
        if (0 == n || n > RCM_MAX_CHUNKS || idx >= n) {
            return OPAL_ERR_BAD_PARAM;
        }
    }
    return OPAL_SUCCESS;
}

size_t rcm_body_encode(const struct openib_cpc_qp_info *q, uint8_t *body)
{
    uint8_t *p = body;
    int i, n = q->num_qps;

    if (n < 1 || n > OPENIB_CPC_MAX_QPS) {
        return 0;
    }
    for (i = 0; i < n; ++i) {
        if (q->qpn[i] >> 24 || q->psn[i] >> 24) {
            return 0; /* not a valid QPN/PSN: both are 24 bits */
        }
    }
    *p++ = (uint8_t) n;
    p = cpc_be_put(p, q->rq_layout, 4);
    p = cpc_be_put(p, q->mailbox_rkey, 4);
    p = cpc_be_put(p, q->mailbox_addr, 8);
    for (i = 0; i < n; ++i) {
        p = cpc_be_put(p, q->psn[i], 3);
    }
    for (i = 1; i < n; ++i) {
        p = cpc_be_put(p, q->qpn[i], 3);
    }
    return (size_t) (p - body);
}

int rcm_body_decode(const uint8_t *body, size_t len, uint32_t qpn0,
                    struct openib_cpc_qp_info *q)
{
    const uint8_t *p = body;
    uint64_t v;
    int i, n;

    if (len < 1) {
        return OPAL_ERR_BAD_PARAM;
    }
    n = body[0];
    if (n < 1 || n > OPENIB_CPC_MAX_QPS || len < RCM_BODY_LEN(n) || qpn0 >> 24) {
        return OPAL_ERR_BAD_PARAM;
    }
    p++;
    q->num_qps = (uint8_t) n;
    p = cpc_be_get(p, &v, 4);
    q->rq_layout = (uint32_t) v;
    p = cpc_be_get(p, &v, 4);
    q->mailbox_rkey = (uint32_t) v;
    p = cpc_be_get(p, &v, 8);
    q->mailbox_addr = v;
    for (i = 0; i < n; ++i) {
        p = cpc_be_get(p, &v, 3);
        q->psn[i] = (uint32_t) v;
    }
    q->qpn[0] = qpn0;
    for (i = 1; i < n; ++i) {
        p = cpc_be_get(p, &v, 3);
        q->qpn[i] = (uint32_t) v;
    }
    return OPAL_SUCCESS;
}

size_t rcm_busy_encode(uint8_t *p, const void *src)
{
    static const uint8_t nobody[RCM_ID_LEN];

    rcm_hdr_encode(p, RCM_REJ, src ? src : nobody, RCM_REJ_BUSY);
    p[RCM_HDR_LEN] = RCM_BUSY_VERSION;
    p[RCM_HDR_LEN + 1] = 0;
    return RCM_BUSY_LEN;
}

int rcm_busy_decode(const struct rcm_msg *m)
{
    if (NULL == m || RCM_REJ != m->type || RCM_REJ_BUSY != m->arg || m->rest_len < 2) {
        return OPAL_ERR_BAD_PARAM;
    }
    return RCM_BUSY_VERSION == m->rest[0] ? OPAL_SUCCESS : OPAL_ERR_NOT_SUPPORTED;
}

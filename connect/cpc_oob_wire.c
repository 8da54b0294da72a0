/*
 * cpc_oob_wire.c - the oob side channel's formats (see cpc_oob_wire.h).
 *
 * Blob, version 2, exact length: u8 version, u8 naddr (1..8), u16 TCP port
 * (big-endian), naddr x 4 bytes IPv4 (network order, as published).
 *
 * Every channel frame is OOB_MSG_SIZE bytes, zero padded, big-endian.
 *
 * oob message, version 1 (128 bytes used):
 *   u32 magic "OIBO", u8 version, u8 type, u16 reason,
 *   8 bytes source id, 8 bytes destination id,
 *   u32 mtu, 16 bytes gid, u16 lid, u8 num_qps, u8 0,
 *   8 x u32 qpn, 8 x u32 psn, u32 rq_layout, u32 mailbox rkey,
 *   u64 mailbox address
 *
 * keepalive, version 1 (8 bytes used):
 *   u32 magic "OIBK", u8 version, u8 type (PING 1, PONG 2), u16 pending
 *
 * A frame's magic tells the channel's keepalives from the CPCs' messages
 * (oob's "OIBO", xoob's "XOOB"), so the channel thread can answer a PING
 * without knowing anything about the CPC on the session.
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <string.h>

#include "connect/cpc_oob_wire.h"
#include "connect/cpc_wire_be.h"

#define OOB_MAGIC 0x4f49424fu    /* "OIBO" */
#define OOB_KA_MAGIC 0x4f49424bu /* "OIBK" */
#define OOB_KA_VERSION 1
#define OOB_MSG_LEN (4 + 4 + 2 * OOB_ID_LEN + 4 + 16 + 4 + 8 * OPENIB_CPC_MAX_QPS + 16)
#define OOB_KA_LEN 8

/* ---- blob ---- */

int oob_blob_encode(uint8_t *buf, size_t cap, const uint32_t *addrs, int naddr, uint16_t port,
                    size_t *len)
{
    if (NULL == buf || NULL == addrs || NULL == len || naddr < 1 || naddr > OOB_MAX_ADDRS) {
        return OPAL_ERR_BAD_PARAM;
    }
    if (cap < 4 + 4 * (size_t) naddr) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    buf[0] = OOB_BLOB_VERSION;
    buf[1] = (uint8_t) naddr;
    cpc_be_put(buf + 2, port, 2);
    memcpy(buf + 4, addrs, 4 * (size_t) naddr);
    *len = 4 + 4 * (size_t) naddr;
    return OPAL_SUCCESS;
}

int oob_blob_decode(const uint8_t *b, size_t len, uint32_t *addrs, int *naddr, uint16_t *port,
                    int *version_out)
{
    uint64_t v;
    int i;

    if (NULL == b || len < 4) {
        return OPAL_ERR_BAD_PARAM;
    }
    if (version_out) {
        *version_out = b[0];
    }
    if (b[0] != OOB_BLOB_VERSION) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    if (0 == b[1] || b[1] > OOB_MAX_ADDRS || len != 4 + 4 * (size_t) b[1]) {
        return OPAL_ERR_BAD_PARAM;
    }
    *naddr = b[1];
    cpc_be_get(b + 2, &v, 2);
    *port = (uint16_t) v;
    for (i = 0; i < *naddr; ++i) {
        memcpy(&addrs[i], b + 4 + 4 * i, 4);
    }
    return OPAL_SUCCESS;
}

/* ---- handshake messages ---- */

int oob_msg_encode(uint8_t *buf, size_t size, enum oob_type type, uint16_t reason,
                   const void *src, const void *dst, const struct openib_cpc_qp_info *q)
{
    uint8_t *p = buf;
    int i;

    if (NULL == buf || size < OOB_MSG_LEN || NULL == src || NULL == dst ||
        (NULL != q && q->num_qps > OPENIB_CPC_MAX_QPS)) {
        return OPAL_ERR_BAD_PARAM;
    }
    memset(buf, 0, size);
    p = cpc_be_put(p, OOB_MAGIC, 4);
    p = cpc_be_put(p, OOB_MSG_VERSION, 1);
    p = cpc_be_put(p, type, 1);
    p = cpc_be_put(p, reason, 2);
    memcpy(p, src, OOB_ID_LEN);
    memcpy(p + OOB_ID_LEN, dst, OOB_ID_LEN);
    p += 2 * OOB_ID_LEN;
    if (NULL == q) {
        return OPAL_SUCCESS;
    }
    p = cpc_be_put(p, q->mtu, 4);
    memcpy(p, q->gid, 16);
    p += 16;
    p = cpc_be_put(p, q->lid, 2);
    p = cpc_be_put(p, q->num_qps, 1);
    p = cpc_be_put(p, 0, 1);
    for (i = 0; i < OPENIB_CPC_MAX_QPS; ++i) {
        p = cpc_be_put(p, q->qpn[i], 4);
    }
    for (i = 0; i < OPENIB_CPC_MAX_QPS; ++i) {
        p = cpc_be_put(p, q->psn[i], 4);
    }
    p = cpc_be_put(p, q->rq_layout, 4);
    p = cpc_be_put(p, q->mailbox_rkey, 4);
    cpc_be_put(p, q->mailbox_addr, 8);
    return OPAL_SUCCESS;
}

int oob_msg_decode(const uint8_t *buf, size_t size, struct oob_msg *out)
{
    const uint8_t *p = buf;
    uint64_t v;
    int i;

    if (NULL == buf || NULL == out || size < OOB_MSG_LEN) {
        return OPAL_ERR_BAD_PARAM;
    }
    p = cpc_be_get(p, &v, 4);
    if (v != OOB_MAGIC) {
        return OPAL_ERR_BAD_PARAM;
    }
    if (p[0] != OOB_MSG_VERSION) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    if (p[1] < OOB_REQ || p[1] > OOB_REJ) {
        return OPAL_ERR_BAD_PARAM;
    }
    out->type = (enum oob_type) p[1];
    cpc_be_get(p + 2, &v, 2);
    out->reason = (uint16_t) v;
    p += 4;
    memcpy(out->src, p, OOB_ID_LEN);
    memcpy(out->dst, p + OOB_ID_LEN, OOB_ID_LEN);
    p += 2 * OOB_ID_LEN;
    openib_cpc_qp_info_init(&out->q);
    p = cpc_be_get(p, &v, 4);
    out->q.mtu = (uint32_t) v;
    memcpy(out->q.gid, p, 16);
    p += 16;
    p = cpc_be_get(p, &v, 2);
    out->q.lid = (uint16_t) v;
    out->q.num_qps = p[0];
    p += 2;
    if (out->q.num_qps > OPENIB_CPC_MAX_QPS) {
        return OPAL_ERR_BAD_PARAM;
    }
    for (i = 0; i < OPENIB_CPC_MAX_QPS; ++i) {
        p = cpc_be_get(p, &v, 4);
        out->q.qpn[i] = (uint32_t) v;
    }
    for (i = 0; i < OPENIB_CPC_MAX_QPS; ++i) {
        p = cpc_be_get(p, &v, 4);
        out->q.psn[i] = (uint32_t) v;
    }
    p = cpc_be_get(p, &v, 4);
    out->q.rq_layout = (uint32_t) v;
    p = cpc_be_get(p, &v, 4);
    out->q.mailbox_rkey = (uint32_t) v;
    cpc_be_get(p, &out->q.mailbox_addr, 8);
    return OPAL_SUCCESS;
}

/* ---- keepalives ---- */

int oob_ka_encode(uint8_t *buf, size_t size, const struct oob_ka *k)
{
    uint8_t *p = buf;

    if (NULL == buf || NULL == k || size < OOB_KA_LEN ||
        (k->type != OOB_KA_PING && k->type != OOB_KA_PONG)) {
        return OPAL_ERR_BAD_PARAM;
    }
    memset(buf, 0, size);
    p = cpc_be_put(p, OOB_KA_MAGIC, 4);
    p = cpc_be_put(p, OOB_KA_VERSION, 1);
    p = cpc_be_put(p, k->type, 1);
    cpc_be_put(p, k->pending, 2);
    return OPAL_SUCCESS;
}

int oob_ka_decode(const uint8_t *buf, size_t size, struct oob_ka *k)
{
    uint64_t v;

    if (NULL == buf || NULL == k || size < 4) {
        return OPAL_ERR_BAD_PARAM;
    }
    cpc_be_get(buf, &v, 4);
    if (v != OOB_KA_MAGIC) {
        return OPAL_ERR_NOT_FOUND;
    }
    if (size < OOB_KA_LEN) {
        return OPAL_ERR_BAD_PARAM;
    }
    if (buf[4] != OOB_KA_VERSION) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    if (buf[5] != OOB_KA_PING && buf[5] != OOB_KA_PONG) {
        return OPAL_ERR_BAD_PARAM;
    }
    k->type = buf[5];
    cpc_be_get(buf + 6, &v, 2);
    k->pending = (uint16_t) v;
    return OPAL_SUCCESS;
}

/*
 * xoob_wire.c - xoob's modex blob and side-channel messages.
 *
 * Blob, version 3, big-endian, exact length:
 *   u8 version, u8 naddr (1..8), u16 tcp_port, 16 bytes process token,
 *   naddr x 4 bytes IPv4 (as published: network order), u64 node_id,
 *   u8 nsrq (1..8), nsrq x u32 SRQN
 * (2 had no token; 1 was 2 from before side-channel keepalives.)
 *
 * Message, version 2: oob's handshake envelope (oob_wire.c: magic "XOOB",
 * version, type, reason, ids; nonce, echo and MAC from 128 on; 160 bytes,
 * all used, big-endian) around this body:
 *    24  u32 qpn, u32 psn, u32 mtu, u32 rq_layout
 *    40  16 bytes gid, u16 lid, u64 node_id
 *    66  62 bytes why (NUL-padded)
 * (Version 1 had 64 bytes of why and no nonces nor MAC.)
 * Versioning rules: wire/README.md.
 */
#include "opal_config.h"

#include <string.h>

#include "opal/constants.h"

#include "wire/xoob_wire.h"
#include "wire/wire_be.h"

#define XOOB_MAGIC 0x584f4f42u /* "XOOB" */
#define XOOB_WHY_OFF (OOB_ENVELOPE_BODY_OFF + 16 + 16 + 2 + 8)
#define XOOB_BLOB_HDR (4 + OPENIB_AUTH_TOKEN_LEN)

_Static_assert(XOOB_WHY_OFF + XOOB_WHY_LEN == OOB_ENVELOPE_BODY_END,
               "the xoob body fills the envelope's");
_Static_assert(XOOB_ID_LEN == OOB_ID_LEN, "xoob shares oob's envelope and its checks");

static size_t blob_size(uint8_t naddr, uint8_t nsrq)
{
    return XOOB_BLOB_HDR + 4 * (size_t) naddr + 8 + 1 + 4 * (size_t) nsrq;
}

int xoob_blob_encode(const struct xoob_blob *b, uint8_t *buf, size_t cap, size_t *len)
{
    uint8_t *p = buf;
    int i;

    if (NULL == b || NULL == buf || NULL == len || 0 == b->naddr ||
        b->naddr > XOOB_MAX_ADDRS || 0 == b->nsrq || b->nsrq > XOOB_MAX_SRQS) {
        return OPAL_ERR_BAD_PARAM;
    }
    if (cap < blob_size(b->naddr, b->nsrq)) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    p = cpc_be_put(p, XOOB_BLOB_VERSION, 1);
    p = cpc_be_put(p, b->naddr, 1);
    p = cpc_be_put(p, b->port, 2);
    memcpy(p, b->token, OPENIB_AUTH_TOKEN_LEN);
    p += OPENIB_AUTH_TOKEN_LEN;
    for (i = 0; i < b->naddr; ++i) {
        memcpy(p, &b->addrs[i], 4);
        p += 4;
    }
    p = cpc_be_put(p, b->node_id, 8);
    p = cpc_be_put(p, b->nsrq, 1);
    for (i = 0; i < b->nsrq; ++i) {
        p = cpc_be_put(p, b->srqn[i], 4);
    }
    *len = (size_t) (p - buf);
    return OPAL_SUCCESS;
}

int xoob_blob_decode(const uint8_t *buf, size_t len, struct xoob_blob *b)
{
    const uint8_t *p = buf;
    int i;

    if (NULL == buf || NULL == b || len < 4) {
        return OPAL_ERR_BAD_PARAM;
    }
    if (buf[0] != XOOB_BLOB_VERSION) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    memset(b, 0, sizeof(*b));
    b->naddr = buf[1];
    if (0 == b->naddr || b->naddr > XOOB_MAX_ADDRS || len < blob_size(b->naddr, 0)) {
        return OPAL_ERR_BAD_PARAM;
    }
    p = cpc_be_get16(p + 2, &b->port);
    memcpy(b->token, p, OPENIB_AUTH_TOKEN_LEN);
    p += OPENIB_AUTH_TOKEN_LEN;
    for (i = 0; i < b->naddr; ++i) {
        memcpy(&b->addrs[i], p, 4);
        p += 4;
    }
    p = cpc_be_get(p, &b->node_id, 8);
    b->nsrq = *p++;
    /* the length must be exactly what the counts say */
    if (0 == b->nsrq || b->nsrq > XOOB_MAX_SRQS || len != blob_size(b->naddr, b->nsrq)) {
        return OPAL_ERR_BAD_PARAM;
    }
    for (i = 0; i < b->nsrq; ++i) {
        p = cpc_be_get32(p, &b->srqn[i]);
    }
    return OPAL_SUCCESS;
}

int xoob_msg_encode(const struct xoob_msg *m, uint8_t *buf, size_t size,
                    const uint8_t key[OPENIB_AUTH_TOKEN_LEN])
{
    uint8_t *p = buf;

    if (NULL == m || NULL == buf || NULL == key || size < OOB_MSG_SIZE) {
        return OPAL_ERR_BAD_PARAM;
    }
    memset(buf, 0, size);
    p = oob_envelope_put(buf, XOOB_MAGIC, XOOB_MSG_VERSION, &m->env);
    p = cpc_be_put(p, m->qpn, 4);
    p = cpc_be_put(p, m->psn, 4);
    p = cpc_be_put(p, m->mtu, 4);
    p = cpc_be_put(p, m->rq_layout, 4);
    memcpy(p, m->gid, 16);
    p += 16;
    p = cpc_be_put(p, m->lid, 2);
    p = cpc_be_put(p, m->node_id, 8);
    memcpy(p, m->why, strnlen(m->why, XOOB_WHY_LEN));
    oob_envelope_seal(buf, &m->env, key);
    return OPAL_SUCCESS;
}

int xoob_msg_is_xoob(const uint8_t *buf, size_t size)
{
    uint32_t magic;

    if (NULL == buf || size < 4) {
        return 0;
    }
    cpc_be_get32(buf, &magic);
    return magic == XOOB_MAGIC;
}

int xoob_msg_decode(const uint8_t *buf, size_t size, struct xoob_msg *m)
{
    const uint8_t *p;
    int rc;

    if (NULL == m) {
        return OPAL_ERR_BAD_PARAM;
    }
    /* padding too, so a decoded message compares whole; a refused frame
     * leaves it zeroed */
    memset(m, 0, sizeof(*m));
    rc = oob_envelope_decode(buf, size, XOOB_MAGIC, XOOB_MSG_VERSION, XOOB_REJ, &m->env, &p);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    p = cpc_be_get32(p, &m->qpn);
    p = cpc_be_get32(p, &m->psn);
    p = cpc_be_get32(p, &m->mtu);
    p = cpc_be_get32(p, &m->rq_layout);
    memcpy(m->gid, p, 16);
    p += 16;
    p = cpc_be_get16(p, &m->lid);
    p = cpc_be_get(p, &m->node_id, 8);
    memcpy(m->why, p, XOOB_WHY_LEN); /* the rest of m->why stays NUL */
    return OPAL_SUCCESS;
}

struct oob_frame_view xoob_msg_view(const uint8_t *buf, size_t size, enum xoob_msg_type a,
                                    enum xoob_msg_type b, struct xoob_msg *out)
{
    return OPAL_SUCCESS == xoob_msg_decode(buf, size, out) ? oob_envelope_view(buf, a, b)
                                                           : oob_frame_none;
}

uint64_t xoob_node_id(const char *hostname)
{
    uint64_t h = 0xcbf29ce484222325ull;

    for (; hostname && *hostname; ++hostname) {
        h ^= (uint8_t) *hostname;
        h *= 0x100000001b3ull;
    }
    return h;
}

/*
 * oob_wire.c - the oob side channel's formats (see oob_wire.h).
 *
 * Blob, version 4, exact length: u8 version, u8 naddr (0..8), u16 TCP port
 * (big-endian), 16 bytes process token, u32 UD QP number (0 = none),
 * naddr x 4 bytes IPv4 (network order, as published). At least one of
 * naddr and the QP number is non-zero. (3 had no QP number, naddr >= 1.)
 *
 * Every channel frame is OOB_MSG_SIZE bytes, zero padded, big-endian.
 *
 * Handshake envelope, oob's and xoob's messages alike (all 160 bytes used):
 *     0  u32 magic ("OIBO" oob, "XOOB" xoob), u8 version, u8 type, u16 reason
 *     8  8 bytes source id, 8 bytes destination id
 *    24  the CPC's body, 104 bytes
 *   128  8 bytes nonce, 8 bytes echo (the nonce answered)
 *   144  16 bytes MAC: HMAC-SHA256/128 of the 160 bytes, MAC counted as
 *        zeros, keyed with the receiver's token (openib_auth_seal)
 *
 * oob message, version 2, body:
 *    24  u32 mtu, 16 bytes gid, u16 lid, u8 num_qps, u8 0
 *    48  8 x u32 qpn, 8 x u32 psn
 *   112  u32 rq_layout, u32 mailbox rkey, u64 mailbox address
 * (Version 1 was the first 128 bytes, unauthenticated.)
 *
 * UD frame, version 1: a 24-byte header, then a channel frame (OPEN, DATA):
 *     0  u32 magic "OIBU", u8 version, u8 kind, u16 0
 *     8  u32 source session, u32 destination session (~0: none yet)
 *    16  u32 seq, u32 0
 *    24  OOB_MSG_SIZE bytes (OPEN and DATA only; the datagram's length is
 *        exact)
 *
 * keepalive, version 1 (8 bytes used):
 *   u32 magic "OIBK", u8 version, u8 type (PING 1, PONG 2), u16 pending
 *
 * A frame's magic tells the channel's keepalives from the CPCs' messages
 * (oob's "OIBO", xoob's "XOOB"), so the channel thread can answer a PING
 * without knowing anything about the CPC on the session. Versioning rules
 * for all of them: wire/README.md.
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <string.h>

#include "wire/oob_wire.h"
#include "wire/wire_be.h"

#define OOB_MAGIC 0x4f49424fu    /* "OIBO" */
#define OOB_KA_MAGIC 0x4f49424bu /* "OIBK" */
#define OOB_UD_MAGIC 0x4f494255u /* "OIBU" */
#define OOB_UD_VERSION 1
#define OOB_KA_VERSION 1
/* the handshake envelope's fields (layout above) */
#define OOB_TYPE_OFF 5
#define OOB_REASON_OFF 6
#define OOB_SRC_OFF 8
#define OOB_DST_OFF (OOB_SRC_OFF + OOB_ID_LEN)
#define OOB_NONCE_OFF OOB_ENVELOPE_BODY_END
#define OOB_ECHO_OFF (OOB_NONCE_OFF + OPENIB_AUTH_NONCE_LEN)
#define OOB_MAC_OFF (OOB_ECHO_OFF + OPENIB_AUTH_NONCE_LEN)
#define OOB_MSG_LEN (OOB_MAC_OFF + OPENIB_AUTH_MAC_LEN)
#define OOB_KA_LEN 8
#define OOB_BLOB_HDR (4 + OPENIB_AUTH_TOKEN_LEN + 4)

_Static_assert(OOB_MSG_LEN <= OOB_MSG_SIZE, "the handshake envelope must fit a channel frame");
_Static_assert(OOB_ENVELOPE_BODY_OFF == OOB_DST_OFF + OOB_ID_LEN, "the body follows the ids");
_Static_assert(OOB_ENVELOPE_BODY_OFF + 24 + 8 * OPENIB_CPC_MAX_QPS + 16 == OOB_ENVELOPE_BODY_END,
               "the oob body (layout above) fills the envelope's");

int oob_frame_check_head(const uint8_t *p, uint32_t magic, uint8_t version)
{
    uint32_t v;

    cpc_be_get32(p, &v);
    if (v != magic) {
        return OPAL_ERR_BAD_PARAM;
    }
    if (p[4] != version) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    return OPAL_SUCCESS;
}

/* ---- handshake envelope ---- */

int oob_envelope_decode(const uint8_t *buf, size_t size, uint32_t magic, uint8_t version,
                        uint8_t last_type, struct oob_envelope *env, const uint8_t **body)
{
    int rc;

    if (NULL == env || NULL == buf || size < 8) {
        return OPAL_ERR_BAD_PARAM;
    }
    rc = oob_frame_check_head(buf, magic, version);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    if (size < OOB_MSG_LEN || buf[OOB_TYPE_OFF] < 1 || buf[OOB_TYPE_OFF] > last_type) {
        return OPAL_ERR_BAD_PARAM;
    }
    env->type = buf[OOB_TYPE_OFF];
    cpc_be_get16(buf + OOB_REASON_OFF, &env->reason);
    memcpy(env->src, buf + OOB_SRC_OFF, OOB_ID_LEN);
    memcpy(env->dst, buf + OOB_DST_OFF, OOB_ID_LEN);
    memcpy(env->nonce, buf + OOB_NONCE_OFF, OPENIB_AUTH_NONCE_LEN);
    memcpy(env->echo, buf + OOB_ECHO_OFF, OPENIB_AUTH_NONCE_LEN);
    *body = buf + OOB_ENVELOPE_BODY_OFF;
    return OPAL_SUCCESS;
}

uint8_t *oob_envelope_put(uint8_t *buf, uint32_t magic, uint8_t version,
                          const struct oob_envelope *env)
{
    cpc_be_put(buf, magic, 4);
    cpc_be_put(buf + 4, version, 1);
    cpc_be_put(buf + OOB_TYPE_OFF, env->type, 1);
    cpc_be_put(buf + OOB_REASON_OFF, env->reason, 2);
    memcpy(buf + OOB_SRC_OFF, env->src, OOB_ID_LEN);
    memcpy(buf + OOB_DST_OFF, env->dst, OOB_ID_LEN);
    return buf + OOB_ENVELOPE_BODY_OFF;
}

void oob_envelope_seal(uint8_t *buf, const struct oob_envelope *env,
                       const uint8_t key[OPENIB_AUTH_TOKEN_LEN])
{
    memcpy(buf + OOB_NONCE_OFF, env->nonce, OPENIB_AUTH_NONCE_LEN);
    memcpy(buf + OOB_ECHO_OFF, env->echo, OPENIB_AUTH_NONCE_LEN);
    openib_auth_seal(key, buf, OOB_MSG_LEN, OOB_MAC_OFF);
}

const struct oob_frame_view oob_frame_none = { .frame = NULL };

struct oob_frame_view oob_envelope_view(const uint8_t *buf, uint8_t a, uint8_t b)
{
    uint8_t type = buf[OOB_TYPE_OFF];

    if (type != a && type != b) {
        return oob_frame_none;
    }
    return (struct oob_frame_view){ .frame = buf, .src = buf + OOB_SRC_OFF,
                                    .dst = buf + OOB_DST_OFF, .nonce = buf + OOB_NONCE_OFF,
                                    .echo = buf + OOB_ECHO_OFF };
}

/* ---- blob ---- */

int oob_blob_encode(uint8_t *buf, size_t cap, const struct oob_blob *b, size_t *len)
{
    if (NULL == buf || NULL == b || NULL == len || b->naddr < 0 || b->naddr > OOB_MAX_ADDRS ||
        (0 == b->naddr && 0 == b->ud_qpn)) {
        return OPAL_ERR_BAD_PARAM;
    }
    if (cap < OOB_BLOB_HDR + 4 * (size_t) b->naddr) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    buf[0] = OOB_BLOB_VERSION;
    buf[1] = (uint8_t) b->naddr;
    cpc_be_put(buf + 2, b->naddr ? b->port : 0, 2);
    memcpy(buf + 4, b->token, OPENIB_AUTH_TOKEN_LEN);
    cpc_be_put(buf + 4 + OPENIB_AUTH_TOKEN_LEN, b->ud_qpn, 4);
    memcpy(buf + OOB_BLOB_HDR, b->addrs, 4 * (size_t) b->naddr);
    *len = OOB_BLOB_HDR + 4 * (size_t) b->naddr;
    return OPAL_SUCCESS;
}

int oob_blob_decode(const uint8_t *buf, size_t len, struct oob_blob *b, int *version_out)
{
    if (NULL == buf || NULL == b || len < 4) {
        return OPAL_ERR_BAD_PARAM;
    }
    if (version_out) {
        *version_out = buf[0];
    }
    if (buf[0] != OOB_BLOB_VERSION) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    if (buf[1] > OOB_MAX_ADDRS || len != OOB_BLOB_HDR + 4 * (size_t) buf[1]) {
        return OPAL_ERR_BAD_PARAM;
    }
    memset(b, 0, sizeof(*b));
    b->naddr = buf[1];
    cpc_be_get16(buf + 2, &b->port);
    memcpy(b->token, buf + 4, OPENIB_AUTH_TOKEN_LEN);
    cpc_be_get32(buf + 4 + OPENIB_AUTH_TOKEN_LEN, &b->ud_qpn);
    if ((0 == b->naddr && 0 == b->ud_qpn) || (0 == b->naddr && 0 != b->port)) {
        return OPAL_ERR_BAD_PARAM;
    }
    memcpy(b->addrs, buf + OOB_BLOB_HDR, 4 * (size_t) b->naddr);
    return OPAL_SUCCESS;
}

/* ---- handshake messages ---- */

int oob_msg_encode(uint8_t *buf, size_t size, const struct oob_msg *m,
                   const uint8_t key[OPENIB_AUTH_TOKEN_LEN])
{
    const struct openib_cpc_qp_info *q = &m->q;
    uint8_t *p = buf;
    int i;

    if (NULL == buf || NULL == m || NULL == key || size < OOB_MSG_LEN ||
        m->env.type < OOB_REQ || m->env.type > OOB_REJ || q->num_qps > OPENIB_CPC_MAX_QPS) {
        return OPAL_ERR_BAD_PARAM;
    }
    memset(buf, 0, size);
    p = oob_envelope_put(buf, OOB_MAGIC, OOB_MSG_VERSION, &m->env);
    if (m->env.type == OOB_REQ || m->env.type == OOB_REP) {
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
    }
    oob_envelope_seal(buf, &m->env, key);
    return OPAL_SUCCESS;
}

int oob_msg_decode(const uint8_t *buf, size_t size, struct oob_msg *out)
{
    const uint8_t *p;
    int i, rc;

    if (NULL == out) {
        return OPAL_ERR_BAD_PARAM;
    }
    rc = oob_envelope_decode(buf, size, OOB_MAGIC, OOB_MSG_VERSION, OOB_REJ, &out->env, &p);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    openib_cpc_qp_info_init(&out->q); /* zeroes what the body leaves out */
    p = cpc_be_get32(p, &out->q.mtu);
    memcpy(out->q.gid, p, 16);
    p += 16;
    p = cpc_be_get16(p, &out->q.lid);
    out->q.num_qps = p[0];
    p += 2;
    if (out->q.num_qps > OPENIB_CPC_MAX_QPS) {
        return OPAL_ERR_BAD_PARAM;
    }
    for (i = 0; i < OPENIB_CPC_MAX_QPS; ++i) {
        p = cpc_be_get32(p, &out->q.qpn[i]);
    }
    for (i = 0; i < OPENIB_CPC_MAX_QPS; ++i) {
        p = cpc_be_get32(p, &out->q.psn[i]);
    }
    p = cpc_be_get32(p, &out->q.rq_layout);
    p = cpc_be_get32(p, &out->q.mailbox_rkey);
    cpc_be_get(p, &out->q.mailbox_addr, 8);
    return OPAL_SUCCESS;
}

/* ---- receiver checks ---- */

bool oob_is_member(const uint8_t src[OOB_ID_LEN], const uint8_t self[OOB_ID_LEN],
                   uint32_t job_size)
{
    uint32_t vpid;

    /* the name's two halves as Open MPI lays them out: jobid, vpid */
    if (0 != memcmp(src, self, 4)) {
        return true; /* another job: the MAC decides */
    }
    if (0 == memcmp(src, self, OOB_ID_LEN)) {
        return false; /* ourselves: we never send ourselves a handshake */
    }
    memcpy(&vpid, src + 4, 4);
    return 0 == job_size || vpid < job_size;
}

/* The order of the checks, shared with xoob: cheap and public facts first,
 * the MAC next, freshness last (only a verified frame may enter the ring). */
enum openib_refusal oob_check_request_frame(struct oob_frame_view f,
                                            const uint8_t self[OOB_ID_LEN], uint32_t job_size,
                                            const uint8_t own_token[OPENIB_AUTH_TOKEN_LEN],
                                            struct openib_auth_replay *replay)
{
    if (NULL == f.frame) {
        return REFUSAL_MALFORMED;
    }
    if (0 != memcmp(f.dst, self, OOB_ID_LEN)) {
        return REFUSAL_WRONG_DST;
    }
    if (!oob_is_member(f.src, self, job_size)) {
        return REFUSAL_NOT_MEMBER;
    }
    if (!openib_auth_verify(own_token, f.frame, OOB_MSG_LEN, OOB_MAC_OFF)) {
        return REFUSAL_BAD_MAC;
    }
    if (!openib_auth_replay_fresh(replay, f.src, OOB_ID_LEN, f.nonce)) {
        return REFUSAL_REPLAY;
    }
    return REFUSAL_OK;
}

enum openib_refusal oob_check_answer_frame(struct oob_frame_view f,
                                           const uint8_t self[OOB_ID_LEN],
                                           const uint8_t peer[OOB_ID_LEN],
                                           const uint8_t own_token[OPENIB_AUTH_TOKEN_LEN],
                                           const uint8_t asked[OPENIB_AUTH_NONCE_LEN])
{
    if (NULL == f.frame) {
        return REFUSAL_MALFORMED;
    }
    if (0 != memcmp(f.dst, self, OOB_ID_LEN)) {
        return REFUSAL_WRONG_DST;
    }
    if (0 != memcmp(f.src, peer, OOB_ID_LEN)) {
        return REFUSAL_WRONG_SRC;
    }
    if (!openib_auth_verify(own_token, f.frame, OOB_MSG_LEN, OOB_MAC_OFF)) {
        return REFUSAL_BAD_MAC;
    }
    if (0 != memcmp(f.echo, asked, OPENIB_AUTH_NONCE_LEN)) {
        return REFUSAL_REPLAY;
    }
    return REFUSAL_OK;
}

struct oob_frame_view oob_msg_view(const uint8_t *buf, size_t size, enum oob_type a,
                                   enum oob_type b, struct oob_msg *out)
{
    return OPAL_SUCCESS == oob_msg_decode(buf, size, out) ? oob_envelope_view(buf, a, b)
                                                          : oob_frame_none;
}

enum openib_refusal oob_check_source(const uint32_t *published, int n, uint32_t source)
{
    int i;

    for (i = 0; i < n; ++i) {
        if (published[i] == source) {
            return REFUSAL_OK;
        }
    }
    return REFUSAL_BAD_SOURCE_ADDR;
}

enum openib_refusal oob_check_ud_source(uint32_t published_qpn, const uint8_t published_gid[16],
                                        uint16_t published_lid, const struct oob_ud_addr *from)
{
    if (0 == published_qpn || from->qpn != published_qpn) {
        return REFUSAL_BAD_SOURCE_ADDR;
    }
    if (from->global ? 0 != memcmp(from->gid, published_gid, 16) : from->lid != published_lid) {
        return REFUSAL_BAD_SOURCE_ADDR;
    }
    return REFUSAL_OK;
}

/* ---- UD frames ---- */

int oob_ud_encode(uint8_t *buf, size_t cap, const struct oob_ud_hdr *h, const uint8_t *payload,
                  size_t *len)
{
    bool carries = h && (OOB_UD_OPEN == h->kind || OOB_UD_DATA == h->kind);
    size_t n = OOB_UD_HDR_LEN + (carries ? OOB_MSG_SIZE : 0);
    uint8_t *p = buf;

    if (NULL == buf || NULL == h || NULL == len || h->kind < OOB_UD_OPEN ||
        h->kind > OOB_UD_RESET || carries != (NULL != payload)) {
        return OPAL_ERR_BAD_PARAM;
    }
    if (cap < n) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    p = cpc_be_put(p, OOB_UD_MAGIC, 4);
    p = cpc_be_put(p, OOB_UD_VERSION, 1);
    p = cpc_be_put(p, h->kind, 1);
    p = cpc_be_put(p, 0, 2);
    p = cpc_be_put(p, h->src_sid, 4);
    p = cpc_be_put(p, h->dst_sid, 4);
    p = cpc_be_put(p, h->seq, 4);
    p = cpc_be_put(p, 0, 4);
    if (carries) {
        memcpy(p, payload, OOB_MSG_SIZE);
    }
    *len = n;
    return OPAL_SUCCESS;
}

int oob_ud_decode(const uint8_t *buf, size_t len, struct oob_ud_hdr *h, const uint8_t **payload)
{
    const uint8_t *p = buf;
    bool carries;
    int rc;

    if (NULL == buf || NULL == h || NULL == payload || len < OOB_UD_HDR_LEN) {
        return OPAL_ERR_BAD_PARAM;
    }
    rc = oob_frame_check_head(buf, OOB_UD_MAGIC, OOB_UD_VERSION);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    p = buf + 4;
    if (p[1] < OOB_UD_OPEN || p[1] > OOB_UD_RESET) {
        return OPAL_ERR_BAD_PARAM;
    }
    h->kind = p[1];
    carries = OOB_UD_OPEN == h->kind || OOB_UD_DATA == h->kind;
    if (len != OOB_UD_HDR_LEN + (carries ? OOB_MSG_SIZE : 0)) {
        return OPAL_ERR_BAD_PARAM;
    }
    p += 4;
    p = cpc_be_get32(p, &h->src_sid);
    p = cpc_be_get32(p, &h->dst_sid);
    cpc_be_get32(p, &h->seq);
    *payload = carries ? buf + OOB_UD_HDR_LEN : NULL;
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
    uint32_t magic;

    if (NULL == buf || NULL == k || size < 4) {
        return OPAL_ERR_BAD_PARAM;
    }
    cpc_be_get32(buf, &magic);
    if (magic != OOB_KA_MAGIC) {
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
    cpc_be_get16(buf + 6, &k->pending);
    return OPAL_SUCCESS;
}

/*
 * rdma_cm_wire.c - what the rdma_cm CPC puts in the modex and in the IB
 * CM's private data, and the checks a receiver makes before it believes any
 * of it (pure functions; tests/unit/connect/test_rdma_cm_wire.c).
 *
 * Room (InfiniBand and RoCE; measured against librdmacm, see rdma_cm_wire.h):
 * REQ 56 bytes, REP 196, REJ 148. Every message starts with an 11-byte
 * header:
 *
 *   [0]     0xa7: ours (another rdma_cm user's request is refused)
 *   [1]     version (2) << 4 | type (REQ 1, REP 2, REJ 3)
 *   [2..9]  the sender's process name (the responder looks its endpoint up)
 *   [10]    REQ: chunk index << 4 | chunk count; REP: 0; REJ: the reason
 *
 * Authentication (the rule for every CPC, cpc_auth.h): each process
 * publishes a random token in its modex blob, which only the job sees. A
 * frame never carries a token; it carries a nonce and an HMAC keyed with
 * the RECEIVER's token. The MAC is taken over the frame as sent (its own
 * field counted as zeros) followed by two fields that are not sent:
 *
 *   the receiver's process name (8 bytes), conn_param.qp_num (4, big-endian)
 *
 * so a frame is good only for the process it names and only with the QP
 * number it travelled with. The receiver's name is not carried in a REQ
 * because the room is not there (below); a REQ meant for another process
 * fails its MAC, as it is keyed with the other process's token anyway.
 *
 * REQ and REP are sent at the full size of their area (56 and 196 bytes),
 * zero-padded, and the MAC covers the whole area: the IB CM hands the
 * receiver the whole area whatever was sent, so the receiver cannot know
 * where a shorter frame ended. A frame shorter than its area is refused;
 * bytes past it (a transport that delivers more) are not looked at.
 *
 * REQ chunk (56 bytes):
 *
 *   [0..10]   header
 *   [11..18]  nonce: fresh for each attempt, the same in all its chunks
 *   [19..34]  MAC (16 bytes), keyed with the responder's token
 *   [35..55]  21 bytes of the body (the last chunk zero-padded)
 *
 * Every chunk carries its own MAC, so the responder checks each chunk on
 * arrival and a forged chunk never reaches the assembly of the honest one
 * (it is rejected with no private data and dropped); chunks are assembled
 * per (sender, nonce), and the responder remembers (sender, chunk, nonce)
 * so a captured chunk is good once (openib_auth_replay). Why not one MAC
 * for the handshake as a whole, to save room: the chunks before the last
 * would then be unverified until the last came, and a forged one could
 * overwrite an honest one in the assembly. Why the full 16-byte MAC: the
 * 8 bytes a truncated one would save do not save a chunk for the default
 * three queues (32 bytes of body: two chunks either way).
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
 * anyway; the MAC covers it); GID, LID and MTU come from the peer's modex
 * port. So the body is 14 + 6n bytes: one chunk for one queue, two for two
 * to four (the default three: 32 bytes), three for five to eight. The
 * responder stores a chunk that is not the last and rejects it with MORE,
 * and the initiator sends the next on a fresh cm_id (cpc_rdma_cm_initiator.c).
 *
 * REP (196 bytes; the body takes at most 62 of the 153 after the header):
 *
 *   [0..10]   header
 *   [11..18]  the receiver's (the initiator's) process name
 *   [19..26]  the nonce of the request it answers
 *   [27..42]  MAC, keyed with the initiator's token
 *   [43..195] the body, zero-padded
 *
 * The echoed nonce ties the REP to one attempt: a REP captured from
 * another handshake is refused (the initiator's nonce is fresh each time).
 *
 * REJ: the header alone (CROSS, LATER, MORE, BAD), after the responder
 * verified the request. A request that fails a check is rejected with no
 * private data at all: a stranger learns nothing. REJ(BUSY), from the
 * responder's listener thread while its process is not in MPI
 * (cpc_rdma_cm_listen.c): the header, then
 *
 *   [11]    marker version (1)
 *   [12]    0 (reserved)
 *
 * A reader that finds another marker version, or a BUSY cut short, does not
 * guess (cpc_rdma_cm_initiator.c fails the connection with the reason).
 * Versioning rules for all of the above: wire/README.md.
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "wire/rdma_cm_wire.h"
#include "wire/wire_be.h"

#define RCM_MAGIC 0xa7
#define RCM_WIRE_VERSION 2

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
    if (type < RCM_REQ || type > RCM_QREP) {
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
    p = cpc_be_get32(p, &q->rq_layout);
    p = cpc_be_get32(p, &q->mailbox_rkey);
    p = cpc_be_get(p, &q->mailbox_addr, 8);
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

/* ---- the modex blob ---- */

void rcm_blob_encode(uint8_t *b, uint16_t port, uint32_t ip, const uint8_t *token)
{
    b[0] = RCM_BLOB_VERSION;
    b[1] = 0;
    cpc_be_put(b + 2, port, 2);
    memcpy(b + 4, &ip, 4);
    memcpy(b + 8, token, OPENIB_AUTH_TOKEN_LEN);
}

int rcm_blob_decode(const uint8_t *b, size_t len, struct rcm_blob *out)
{
    if (NULL == b || len < 1) {
        return OPAL_ERR_BAD_PARAM;
    }
    if (RCM_BLOB_VERSION != b[0]) {
        return OPAL_ERR_NOT_SUPPORTED; /* before the length: older blobs are shorter */
    }
    if (len < RCM_BLOB_LEN) {
        return OPAL_ERR_BAD_PARAM;
    }
    cpc_be_get16(b + 2, &out->port);
    memcpy(&out->ip, b + 4, 4);
    memcpy(out->token, b + 8, OPENIB_AUTH_TOKEN_LEN);
    return 0 == out->port || 0 == out->ip ? OPAL_ERR_BAD_PARAM : OPAL_SUCCESS;
}

bool rcm_sockaddr_is(const struct sockaddr *sa, uint32_t ip)
{
    static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

    if (NULL == sa) {
        return false;
    }
    if (AF_INET == sa->sa_family) {
        return ((const struct sockaddr_in *) sa)->sin_addr.s_addr == ip;
    }
    if (AF_INET6 == sa->sa_family) {
        const uint8_t *a = ((const struct sockaddr_in6 *) sa)->sin6_addr.s6_addr;
        return 0 == memcmp(a, v4mapped, sizeof(v4mapped)) && 0 == memcmp(a + 12, &ip, 4);
    }
    return false;
}

/* ---- authentication ---- */

#define RCM_TRAILER_LEN (RCM_ID_LEN + 4)

/* The frame followed by what the MAC covers but the wire does not carry. */
static size_t mac_input(uint8_t *buf, const uint8_t *pd, size_t len, const void *dst,
                        uint32_t qpn0)
{
    memcpy(buf, pd, len);
    memcpy(buf + len, dst, RCM_ID_LEN);
    cpc_be_put(buf + len + RCM_ID_LEN, qpn0, 4);
    return len + RCM_TRAILER_LEN;
}

static void seal(const uint8_t *key, uint8_t *pd, size_t len, size_t mac_off, const void *dst,
                 uint32_t qpn0)
{
    uint8_t buf[RCM_PRIV_MAX + RCM_TRAILER_LEN];
    size_t n = mac_input(buf, pd, len, dst, qpn0);

    openib_auth_seal(key, buf, n, mac_off);
    memcpy(pd + mac_off, buf + mac_off, OPENIB_AUTH_MAC_LEN);
}

static bool verify(const uint8_t *key, const uint8_t *pd, size_t len, size_t mac_off,
                   const void *dst, uint32_t qpn0)
{
    uint8_t buf[RCM_PRIV_MAX + RCM_TRAILER_LEN];

    return openib_auth_verify(key, buf, mac_input(buf, pd, len, dst, qpn0), mac_off);
}

size_t rcm_req_encode(uint8_t *pd, const void *src, const void *dst, const uint8_t *key,
                      const uint8_t *nonce, uint32_t qpn0, const uint8_t *body, size_t body_len,
                      unsigned idx)
{
    size_t n = RCM_CHUNKS(body_len), off = (size_t) idx * RCM_CHUNK_MAX, clen;

    if (0 == body_len || n > RCM_MAX_CHUNKS || idx >= n) {
        return 0;
    }
    clen = body_len - off < RCM_CHUNK_MAX ? body_len - off : RCM_CHUNK_MAX;
    memset(pd, 0, RCM_REQ_PRIV_MAX); /* the whole area: see the top of this file */
    rcm_hdr_encode(pd, RCM_REQ, src, (uint8_t) (idx << 4 | n));
    memcpy(pd + RCM_REQ_NONCE_OFF, nonce, OPENIB_AUTH_NONCE_LEN);
    memcpy(pd + RCM_REQ_HDR_LEN, body + off, clen);
    seal(key, pd, RCM_REQ_PRIV_MAX, RCM_REQ_MAC_OFF, dst, qpn0);
    return RCM_REQ_PRIV_MAX;
}

enum openib_refusal rcm_req_verify(const uint8_t *pd, size_t len, uint32_t qpn0,
                                   const void *own_id, const uint8_t *own_token,
                                   struct rcm_req *out)
{
    struct rcm_msg m;

    if (len < RCM_REQ_PRIV_MAX || OPAL_SUCCESS != rcm_msg_decode(pd, len, &m) ||
        RCM_REQ != m.type) {
        return REFUSAL_MALFORMED;
    }
    if (!verify(own_token, pd, RCM_REQ_PRIV_MAX, RCM_REQ_MAC_OFF, own_id, qpn0)) {
        return REFUSAL_BAD_MAC;
    }
    memcpy(out->src, m.src, RCM_ID_LEN);
    memcpy(out->nonce, pd + RCM_REQ_NONCE_OFF, OPENIB_AUTH_NONCE_LEN);
    out->idx = m.arg >> 4;
    out->count = m.arg & 0x0f;
    out->part = pd + RCM_REQ_HDR_LEN;
    out->part_len = RCM_CHUNK_MAX;
    return REFUSAL_OK;
}

bool rcm_rx_store(struct rcm_rx *rx, const struct rcm_req *r)
{
    if (r->count != rx->count || 0 != memcmp(r->nonce, rx->nonce, sizeof(rx->nonce))) {
        memset(rx, 0, sizeof(*rx)); /* another handshake: the peer started over */
        memcpy(rx->nonce, r->nonce, sizeof(rx->nonce));
        rx->count = (uint8_t) r->count;
    }
    memcpy(rx->data + (size_t) r->idx * RCM_CHUNK_MAX, r->part, RCM_CHUNK_MAX);
    rx->len = (size_t) rx->count * RCM_CHUNK_MAX; /* the body says how much is used */
    rx->mask |= (uint8_t) (1u << r->idx);
    return rx->mask == (1u << rx->count) - 1;
}

size_t rcm_rep_encode(uint8_t *pd, const void *src, const void *dst, const uint8_t *key,
                      const uint8_t *nonce, uint32_t qpn0, const uint8_t *body, size_t body_len)
{
    if (RCM_REP_HDR_LEN + body_len > RCM_REP_PRIV_MAX) {
        return 0;
    }
    memset(pd, 0, RCM_REP_PRIV_MAX); /* the whole area: see the top of this file */
    rcm_hdr_encode(pd, RCM_REP, src, 0);
    memcpy(pd + RCM_REP_DST_OFF, dst, RCM_ID_LEN);
    memcpy(pd + RCM_REP_NONCE_OFF, nonce, OPENIB_AUTH_NONCE_LEN);
    memcpy(pd + RCM_REP_HDR_LEN, body, body_len);
    seal(key, pd, RCM_REP_PRIV_MAX, RCM_REP_MAC_OFF, dst, qpn0);
    return RCM_REP_PRIV_MAX;
}

enum openib_refusal rcm_rep_verify(const uint8_t *pd, size_t len, uint32_t qpn0,
                                   const void *own_id, const uint8_t *own_token,
                                   const void *peer_id, const uint8_t *nonce,
                                   const uint8_t **body, size_t *body_len)
{
    struct rcm_msg m;

    if (len < RCM_REP_PRIV_MAX || OPAL_SUCCESS != rcm_msg_decode(pd, len, &m) ||
        RCM_REP != m.type) {
        return REFUSAL_MALFORMED;
    }
    if (0 != memcmp(m.src, peer_id, RCM_ID_LEN)) {
        return REFUSAL_WRONG_SRC;
    }
    if (0 != memcmp(pd + RCM_REP_DST_OFF, own_id, RCM_ID_LEN)) {
        return REFUSAL_WRONG_DST;
    }
    if (0 != memcmp(pd + RCM_REP_NONCE_OFF, nonce, OPENIB_AUTH_NONCE_LEN)) {
        return REFUSAL_REPLAY;
    }
    if (!verify(own_token, pd, RCM_REP_PRIV_MAX, RCM_REP_MAC_OFF, own_id, qpn0)) {
        return REFUSAL_BAD_MAC;
    }
    *body = pd + RCM_REP_HDR_LEN;
    *body_len = RCM_REP_PRIV_MAX - RCM_REP_HDR_LEN;
    return REFUSAL_OK;
}

/* ---- iWARP: one frame per QP connection (rdma_cm_wire.h) ---- */

size_t rcm_qp_frame_encode(uint8_t *pd, enum rcm_type type, const void *src, const void *dst,
                           const uint8_t *key, const uint8_t *nonce, unsigned q)
{
    if (q >= OPENIB_CPC_MAX_QPS || (RCM_QREQ != type && RCM_QREP != type)) {
        return 0;
    }
    memset(pd, 0, RCM_QP_FRAME_LEN);
    rcm_hdr_encode(pd, type, src, (uint8_t) q);
    memcpy(pd + RCM_QP_NONCE_OFF, nonce, OPENIB_AUTH_NONCE_LEN);
    seal(key, pd, RCM_QP_FRAME_LEN, RCM_QP_MAC_OFF, dst, 0);
    return RCM_QP_FRAME_LEN;
}

enum openib_refusal rcm_qp_frame_verify(const uint8_t *pd, size_t len, enum rcm_type type,
                                        const void *own_id, const uint8_t *own_token,
                                        uint8_t *src, uint8_t *nonce, unsigned *q)
{
    struct rcm_msg m;

    if (len < RCM_QP_FRAME_LEN || OPAL_SUCCESS != rcm_msg_decode(pd, len, &m) ||
        type != m.type || m.arg >= OPENIB_CPC_MAX_QPS) {
        return REFUSAL_MALFORMED;
    }
    if (!verify(own_token, pd, RCM_QP_FRAME_LEN, RCM_QP_MAC_OFF, own_id, 0)) {
        return REFUSAL_BAD_MAC;
    }
    memcpy(src, m.src, RCM_ID_LEN);
    memcpy(nonce, pd + RCM_QP_NONCE_OFF, OPENIB_AUTH_NONCE_LEN);
    *q = m.arg;
    return REFUSAL_OK;
}

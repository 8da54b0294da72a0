/*
 * test_rdma_cm_wire.c - the rdma_cm CPC's private data: every QP count
 * round-trips through REQ chunks of at most 56 bytes and a REP of at most
 * 196 (one queue fits one REQ, two to four, the default three among them,
 * take two, five to eight three), and the decoders refuse foreign, truncated and malformed data
 * (reading only the bytes they were given). The listener thread's
 * REJ(BUSY) fits a REJ, carries its marker version, and a BUSY cut short or
 * of another marker version is told apart (never taken for "busy").
 * Authentication (issue 15): every REQ chunk and the REP verify under the
 * receiver's key and nothing else: every changed bit or byte, a wrong key,
 * another receiver, another QP number, every truncation fail; a forged
 * handshake interleaved with an honest one leaves the honest assembly
 * untouched, and a replayed chunk is refused. The modex blob (v3, with the
 * token) round-trips and an older one is refused as another version.
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "wire/rdma_cm_wire.h"
#include "tests/unit/connect/cpc_test.h"

static const uint8_t id_a[RCM_ID_LEN] = { 1, 0, 0, 0, 7, 0, 0, 0 };

static void sample(struct openib_cpc_qp_info *q, int n)
{
    int i;

    openib_cpc_qp_info_init(q);
    q->num_qps = (uint8_t) n;
    for (i = 0; i < n; ++i) {
        q->qpn[i] = 0xabcd00u + (uint32_t) i * 0x10101u; /* 24 bits, every byte set */
        q->psn[i] = 0xfedcbau - (uint32_t) i * 0x30303u;
    }
    q->rq_layout = 0x89abcdefu;
    q->mailbox_rkey = 0x01020304u;
    q->mailbox_addr = 0x7f1122334455667full;
}

static bool same(const struct openib_cpc_qp_info *a, const struct openib_cpc_qp_info *b)
{
    return a->num_qps == b->num_qps && a->rq_layout == b->rq_layout &&
           a->mailbox_rkey == b->mailbox_rkey && a->mailbox_addr == b->mailbox_addr &&
           0 == memcmp(a->qpn, b->qpn, a->num_qps * sizeof(a->qpn[0])) &&
           0 == memcmp(a->psn, b->psn, a->num_qps * sizeof(a->psn[0]));
}

static const uint8_t id_b[RCM_ID_LEN] = { 1, 0, 0, 0, 9, 0, 0, 0 };
static const uint8_t key_a[OPENIB_AUTH_TOKEN_LEN] = "token-of-proc-a";
static const uint8_t key_b[OPENIB_AUTH_TOKEN_LEN] = "token-of-proc-b";
static const uint8_t key_x[OPENIB_AUTH_TOKEN_LEN] = "a stranger's!!!";
static const uint8_t nonce1[OPENIB_AUTH_NONCE_LEN] = { 1, 2, 3, 4, 5, 6, 7, 8 };
static const uint8_t nonce2[OPENIB_AUTH_NONCE_LEN] = { 8, 7, 6, 5, 4, 3, 2, 1 };
#define QPN0 0x123456u

/* The chunks of a REQ from a to b, as the initiator sends them: chunk k is
 * pd[k][0..len[k]). Returns the count. */
static int req_chunks(const uint8_t *body, size_t blen, const uint8_t *key, const uint8_t *nonce,
                      uint8_t pd[][RCM_REQ_PRIV_MAX], size_t *len)
{
    int n = (int) RCM_CHUNKS(blen), k;

    for (k = 0; k < n; ++k) {
        len[k] = rcm_req_encode(pd[k], id_a, id_b, key, nonce, QPN0, body, blen, (unsigned) k);
        CHECK_EQ(len[k], RCM_REQ_PRIV_MAX); /* always the whole area */
    }
    CHECK_EQ(rcm_req_encode(pd[0], id_a, id_b, key, nonce, QPN0, body, blen, (unsigned) n), 0);
    return n;
}

/* rcm_req_verify on a heap copy of exactly len bytes (ASan sees overreads). */
static enum openib_refusal verify_req(const uint8_t *pd, size_t len, uint32_t qpn0,
                                      const uint8_t *own_id, const uint8_t *key, struct rcm_req *r,
                                      uint8_t **keep)
{
    uint8_t *c = malloc(len ? len : 1);
    enum openib_refusal v;

    memcpy(c, pd, len);
    v = rcm_req_verify(c, len, qpn0, own_id, key, r);
    if (NULL != keep && REFUSAL_OK == v) {
        *keep = c; /* r points into it */
    } else {
        free(c);
    }
    return v;
}

/* What the responder does with one request chunk, in its order
 * (cpc_rdma_cm_responder.c, less the membership and address checks, which need
 * the BTL): verify, freshness, assembly. Returns the verdict; *complete
 * when the body is in. */
static enum openib_refusal responder_take(struct rcm_rx *rx, struct openib_auth_replay *seen,
                                          const uint8_t *pd, size_t len, bool *complete)
{
    struct rcm_req r;
    uint8_t sender[RCM_ID_LEN + 1], *keep = NULL;
    enum openib_refusal v = verify_req(pd, len, QPN0, id_b, key_b, &r, &keep);

    *complete = false;
    if (REFUSAL_OK != v) {
        return v;
    }
    memcpy(sender, r.src, RCM_ID_LEN);
    sender[RCM_ID_LEN] = (uint8_t) r.idx;
    if (!openib_auth_replay_fresh(seen, sender, sizeof(sender), r.nonce)) {
        free(keep);
        return REFUSAL_REPLAY;
    }
    *complete = rcm_rx_store(rx, &r);
    free(keep);
    return REFUSAL_OK;
}

/* Send q as REQ chunks the way the initiator does, verify and reassemble
 * them the way the responder does, decode; returns the number of chunks. */
static int req_round_trip(const struct openib_cpc_qp_info *q, struct openib_cpc_qp_info *out)
{
    uint8_t body[RCM_BODY_MAX], pd[RCM_MAX_CHUNKS][RCM_REQ_PRIV_MAX];
    size_t len = rcm_body_encode(q, body), clen[RCM_MAX_CHUNKS];
    struct openib_auth_replay *seen = calloc(1, sizeof(*seen));
    struct rcm_rx rx;
    bool complete = false;
    int n, k;

    CHECK_EQ(len, RCM_BODY_LEN(q->num_qps));
    n = req_chunks(body, len, key_b, nonce1, pd, clen);
    memset(&rx, 0, sizeof(rx));
    for (k = 0; k < n; ++k) {
        struct rcm_msg m;

        CHECK_EQ(rcm_msg_decode(pd[k], clen[k], &m), OPAL_SUCCESS);
        CHECK_EQ(m.type, RCM_REQ);
        CHECK_EQ(m.arg >> 4, k);
        CHECK_EQ(m.arg & 0x0f, n);
        CHECK(0 == memcmp(m.src, id_a, RCM_ID_LEN));
        CHECK_EQ(responder_take(&rx, seen, pd[k], clen[k], &complete), REFUSAL_OK);
        CHECK_EQ(complete, k == n - 1);
    }
    CHECK(rx.len >= len);
    openib_cpc_qp_info_init(out);
    CHECK_EQ(rcm_body_decode(rx.data, rx.len, q->qpn[0], out), OPAL_SUCCESS);
    free(seen);
    return n;
}

static void test_round_trips(void)
{
    int n;

    for (n = 1; n <= OPENIB_CPC_MAX_QPS; ++n) {
        struct openib_cpc_qp_info q, out;
        uint8_t rep[RCM_REP_PRIV_MAX], body[RCM_BODY_MAX];
        const uint8_t *rb;
        size_t len, blen, rblen;
        int chunks;

        sample(&q, n);
        chunks = req_round_trip(&q, &out);
        CHECK(same(&q, &out));
        CHECK_EQ(chunks, n == 1 ? 1 : n <= 4 ? 2 : 3);

        /* REP: one piece, whatever the count, keyed with a's token */
        blen = rcm_body_encode(&q, body);
        len = rcm_rep_encode(rep, id_b, id_a, key_a, nonce1, QPN0, body, blen);
        CHECK_EQ(len, RCM_REP_PRIV_MAX); /* always the whole area */
        CHECK_EQ(rcm_rep_verify(rep, len, QPN0, id_a, key_a, id_b, nonce1, &rb, &rblen),
                 REFUSAL_OK);
        openib_cpc_qp_info_init(&out);
        CHECK_EQ(rcm_body_decode(rb, rblen, q.qpn[0], &out), OPAL_SUCCESS);
        CHECK(same(&q, &out));
    }
    /* the default receive queues: two chunks */
    CHECK_EQ(RCM_BODY_LEN(3), 32);
    CHECK_EQ(RCM_CHUNKS(RCM_BODY_LEN(3)), 2);
    CHECK(RCM_MAX_CHUNKS <= 15); /* the count is 4 bits */
}

/* Every byte of every chunk, changed, fails; so do a wrong key, another
 * receiver, another QP number, every truncation and an extra byte. */
static void test_req_auth(void)
{
    struct openib_cpc_qp_info q;
    uint8_t body[RCM_BODY_MAX], pd[RCM_MAX_CHUNKS][RCM_REQ_PRIV_MAX];
    size_t blen, clen[RCM_MAX_CHUNKS], i, cut;
    struct rcm_req r;
    int n, k, bad = 0;

    sample(&q, 8);
    blen = rcm_body_encode(&q, body);
    n = req_chunks(body, blen, key_b, nonce1, pd, clen);
    CHECK_EQ(n, 3);
    for (k = 0; k < n; ++k) {
        CHECK_EQ(verify_req(pd[k], clen[k], QPN0, id_b, key_b, &r, NULL), REFUSAL_OK);
        for (i = 0; i < clen[k]; ++i) {
            uint8_t x;
            for (x = 1; x != 0; x = (uint8_t) (x << 1)) { /* every bit */
                pd[k][i] ^= x;
                bad += REFUSAL_OK == verify_req(pd[k], clen[k], QPN0, id_b, key_b, &r, NULL);
                pd[k][i] ^= x;
            }
            pd[k][i] ^= 0xff;
            bad += REFUSAL_OK == verify_req(pd[k], clen[k], QPN0, id_b, key_b, &r, NULL);
            pd[k][i] ^= 0xff;
        }
        CHECK_EQ(verify_req(pd[k], clen[k], QPN0, id_b, key_x, &r, NULL), REFUSAL_BAD_MAC);
        CHECK_EQ(verify_req(pd[k], clen[k], QPN0, id_b, key_a, &r, NULL), REFUSAL_BAD_MAC);
        CHECK_EQ(verify_req(pd[k], clen[k], QPN0, id_a, key_b, &r, NULL), REFUSAL_BAD_MAC);
        CHECK_EQ(verify_req(pd[k], clen[k], QPN0 ^ 1, id_b, key_b, &r, NULL), REFUSAL_BAD_MAC);
        CHECK_EQ(verify_req(pd[k], clen[k], QPN0, id_b, NULL, &r, NULL), REFUSAL_BAD_MAC);
        for (cut = 0; cut < clen[k]; ++cut) {
            bad += REFUSAL_OK == verify_req(pd[k], cut, QPN0, id_b, key_b, &r, NULL);
        }
        CHECK_EQ(verify_req(pd[k], RCM_HDR_LEN, QPN0, id_b, key_b, &r, NULL), REFUSAL_MALFORMED);
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ(verify_req(pd[0], clen[0], QPN0, id_b, key_b, &r, NULL), REFUSAL_OK); /* restored */
    CHECK_EQ(rcm_req_verify(NULL, 0, QPN0, id_b, key_b, &r), REFUSAL_MALFORMED);
    /* a chunk cut short is malformed before any MAC is computed */
    CHECK_EQ(verify_req(pd[2], clen[2] - 1, QPN0, id_b, key_b, &r, NULL), REFUSAL_MALFORMED);
    /* the last chunk's padding is covered too */
    pd[2][RCM_REQ_PRIV_MAX - 1] ^= 1;
    CHECK_EQ(verify_req(pd[2], clen[2], QPN0, id_b, key_b, &r, NULL), REFUSAL_BAD_MAC);
    pd[2][RCM_REQ_PRIV_MAX - 1] ^= 1;
    /* bytes past the area (a transport that delivers more) are not looked at */
    {
        uint8_t longer[RCM_REQ_PRIV_MAX + 8];
        memcpy(longer, pd[1], RCM_REQ_PRIV_MAX);
        memset(longer + RCM_REQ_PRIV_MAX, 0xee, 8);
        CHECK_EQ(verify_req(longer, sizeof(longer), QPN0, id_b, key_b, &r, NULL), REFUSAL_OK);
    }
    /* a REP is no REQ */
    {
        uint8_t rep[RCM_REP_PRIV_MAX];
        CHECK_EQ(rcm_rep_encode(rep, id_a, id_b, key_b, nonce1, QPN0, body, 10),
                 RCM_REP_PRIV_MAX);
        CHECK_EQ(verify_req(rep, sizeof(rep), QPN0, id_b, key_b, &r, NULL), REFUSAL_MALFORMED);
    }
}

static void test_rep_auth(void)
{
    struct openib_cpc_qp_info q;
    uint8_t body[RCM_BODY_MAX], rep[RCM_REP_PRIV_MAX], *c;
    const uint8_t *rb;
    size_t blen, len, i, rblen;
    int bad = 0;

    sample(&q, 3);
    blen = rcm_body_encode(&q, body);
    len = rcm_rep_encode(rep, id_b, id_a, key_a, nonce1, QPN0, body, blen);
    c = malloc(len);
    memcpy(c, rep, len);
    CHECK_EQ(rcm_rep_verify(c, len, QPN0, id_a, key_a, id_b, nonce1, &rb, &rblen), REFUSAL_OK);
    for (i = 0; i < len; ++i) {
        c[i] ^= 0x5a;
        bad += REFUSAL_OK == rcm_rep_verify(c, len, QPN0, id_a, key_a, id_b, nonce1, &rb, &rblen);
        c[i] ^= 0x5a;
    }
    for (i = 0; i < len; ++i) {
        bad += REFUSAL_OK == rcm_rep_verify(c, i, QPN0, id_a, key_a, id_b, nonce1, &rb, &rblen);
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ(rcm_rep_verify(c, len, QPN0, id_a, key_b, id_b, nonce1, &rb, &rblen), REFUSAL_BAD_MAC);
    CHECK_EQ(rcm_rep_verify(c, len, QPN0 + 1, id_a, key_a, id_b, nonce1, &rb, &rblen),
             REFUSAL_BAD_MAC);
    /* the answer to another request: refused, whatever its MAC */
    CHECK_EQ(rcm_rep_verify(c, len, QPN0, id_a, key_a, id_b, nonce2, &rb, &rblen), REFUSAL_REPLAY);
    CHECK_EQ(rcm_rep_verify(c, len, QPN0, id_b, key_a, id_b, nonce1, &rb, &rblen),
             REFUSAL_WRONG_DST);
    CHECK_EQ(rcm_rep_verify(c, len, QPN0, id_a, key_a, id_a, nonce1, &rb, &rblen),
             REFUSAL_WRONG_SRC);
    free(c);
    /* a REQ is no REP (with the rest of the area zeros) */
    memset(rep, 0, sizeof(rep));
    len = rcm_req_encode(rep, id_b, id_a, key_a, nonce1, QPN0, body, 10, 0);
    CHECK_EQ(rcm_rep_verify(rep, sizeof(rep), QPN0, id_a, key_a, id_b, nonce1, &rb, &rblen),
             REFUSAL_MALFORMED);
    CHECK_EQ(rcm_rep_encode(rep, id_b, id_a, key_a, nonce1, QPN0, body,
                            RCM_REP_PRIV_MAX - RCM_REP_HDR_LEN + 1), 0);
}

static bool same_rx(const struct rcm_rx *a, const struct rcm_rx *b)
{
    return 0 == memcmp(a->nonce, b->nonce, sizeof(a->nonce)) && a->count == b->count &&
           a->mask == b->mask && a->len == b->len && 0 == memcmp(a->data, b->data, sizeof(a->data));
}

/* An honest handshake under way, and chunks of a forged one (a stranger's
 * key; a job member's name; the honest nonce copied) and replays of the
 * honest chunks in between: only the honest body is assembled. */
static void test_interleaved(void)
{
    struct openib_cpc_qp_info q, f, out;
    uint8_t hb[RCM_BODY_MAX], fb[RCM_BODY_MAX];
    uint8_t hp[RCM_MAX_CHUNKS][RCM_REQ_PRIV_MAX], fp[RCM_MAX_CHUNKS][RCM_REQ_PRIV_MAX];
    uint8_t sp[RCM_MAX_CHUNKS][RCM_REQ_PRIV_MAX];
    size_t hl[RCM_MAX_CHUNKS], fl[RCM_MAX_CHUNKS], sl[RCM_MAX_CHUNKS], hlen, flen;
    struct openib_auth_replay *seen = calloc(1, sizeof(*seen));
    struct rcm_rx rx, before;
    bool complete;
    int n, k;

    sample(&q, 8);
    sample(&f, 8);
    f.mailbox_rkey = 0xbadbad;
    f.qpn[3] = 0x666666;
    hlen = rcm_body_encode(&q, hb);
    flen = rcm_body_encode(&f, fb);
    n = req_chunks(hb, hlen, key_b, nonce1, hp, hl);
    CHECK_EQ(req_chunks(fb, flen, key_x, nonce1, fp, fl), n);  /* the honest nonce */
    CHECK_EQ(req_chunks(fb, flen, key_x, nonce2, sp, sl), n);  /* its own nonce */
    memset(&rx, 0, sizeof(rx));
    for (k = 0; k < n; ++k) {
        int j;
        CHECK_EQ(responder_take(&rx, seen, hp[k], hl[k], &complete), REFUSAL_OK);
        CHECK_EQ(complete, k == n - 1);
        for (j = 0; j < n && k < n - 1; ++j) {
            before = rx;
            CHECK_EQ(responder_take(&rx, seen, fp[j], fl[j], &complete), REFUSAL_BAD_MAC);
            CHECK_EQ(responder_take(&rx, seen, sp[j], sl[j], &complete), REFUSAL_BAD_MAC);
            CHECK(same_rx(&rx, &before)); /* untouched */
        }
        if (k < n - 1) {
            before = rx;
            CHECK_EQ(responder_take(&rx, seen, hp[k], hl[k], &complete), REFUSAL_REPLAY);
            CHECK(same_rx(&rx, &before));
        }
    }
    openib_cpc_qp_info_init(&out);
    CHECK(rx.len >= hlen);
    CHECK_EQ(rcm_body_decode(rx.data, rx.len, q.qpn[0], &out), OPAL_SUCCESS);
    CHECK(same(&q, &out));
    /* the whole handshake again, as captured: every chunk refused */
    for (k = 0; k < n; ++k) {
        CHECK_EQ(responder_take(&rx, seen, hp[k], hl[k], &complete), REFUSAL_REPLAY);
    }
    /* the peer starting over (a new nonce) restarts the assembly */
    n = req_chunks(hb, hlen, key_b, nonce2, hp, hl);
    CHECK_EQ(responder_take(&rx, seen, hp[0], hl[0], &complete), REFUSAL_OK);
    CHECK_EQ(rx.mask, 1);
    CHECK(0 == memcmp(rx.nonce, nonce2, sizeof(nonce2)));
    free(seen);
}

static void test_blob(void)
{
    uint8_t b[RCM_BLOB_LEN], *c;
    struct rcm_blob out;
    uint32_t ip = htonl(0x0a000205);
    size_t cut;

    rcm_blob_encode(b, 4791, ip, key_a);
    CHECK_EQ(b[0], RCM_BLOB_VERSION);
    CHECK_EQ(rcm_blob_decode(b, sizeof(b), &out), OPAL_SUCCESS);
    CHECK_EQ(out.port, 4791);
    CHECK_EQ(out.ip, ip);
    CHECK(0 == memcmp(out.token, key_a, OPENIB_AUTH_TOKEN_LEN));
    for (cut = 0; cut < sizeof(b); ++cut) {
        c = malloc(cut ? cut : 1);
        memcpy(c, b, cut);
        CHECK(OPAL_SUCCESS != rcm_blob_decode(c, cut, &out));
        free(c);
    }
    /* an older peer (version 2, no token): refused as another version */
    b[0] = 2;
    CHECK_EQ(rcm_blob_decode(b, 8, &out), OPAL_ERR_NOT_SUPPORTED);
    rcm_blob_encode(b, 0, ip, key_a);
    CHECK_EQ(rcm_blob_decode(b, sizeof(b), &out), OPAL_ERR_BAD_PARAM);
    CHECK_EQ(rcm_blob_decode(NULL, 0, &out), OPAL_ERR_BAD_PARAM);
}

static void test_addr(void)
{
    struct sockaddr_in sin = { .sin_family = AF_INET };
    struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6 };
    uint32_t ip = htonl(0x0a000205);

    sin.sin_addr.s_addr = ip;
    CHECK(rcm_sockaddr_is((struct sockaddr *) &sin, ip));
    CHECK(!rcm_sockaddr_is((struct sockaddr *) &sin, htonl(0x0a000263)));
    sin6.sin6_addr.s6_addr[10] = 0xff;
    sin6.sin6_addr.s6_addr[11] = 0xff;
    memcpy(&sin6.sin6_addr.s6_addr[12], &ip, 4);
    CHECK(rcm_sockaddr_is((struct sockaddr *) &sin6, ip));
    sin6.sin6_addr.s6_addr[0] = 0xfe; /* not IPv4-mapped */
    CHECK(!rcm_sockaddr_is((struct sockaddr *) &sin6, ip));
    CHECK(!rcm_sockaddr_is(NULL, ip));
}

static void test_refusal_names(void)
{
    int i, j;

    for (i = 1; i < REFUSAL_COUNT; ++i) {
        CHECK(0 != strcmp(openib_refusal_name((enum openib_refusal) i), "unknown"));
        for (j = 1; j < i; ++j) {
            CHECK(0 != strcmp(openib_refusal_name((enum openib_refusal) i),
                              openib_refusal_name((enum openib_refusal) j)));
        }
    }
    CHECK_STR_HAS(openib_refusal_name(REFUSAL_BAD_MAC), "bad-mac");
    CHECK_STR_HAS(openib_refusal_name(REFUSAL_BAD_SOURCE_ADDR), "bad-source-addr");
    /* one vocabulary with oob's now (wire_refusal.h): its word for a value
     * out of range, "unknown", replaced rdma_cm's own "?" */
    CHECK_STR_HAS(openib_refusal_name(REFUSAL_COUNT), "unknown");
}

static void test_refusals(void)
{
    struct openib_cpc_qp_info q, out;
    uint8_t body[RCM_BODY_MAX], pd[RCM_HDR_LEN];
    struct rcm_msg m;
    size_t len, cut;

    sample(&q, 3);
    len = rcm_body_encode(&q, body);
    /* every truncation of the body, from a heap buffer of exactly that size */
    for (cut = 0; cut < len; ++cut) {
        uint8_t *b = malloc(cut ? cut : 1);
        memcpy(b, body, cut);
        CHECK_EQ(rcm_body_decode(b, cut, q.qpn[0], &out), OPAL_ERR_BAD_PARAM);
        free(b);
    }
    body[0] = 0;
    CHECK_EQ(rcm_body_decode(body, len, 1, &out), OPAL_ERR_BAD_PARAM);
    body[0] = OPENIB_CPC_MAX_QPS + 1;
    CHECK_EQ(rcm_body_decode(body, sizeof(body), 1, &out), OPAL_ERR_BAD_PARAM);
    body[0] = 3;
    CHECK_EQ(rcm_body_decode(body, len, 1u << 24, &out), OPAL_ERR_BAD_PARAM);

    /* what the encoder cannot carry */
    sample(&q, 2);
    q.qpn[1] = 1u << 24;
    CHECK_EQ(rcm_body_encode(&q, body), 0);
    sample(&q, 2);
    q.num_qps = 0;
    CHECK_EQ(rcm_body_encode(&q, body), 0);

    /* headers: short, foreign, another version, unknown type, bad chunks */
    rcm_hdr_encode(pd, RCM_REJ, id_a, RCM_REJ_CROSS);
    CHECK_EQ(rcm_msg_decode(pd, sizeof(pd), &m), OPAL_SUCCESS);
    CHECK_EQ(m.type, RCM_REJ);
    CHECK_EQ(m.arg, RCM_REJ_CROSS);
    CHECK_EQ(rcm_msg_decode(pd, sizeof(pd) - 1, &m), OPAL_ERR_BAD_PARAM);
    CHECK_EQ(rcm_msg_decode(NULL, 0, &m), OPAL_ERR_BAD_PARAM);
    pd[0] ^= 1;
    CHECK_EQ(rcm_msg_decode(pd, sizeof(pd), &m), OPAL_ERR_BAD_PARAM);
    pd[0] ^= 1;
    pd[1] = (uint8_t) (1 << 4 | RCM_REJ); /* version 1: before authentication */
    CHECK_EQ(rcm_msg_decode(pd, sizeof(pd), &m), OPAL_ERR_BAD_PARAM);
    pd[1] = (uint8_t) (2 << 4 | 9);
    CHECK_EQ(rcm_msg_decode(pd, sizeof(pd), &m), OPAL_ERR_BAD_PARAM);
    rcm_hdr_encode(pd, RCM_REQ, id_a, 0x00); /* zero chunks */
    CHECK_EQ(rcm_msg_decode(pd, sizeof(pd), &m), OPAL_ERR_BAD_PARAM);
    rcm_hdr_encode(pd, RCM_REQ, id_a, 0x22); /* chunk 2 of 2 */
    CHECK_EQ(rcm_msg_decode(pd, sizeof(pd), &m), OPAL_ERR_BAD_PARAM);
    rcm_hdr_encode(pd, RCM_REQ, id_a, (uint8_t) (RCM_MAX_CHUNKS + 1));
    CHECK_EQ(rcm_msg_decode(pd, sizeof(pd), &m), OPAL_ERR_BAD_PARAM);
    /* a kernel REJ's private data is zeros: not ours */
    memset(pd, 0, sizeof(pd));
    CHECK_EQ(rcm_msg_decode(pd, sizeof(pd), &m), OPAL_ERR_BAD_PARAM);
}

static void test_busy(void)
{
    uint8_t pd[RCM_BUSY_LEN], *c;
    struct rcm_msg m;
    size_t cut;

    CHECK_EQ(rcm_busy_encode(pd, id_a), RCM_BUSY_LEN);
    CHECK(RCM_BUSY_LEN <= RCM_REJ_PRIV_MAX);
    c = malloc(sizeof(pd)); /* exactly what is sent */
    memcpy(c, pd, sizeof(pd));
    CHECK_EQ(rcm_msg_decode(c, sizeof(pd), &m), OPAL_SUCCESS);
    CHECK_EQ(m.type, RCM_REJ);
    CHECK_EQ(m.arg, RCM_REJ_BUSY);
    CHECK(0 == memcmp(m.src, id_a, RCM_ID_LEN));
    CHECK_EQ(rcm_busy_decode(&m), OPAL_SUCCESS);
    free(c);
    /* the layout: header, marker version, reserved zero */
    CHECK_EQ(pd[RCM_HDR_LEN], RCM_BUSY_VERSION);
    CHECK_EQ(pd[RCM_HDR_LEN + 1], 0);
    /* cut short: the header alone, or one byte of the body */
    for (cut = RCM_HDR_LEN; cut < sizeof(pd); ++cut) {
        c = malloc(cut);
        memcpy(c, pd, cut);
        CHECK_EQ(rcm_msg_decode(c, cut, &m), OPAL_SUCCESS);
        CHECK_EQ(rcm_busy_decode(&m), OPAL_ERR_BAD_PARAM);
        free(c);
    }
    /* another marker version: not guessed at */
    pd[RCM_HDR_LEN] = RCM_BUSY_VERSION + 1;
    CHECK_EQ(rcm_msg_decode(pd, sizeof(pd), &m), OPAL_SUCCESS);
    CHECK_EQ(rcm_busy_decode(&m), OPAL_ERR_NOT_SUPPORTED);
    /* other REJs are not BUSY */
    rcm_hdr_encode(pd, RCM_REJ, id_a, RCM_REJ_LATER);
    CHECK_EQ(rcm_msg_decode(pd, sizeof(pd), &m), OPAL_SUCCESS);
    CHECK_EQ(rcm_busy_decode(&m), OPAL_ERR_BAD_PARAM);
    CHECK_EQ(rcm_busy_decode(NULL), OPAL_ERR_BAD_PARAM);
    /* before the first endpoint the thread knows no name: zeros */
    CHECK_EQ(rcm_busy_encode(pd, NULL), RCM_BUSY_LEN);
    CHECK_EQ(rcm_msg_decode(pd, sizeof(pd), &m), OPAL_SUCCESS);
    CHECK_EQ(m.src[0] | m.src[4], 0);
    CHECK_EQ(rcm_busy_decode(&m), OPAL_SUCCESS);
}

/* iWARP's per-QP frames: a QREQ keyed with the responder's token and a
 * QREP with the initiator's, both naming the QP and the handshake's nonce;
 * every changed byte, a wrong key or receiver, the other type, a
 * truncation fail, and the frame fits MPA's private data. */
static void test_qp_frames(void)
{
    uint8_t pd[RCM_QP_FRAME_LEN], src[RCM_ID_LEN], nonce[OPENIB_AUTH_NONCE_LEN];
    unsigned q = 99;
    size_t i, cut;
    int bad = 0;

    CHECK(RCM_QP_FRAME_LEN <= RCM_REQ_PRIV_MAX);
    CHECK_EQ(rcm_qp_frame_encode(pd, RCM_QREQ, id_a, id_b, key_b, nonce1, 5), RCM_QP_FRAME_LEN);
    CHECK_EQ(rcm_qp_frame_verify(pd, sizeof(pd), RCM_QREQ, id_b, key_b, src, nonce, &q),
             REFUSAL_OK);
    CHECK_EQ(q, 5u);
    CHECK_EQ(memcmp(src, id_a, RCM_ID_LEN), 0);
    CHECK_EQ(memcmp(nonce, nonce1, OPENIB_AUTH_NONCE_LEN), 0);
    for (i = 0; i < sizeof(pd); ++i) {
        pd[i] ^= 0x01;
        bad += REFUSAL_OK ==
               rcm_qp_frame_verify(pd, sizeof(pd), RCM_QREQ, id_b, key_b, src, nonce, &q);
        pd[i] ^= 0x81;
        bad += REFUSAL_OK ==
               rcm_qp_frame_verify(pd, sizeof(pd), RCM_QREQ, id_b, key_b, src, nonce, &q);
        pd[i] ^= 0x80;
    }
    for (cut = 0; cut < sizeof(pd); ++cut) {
        bad += REFUSAL_OK == rcm_qp_frame_verify(pd, cut, RCM_QREQ, id_b, key_b, src, nonce, &q);
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ(rcm_qp_frame_verify(pd, sizeof(pd), RCM_QREQ, id_b, key_a, src, nonce, &q),
             REFUSAL_BAD_MAC);
    CHECK_EQ(rcm_qp_frame_verify(pd, sizeof(pd), RCM_QREQ, id_a, key_b, src, nonce, &q),
             REFUSAL_BAD_MAC);
    CHECK_EQ(rcm_qp_frame_verify(pd, sizeof(pd), RCM_QREP, id_b, key_b, src, nonce, &q),
             REFUSAL_MALFORMED);
    /* the answer, keyed the other way */
    CHECK_EQ(rcm_qp_frame_encode(pd, RCM_QREP, id_b, id_a, key_a, nonce2, 0), RCM_QP_FRAME_LEN);
    CHECK_EQ(rcm_qp_frame_verify(pd, sizeof(pd), RCM_QREP, id_a, key_a, src, nonce, &q),
             REFUSAL_OK);
    CHECK_EQ(q, 0u);
    CHECK_EQ(memcmp(nonce, nonce2, OPENIB_AUTH_NONCE_LEN), 0);
    CHECK_EQ(rcm_qp_frame_verify(pd, sizeof(pd), RCM_QREP, id_a, key_b, src, nonce, &q),
             REFUSAL_BAD_MAC);
    /* no frame for a QP index past the last, nor of another type */
    CHECK_EQ(rcm_qp_frame_encode(pd, RCM_QREQ, id_a, id_b, key_b, nonce1, OPENIB_CPC_MAX_QPS), 0u);
    CHECK_EQ(rcm_qp_frame_encode(pd, RCM_REQ, id_a, id_b, key_b, nonce1, 0), 0u);
}

int main(void)
{
    test_round_trips();
    test_req_auth();
    test_rep_auth();
    test_interleaved();
    test_blob();
    test_addr();
    test_refusal_names();
    test_refusals();
    test_busy();
    test_qp_frames();
    return test_report("test_rdma_cm_wire");
}

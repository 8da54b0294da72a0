/*
 * test_rdma_cm_wire.c - the rdma_cm CPC's private data: every QP count
 * round-trips through REQ chunks of at most 56 bytes and a REP of at most
 * 196, the default three queues and up to five fit one REQ, six to eight
 * take two, and the decoders refuse foreign, truncated and malformed data
 * (reading only the bytes they were given). The listener thread's
 * REJ(BUSY) fits a REJ, carries its marker version, and a BUSY cut short or
 * of another marker version is told apart (never taken for "busy").
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <stdlib.h>
#include <string.h>

#include "connect/cpc_rdma_cm.h"
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

/* Send q as REQ chunks the way the initiator does, reassemble them the way
 * the responder does, decode; returns the number of chunks. */
static int req_round_trip(const struct openib_cpc_qp_info *q, struct openib_cpc_qp_info *out)
{
    uint8_t body[RCM_BODY_MAX], rx[RCM_MAX_CHUNKS * RCM_CHUNK_MAX];
    size_t len = rcm_body_encode(q, body);
    int n = (int) RCM_CHUNKS(len), k;

    CHECK_EQ(len, RCM_BODY_LEN(q->num_qps));
    memset(rx, 0, sizeof(rx));
    for (k = 0; k < n; ++k) {
        size_t off = (size_t) k * RCM_CHUNK_MAX;
        size_t clen = len - off < RCM_CHUNK_MAX ? len - off : RCM_CHUNK_MAX;
        uint8_t *pd = malloc(RCM_HDR_LEN + clen); /* exactly what is sent */
        struct rcm_msg m;

        rcm_hdr_encode(pd, RCM_REQ, id_a, (uint8_t) (k << 4 | n));
        memcpy(pd + RCM_HDR_LEN, body + off, clen);
        CHECK(RCM_HDR_LEN + clen <= RCM_REQ_PRIV_MAX);
        CHECK_EQ(rcm_msg_decode(pd, RCM_HDR_LEN + clen, &m), OPAL_SUCCESS);
        CHECK_EQ(m.type, RCM_REQ);
        CHECK_EQ(m.arg >> 4, k);
        CHECK_EQ(m.arg & 0x0f, n);
        CHECK(0 == memcmp(m.src, id_a, RCM_ID_LEN));
        memcpy(rx + off, m.rest, m.rest_len);
        free(pd);
    }
    openib_cpc_qp_info_init(out);
    CHECK_EQ(rcm_body_decode(rx, (size_t) n * RCM_CHUNK_MAX, q->qpn[0], out), OPAL_SUCCESS);
    return n;
}

static void test_round_trips(void)
{
    int n;

    for (n = 1; n <= OPENIB_CPC_MAX_QPS; ++n) {
        struct openib_cpc_qp_info q, out;
        uint8_t rep[RCM_HDR_LEN + RCM_BODY_MAX];
        struct rcm_msg m;
        size_t len;
        int chunks;

        sample(&q, n);
        chunks = req_round_trip(&q, &out);
        CHECK(same(&q, &out));
        CHECK_EQ(chunks, n <= 5 ? 1 : 2);

        /* REP: one piece, whatever the count */
        rcm_hdr_encode(rep, RCM_REP, id_a, 0);
        len = rcm_body_encode(&q, rep + RCM_HDR_LEN);
        CHECK(RCM_HDR_LEN + len <= RCM_REP_PRIV_MAX);
        CHECK_EQ(rcm_msg_decode(rep, RCM_HDR_LEN + len, &m), OPAL_SUCCESS);
        CHECK_EQ(m.type, RCM_REP);
        openib_cpc_qp_info_init(&out);
        CHECK_EQ(rcm_body_decode(m.rest, m.rest_len, q.qpn[0], &out), OPAL_SUCCESS);
        CHECK(same(&q, &out));
    }
    /* the default receive queues: one REQ with room to spare */
    CHECK(RCM_HDR_LEN + RCM_BODY_LEN(3) <= RCM_REQ_PRIV_MAX);
    CHECK_EQ(RCM_BODY_LEN(3), 32);
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
    pd[1] = (uint8_t) (2 << 4 | RCM_REJ);
    CHECK_EQ(rcm_msg_decode(pd, sizeof(pd), &m), OPAL_ERR_BAD_PARAM);
    pd[1] = (uint8_t) (1 << 4 | 9);
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

int main(void)
{
    test_round_trips();
    test_refusals();
    test_busy();
    return test_report("test_rdma_cm_wire");
}

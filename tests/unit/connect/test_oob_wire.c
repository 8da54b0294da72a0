/*
 * test_oob_wire.c - what oob's side channel carries: the modex blob (with
 * the process token), the handshake messages (with nonce, echo and MAC) and
 * the channel's keepalive frames round-trip exactly (big-endian whatever
 * the host, the documented layout byte for byte), and the decoders refuse
 * truncated, foreign, other-version and malformed data, reading only the
 * bytes they were given. The MAC fails on every mutated byte of a frame and
 * under any other key. The receivers' check sequences (oob_msg_view, then
 * oob_check_request_frame or oob_check_answer_frame; oob_check_source,
 * oob_check_ud_source) give each refusal its reason, in the documented
 * order, and a frame refused before the freshness check leaves the replay
 * memory untouched. A keepalive is told from a CPC message by
 * its magic alone. UD frames (the side channel's datagrams) round-trip with
 * their payload exactly for OPEN and DATA.
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <stdlib.h>
#include <string.h>

#include "wire/oob_wire.h"
#include "wire/xoob_wire.h"
#include "tests/unit/connect/cpc_test.h"

/* names as Open MPI lays them out (host order): jobid 1, vpids 7 and 9 */
static uint8_t id_a[OOB_ID_LEN], id_b[OOB_ID_LEN];
static const uint8_t key_a[OPENIB_AUTH_TOKEN_LEN] = "token-of-proc-a";
static const uint8_t key_b[OPENIB_AUTH_TOKEN_LEN] = "token-of-proc-b";
static const uint8_t nonce1[OPENIB_AUTH_NONCE_LEN] = { 1, 2, 3, 4, 5, 6, 7, 8 };
static const uint8_t nonce2[OPENIB_AUTH_NONCE_LEN] = { 9, 9, 9, 9, 9, 9, 9, 9 };

static void make_id(uint8_t *id, uint32_t jobid, uint32_t vpid)
{
    memcpy(id, &jobid, 4);
    memcpy(id + 4, &vpid, 4);
}

/* Run a decoder on a heap copy of exactly len bytes, so a read past the
 * end is caught by ASan/valgrind if anyone runs them. */
static uint8_t *exact(const uint8_t *buf, size_t len)
{
    uint8_t *copy = malloc(len ? len : 1);

    memcpy(copy, buf, len);
    return copy;
}

static void sample_qp(struct openib_cpc_qp_info *q, int n)
{
    int i;

    openib_cpc_qp_info_init(q);
    q->mtu = 4096;
    for (i = 0; i < 16; ++i) {
        q->gid[i] = (uint8_t) (0xf0 + i);
    }
    q->lid = 0xbeef;
    q->num_qps = (uint8_t) n;
    for (i = 0; i < n; ++i) {
        q->qpn[i] = 0xabcd00u + (uint32_t) i;
        q->psn[i] = 0x123456u - (uint32_t) i;
    }
    q->rq_layout = 0x89abcdefu;
    q->mailbox_rkey = 0x01020304u;
    q->mailbox_addr = 0x7f1122334455667full;
}

/* A frame from a to b (type, reason, q, nonce, echo), sealed with key. */
static int encode_msg(uint8_t *buf, enum oob_type type, uint16_t reason,
                      const struct openib_cpc_qp_info *q, const uint8_t *nonce,
                      const uint8_t *echo, const uint8_t *key)
{
    struct oob_msg m = { .env.type = type, .env.reason = reason };

    memcpy(m.env.src, id_a, OOB_ID_LEN);
    memcpy(m.env.dst, id_b, OOB_ID_LEN);
    if (q) {
        m.q = *q;
    }
    if (nonce) {
        memcpy(m.env.nonce, nonce, OPENIB_AUTH_NONCE_LEN);
    }
    if (echo) {
        memcpy(m.env.echo, echo, OPENIB_AUTH_NONCE_LEN);
    }
    return oob_msg_encode(buf, OOB_MSG_SIZE, &m, key);
}

static void blob(void)
{
    struct oob_blob in, out;
    uint8_t buf[255], *c;
    size_t len, cut;
    int naddr, version = 0, i;

    memset(&in, 0, sizeof(in));
    memcpy(in.token, key_a, sizeof(in.token));
    for (i = 0; i < OOB_MAX_ADDRS; ++i) {
        in.addrs[i] = 0x0a000001u + (uint32_t) i;
    }
    /* TCP only, UD and TCP, UD only (no address: no port either) */
    for (naddr = 0; naddr <= OOB_MAX_ADDRS; ++naddr) {
        in.naddr = naddr;
        in.port = naddr ? 0x1234 : 0;
        in.ud_qpn = naddr % 2 ? 0 : 0x00abcdefu;
        CHECK_EQ(oob_blob_encode(buf, sizeof(buf), &in, &len), OPAL_SUCCESS);
        CHECK_EQ(len, 4 + 16 + 4 + 4 * naddr);
        CHECK_EQ(buf[0], OOB_BLOB_VERSION);
        CHECK(0 == memcmp(buf + 4, key_a, 16)); /* the layout: token after the port */
        CHECK_EQ(buf[20] << 24 | buf[21] << 16 | buf[22] << 8 | buf[23], in.ud_qpn); /* then the QP */
        c = exact(buf, len);
        memset(&out, 0, sizeof(out));
        CHECK_EQ(oob_blob_decode(c, len, &out, &version), OPAL_SUCCESS);
        free(c);
        CHECK_EQ(out.naddr, naddr);
        CHECK_EQ(out.port, in.port);
        CHECK_EQ(out.ud_qpn, in.ud_qpn);
        CHECK_EQ(version, OOB_BLOB_VERSION);
        CHECK(0 == memcmp(out.addrs, in.addrs, 4 * (size_t) naddr));
        CHECK(0 == memcmp(out.token, key_a, sizeof(out.token)));
    }
    /* encoder limits: neither channel, too many addresses, no room */
    in.naddr = 0;
    in.ud_qpn = 0;
    CHECK_EQ(oob_blob_encode(buf, sizeof(buf), &in, &len), OPAL_ERR_BAD_PARAM);
    in.naddr = OOB_MAX_ADDRS + 1;
    CHECK_EQ(oob_blob_encode(buf, sizeof(buf), &in, &len), OPAL_ERR_BAD_PARAM);
    in.naddr = 2;
    CHECK_EQ(oob_blob_encode(buf, 4 + 16 + 4 + 4 * 2 - 1, &in, &len), OPAL_ERR_OUT_OF_RESOURCE);
    CHECK_EQ(oob_blob_encode(buf, sizeof(buf), NULL, &len), OPAL_ERR_BAD_PARAM);

    /* every truncation, and a trailing byte */
    in.port = 0x1234;
    CHECK_EQ(oob_blob_encode(buf, sizeof(buf), &in, &len), OPAL_SUCCESS);
    for (cut = 0; cut < len; ++cut) {
        c = exact(buf, cut);
        CHECK_EQ(oob_blob_decode(c, cut, &out, NULL), OPAL_ERR_BAD_PARAM);
        free(c);
    }
    buf[len] = 0;
    CHECK_EQ(oob_blob_decode(buf, len + 1, &out, NULL), OPAL_ERR_BAD_PARAM);
    /* older peers (1: no keepalives, 2: no token, 3: no UD): refused, the version said */
    for (i = 1; i <= 3; ++i) {
        buf[0] = (uint8_t) i;
        CHECK_EQ(oob_blob_decode(buf, len, &out, &version), OPAL_ERR_NOT_SUPPORTED);
        CHECK_EQ(version, i);
    }
    buf[0] = OOB_BLOB_VERSION + 1;
    CHECK_EQ(oob_blob_decode(buf, len, &out, NULL), OPAL_ERR_NOT_SUPPORTED);
    buf[0] = OOB_BLOB_VERSION;
    /* address counts out of range; neither channel; a port without addresses */
    buf[1] = OOB_MAX_ADDRS + 1;
    CHECK_EQ(oob_blob_decode(buf, 24 + 4 * (OOB_MAX_ADDRS + 1), &out, NULL), OPAL_ERR_BAD_PARAM);
    buf[1] = 0;
    memset(buf + 20, 0, 4);
    CHECK_EQ(oob_blob_decode(buf, 24, &out, NULL), OPAL_ERR_BAD_PARAM);
    buf[23] = 7;
    CHECK_EQ(oob_blob_decode(buf, 24, &out, NULL), OPAL_ERR_BAD_PARAM); /* port 0x1234, no address */
    buf[2] = buf[3] = 0;
    CHECK_EQ(oob_blob_decode(buf, 24, &out, NULL), OPAL_SUCCESS);
    CHECK_EQ(out.ud_qpn, 7);
    CHECK_EQ(out.naddr, 0);
    CHECK_EQ(oob_blob_decode(NULL, 8, &out, NULL), OPAL_ERR_BAD_PARAM);
}

/* UD frames: every kind round-trips (the documented layout), a payload
 * exactly for OPEN and DATA, and the decoder refuses anything else. */
static void ud_frames(void)
{
    uint8_t buf[OOB_UD_FRAME_MAX + 1], payload[OOB_MSG_SIZE], *c;
    const uint8_t *got;
    struct oob_ud_hdr h, out;
    size_t len, cut;
    int kind;

    for (cut = 0; cut < sizeof(payload); ++cut) {
        payload[cut] = (uint8_t) (cut * 7);
    }
    for (kind = OOB_UD_OPEN; kind <= OOB_UD_RESET; ++kind) {
        bool carries = OOB_UD_OPEN == kind || OOB_UD_DATA == kind;
        h = (struct oob_ud_hdr) { .kind = (uint8_t) kind, .src_sid = 0x01020304u,
                                  .dst_sid = OOB_UD_NO_SID, .seq = 0xa0b0c0d0u };
        CHECK_EQ(oob_ud_encode(buf, sizeof(buf), &h, carries ? NULL : payload, &len),
                 OPAL_ERR_BAD_PARAM);
        CHECK_EQ(oob_ud_encode(buf, sizeof(buf), &h, carries ? payload : NULL, &len),
                 OPAL_SUCCESS);
        CHECK_EQ(len, OOB_UD_HDR_LEN + (carries ? OOB_MSG_SIZE : 0));
        CHECK(0 == memcmp(buf, "OIBU", 4));
        CHECK_EQ(buf[5], kind);
        CHECK_EQ(buf[8], 1);
        CHECK_EQ(buf[12], 0xff);
        CHECK_EQ(buf[16], 0xa0);
        c = exact(buf, len);
        CHECK_EQ(oob_ud_decode(c, len, &out, &got), OPAL_SUCCESS);
        CHECK_EQ(out.kind, kind);
        CHECK_EQ(out.src_sid, h.src_sid);
        CHECK_EQ(out.dst_sid, h.dst_sid);
        CHECK_EQ(out.seq, h.seq);
        CHECK(carries ? NULL != got && 0 == memcmp(got, payload, OOB_MSG_SIZE) : NULL == got);
        for (cut = 0; cut < len; ++cut) { /* every truncation */
            CHECK_EQ(oob_ud_decode(c, cut, &out, &got), OPAL_ERR_BAD_PARAM);
        }
        free(c);
        CHECK_EQ(oob_ud_decode(buf, len + 1, &out, &got), OPAL_ERR_BAD_PARAM);
        CHECK_EQ(oob_ud_encode(buf, len - 1, &h, carries ? payload : NULL, &len),
                 OPAL_ERR_OUT_OF_RESOURCE);
    }
    h.kind = OOB_UD_ACK;
    CHECK_EQ(oob_ud_encode(buf, sizeof(buf), &h, NULL, &len), OPAL_SUCCESS);
    buf[4] = 2; /* another version */
    CHECK_EQ(oob_ud_decode(buf, len, &out, &got), OPAL_ERR_NOT_SUPPORTED);
    buf[4] = 1;
    buf[5] = 6; /* no such kind */
    CHECK_EQ(oob_ud_decode(buf, len, &out, &got), OPAL_ERR_BAD_PARAM);
    buf[5] = 0;
    CHECK_EQ(oob_ud_decode(buf, len, &out, &got), OPAL_ERR_BAD_PARAM);
    buf[5] = OOB_UD_ACK;
    buf[0] = 'X'; /* another magic: an oob message is not a UD frame */
    CHECK_EQ(oob_ud_decode(buf, len, &out, &got), OPAL_ERR_BAD_PARAM);
    h.kind = 9;
    CHECK_EQ(oob_ud_encode(buf, sizeof(buf), &h, NULL, &len), OPAL_ERR_BAD_PARAM);
}

/* A UD frame's source: the published QP, and the port's GID with a GRH or
 * its LID without. */
static void ud_source(void)
{
    uint8_t gid[16] = { 0xfe, 0x80, [15] = 1 }, other[16] = { 0xfe, 0x80, [15] = 2 };
    struct oob_ud_addr from = { .qpn = 0x11, .lid = 5, .global = true };

    memcpy(from.gid, gid, 16);
    CHECK_EQ(oob_check_ud_source(0x11, gid, 5, &from), REFUSAL_OK);
    CHECK_EQ(oob_check_ud_source(0x12, gid, 5, &from), REFUSAL_BAD_SOURCE_ADDR);
    CHECK_EQ(oob_check_ud_source(0, gid, 5, &from), REFUSAL_BAD_SOURCE_ADDR);
    CHECK_EQ(oob_check_ud_source(0x11, other, 5, &from), REFUSAL_BAD_SOURCE_ADDR);
    from.global = false; /* by LID: the GID is not looked at */
    CHECK_EQ(oob_check_ud_source(0x11, other, 5, &from), REFUSAL_OK);
    CHECK_EQ(oob_check_ud_source(0x11, gid, 6, &from), REFUSAL_BAD_SOURCE_ADDR);
}

static void messages(void)
{
    struct openib_cpc_qp_info q;
    struct oob_msg m;
    uint8_t buf[OOB_MSG_SIZE], *c;
    size_t cut;
    int n, t;

    for (n = 0; n <= OPENIB_CPC_MAX_QPS; ++n) {
        sample_qp(&q, n);
        CHECK_EQ(encode_msg(buf, OOB_REQ, 0, &q, nonce1, nonce2, key_b), OPAL_SUCCESS);
        c = exact(buf, sizeof(buf));
        CHECK_EQ(oob_msg_decode(c, sizeof(buf), &m), OPAL_SUCCESS);
        free(c);
        CHECK_EQ(m.env.type, OOB_REQ);
        CHECK(0 == memcmp(m.env.src, id_a, OOB_ID_LEN));
        CHECK(0 == memcmp(m.env.dst, id_b, OOB_ID_LEN));
        CHECK_EQ(m.q.mtu, 4096);
        CHECK(0 == memcmp(m.q.gid, q.gid, 16));
        CHECK_EQ(m.q.lid, 0xbeef);
        CHECK_EQ(m.q.num_qps, n);
        CHECK(0 == memcmp(m.q.qpn, q.qpn, sizeof(q.qpn)));
        CHECK(0 == memcmp(m.q.psn, q.psn, sizeof(q.psn)));
        CHECK_EQ(m.q.rq_layout, q.rq_layout);
        CHECK_EQ(m.q.mailbox_rkey, q.mailbox_rkey);
        CHECK(m.q.mailbox_addr == q.mailbox_addr);
        CHECK(0 == memcmp(m.env.nonce, nonce1, 8));
        CHECK(0 == memcmp(m.env.echo, nonce2, 8));
    }
    /* the version-2 layout, byte for byte: magic "OIBO", version, type,
     * reason, ids, the QP data big-endian, nonce, echo, MAC */
    CHECK_EQ(encode_msg(buf, OOB_REJ, OOB_REJ_NO_ENDPOINT, NULL, nonce1, nonce2, key_b),
             OPAL_SUCCESS);
    CHECK(0 == memcmp(buf, "OIBO\x02\x04\x00\x02", 8));
    CHECK(0 == memcmp(buf + 8, id_a, OOB_ID_LEN));
    CHECK(0 == memcmp(buf + 16, id_b, OOB_ID_LEN));
    sample_qp(&q, 3);
    CHECK_EQ(encode_msg(buf, OOB_REP, 0, &q, nonce1, nonce2, key_b), OPAL_SUCCESS);
    CHECK(0 == memcmp(buf + 24, "\x00\x00\x10\x00", 4));   /* mtu */
    CHECK(0 == memcmp(buf + 44, "\xbe\xef\x03\x00", 4));   /* lid, num_qps */
    CHECK(0 == memcmp(buf + 48, "\x00\xab\xcd\x00", 4));   /* qpn[0] */
    CHECK(0 == memcmp(buf + 120, "\x7f\x11\x22\x33\x44\x55\x66\x7f", 8)); /* mailbox */
    CHECK(0 == memcmp(buf + 128, nonce1, 8));
    CHECK(0 == memcmp(buf + 136, nonce2, 8));
    CHECK(openib_auth_verify(key_b, buf, OOB_MSG_SIZE, 144)); /* MAC at 144, whole frame */

    /* every type; a REJ's reason; QP data only in REQ and REP */
    for (t = OOB_REQ; t <= OOB_REJ; ++t) {
        CHECK_EQ(encode_msg(buf, (enum oob_type) t, 0x0102, &q, nonce1, NULL, key_b),
                 OPAL_SUCCESS);
        CHECK_EQ(oob_msg_decode(buf, sizeof(buf), &m), OPAL_SUCCESS);
        CHECK_EQ(m.env.type, t);
        CHECK_EQ(m.env.reason, 0x0102);
        CHECK_EQ(m.q.num_qps, t == OOB_REQ || t == OOB_REP ? 3 : 0);
    }
    /* truncations: everything short of the 160 bytes used */
    CHECK_EQ(encode_msg(buf, OOB_REQ, 0, &q, nonce1, NULL, key_b), OPAL_SUCCESS);
    for (cut = 0; cut < OOB_MSG_SIZE; ++cut) {
        c = exact(buf, cut);
        CHECK(OPAL_SUCCESS != oob_msg_decode(c, cut, &m));
        free(c);
    }
    {
        struct oob_msg in = { .env.type = OOB_REQ };
        CHECK_EQ(oob_msg_encode(buf, OOB_MSG_SIZE - 1, &in, key_b), OPAL_ERR_BAD_PARAM);
        CHECK_EQ(oob_msg_encode(buf, OOB_MSG_SIZE, &in, NULL), OPAL_ERR_BAD_PARAM);
    }
    /* another version (1 included), a foreign magic, a bad type, too many QPs */
    CHECK_EQ(encode_msg(buf, OOB_REQ, 0, &q, nonce1, NULL, key_b), OPAL_SUCCESS);
    buf[4] = 1;
    CHECK_EQ(oob_msg_decode(buf, sizeof(buf), &m), OPAL_ERR_NOT_SUPPORTED);
    buf[4] = OOB_MSG_VERSION + 1;
    CHECK_EQ(oob_msg_decode(buf, sizeof(buf), &m), OPAL_ERR_NOT_SUPPORTED);
    buf[4] = OOB_MSG_VERSION;
    buf[0] ^= 0x20;
    CHECK_EQ(oob_msg_decode(buf, sizeof(buf), &m), OPAL_ERR_BAD_PARAM);
    buf[0] ^= 0x20;
    buf[5] = 0;
    CHECK_EQ(oob_msg_decode(buf, sizeof(buf), &m), OPAL_ERR_BAD_PARAM);
    buf[5] = OOB_REJ + 1;
    CHECK_EQ(oob_msg_decode(buf, sizeof(buf), &m), OPAL_ERR_BAD_PARAM);
    buf[5] = OOB_REQ;
    buf[46] = OPENIB_CPC_MAX_QPS + 1;
    CHECK_EQ(oob_msg_decode(buf, sizeof(buf), &m), OPAL_ERR_BAD_PARAM);
    q.num_qps = OPENIB_CPC_MAX_QPS + 1;
    CHECK_EQ(encode_msg(buf, OOB_REQ, 0, &q, nonce1, NULL, key_b), OPAL_ERR_BAD_PARAM);
}

/* The MAC covers every byte: each single-bit flip anywhere, the MAC field
 * included, is caught; so is any other key. */
static void mac(void)
{
    struct openib_cpc_qp_info q;
    uint8_t buf[OOB_MSG_SIZE];
    uint8_t other[OPENIB_AUTH_TOKEN_LEN];
    size_t i;
    int bit, missed = 0;

    sample_qp(&q, 2);
    CHECK_EQ(encode_msg(buf, OOB_REQ, 0, &q, nonce1, NULL, key_b), OPAL_SUCCESS);
    CHECK(openib_auth_verify(key_b, buf, OOB_MSG_SIZE, 144));
    CHECK(!openib_auth_verify(key_a, buf, OOB_MSG_SIZE, 144));
    for (i = 0; i < sizeof(other); ++i) {
        memcpy(other, key_b, sizeof(other));
        other[i] ^= 1;
        missed += openib_auth_verify(other, buf, OOB_MSG_SIZE, 144);
    }
    for (i = 0; i < OOB_MSG_SIZE; ++i) {
        for (bit = 0; bit < 8; ++bit) {
            buf[i] ^= (uint8_t) (1u << bit);
            missed += openib_auth_verify(key_b, buf, OOB_MSG_SIZE, 144);
            buf[i] ^= (uint8_t) (1u << bit);
        }
    }
    CHECK_EQ(missed, 0);
    CHECK(openib_auth_verify(key_b, buf, OOB_MSG_SIZE, 144)); /* restored */
}

static void membership(void)
{
    uint8_t x[OOB_ID_LEN];

    /* b (vpid 9) checks a (vpid 7) */
    CHECK(oob_is_member(id_a, id_b, 0));   /* size unknown: any vpid */
    CHECK(oob_is_member(id_a, id_b, 8));
    CHECK(!oob_is_member(id_a, id_b, 7));  /* vpid 7 of a 7-process job: none */
    CHECK(!oob_is_member(id_b, id_b, 16)); /* ourselves */
    make_id(x, 1, 0xffffffffu);
    CHECK(!oob_is_member(x, id_b, 16));
    make_id(x, 2, 7);                      /* another job: the MAC decides */
    CHECK(oob_is_member(x, id_b, 16));
}

/* The responder's sequence, one refusal at a time, in order. */
static void incoming(void)
{
    struct openib_auth_replay *r = calloc(1, sizeof(*r));
    struct openib_cpc_qp_info q;
    struct oob_msg m;
    struct oob_frame_view v;
    uint8_t buf[OOB_MSG_SIZE], self_c[OOB_ID_LEN], *c;
    size_t cut;

    sample_qp(&q, 2);
    /* a well-formed REQ from a (vpid 7) to b, keyed with b's token */
    CHECK_EQ(encode_msg(buf, OOB_REQ, 0, &q, nonce1, NULL, key_b), OPAL_SUCCESS);
    v = oob_msg_view(buf, sizeof(buf), OOB_REQ, OOB_RTU, &m);
    /* refused before freshness: nothing remembered */
    CHECK_EQ(oob_check_request_frame(v, id_b, 16, key_a, r), REFUSAL_BAD_MAC);
    make_id(self_c, 1, 3);
    CHECK_EQ(oob_check_request_frame(v, self_c, 16, key_b, r), REFUSAL_WRONG_DST);
    CHECK_EQ(oob_check_request_frame(v, id_b, 5, key_b, r), REFUSAL_NOT_MEMBER);
    for (cut = 0; cut < OOB_MSG_SIZE; ++cut) {
        c = exact(buf, cut);
        CHECK_EQ(oob_check_request_frame(oob_msg_view(c, cut, OOB_REQ, OOB_RTU, &m), id_b, 16,
                                         key_b, r),
                 REFUSAL_MALFORMED);
        free(c);
    }
    CHECK_EQ(r->used, 0);
    /* good once, then a replay */
    v = oob_msg_view(buf, sizeof(buf), OOB_REQ, OOB_RTU, &m);
    CHECK_EQ(oob_check_request_frame(v, id_b, 16, key_b, r), REFUSAL_OK);
    CHECK_EQ(m.q.num_qps, 2);
    CHECK_EQ(oob_check_request_frame(v, id_b, 16, key_b, r), REFUSAL_REPLAY);
    /* dst is checked before the MAC: a frame for another process of the
     * job, even a genuine one, is refused as such */
    CHECK_EQ(oob_check_request_frame(v, self_c, 16, key_a, r), REFUSAL_WRONG_DST);
    /* any mutated byte: refused (dst, membership or MAC, never OK) */
    {
        int i, ok = 0;
        CHECK_EQ(encode_msg(buf, OOB_REQ, 0, &q, nonce2, NULL, key_b), OPAL_SUCCESS);
        for (i = 0; i < OOB_MSG_SIZE; ++i) {
            buf[i] ^= 0x40;
            v = oob_msg_view(buf, sizeof(buf), OOB_REQ, OOB_RTU, &m);
            ok += REFUSAL_OK == oob_check_request_frame(v, id_b, 16, key_b, r);
            buf[i] ^= 0x40;
        }
        CHECK_EQ(ok, 0);
    }
    /* an RTU passes the same checks; REP and REJ do not belong here */
    CHECK_EQ(encode_msg(buf, OOB_RTU, 0, NULL, nonce2, nonce1, key_b), OPAL_SUCCESS);
    v = oob_msg_view(buf, sizeof(buf), OOB_REQ, OOB_RTU, &m);
    CHECK_EQ(oob_check_request_frame(v, id_b, 16, key_b, r), REFUSAL_OK);
    CHECK_EQ(m.env.type, OOB_RTU);
    CHECK(0 == memcmp(m.env.echo, nonce1, 8));
    CHECK_EQ(encode_msg(buf, OOB_REP, 0, &q, nonce1, NULL, key_b), OPAL_SUCCESS);
    v = oob_msg_view(buf, sizeof(buf), OOB_REQ, OOB_RTU, &m);
    CHECK_EQ(oob_check_request_frame(v, id_b, 16, key_b, r), REFUSAL_MALFORMED);
    /* garbage */
    memset(buf, 0xa5, sizeof(buf));
    v = oob_msg_view(buf, sizeof(buf), OOB_REQ, OOB_RTU, &m);
    CHECK_EQ(oob_check_request_frame(v, id_b, 16, key_b, r), REFUSAL_MALFORMED);
    free(r);
}

/* The initiator's sequence for an answer. Here a is the initiator: the
 * answer goes b -> a, so frames are built with the ids swapped. */
static void answers(void)
{
    struct openib_cpc_qp_info q;
    struct oob_msg m, out;
    struct oob_frame_view v;
    uint8_t buf[OOB_MSG_SIZE], other[OOB_ID_LEN];

    sample_qp(&q, 1);
    memset(&m, 0, sizeof(m));
    m.env.type = OOB_REP;
    memcpy(m.env.src, id_b, OOB_ID_LEN);
    memcpy(m.env.dst, id_a, OOB_ID_LEN);
    m.q = q;
    memcpy(m.env.nonce, nonce2, 8);
    memcpy(m.env.echo, nonce1, 8);
    CHECK_EQ(oob_msg_encode(buf, sizeof(buf), &m, key_a), OPAL_SUCCESS);
    v = oob_msg_view(buf, sizeof(buf), OOB_REP, OOB_REJ, &out);
    CHECK_EQ(oob_check_answer_frame(v, id_a, id_b, key_a, nonce1), REFUSAL_OK);
    CHECK_EQ(out.q.qpn[0], q.qpn[0]);
    /* an answer to another request of ours */
    CHECK_EQ(oob_check_answer_frame(v, id_a, id_b, key_a, nonce2), REFUSAL_REPLAY);
    CHECK_EQ(oob_check_answer_frame(v, id_a, id_b, key_b, nonce1), REFUSAL_BAD_MAC);
    make_id(other, 1, 3);
    CHECK_EQ(oob_check_answer_frame(v, id_a, other, key_a, nonce1), REFUSAL_WRONG_SRC);
    CHECK_EQ(oob_check_answer_frame(v, other, id_b, key_a, nonce1), REFUSAL_WRONG_DST);
    v = oob_msg_view(buf, 100, OOB_REP, OOB_REJ, &out);
    CHECK_EQ(oob_check_answer_frame(v, id_a, id_b, key_a, nonce1), REFUSAL_MALFORMED);
    /* a REQ is no answer */
    m.env.type = OOB_REQ;
    CHECK_EQ(oob_msg_encode(buf, sizeof(buf), &m, key_a), OPAL_SUCCESS);
    v = oob_msg_view(buf, sizeof(buf), OOB_REP, OOB_REJ, &out);
    CHECK_EQ(oob_check_answer_frame(v, id_a, id_b, key_a, nonce1), REFUSAL_MALFORMED);
}

static void source(void)
{
    const uint32_t pub[3] = { 0x0100000au, 0x0200000au, 0x0101a8c0u };

    CHECK_EQ(oob_check_source(pub, 3, 0x0200000au), REFUSAL_OK);
    CHECK_EQ(oob_check_source(pub, 3, 0x0100007fu), REFUSAL_BAD_SOURCE_ADDR);
    CHECK_EQ(oob_check_source(pub, 0, 0x0100000au), REFUSAL_BAD_SOURCE_ADDR);
    /* the reason tokens a log grep relies on */
    CHECK_STR_HAS(openib_refusal_name(REFUSAL_BAD_MAC), "bad-mac");
    CHECK_STR_HAS(openib_refusal_name(REFUSAL_NOT_MEMBER), "not-member");
    CHECK_STR_HAS(openib_refusal_name(REFUSAL_WRONG_DST), "wrong-dst");
    CHECK_STR_HAS(openib_refusal_name(REFUSAL_REPLAY), "replay");
    CHECK_STR_HAS(openib_refusal_name(REFUSAL_BAD_SOURCE_ADDR), "bad-source-addr");
    CHECK_STR_HAS(openib_refusal_name(REFUSAL_MALFORMED), "malformed");
    CHECK_STR_HAS(openib_refusal_name(REFUSAL_CAP), "cap");
    CHECK_STR_HAS(openib_refusal_name(REFUSAL_COUNT), "unknown");
}

static void keepalives(void)
{
    struct oob_ka k = { .type = OOB_KA_PONG, .pending = 0x0203 }, out;
    struct xoob_msg xm = { .env.type = XOOB_REQ };
    uint8_t buf[OOB_MSG_SIZE], *c;
    size_t cut;

    CHECK_EQ(oob_ka_encode(buf, sizeof(buf), &k), OPAL_SUCCESS);
    CHECK(0 == memcmp(buf, "OIBK\x01\x02\x02\x03", 8));
    c = exact(buf, 8);
    CHECK_EQ(oob_ka_decode(c, 8, &out), OPAL_SUCCESS);
    free(c);
    CHECK_EQ(out.type, OOB_KA_PONG);
    CHECK_EQ(out.pending, 0x0203);
    k.type = OOB_KA_PING;
    k.pending = 0;
    CHECK_EQ(oob_ka_encode(buf, sizeof(buf), &k), OPAL_SUCCESS);
    CHECK_EQ(oob_ka_decode(buf, sizeof(buf), &out), OPAL_SUCCESS);
    CHECK_EQ(out.type, OOB_KA_PING);
    /* the rest of the frame is zeros */
    for (cut = 8; cut < sizeof(buf) && 0 == buf[cut]; ++cut) {
    }
    CHECK_EQ(cut, sizeof(buf));

    /* truncated: too short to tell, or a keepalive cut short */
    for (cut = 0; cut < 8; ++cut) {
        c = exact(buf, cut);
        CHECK_EQ(oob_ka_decode(c, cut, &out), OPAL_ERR_BAD_PARAM);
        free(c);
    }
    /* another version; an unknown type */
    buf[4] = 2;
    CHECK_EQ(oob_ka_decode(buf, sizeof(buf), &out), OPAL_ERR_NOT_SUPPORTED);
    buf[4] = 1;
    buf[5] = 3;
    CHECK_EQ(oob_ka_decode(buf, sizeof(buf), &out), OPAL_ERR_BAD_PARAM);
    buf[5] = 0;
    CHECK_EQ(oob_ka_decode(buf, sizeof(buf), &out), OPAL_ERR_BAD_PARAM);
    k.type = 7;
    CHECK_EQ(oob_ka_encode(buf, sizeof(buf), &k), OPAL_ERR_BAD_PARAM);
    k.type = OOB_KA_PING;
    CHECK_EQ(oob_ka_encode(buf, 7, &k), OPAL_ERR_BAD_PARAM);

    /* the CPCs' messages are not keepalives: passed on */
    CHECK_EQ(encode_msg(buf, OOB_REQ, 0, NULL, NULL, NULL, key_b), OPAL_SUCCESS);
    CHECK_EQ(oob_ka_decode(buf, sizeof(buf), &out), OPAL_ERR_NOT_FOUND);
    CHECK_EQ(xoob_msg_encode(&xm, buf, sizeof(buf), key_b), OPAL_SUCCESS);
    CHECK_EQ(oob_ka_decode(buf, sizeof(buf), &out), OPAL_ERR_NOT_FOUND);
    /* and a keepalive is neither an oob nor a xoob message */
    CHECK_EQ(oob_ka_encode(buf, sizeof(buf), &k), OPAL_SUCCESS);
    {
        struct oob_msg m;
        struct xoob_msg x;
        CHECK_EQ(oob_msg_decode(buf, sizeof(buf), &m), OPAL_ERR_BAD_PARAM);
        CHECK_EQ(xoob_msg_decode(buf, sizeof(buf), &x), OPAL_ERR_BAD_PARAM);
    }
}

int main(void)
{
    make_id(id_a, 1, 7);
    make_id(id_b, 1, 9);
    blob();
    messages();
    mac();
    membership();
    incoming();
    answers();
    source();
    ud_frames();
    ud_source();
    keepalives();
    return test_report("test_oob_wire");
}

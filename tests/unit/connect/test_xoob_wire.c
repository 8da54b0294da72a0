/*
 * test_xoob_wire.c - xoob's modex blob and handshake messages: they
 * round-trip exactly (big-endian on the wire whatever the host), the blob's
 * SRQ numbers survive for every count 1..8, and the decoders refuse
 * truncated, padded, foreign-version and malformed data, reading only the
 * bytes they were given. The blob carries the process token; a message's
 * MAC fails on every mutated byte and under any other key, and the
 * receivers' check sequences (xoob_msg_view, then oob_check_request_frame
 * or oob_check_answer_frame) give each refusal its reason in order,
 * remembering a nonce only for a frame that passed every earlier check.
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <stdlib.h>
#include <string.h>

#include "connect/cpc_oob_channel.h"
#include "wire/xoob_wire.h"
#include "tests/unit/connect/cpc_test.h"

static void sample_blob(struct xoob_blob *b, int naddr, int nsrq)
{
    int i;

    memset(b, 0, sizeof(*b));
    b->naddr = (uint8_t) naddr;
    b->port = 0xbeef;
    memcpy(b->token, "0123456789abcdef", 16);
    for (i = 0; i < naddr; ++i) {
        b->addrs[i] = 0x0a000001u + (uint32_t) i;
    }
    b->node_id = 0x0102030405060708ull;
    b->nsrq = (uint8_t) nsrq;
    for (i = 0; i < nsrq; ++i) {
        b->srqn[i] = 0xabcdefu - (uint32_t) i * 0x10101u;
    }
}

/* Decode from a heap copy of exactly len bytes, so a read past the end is
 * caught by ASan/valgrind if anyone runs them. */
static int decode_exact(const uint8_t *buf, size_t len, struct xoob_blob *out)
{
    uint8_t *copy = malloc(len ? len : 1);
    int rc;

    memcpy(copy, buf, len);
    rc = xoob_blob_decode(copy, len, out);
    free(copy);
    return rc;
}

static void blob_round_trip(void)
{
    struct xoob_blob in, out;
    uint8_t buf[255];
    size_t len;
    int nsrq, naddr;

    for (naddr = 1; naddr <= XOOB_MAX_ADDRS; ++naddr) {
        for (nsrq = 1; nsrq <= XOOB_MAX_SRQS; ++nsrq) {
            sample_blob(&in, naddr, nsrq);
            CHECK_EQ(xoob_blob_encode(&in, buf, sizeof(buf), &len), OPAL_SUCCESS);
            CHECK_EQ(len, 4 + 16 + 4 * naddr + 8 + 1 + 4 * nsrq);
            CHECK(len <= 255); /* fits a CPC blob */
            memset(&out, 0xee, sizeof(out));
            CHECK_EQ(decode_exact(buf, len, &out), OPAL_SUCCESS);
            CHECK(0 == memcmp(&in, &out, sizeof(in))); /* every field, padding zeroed */
        }
    }
    /* the byte layout is big-endian: version, naddr, port, ..., node id */
    sample_blob(&in, 1, 2);
    CHECK_EQ(xoob_blob_encode(&in, buf, sizeof(buf), &len), OPAL_SUCCESS);
    CHECK_EQ(buf[0], XOOB_BLOB_VERSION);
    CHECK_EQ(buf[1], 1);
    CHECK_EQ(buf[2], 0xbe);
    CHECK_EQ(buf[3], 0xef);
    CHECK(0 == memcmp(buf + 4, "0123456789abcdef", 16)); /* the token */
    CHECK_EQ(buf[24], 0x01);
    CHECK_EQ(buf[31], 0x08);
    CHECK_EQ(buf[32], 2);
    CHECK_EQ(buf[33], 0x00);
    CHECK_EQ(buf[34], 0xab);
    CHECK_EQ(buf[36], 0xef);
}

static void blob_rejects(void)
{
    struct xoob_blob in, out;
    uint8_t buf[255], bad[255];
    size_t len, cut;

    sample_blob(&in, 2, 3);
    CHECK_EQ(xoob_blob_encode(&in, buf, sizeof(buf), &len), OPAL_SUCCESS);
    /* every truncation is refused */
    for (cut = 0; cut < len; ++cut) {
        CHECK_EQ(decode_exact(buf, cut, &out), OPAL_ERR_BAD_PARAM);
    }
    /* so is a trailing byte */
    memcpy(bad, buf, len);
    bad[len] = 0;
    CHECK_EQ(decode_exact(bad, len + 1, &out), OPAL_ERR_BAD_PARAM);
    /* another version: intact but not ours */
    memcpy(bad, buf, len);
    bad[0] = XOOB_BLOB_VERSION + 1;
    CHECK_EQ(decode_exact(bad, len, &out), OPAL_ERR_NOT_SUPPORTED);
    /* versions 1 and 2 (no token): refused */
    bad[0] = 1;
    CHECK_EQ(decode_exact(bad, len, &out), OPAL_ERR_NOT_SUPPORTED);
    bad[0] = 2;
    CHECK_EQ(decode_exact(bad, len, &out), OPAL_ERR_NOT_SUPPORTED);
    /* cut after 2 addresses (an oob blob's shape, no node/SRQ part): not a xoob blob */
    CHECK_EQ(decode_exact(buf, 4 + 16 + 4 * 2, &out), OPAL_ERR_BAD_PARAM);
    /* counts out of range */
    memcpy(bad, buf, len);
    bad[1] = 0;
    CHECK_EQ(decode_exact(bad, len, &out), OPAL_ERR_BAD_PARAM);
    memcpy(bad, buf, len);
    bad[1] = XOOB_MAX_ADDRS + 1;
    CHECK_EQ(decode_exact(bad, len, &out), OPAL_ERR_BAD_PARAM);
    memcpy(bad, buf, len);
    bad[4 + 16 + 8 + 8] = 0; /* nsrq */
    CHECK_EQ(decode_exact(bad, len, &out), OPAL_ERR_BAD_PARAM);
    bad[4 + 16 + 8 + 8] = 9;
    CHECK_EQ(decode_exact(bad, len, &out), OPAL_ERR_BAD_PARAM);
    bad[4 + 16 + 8 + 8] = 4; /* claims one more SRQ than the bytes hold */
    CHECK_EQ(decode_exact(bad, len, &out), OPAL_ERR_BAD_PARAM);
    /* the encoder checks its input and its room */
    sample_blob(&in, 1, 0);
    CHECK_EQ(xoob_blob_encode(&in, buf, sizeof(buf), &len), OPAL_ERR_BAD_PARAM);
    sample_blob(&in, 0, 1);
    CHECK_EQ(xoob_blob_encode(&in, buf, sizeof(buf), &len), OPAL_ERR_BAD_PARAM);
    sample_blob(&in, 1, 9);
    CHECK_EQ(xoob_blob_encode(&in, buf, sizeof(buf), &len), OPAL_ERR_BAD_PARAM);
    sample_blob(&in, 1, 1);
    CHECK_EQ(xoob_blob_encode(&in, buf, 32, &len), OPAL_ERR_OUT_OF_RESOURCE);
    CHECK_EQ(xoob_blob_decode(NULL, 10, &out), OPAL_ERR_BAD_PARAM);
}

static const uint8_t key_a[OPENIB_AUTH_TOKEN_LEN] = "token-of-proc-a";
static const uint8_t key_b[OPENIB_AUTH_TOKEN_LEN] = "token-of-proc-b";

static void sample_msg(struct xoob_msg *in)
{
    int i;

    memset(in, 0, sizeof(*in));
    in->env.type = XOOB_REQ;
    in->env.reason = 0x1234;
    /* names as Open MPI lays them out: jobid 3, vpids 1 and 2 */
    in->env.src[0] = in->env.dst[0] = 3;
    in->env.src[4] = 1;
    in->env.dst[4] = 2;
    in->qpn = 0x00abcdef;
    in->psn = 0x00123456;
    in->mtu = 4096;
    in->rq_layout = 0xdeadbeef;
    for (i = 0; i < 16; ++i) {
        in->gid[i] = (uint8_t) (0x80 + i);
    }
    in->lid = 0x0102;
    in->node_id = 0x1122334455667788ull;
    strcpy(in->why, "why text");
    for (i = 0; i < OPENIB_AUTH_NONCE_LEN; ++i) {
        in->env.nonce[i] = (uint8_t) (0x10 + i);
        in->env.echo[i] = (uint8_t) (0x20 + i);
    }
}

static void messages(void)
{
    struct xoob_msg in, out;
    uint8_t buf[OOB_MSG_SIZE], *c;
    size_t cut;
    int i;

    memset(&in, 0, sizeof(in));
    in.env.type = XOOB_REQ;
    in.env.reason = 0x1234;
    for (i = 0; i < XOOB_ID_LEN; ++i) {
        in.env.src[i] = (uint8_t) (i + 1);
        in.env.dst[i] = (uint8_t) (0xf0 + i);
    }
    in.qpn = 0x00abcdef;
    in.psn = 0x00123456;
    in.mtu = 4096;
    in.rq_layout = 0xdeadbeef;
    for (i = 0; i < 16; ++i) {
        in.gid[i] = (uint8_t) (0x80 + i);
    }
    in.lid = 0x0102;
    in.node_id = 0x1122334455667788ull;
    strcpy(in.why, "why text");
    memcpy(in.env.nonce, "nonce-01", 8);
    memcpy(in.env.echo, "echo--02", 8);
    CHECK_EQ(xoob_msg_encode(&in, buf, sizeof(buf), key_b), OPAL_SUCCESS);
    CHECK(xoob_msg_is_xoob(buf, sizeof(buf)));
    CHECK_EQ(buf[4], 2); /* message version 2 */
    CHECK(0 == memcmp(buf + 66, "why text", 8));
    CHECK(0 == memcmp(buf + 128, "nonce-01echo--02", 16));
    CHECK(openib_auth_verify(key_b, buf, OOB_MSG_SIZE, 144)); /* MAC at 144 */
    CHECK_EQ(buf[0], 'X');
    CHECK_EQ(buf[3], 'B');
    CHECK_EQ(buf[5], XOOB_REQ);
    CHECK_EQ(buf[24], 0x00); /* qpn, big-endian */
    CHECK_EQ(buf[25], 0xab);
    CHECK_EQ(xoob_msg_decode(buf, sizeof(buf), &out), OPAL_SUCCESS);
    CHECK(0 == memcmp(&in, &out, sizeof(in)));

    /* a why longer than the field is cut, and still NUL-terminated */
    memset(in.why, 'w', sizeof(in.why));
    CHECK_EQ(xoob_msg_encode(&in, buf, sizeof(buf), key_b), OPAL_SUCCESS);
    CHECK_EQ(xoob_msg_decode(buf, sizeof(buf), &out), OPAL_SUCCESS);
    CHECK_EQ(strlen(out.why), XOOB_WHY_LEN);
    CHECK(0 == memcmp(out.env.nonce, "nonce-01", 8)); /* the why did not spill */

    /* every truncation */
    for (cut = 0; cut < OOB_MSG_SIZE; ++cut) {
        c = malloc(cut ? cut : 1);
        memcpy(c, buf, cut);
        CHECK(OPAL_SUCCESS != xoob_msg_decode(c, cut, &out));
        free(c);
    }
    /* refusals */
    CHECK_EQ(xoob_msg_decode(buf, 20, &out), OPAL_ERR_BAD_PARAM);
    buf[4] = 1; /* version 1: unauthenticated */
    CHECK_EQ(xoob_msg_decode(buf, sizeof(buf), &out), OPAL_ERR_NOT_SUPPORTED);
    buf[4] = XOOB_MSG_VERSION;
    buf[5] = 0;
    CHECK_EQ(xoob_msg_decode(buf, sizeof(buf), &out), OPAL_ERR_BAD_PARAM);
    buf[5] = XOOB_REJ + 1;
    CHECK_EQ(xoob_msg_decode(buf, sizeof(buf), &out), OPAL_ERR_BAD_PARAM);
    buf[5] = XOOB_REP;
    buf[4] = XOOB_MSG_VERSION + 1;
    CHECK_EQ(xoob_msg_decode(buf, sizeof(buf), &out), OPAL_ERR_NOT_SUPPORTED);
    buf[0] = 'O'; /* oob's magic starts "OIBO" */
    CHECK(!xoob_msg_is_xoob(buf, sizeof(buf)));
    CHECK_EQ(xoob_msg_decode(buf, sizeof(buf), &out), OPAL_ERR_BAD_PARAM);
    CHECK_EQ(xoob_msg_encode(&in, buf, 40, key_b), OPAL_ERR_BAD_PARAM);
    CHECK_EQ(xoob_msg_encode(&in, buf, sizeof(buf), NULL), OPAL_ERR_BAD_PARAM);
}

/* The MAC covers every byte and only the right key verifies. */
static void mac(void)
{
    struct xoob_msg in;
    uint8_t buf[OOB_MSG_SIZE];
    int i, bit, missed = 0;

    sample_msg(&in);
    CHECK_EQ(xoob_msg_encode(&in, buf, sizeof(buf), key_b), OPAL_SUCCESS);
    CHECK(openib_auth_verify(key_b, buf, OOB_MSG_SIZE, 144));
    CHECK(!openib_auth_verify(key_a, buf, OOB_MSG_SIZE, 144));
    for (i = 0; i < OOB_MSG_SIZE; ++i) {
        for (bit = 0; bit < 8; ++bit) {
            buf[i] ^= (uint8_t) (1u << bit);
            missed += openib_auth_verify(key_b, buf, OOB_MSG_SIZE, 144);
            buf[i] ^= (uint8_t) (1u << bit);
        }
    }
    CHECK_EQ(missed, 0);
}

static void checks(void)
{
    struct openib_auth_replay *r = calloc(1, sizeof(*r));
    struct xoob_msg in, out;
    struct oob_frame_view v;
    uint8_t buf[OOB_MSG_SIZE], other[XOOB_ID_LEN] = { 3, 0, 0, 0, 5 };
    int i, ok = 0;

    sample_msg(&in); /* REQ from vpid 1 to vpid 2 */
    CHECK_EQ(xoob_msg_encode(&in, buf, sizeof(buf), key_b), OPAL_SUCCESS);
    v = xoob_msg_view(buf, sizeof(buf), XOOB_REQ, XOOB_REQ, &out);
    CHECK_EQ(oob_check_request_frame(v, in.env.dst, 4, key_a, r), REFUSAL_BAD_MAC);
    CHECK_EQ(oob_check_request_frame(v, other, 4, key_b, r), REFUSAL_WRONG_DST);
    CHECK_EQ(oob_check_request_frame(v, in.env.dst, 1, key_b, r), REFUSAL_NOT_MEMBER);
    v = xoob_msg_view(buf, 159, XOOB_REQ, XOOB_REQ, &out);
    CHECK_EQ(oob_check_request_frame(v, in.env.dst, 4, key_b, r), REFUSAL_MALFORMED);
    for (i = 0; i < OOB_MSG_SIZE; ++i) {
        buf[i] ^= 0x08;
        v = xoob_msg_view(buf, sizeof(buf), XOOB_REQ, XOOB_REQ, &out);
        ok += REFUSAL_OK == oob_check_request_frame(v, in.env.dst, 4, key_b, r);
        buf[i] ^= 0x08;
    }
    CHECK_EQ(ok, 0);
    CHECK_EQ(r->used, 0); /* nothing refused was remembered */
    v = xoob_msg_view(buf, sizeof(buf), XOOB_REQ, XOOB_REQ, &out);
    CHECK_EQ(oob_check_request_frame(v, in.env.dst, 4, key_b, r), REFUSAL_OK);
    CHECK_EQ(out.qpn, in.qpn);
    CHECK_EQ(oob_check_request_frame(v, in.env.dst, 4, key_b, r), REFUSAL_REPLAY);
    /* a REP is no request */
    in.env.type = XOOB_REP;
    CHECK_EQ(xoob_msg_encode(&in, buf, sizeof(buf), key_b), OPAL_SUCCESS);
    v = xoob_msg_view(buf, sizeof(buf), XOOB_REQ, XOOB_REQ, &out);
    CHECK_EQ(oob_check_request_frame(v, in.env.dst, 4, key_b, r), REFUSAL_MALFORMED);

    /* an answer: vpid 2 answers vpid 1, keyed with 1's token (key_a),
     * echoing the REQ's nonce */
    sample_msg(&in);
    in.env.type = XOOB_REP;
    memcpy(in.env.src, (const uint8_t[XOOB_ID_LEN]) { 3, 0, 0, 0, 2 }, XOOB_ID_LEN);
    memcpy(in.env.dst, (const uint8_t[XOOB_ID_LEN]) { 3, 0, 0, 0, 1 }, XOOB_ID_LEN);
    memcpy(in.env.echo, "asked-01", 8);
    CHECK_EQ(xoob_msg_encode(&in, buf, sizeof(buf), key_a), OPAL_SUCCESS);
    v = xoob_msg_view(buf, sizeof(buf), XOOB_REP, XOOB_REJ, &out);
    CHECK_EQ(oob_check_answer_frame(v, in.env.dst, in.env.src, key_a, (const uint8_t *) "asked-01"),
             REFUSAL_OK);
    CHECK_EQ(oob_check_answer_frame(v, in.env.dst, in.env.src, key_a, (const uint8_t *) "asked-02"),
             REFUSAL_REPLAY);
    CHECK_EQ(oob_check_answer_frame(v, in.env.dst, in.env.src, key_b, (const uint8_t *) "asked-01"),
             REFUSAL_BAD_MAC);
    CHECK_EQ(oob_check_answer_frame(v, in.env.dst, other, key_a, (const uint8_t *) "asked-01"),
             REFUSAL_WRONG_SRC);
    CHECK_EQ(oob_check_answer_frame(v, other, in.env.src, key_a, (const uint8_t *) "asked-01"),
             REFUSAL_WRONG_DST);
    v = xoob_msg_view(buf, 100, XOOB_REP, XOOB_REJ, &out);
    CHECK_EQ(oob_check_answer_frame(v, in.env.dst, in.env.src, key_a, (const uint8_t *) "asked-01"),
             REFUSAL_MALFORMED);
    free(r);
}

static void node_ids(void)
{
    CHECK(xoob_node_id("node17") == xoob_node_id("node17"));
    CHECK(xoob_node_id("node17") != xoob_node_id("node18"));
    CHECK(xoob_node_id("a") != xoob_node_id(""));
}

int main(void)
{
    blob_round_trip();
    blob_rejects();
    messages();
    mac();
    checks();
    node_ids();
    return test_report("test_xoob_wire");
}

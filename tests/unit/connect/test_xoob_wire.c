/*
 * test_xoob_wire.c - xoob's modex blob and handshake messages: they
 * round-trip exactly (big-endian on the wire whatever the host), the blob's
 * SRQ numbers survive for every count 1..8, and the decoders refuse
 * truncated, padded, foreign-version and malformed data, reading only the
 * bytes they were given.
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <stdlib.h>
#include <string.h>

#include "connect/cpc_oob_channel.h"
#include "connect/cpc_xoob_wire.h"
#include "tests/unit/connect/cpc_test.h"

static void sample_blob(struct xoob_blob *b, int naddr, int nsrq)
{
    int i;

    memset(b, 0, sizeof(*b));
    b->naddr = (uint8_t) naddr;
    b->port = 0xbeef;
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
            CHECK_EQ(len, 4 + 4 * naddr + 8 + 1 + 4 * nsrq);
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
    CHECK_EQ(buf[8], 0x01);
    CHECK_EQ(buf[15], 0x08);
    CHECK_EQ(buf[16], 2);
    CHECK_EQ(buf[17], 0x00);
    CHECK_EQ(buf[18], 0xab);
    CHECK_EQ(buf[20], 0xef);
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
    /* version 1 (same layout, from before side-channel keepalives): refused */
    bad[0] = 1;
    CHECK_EQ(decode_exact(bad, len, &out), OPAL_ERR_NOT_SUPPORTED);
    /* cut after 2 addresses (an oob blob's shape, no node/SRQ part): not a xoob blob */
    CHECK_EQ(decode_exact(buf, 4 + 4 * 2, &out), OPAL_ERR_BAD_PARAM);
    /* counts out of range */
    memcpy(bad, buf, len);
    bad[1] = 0;
    CHECK_EQ(decode_exact(bad, len, &out), OPAL_ERR_BAD_PARAM);
    memcpy(bad, buf, len);
    bad[1] = XOOB_MAX_ADDRS + 1;
    CHECK_EQ(decode_exact(bad, len, &out), OPAL_ERR_BAD_PARAM);
    memcpy(bad, buf, len);
    bad[4 + 8 + 8] = 0; /* nsrq */
    CHECK_EQ(decode_exact(bad, len, &out), OPAL_ERR_BAD_PARAM);
    bad[4 + 8 + 8] = 9;
    CHECK_EQ(decode_exact(bad, len, &out), OPAL_ERR_BAD_PARAM);
    bad[4 + 8 + 8] = 4; /* claims one more SRQ than the bytes hold */
    CHECK_EQ(decode_exact(bad, len, &out), OPAL_ERR_BAD_PARAM);
    /* the encoder checks its input and its room */
    sample_blob(&in, 1, 0);
    CHECK_EQ(xoob_blob_encode(&in, buf, sizeof(buf), &len), OPAL_ERR_BAD_PARAM);
    sample_blob(&in, 0, 1);
    CHECK_EQ(xoob_blob_encode(&in, buf, sizeof(buf), &len), OPAL_ERR_BAD_PARAM);
    sample_blob(&in, 1, 9);
    CHECK_EQ(xoob_blob_encode(&in, buf, sizeof(buf), &len), OPAL_ERR_BAD_PARAM);
    sample_blob(&in, 1, 1);
    CHECK_EQ(xoob_blob_encode(&in, buf, 16, &len), OPAL_ERR_OUT_OF_RESOURCE);
    CHECK_EQ(xoob_blob_decode(NULL, 10, &out), OPAL_ERR_BAD_PARAM);
}

static void messages(void)
{
    struct xoob_msg in, out;
    uint8_t buf[OOB_MSG_SIZE];
    int i;

    memset(&in, 0, sizeof(in));
    in.type = XOOB_REQ;
    in.reason = 0x1234;
    for (i = 0; i < XOOB_ID_LEN; ++i) {
        in.src[i] = (uint8_t) (i + 1);
        in.dst[i] = (uint8_t) (0xf0 + i);
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
    CHECK_EQ(xoob_msg_encode(&in, buf, sizeof(buf)), OPAL_SUCCESS);
    CHECK(xoob_msg_is_xoob(buf, sizeof(buf)));
    CHECK_EQ(buf[0], 'X');
    CHECK_EQ(buf[3], 'B');
    CHECK_EQ(buf[5], XOOB_REQ);
    CHECK_EQ(buf[24], 0x00); /* qpn, big-endian */
    CHECK_EQ(buf[25], 0xab);
    CHECK_EQ(xoob_msg_decode(buf, sizeof(buf), &out), OPAL_SUCCESS);
    CHECK(0 == memcmp(&in, &out, sizeof(in)));

    /* a why longer than the field is cut, and still NUL-terminated */
    memset(in.why, 'w', sizeof(in.why));
    CHECK_EQ(xoob_msg_encode(&in, buf, sizeof(buf)), OPAL_SUCCESS);
    CHECK_EQ(xoob_msg_decode(buf, sizeof(buf), &out), OPAL_SUCCESS);
    CHECK_EQ(strlen(out.why), sizeof(out.why) - 1);

    /* refusals */
    CHECK_EQ(xoob_msg_decode(buf, 20, &out), OPAL_ERR_BAD_PARAM);
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
    CHECK_EQ(xoob_msg_encode(&in, buf, 40), OPAL_ERR_BAD_PARAM);
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
    node_ids();
    return test_report("test_xoob_wire");
}

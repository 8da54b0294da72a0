/*
 * test_oob_wire.c - what oob's side channel carries: the modex blob, the
 * handshake messages and the channel's keepalive frames round-trip exactly
 * (big-endian whatever the host, the message layout unchanged from version
 * 1), and the decoders refuse truncated, foreign, other-version and
 * malformed data, reading only the bytes they were given. A keepalive is
 * told from a CPC message by its magic alone, so oob's and xoob's messages
 * are passed on, never taken for keepalives.
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <stdlib.h>
#include <string.h>

#include "connect/cpc_oob_wire.h"
#include "connect/cpc_xoob_wire.h"
#include "tests/unit/connect/cpc_test.h"

static const uint8_t id_a[OOB_ID_LEN] = { 1, 0, 0, 0, 7, 0, 0, 0 };
static const uint8_t id_b[OOB_ID_LEN] = { 1, 0, 0, 0, 9, 0, 0, 0 };

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

static void blob(void)
{
    uint32_t addrs[OOB_MAX_ADDRS], out[OOB_MAX_ADDRS];
    uint8_t buf[255], *c;
    uint16_t port = 0;
    size_t len, cut;
    int naddr, n = 0, version = 0, i;

    for (i = 0; i < OOB_MAX_ADDRS; ++i) {
        addrs[i] = 0x0a000001u + (uint32_t) i;
    }
    for (naddr = 1; naddr <= OOB_MAX_ADDRS; ++naddr) {
        CHECK_EQ(oob_blob_encode(buf, sizeof(buf), addrs, naddr, 0x1234, &len), OPAL_SUCCESS);
        CHECK_EQ(len, 4 + 4 * naddr);
        CHECK_EQ(buf[0], OOB_BLOB_VERSION);
        c = exact(buf, len);
        CHECK_EQ(oob_blob_decode(c, len, out, &n, &port, &version), OPAL_SUCCESS);
        free(c);
        CHECK_EQ(n, naddr);
        CHECK_EQ(port, 0x1234);
        CHECK_EQ(version, OOB_BLOB_VERSION);
        CHECK(0 == memcmp(out, addrs, 4 * (size_t) naddr));
    }
    /* encoder limits */
    CHECK_EQ(oob_blob_encode(buf, sizeof(buf), addrs, 0, 1, &len), OPAL_ERR_BAD_PARAM);
    CHECK_EQ(oob_blob_encode(buf, sizeof(buf), addrs, OOB_MAX_ADDRS + 1, 1, &len),
             OPAL_ERR_BAD_PARAM);
    CHECK_EQ(oob_blob_encode(buf, 4 + 4 * 2 - 1, addrs, 2, 1, &len), OPAL_ERR_OUT_OF_RESOURCE);

    /* every truncation, and a trailing byte */
    CHECK_EQ(oob_blob_encode(buf, sizeof(buf), addrs, 2, 0x1234, &len), OPAL_SUCCESS);
    for (cut = 0; cut < len; ++cut) {
        c = exact(buf, cut);
        CHECK_EQ(oob_blob_decode(c, cut, out, &n, &port, NULL), OPAL_ERR_BAD_PARAM);
        free(c);
    }
    buf[len] = 0;
    CHECK_EQ(oob_blob_decode(buf, len + 1, out, &n, &port, NULL), OPAL_ERR_BAD_PARAM);
    /* a version-1 peer (no keepalives): refused, and the version is said */
    buf[0] = 1;
    CHECK_EQ(oob_blob_decode(buf, len, out, &n, &port, &version), OPAL_ERR_NOT_SUPPORTED);
    CHECK_EQ(version, 1);
    buf[0] = OOB_BLOB_VERSION + 1;
    CHECK_EQ(oob_blob_decode(buf, len, out, &n, &port, NULL), OPAL_ERR_NOT_SUPPORTED);
    buf[0] = OOB_BLOB_VERSION;
    /* address counts out of range */
    buf[1] = 0;
    CHECK_EQ(oob_blob_decode(buf, 4, out, &n, &port, NULL), OPAL_ERR_BAD_PARAM);
    buf[1] = OOB_MAX_ADDRS + 1;
    CHECK_EQ(oob_blob_decode(buf, 4 + 4 * (OOB_MAX_ADDRS + 1), out, &n, &port, NULL),
             OPAL_ERR_BAD_PARAM);
    CHECK_EQ(oob_blob_decode(NULL, 8, out, &n, &port, NULL), OPAL_ERR_BAD_PARAM);
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
        CHECK_EQ(oob_msg_encode(buf, sizeof(buf), OOB_REQ, 0, id_a, id_b, &q), OPAL_SUCCESS);
        c = exact(buf, sizeof(buf));
        CHECK_EQ(oob_msg_decode(c, sizeof(buf), &m), OPAL_SUCCESS);
        free(c);
        CHECK_EQ(m.type, OOB_REQ);
        CHECK(0 == memcmp(m.src, id_a, OOB_ID_LEN));
        CHECK(0 == memcmp(m.dst, id_b, OOB_ID_LEN));
        CHECK_EQ(m.q.mtu, 4096);
        CHECK(0 == memcmp(m.q.gid, q.gid, 16));
        CHECK_EQ(m.q.lid, 0xbeef);
        CHECK_EQ(m.q.num_qps, n);
        CHECK(0 == memcmp(m.q.qpn, q.qpn, sizeof(q.qpn)));
        CHECK(0 == memcmp(m.q.psn, q.psn, sizeof(q.psn)));
        CHECK_EQ(m.q.rq_layout, q.rq_layout);
        CHECK_EQ(m.q.mailbox_rkey, q.mailbox_rkey);
        CHECK(m.q.mailbox_addr == q.mailbox_addr);
    }
    /* the version-1 layout, byte for byte: magic "OIBO", version, type,
     * reason, ids, then the QP data big-endian */
    CHECK_EQ(oob_msg_encode(buf, sizeof(buf), OOB_REJ, OOB_REJ_NO_ENDPOINT, id_a, id_b, NULL),
             OPAL_SUCCESS);
    CHECK(0 == memcmp(buf, "OIBO\x01\x04\x00\x02", 8));
    CHECK(0 == memcmp(buf + 8, id_a, OOB_ID_LEN));
    sample_qp(&q, 3);
    CHECK_EQ(oob_msg_encode(buf, sizeof(buf), OOB_REP, 0, id_a, id_b, &q), OPAL_SUCCESS);
    CHECK(0 == memcmp(buf + 24, "\x00\x00\x10\x00", 4));   /* mtu */
    CHECK(0 == memcmp(buf + 44, "\xbe\xef\x03\x00", 4));   /* lid, num_qps */
    CHECK(0 == memcmp(buf + 48, "\x00\xab\xcd\x00", 4));   /* qpn[0] */
    CHECK(0 == memcmp(buf + 120, "\x7f\x11\x22\x33\x44\x55\x66\x7f", 8)); /* mailbox */

    /* every type; a REJ's reason */
    for (t = OOB_REQ; t <= OOB_REJ; ++t) {
        CHECK_EQ(oob_msg_encode(buf, sizeof(buf), (enum oob_type) t, 0x0102, id_a, id_b, NULL),
                 OPAL_SUCCESS);
        CHECK_EQ(oob_msg_decode(buf, sizeof(buf), &m), OPAL_SUCCESS);
        CHECK_EQ(m.type, t);
        CHECK_EQ(m.reason, 0x0102);
        CHECK_EQ(m.q.num_qps, 0);
    }
    /* truncations: everything short of the used 128 bytes */
    sample_qp(&q, 3);
    CHECK_EQ(oob_msg_encode(buf, sizeof(buf), OOB_REQ, 0, id_a, id_b, &q), OPAL_SUCCESS);
    for (cut = 0; cut < 128; ++cut) {
        c = exact(buf, cut);
        CHECK_EQ(oob_msg_decode(c, cut, &m), OPAL_ERR_BAD_PARAM);
        free(c);
    }
    c = exact(buf, 128);
    CHECK_EQ(oob_msg_decode(c, 128, &m), OPAL_SUCCESS);
    free(c);
    CHECK_EQ(oob_msg_encode(buf, 127, OOB_REQ, 0, id_a, id_b, &q), OPAL_ERR_BAD_PARAM);
    /* another version, a foreign magic, a bad type, too many QPs */
    CHECK_EQ(oob_msg_encode(buf, sizeof(buf), OOB_REQ, 0, id_a, id_b, &q), OPAL_SUCCESS);
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
    CHECK_EQ(oob_msg_encode(buf, sizeof(buf), OOB_REQ, 0, id_a, id_b, &q), OPAL_ERR_BAD_PARAM);
}

static void keepalives(void)
{
    struct oob_ka k = { .type = OOB_KA_PONG, .pending = 0x0203 }, out;
    struct xoob_msg xm = { .type = XOOB_REQ };
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
    CHECK_EQ(oob_msg_encode(buf, sizeof(buf), OOB_REQ, 0, id_a, id_b, NULL), OPAL_SUCCESS);
    CHECK_EQ(oob_ka_decode(buf, sizeof(buf), &out), OPAL_ERR_NOT_FOUND);
    CHECK_EQ(xoob_msg_encode(&xm, buf, sizeof(buf)), OPAL_SUCCESS);
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
    blob();
    messages();
    keepalives();
    return test_report("test_oob_wire");
}

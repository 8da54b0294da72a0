/*
 * test_fuzz_wire.c - every decoder of what connection setup receives from
 * the network or the modex, fed random bytes and mutated valid encodings,
 * under AddressSanitizer and UBSan (this test compiles the decoders' sources
 * itself, so they are instrumented; see connect/Makefile.inc). Checked:
 *  - no decoder crashes, reads past what it was given (each input is an
 *    exact-size heap copy) or hits undefined behaviour;
 *  - each returns only the codes its header documents;
 *  - what it accepts is sane (counts in range, strings terminated);
 *  - what it accepts re-encodes to the same bytes: exactly for the blobs,
 *    the modex and rdma_cm's private data (their formats are canonical);
 *    for the fixed-size side-channel frames, on every byte the encoder ever
 *    writes (padding and reserved bytes are not read, so not compared), and
 *    the re-encoding is a fixed point.
 *  - the HMAC check never reads outside the frame, whatever offset it is
 *    given, and refuses every single-bit change.
 * The seed is printed; OPENIB_FUZZ_SEED=N and OPENIB_FUZZ_ITERS=N replay
 * or lengthen a run. A failure prints the input in hex.
 *
 * The BTL's receive header has no pure decoder to fuzz (it is read in
 * place in btl_openib_progress.c).
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connect/cpc_auth.h"
#include "connect/openib_connect.h"
#include "wire/oob_wire.h"
#include "wire/rdma_cm_wire.h"
#include "wire/xoob_wire.h"
#include "tests/unit/connect/cpc_test.h"

#define FZ_RANDOM_MAX 300        /* random inputs: 0..300 bytes */
#define FZ_BUF 8192              /* room for any valid encoding made here */
#define FZ_MAX_REPORTS 20        /* failures printed in full */

/* ---- a small, seedable PRNG (xorshift64*): reproducible runs ---- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

static unsigned rnd_below(unsigned n)
{
    return n ? (unsigned) (rnd() % n) : 0;
}

static void rnd_fill(void *p, size_t n)
{
    uint8_t *b = p;

    for (size_t i = 0; i < n; ++i) {
        b[i] = (uint8_t) rnd();
    }
}

/* A value that is often at an edge: what counts and lengths get set to. */
static uint8_t rnd_extreme_byte(void)
{
    static const uint8_t edges[] = { 0, 1, 2, 7, 8, 9, 15, 16, 31, 32, 0x7f, 0x80, 0xfe, 0xff };

    return rnd_below(3) ? edges[rnd_below(sizeof(edges))] : (uint8_t) rnd();
}

/* ---- failure reports ---- */

static int reports;

static void fz_fail(const char *target, const uint8_t *in, size_t len, const char *why)
{
    ++test_failures;
    if (++reports > FZ_MAX_REPORTS) {
        return;
    }
    fprintf(stderr, "FUZZ FAIL [%s] %s; input (%zu bytes):", target, why, len);
    for (size_t i = 0; i < len; ++i) {
        fprintf(stderr, "%s%02x", i % 32 ? "" : "\n  ", in[i]);
    }
    fprintf(stderr, "\n");
}

#define FZ_CHECK(cond, target, in, len)                                                 \
    do {                                                                                \
        ++test_checks;                                                                  \
        if (!(cond)) {                                                                  \
            fz_fail(target, in, len, "line " OPAL_STRINGIFY_FZ(__LINE__) ": " #cond);   \
        }                                                                               \
    } while (0)
#define OPAL_STRINGIFY_FZ_(x) #x
#define OPAL_STRINGIFY_FZ(x) OPAL_STRINGIFY_FZ_(x)

static bool code_in(int rc, const int *ok, int n)
{
    for (int i = 0; i < n; ++i) {
        if (rc == ok[i]) {
            return true;
        }
    }
    return false;
}
#define CODES(...) (const int[]){ __VA_ARGS__ }, (int) (sizeof((int[]){ __VA_ARGS__ }) / sizeof(int))

static const uint8_t *exact_copy(const uint8_t *buf, size_t len)
{
    uint8_t *c = malloc(len ? len : 1);

    if (len) {
        memcpy(c, buf, len);
    }
    return c;
}

/* ===========================================================================
 * The layout-dependent part. Everything below this section sees frames as
 * bytes and calls only these functions: when a format changes (a nonce and
 * a MAC in the side-channel frames, a token in the blobs), only this
 * section changes. Each target makes a random valid encoding, and decodes
 * one (returning the decoder's code), re-encoding what it accepted.
 * ======================================================================== */

struct fz_target {
    const char *name;
    /* a random valid encoding into buf; returns its length */
    size_t (*valid)(uint8_t *buf);
    /* decode in[0..len); on success re-encode into re (*re_len bytes);
     * checks what only the decoder's own output can tell (counts, text) */
    int (*decode)(const uint8_t *in, size_t len, uint8_t *re, size_t *re_len);
    const int *codes; /* the documented return codes */
    int ncodes;
    /* true: accepted input == re-encoding, byte for byte. false: fixed-size
     * frame, compared on the bytes the encoder ever writes. */
    bool canonical;
    /* after mutation: fix what a mutation would always break (a CRC), so
     * the fuzzing reaches past it; NULL if nothing */
    void (*fixup)(uint8_t *buf, size_t len);
    /* zero the bytes of an accepted input that are not part of the message
     * (text after its NUL) before comparing; NULL if none */
    void (*normalize)(uint8_t *buf, size_t len);
};

static const uint8_t *fz_cur_in; /* the input under test, for reports */
static size_t fz_cur_len;
static const char *fz_cur_name;
#define SANE(cond) FZ_CHECK(cond, fz_cur_name, fz_cur_in, fz_cur_len)

/* -- oob modex blob -- */
static size_t oob_blob_valid(uint8_t *buf)
{
    struct oob_blob b;
    size_t len = 0;

    rnd_fill(&b, sizeof(b));
    b.naddr = (int) rnd_below(OOB_MAX_ADDRS + 1);
    b.ud_qpn = 0 == b.naddr || rnd_below(2) ? 1 + (uint32_t) rnd_below(0xffffff) : 0;
    CHECK_EQ(oob_blob_encode(buf, FZ_BUF, &b, &len), OPAL_SUCCESS);
    return len;
}

static int oob_blob_dec(const uint8_t *in, size_t len, uint8_t *re, size_t *re_len)
{
    struct oob_blob b;
    int version = -1;
    int rc = oob_blob_decode(in, len, &b, &version);

    if (OPAL_SUCCESS == rc) {
        SANE(b.naddr >= 0 && b.naddr <= OOB_MAX_ADDRS && (b.naddr > 0 || b.ud_qpn != 0));
        SANE(version == OOB_BLOB_VERSION);
        SANE(OPAL_SUCCESS == oob_blob_encode(re, FZ_BUF, &b, re_len));
    }
    return rc;
}

/* -- UD side-channel frame -- */
static size_t oob_ud_valid(uint8_t *buf)
{
    struct oob_ud_hdr h = { .kind = (uint8_t) (1 + rnd_below(5)), .src_sid = (uint32_t) rnd(),
                            .dst_sid = (uint32_t) rnd(), .seq = (uint32_t) rnd() };
    uint8_t payload[OOB_MSG_SIZE];
    bool carries = OOB_UD_OPEN == h.kind || OOB_UD_DATA == h.kind;
    size_t len = 0;

    rnd_fill(payload, sizeof(payload));
    CHECK_EQ(oob_ud_encode(buf, FZ_BUF, &h, carries ? payload : NULL, &len), OPAL_SUCCESS);
    return len;
}

static int oob_ud_dec(const uint8_t *in, size_t len, uint8_t *re, size_t *re_len)
{
    struct oob_ud_hdr h;
    const uint8_t *payload = NULL;
    int rc = oob_ud_decode(in, len, &h, &payload);

    if (OPAL_SUCCESS == rc) {
        SANE(h.kind >= OOB_UD_OPEN && h.kind <= OOB_UD_RESET);
        SANE((NULL != payload) == (OOB_UD_OPEN == h.kind || OOB_UD_DATA == h.kind));
        SANE(NULL == payload || (payload >= in && payload + OOB_MSG_SIZE <= in + len));
        SANE(OPAL_SUCCESS == oob_ud_encode(re, FZ_BUF, &h, payload, re_len));
    }
    return rc;
}

/* -- xoob modex blob -- */
static size_t xoob_blob_valid(uint8_t *buf)
{
    struct xoob_blob b;
    size_t len = 0;

    rnd_fill(&b, sizeof(b));
    b.naddr = (uint8_t) (1 + rnd_below(XOOB_MAX_ADDRS));
    b.nsrq = (uint8_t) (1 + rnd_below(XOOB_MAX_SRQS));
    CHECK_EQ(xoob_blob_encode(&b, buf, FZ_BUF, &len), OPAL_SUCCESS);
    return len;
}

static int xoob_blob_dec(const uint8_t *in, size_t len, uint8_t *re, size_t *re_len)
{
    struct xoob_blob b;
    int rc = xoob_blob_decode(in, len, &b);

    if (OPAL_SUCCESS == rc) {
        SANE(b.naddr >= 1 && b.naddr <= XOOB_MAX_ADDRS);
        SANE(b.nsrq >= 1 && b.nsrq <= XOOB_MAX_SRQS);
        SANE(OPAL_SUCCESS == xoob_blob_encode(&b, re, FZ_BUF, re_len));
    }
    return rc;
}

/* -- the openib modex (every port's identity and CPC blobs) -- */
#define FZ_MODEX_PORTS 3

static size_t modex_valid(uint8_t *buf)
{
    struct openib_modex_port ports[FZ_MODEX_PORTS];
    int n = (int) rnd_below(FZ_MODEX_PORTS + 1), p, i;
    size_t len = 0;

    for (p = 0; p < n; ++p) {
        struct openib_modex_port *mp = &ports[p];
        size_t name_len = rnd_below(sizeof(mp->dev_name));

        rnd_fill(mp, sizeof(*mp));
        for (i = 0; i < (int) name_len; ++i) {
            mp->dev_name[i] = (char) ('a' + rnd_below(26));
        }
        mp->dev_name[name_len] = '\0';
        mp->num_cpcs = (uint8_t) rnd_below(OPENIB_MODEX_MAX_CPCS + 1);
        for (i = 0; i < mp->num_cpcs; ++i) {
            mp->cpcs[i].id = (uint8_t) (i + 1 + rnd_below(3) * OPENIB_MODEX_MAX_CPCS);
            mp->cpcs[i].priority = (uint8_t) rnd_below(101);
            mp->cpcs[i].blob_len = (uint8_t) rnd_below(rnd_below(8) ? 40 : 256);
        }
    }
    CHECK_EQ(openib_connect_modex_encode(ports, n, buf, FZ_BUF, &len), OPAL_SUCCESS);
    return len;
}

static int modex_dec(const uint8_t *in, size_t len, uint8_t *re, size_t *re_len)
{
    static struct openib_modex_port ports[FZ_MODEX_PORTS + 1];
    int max = (int) rnd_below(FZ_MODEX_PORTS + 2), n = -1, p, i;
    int rc = openib_connect_modex_decode(in, len, ports, max, &n);

    if (OPAL_ERR_OUT_OF_RESOURCE == rc) {
        SANE(n > max); /* says how much room it needs */
        rc = openib_connect_modex_decode(in, len, ports, FZ_MODEX_PORTS + 1, &n);
        SANE(OPAL_SUCCESS == rc || (OPAL_ERR_OUT_OF_RESOURCE == rc && n > FZ_MODEX_PORTS + 1));
        if (OPAL_SUCCESS != rc) {
            return OPAL_ERR_OUT_OF_RESOURCE;
        }
    }
    if (OPAL_SUCCESS == rc) {
        SANE(n >= 0 && n <= FZ_MODEX_PORTS + 1);
        for (p = 0; p < n; ++p) {
            SANE(memchr(ports[p].dev_name, '\0', sizeof(ports[p].dev_name)) != NULL);
            SANE(ports[p].num_cpcs <= OPENIB_MODEX_MAX_CPCS);
            for (i = 0; i < ports[p].num_cpcs; ++i) {
                SANE(0 != ports[p].cpcs[i].id && ports[p].cpcs[i].priority <= 100);
            }
        }
        SANE(OPAL_SUCCESS == openib_connect_modex_encode(ports, n, re, FZ_BUF, re_len));
    }
    return rc;
}

/* IEEE CRC-32, as wire/modex_wire.c's header says: a mutated modex gets its
 * total length and CRC made right again, so the fuzzing reaches the port
 * records instead of stopping at the CRC. Header: magic 2, version, nports,
 * u32 total_len at 4, u32 crc at 8 (over [0,8) and [12,len)). */
static uint32_t crc32_ieee(uint32_t crc, const uint8_t *p, size_t n)
{
    crc = ~crc;
    while (n--) {
        crc ^= *p++;
        for (int k = 0; k < 8; ++k) {
            crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1)));
        }
    }
    return ~crc;
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t) (v >> 24);
    p[1] = (uint8_t) (v >> 16);
    p[2] = (uint8_t) (v >> 8);
    p[3] = (uint8_t) v;
}

static void modex_fixup(uint8_t *buf, size_t len)
{
    if (len < 12 || rnd_below(4) == 0) { /* a quarter stay broken */
        return;
    }
    put_be32(buf + 4, (uint32_t) len);
    put_be32(buf + 8, crc32_ieee(crc32_ieee(0, buf, 8), buf + 12, len - 12));
}

/* -- oob handshake message (one side-channel frame) -- */
static void rnd_qp(struct openib_cpc_qp_info *q)
{
    openib_cpc_qp_info_init(q);
    q->mtu = (uint32_t) rnd();
    rnd_fill(q->gid, sizeof(q->gid));
    q->lid = (uint16_t) rnd();
    q->num_qps = (uint8_t) rnd_below(OPENIB_CPC_MAX_QPS + 1);
    for (int i = 0; i < OPENIB_CPC_MAX_QPS; ++i) {
        q->qpn[i] = (uint32_t) rnd();
        q->psn[i] = (uint32_t) rnd();
    }
    q->rq_layout = (uint32_t) rnd();
    q->mailbox_rkey = (uint32_t) rnd();
    q->mailbox_addr = rnd();
}

/* Frames are sealed with this key; the MAC itself is checked by
 * test_auth and the wire tests, here only the layout decoders run. */
static const uint8_t fz_key[OPENIB_AUTH_TOKEN_LEN] = { 0x5a, 1, 2, 3, 4, 5, 6, 7,
                                                       8, 9, 10, 11, 12, 13, 14, 15 };

/* A mutated frame keeps its old MAC, which the re-encoding replaces, so the
 * MAC bytes are not compared. Where they lie is learned, not assumed: the
 * bytes that change when the same message is sealed with another key. */
static const uint8_t fz_other_key[OPENIB_AUTH_TOKEN_LEN] = { 0xa5, 9, 9, 9 };

static void learn_mac_bytes(uint8_t *mask, const uint8_t *a, const uint8_t *b)
{
    for (size_t k = 0; k < OOB_MSG_SIZE; ++k) {
        mask[k] |= a[k] != b[k];
    }
}

static void keep_input_mac(const uint8_t *mask, const uint8_t *in, uint8_t *re)
{
    for (size_t k = 0; k < OOB_MSG_SIZE; ++k) {
        if (mask[k]) {
            re[k] = in[k];
        }
    }
}

static uint8_t oob_mac_mask[OOB_MSG_SIZE], xoob_mac_mask[OOB_MSG_SIZE];

static size_t oob_msg_valid(uint8_t *buf)
{
    uint8_t other[OOB_MSG_SIZE];
    struct oob_msg m;

    memset(&m, 0, sizeof(m));
    m.env.type = (enum oob_type) (1 + rnd_below(4));
    m.env.reason = (uint16_t) rnd();
    rnd_fill(m.env.src, sizeof(m.env.src));
    rnd_fill(m.env.dst, sizeof(m.env.dst));
    rnd_fill(m.env.nonce, sizeof(m.env.nonce));
    rnd_fill(m.env.echo, sizeof(m.env.echo));
    rnd_qp(&m.q);
    CHECK_EQ(oob_msg_encode(buf, OOB_MSG_SIZE, &m, fz_key), OPAL_SUCCESS);
    CHECK_EQ(oob_msg_encode(other, OOB_MSG_SIZE, &m, fz_other_key), OPAL_SUCCESS);
    learn_mac_bytes(oob_mac_mask, buf, other);
    return OOB_MSG_SIZE;
}

static int oob_msg_dec(const uint8_t *in, size_t len, uint8_t *re, size_t *re_len)
{
    struct oob_msg m;
    int rc = oob_msg_decode(in, len, &m);

    if (OPAL_SUCCESS == rc) {
        SANE(m.env.type >= OOB_REQ && m.env.type <= OOB_REJ);
        SANE(m.q.num_qps <= OPENIB_CPC_MAX_QPS);
        SANE(OPAL_SUCCESS == oob_msg_encode(re, OOB_MSG_SIZE, &m, fz_key));
        keep_input_mac(oob_mac_mask, in, re);
        *re_len = OOB_MSG_SIZE;
    }
    return rc;
}

/* Only REQ and REP carry QP data: in an RTU or REJ those bytes (after the
 * header and both names, up to the nonces at 128) are not read. */
static void oob_msg_normalize(uint8_t *in, size_t len)
{
    const size_t q_off = 8 + 2 * OOB_ID_LEN, q_end = 128;

    if (len >= q_end && in[5] != OOB_REQ && in[5] != OOB_REP) {
        memset(in + q_off, 0, q_end - q_off);
    }
}

/* -- the channel's keepalive frame -- */
static size_t oob_ka_valid(uint8_t *buf)
{
    struct oob_ka k = { .type = (uint8_t) (1 + rnd_below(2)), .pending = (uint16_t) rnd() };

    CHECK_EQ(oob_ka_encode(buf, OOB_MSG_SIZE, &k), OPAL_SUCCESS);
    return OOB_MSG_SIZE;
}

static int oob_ka_dec(const uint8_t *in, size_t len, uint8_t *re, size_t *re_len)
{
    struct oob_ka k;
    int rc = oob_ka_decode(in, len, &k);

    if (OPAL_SUCCESS == rc) {
        SANE(k.type == OOB_KA_PING || k.type == OOB_KA_PONG);
        SANE(OPAL_SUCCESS == oob_ka_encode(re, OOB_MSG_SIZE, &k));
        *re_len = OOB_MSG_SIZE;
    }
    return rc;
}

/* -- xoob handshake message (one side-channel frame) -- */
static size_t xoob_msg_valid(uint8_t *buf)
{
    uint8_t other[OOB_MSG_SIZE];
    struct xoob_msg m;
    size_t why = rnd_below(XOOB_WHY_LEN);

    rnd_fill(&m, sizeof(m));
    m.env.type = (uint8_t) (1 + rnd_below(3));
    for (size_t i = 0; i < why; ++i) {
        m.why[i] = (char) (' ' + rnd_below(95));
    }
    m.why[why] = '\0';
    CHECK_EQ(xoob_msg_encode(&m, buf, OOB_MSG_SIZE, fz_key), OPAL_SUCCESS);
    CHECK_EQ(xoob_msg_encode(&m, other, OOB_MSG_SIZE, fz_other_key), OPAL_SUCCESS);
    learn_mac_bytes(xoob_mac_mask, buf, other);
    return OOB_MSG_SIZE;
}

static int xoob_msg_dec(const uint8_t *in, size_t len, uint8_t *re, size_t *re_len)
{
    struct xoob_msg m;
    int rc = xoob_msg_decode(in, len, &m);

    if (OPAL_SUCCESS == rc) {
        SANE(m.env.type >= XOOB_REQ && m.env.type <= XOOB_REJ);
        SANE(memchr(m.why, '\0', sizeof(m.why)) != NULL);
        SANE(xoob_msg_is_xoob(in, len));
        SANE(OPAL_SUCCESS == xoob_msg_encode(&m, re, OOB_MSG_SIZE, fz_key));
        keep_input_mac(xoob_mac_mask, in, re);
        *re_len = OOB_MSG_SIZE;
    }
    return rc;
}

/* The why text ends at its first NUL: what follows is not part of the
 * message, so it is not compared. */
static void xoob_msg_normalize(uint8_t *in, size_t len)
{
    const size_t why = 8 + 2 * XOOB_ID_LEN + 16 + 16 + 2 + 8;
    size_t end = why;

    while (end < len && end < why + XOOB_WHY_LEN && in[end]) {
        ++end;
    }
    if (end < why + XOOB_WHY_LEN && end < len) {
        memset(in + end, 0, why + XOOB_WHY_LEN - end);
    }
}

/* -- rdma_cm private data: header, then the QP body (REQ/REP) or BUSY -- */
static size_t rcm_valid(uint8_t *buf)
{
    struct openib_cpc_qp_info q;
    uint8_t src[RCM_ID_LEN];
    size_t n;

    rnd_fill(src, sizeof(src));
    switch (rnd_below(3)) {
    case 0:
        return rcm_busy_encode(buf, src);
    case 1:
        n = rcm_hdr_encode(buf, RCM_REJ, src, (uint8_t) (1 + rnd_below(5)));
        return n;
    default:
        rnd_qp(&q);
        q.num_qps = (uint8_t) (1 + rnd_below(OPENIB_CPC_MAX_QPS));
        for (int i = 0; i < OPENIB_CPC_MAX_QPS; ++i) {
            q.qpn[i] &= 0xffffff;
            q.psn[i] &= 0xffffff;
        }
        n = rcm_hdr_encode(buf, rnd_below(2) ? RCM_REQ : RCM_REP, src, 0);
        buf[10] = RCM_REQ == (buf[1] & 0x0f) ? 1 : 0; /* chunk 0 of 1 */
        return n + rcm_body_encode(&q, buf + n);
    }
}

static int rcm_dec(const uint8_t *in, size_t len, uint8_t *re, size_t *re_len)
{
    struct rcm_msg m;
    struct openib_cpc_qp_info q;
    uint32_t qpn0 = rnd_below(8) ? (uint32_t) rnd() & 0xffffff : (uint32_t) rnd();
    int rc = rcm_msg_decode(in, len, &m), rc2;

    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    SANE(m.type >= RCM_REQ && m.type <= RCM_QREP);
    SANE(m.rest == in + RCM_HDR_LEN && m.rest_len == len - RCM_HDR_LEN);
    *re_len = rcm_hdr_encode(re, m.type, m.src, m.arg);
    if (RCM_REJ == m.type) {
        rc2 = rcm_busy_decode(&m);
        SANE(code_in(rc2, CODES(OPAL_SUCCESS, OPAL_ERR_BAD_PARAM, OPAL_ERR_NOT_SUPPORTED)));
        memcpy(re + *re_len, m.rest, m.rest_len); /* opaque after the header */
        *re_len += m.rest_len;
        return rc;
    }
    openib_cpc_qp_info_init(&q);
    rc2 = rcm_body_decode(m.rest, m.rest_len, qpn0, &q);
    SANE(code_in(rc2, CODES(OPAL_SUCCESS, OPAL_ERR_BAD_PARAM)));
    if (OPAL_SUCCESS == rc2) {
        size_t body;

        SANE(q.num_qps >= 1 && q.num_qps <= OPENIB_CPC_MAX_QPS && q.qpn[0] == qpn0);
        body = rcm_body_encode(&q, re + *re_len);
        SANE(body == RCM_BODY_LEN(q.num_qps) && body <= m.rest_len);
        *re_len += body;
        /* what follows the body is not read: carried over as is */
        memcpy(re + *re_len, m.rest + body, m.rest_len - body);
        *re_len += m.rest_len - body;
    } else {
        memcpy(re + *re_len, m.rest, m.rest_len);
        *re_len += m.rest_len;
    }
    return rc;
}

static const struct fz_target targets[] = {
    { .name = "oob_blob", .valid = oob_blob_valid, .decode = oob_blob_dec,
      CODES(OPAL_SUCCESS, OPAL_ERR_BAD_PARAM, OPAL_ERR_NOT_SUPPORTED), .canonical = true },
    { .name = "oob_ud", .valid = oob_ud_valid, .decode = oob_ud_dec,
      CODES(OPAL_SUCCESS, OPAL_ERR_BAD_PARAM, OPAL_ERR_NOT_SUPPORTED), .canonical = false },
    { .name = "xoob_blob", .valid = xoob_blob_valid, .decode = xoob_blob_dec,
      CODES(OPAL_SUCCESS, OPAL_ERR_BAD_PARAM, OPAL_ERR_NOT_SUPPORTED), .canonical = true },
    { .name = "modex", .valid = modex_valid, .decode = modex_dec,
      CODES(OPAL_SUCCESS, OPAL_ERR_BAD_PARAM, OPAL_ERR_NOT_SUPPORTED, OPAL_ERR_OUT_OF_RESOURCE),
      .canonical = true, .fixup = modex_fixup },
    { .name = "oob_msg", .valid = oob_msg_valid, .decode = oob_msg_dec,
      CODES(OPAL_SUCCESS, OPAL_ERR_BAD_PARAM, OPAL_ERR_NOT_SUPPORTED), .canonical = false,
      .normalize = oob_msg_normalize },
    { .name = "oob_ka", .valid = oob_ka_valid, .decode = oob_ka_dec,
      CODES(OPAL_SUCCESS, OPAL_ERR_BAD_PARAM, OPAL_ERR_NOT_SUPPORTED, OPAL_ERR_NOT_FOUND),
      .canonical = false },
    { .name = "xoob_msg", .valid = xoob_msg_valid, .decode = xoob_msg_dec,
      CODES(OPAL_SUCCESS, OPAL_ERR_BAD_PARAM, OPAL_ERR_NOT_SUPPORTED), .canonical = false,
      .normalize = xoob_msg_normalize },
    { .name = "rdma_cm_priv", .valid = rcm_valid, .decode = rcm_dec,
      CODES(OPAL_SUCCESS, OPAL_ERR_BAD_PARAM), .canonical = true },
};
#define NTARGETS (sizeof(targets) / sizeof(targets[0]))

/* ===================== end of the layout-dependent part ================= */

/* Bytes of a fixed-size frame that the encoder ever sets (magic, version,
 * fields): learned from many random valid encodings, so nothing here knows
 * the layout. The rest (padding, reserved bytes) is not compared. */
static void learn_written(const struct fz_target *t, uint8_t *written, size_t *size)
{
    uint8_t buf[FZ_BUF];

    memset(written, 0, FZ_BUF);
    *size = 0;
    for (int i = 0; i < 512; ++i) {
        size_t n = t->valid(buf);

        for (size_t k = 0; k < n; ++k) {
            written[k] |= buf[k];
        }
        if (n > *size) {
            *size = n;
        }
    }
}

/* One input: decode an exact-size heap copy, check the code and the
 * re-encoding. Returns the decoder's code. */
static int fuzz_one(const struct fz_target *t, const uint8_t *buf, size_t len,
                    const uint8_t *written)
{
    static uint8_t re[FZ_BUF], re2[FZ_BUF];
    const uint8_t *in = exact_copy(buf, len);
    size_t re_len = 0, re2_len = 0;
    int rc;

    fz_cur_in = in;
    fz_cur_len = len;
    fz_cur_name = t->name;
    memset(re, 0, sizeof(re));
    rc = t->decode(in, len, re, &re_len);
    FZ_CHECK(code_in(rc, t->codes, t->ncodes), t->name, in, len);
    if (OPAL_SUCCESS == rc) {
        if (t->canonical) {
            FZ_CHECK(re_len == len && 0 == memcmp(re, in, len), t->name, in, len);
        } else {
            size_t n = len < re_len ? len : re_len;
            uint8_t *norm = (uint8_t *) exact_copy(in, len);
            bool same = true;

            if (t->normalize) {
                t->normalize(norm, len);
            }
            for (size_t k = 0; k < n; ++k) {
                if (written[k] && re[k] != norm[k]) {
                    same = false;
                }
            }
            free(norm);
            FZ_CHECK(same, t->name, in, len);
            /* the re-encoding decodes to itself */
            FZ_CHECK(OPAL_SUCCESS == t->decode(re, re_len, re2, &re2_len) &&
                         re2_len == re_len && 0 == memcmp(re, re2, re_len),
                     t->name, in, len);
        }
    }
    free((void *) in);
    return rc;
}

/* A valid encoding with one to four of: bit flips, a byte set to an edge
 * value (counts, lengths), truncation, extension, a copied run. */
static size_t mutate(uint8_t *buf, size_t len)
{
    int k, nmut = 1 + (int) rnd_below(4);

    for (k = 0; k < nmut; ++k) {
        switch (rnd_below(6)) {
        case 0:
            if (len) {
                buf[rnd_below((unsigned) len)] ^= (uint8_t) (1u << rnd_below(8));
            }
            break;
        case 1:
            if (len) {
                buf[rnd_below((unsigned) len)] = rnd_extreme_byte();
            }
            break;
        case 2:
            len = rnd_below((unsigned) len + 1);
            break;
        case 3: {
            size_t extra = 1 + rnd_below(rnd_below(2) ? 4 : 64);
            if (len + extra <= FZ_BUF) {
                rnd_fill(buf + len, extra);
                len += extra;
            }
            break;
        }
        case 4:
            if (len >= 2) { /* overwrite a run with another part of the frame */
                size_t a = rnd_below((unsigned) len), b = rnd_below((unsigned) len);
                size_t n = 1 + rnd_below(8);
                if (a + n <= len && b + n <= len) {
                    memmove(buf + a, buf + b, n);
                }
            }
            break;
        default:
            if (len >= 2) { /* a 16-bit field set to an edge */
                size_t a = rnd_below((unsigned) len - 1);
                buf[a] = rnd_below(2) ? 0xff : 0;
                buf[a + 1] = rnd_extreme_byte();
            }
            break;
        }
    }
    return len;
}

static void fuzz_target(const struct fz_target *t, long iters)
{
    static uint8_t buf[FZ_BUF], written[FZ_BUF];
    long accepted = 0, valid_ok = 0, valid_n = 0;
    size_t frame;
    int rc;

    learn_written(t, written, &frame);
    for (long i = 0; i < iters; ++i) {
        size_t len;

        switch (i % 4) {
        case 0: /* random bytes of random length */
            len = rnd_below(FZ_RANDOM_MAX + 1);
            rnd_fill(buf, len);
            break;
        case 1: /* random bytes behind a valid beginning (magic, version) */
            len = t->valid(buf);
            {
                size_t keep = rnd_below(len < 12 ? (unsigned) len + 1 : 13);
                size_t total = rnd_below(FZ_RANDOM_MAX + 1);
                if (total < keep) {
                    total = keep;
                }
                rnd_fill(buf + keep, total - keep);
                len = total;
            }
            break;
        case 2: /* a valid encoding, unchanged: must decode */
            len = t->valid(buf);
            rc = fuzz_one(t, buf, len, written);
            ++valid_n;
            valid_ok += OPAL_SUCCESS == rc;
            FZ_CHECK(OPAL_SUCCESS == rc, t->name, buf, len);
            accepted += OPAL_SUCCESS == rc;
            continue;
        default: /* a valid encoding, mutated */
            len = mutate(buf, t->valid(buf));
            if (t->fixup) {
                t->fixup(buf, len);
            }
            break;
        }
        accepted += OPAL_SUCCESS == fuzz_one(t, buf, len, written);
    }
    printf("  %-13s %ld inputs, %ld accepted (%ld of %ld valid encodings)\n", t->name, iters,
           accepted, valid_ok, valid_n);
}

/* The MAC check: any frame length and MAC offset (in range or not, up to
 * SIZE_MAX), never a read outside the frame; a sealed frame verifies and
 * every single-bit change of it does not. */
static void fuzz_auth(long iters)
{
    static const size_t wild[] = { 0, 1, 15, 16, 17, SIZE_MAX, SIZE_MAX - 15, SIZE_MAX / 2 };
    uint8_t key[OPENIB_AUTH_TOKEN_LEN], other[OPENIB_AUTH_TOKEN_LEN];
    long forged_ok = 0;

    for (long i = 0; i < iters; ++i) {
        size_t len = rnd_below(FZ_RANDOM_MAX + 1), off;
        uint8_t *f = malloc(len ? len : 1);
        bool v;

        rnd_fill(key, sizeof(key));
        rnd_fill(f, len);
        off = rnd_below(4) ? rnd_below((unsigned) len + 20) : wild[rnd_below(8)];
        v = openib_auth_verify(key, f, len, off);
        /* a random MAC field passes with chance 2^-128 */
        forged_ok += v;
        if (len >= OPENIB_AUTH_MAC_LEN && off <= len - OPENIB_AUTH_MAC_LEN) {
            size_t bit;

            openib_auth_seal(key, f, len, off);
            FZ_CHECK(openib_auth_verify(key, f, len, off), "auth", f, len);
            memcpy(other, key, sizeof(other));
            other[rnd_below(sizeof(other))] ^= (uint8_t) (1u << rnd_below(8));
            FZ_CHECK(!openib_auth_verify(other, f, len, off), "auth", f, len);
            bit = rnd_below((unsigned) len * 8);
            f[bit / 8] ^= (uint8_t) (1u << (bit % 8));
            FZ_CHECK(!openib_auth_verify(key, f, len, off), "auth", f, len);
        } else {
            openib_auth_seal(key, f, len, off); /* must not write anywhere */
            FZ_CHECK(!openib_auth_verify(key, f, len, off), "auth", f, len);
        }
        free(f);
    }
    CHECK_EQ(forged_ok, 0);
    printf("  %-13s %ld frames (random lengths and MAC offsets)\n", "auth", iters);
}

int main(void)
{
    const char *s = getenv("OPENIB_FUZZ_SEED"), *it = getenv("OPENIB_FUZZ_ITERS");
    uint64_t seed = s ? strtoull(s, NULL, 0) : 0x6f70656e69622d6eull; /* "openib-n" */
    long iters = it ? atol(it) : 200000;
    long per = iters / (long) (NTARGETS + 1);

    rng_state = seed ? seed : 1;
    printf("test_fuzz_wire: seed 0x%016" PRIx64 " (OPENIB_FUZZ_SEED), %ld iterations\n", seed,
           iters);
    for (size_t t = 0; t < NTARGETS; ++t) {
        fuzz_target(&targets[t], per);
    }
    fuzz_auth(per / 4); /* an HMAC costs more than a decode */
    return test_report("test_fuzz_wire");
}

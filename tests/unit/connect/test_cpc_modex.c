/*
 * test_cpc_modex.c - the modex blob: round trip, byte order, and refusal of
 * every truncation, every corrupted length byte and every flipped byte,
 * with the decoder only ever given a heap buffer of exactly `len` bytes (so
 * a read past the end is also visible to valgrind/ASan).
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <stdlib.h>
#include <string.h>

#include "connect/openib_connect.h"
#include "tests/unit/connect/cpc_test.h"

#define NPORTS 3

static uint8_t blob_buf[64 * 1024];

/* Standard IEEE CRC-32 over bytes [0,8) and [12,len), written here
 * independently of the encoder, so the structural checks can be tested with
 * a CRC that still matches. */
static uint32_t crc32_ref(uint32_t c, const uint8_t *p, size_t n)
{
    size_t i;
    int k;

    for (i = 0; i < n; ++i) {
        c ^= p[i];
        for (k = 0; k < 8; ++k) {
            c = (c & 1) ? (c >> 1) ^ 0xedb88320u : c >> 1;
        }
    }
    return c;
}

static void fix_crc(uint8_t *b, size_t len)
{
    uint32_t c = ~crc32_ref(crc32_ref(0xffffffffu, b, 8), b + 12, len - 12);

    b[8] = (uint8_t) (c >> 24);
    b[9] = (uint8_t) (c >> 16);
    b[10] = (uint8_t) (c >> 8);
    b[11] = (uint8_t) c;
}

static void sample_ports(struct openib_modex_port *p)
{
    int i, j;

    memset(p, 0, NPORTS * sizeof(*p));
    for (i = 0; i < NPORTS; ++i) {
        for (j = 0; j < 16; ++j) {
            p[i].gid[j] = (uint8_t) (0xf0 + j + i);
        }
        p[i].subnet_prefix = 0xfe80000000000000ull + (uint64_t) i;
        p[i].lid = (uint16_t) (0x1234 + i);
        p[i].mtu = 4096;
        p[i].link_layer = (uint8_t) (1 + i % 2);
        p[i].transport = (uint8_t) (i % 2); /* round-trips like the rest */
        p[i].port_num = (uint8_t) (1 + i);
        snprintf(p[i].dev_name, sizeof(p[i].dev_name), i ? "mlx5_%d" : "rxe0", i);
        /* port 0: three CPCs with blobs; port 1: none; port 2: max blob */
        if (0 == i) {
            p[i].num_cpcs = 3;
            p[i].cpcs[0] = (struct openib_modex_cpc){ .id = 3, .priority = 60, .blob_len = 0 };
            p[i].cpcs[1] = (struct openib_modex_cpc){ .id = 1, .priority = 50, .blob_len = 5 };
            memcpy(p[i].cpcs[1].blob, "\xff\xff\xff\xff\xff", 5);
            p[i].cpcs[2] = (struct openib_modex_cpc){ .id = 64, .priority = 0, .blob_len = 9 };
            memcpy(p[i].cpcs[2].blob, "\xee\xee\xee\xee\xee\xee\xee\xee\xee", 9);
        } else if (2 == i) {
            p[i].num_cpcs = 1;
            p[i].cpcs[0] = (struct openib_modex_cpc){ .id = 2, .priority = 100, .blob_len = 255 };
            memset(p[i].cpcs[0].blob, 0xc3, 255);
        }
    }
}

static bool port_equal(const struct openib_modex_port *a, const struct openib_modex_port *b)
{
    int i;

    if (memcmp(a->gid, b->gid, 16) || a->subnet_prefix != b->subnet_prefix || a->lid != b->lid ||
        a->mtu != b->mtu || a->link_layer != b->link_layer || a->transport != b->transport ||
        a->port_num != b->port_num ||
        strcmp(a->dev_name, b->dev_name) || a->num_cpcs != b->num_cpcs) {
        return false;
    }
    for (i = 0; i < a->num_cpcs; ++i) {
        if (a->cpcs[i].id != b->cpcs[i].id || a->cpcs[i].priority != b->cpcs[i].priority ||
            a->cpcs[i].blob_len != b->cpcs[i].blob_len ||
            memcmp(a->cpcs[i].blob, b->cpcs[i].blob, a->cpcs[i].blob_len)) {
            return false;
        }
    }
    return true;
}

/* Decode from an exact-size heap copy. */
static int decode_copy(const uint8_t *b, size_t len, struct openib_modex_port *out, int *n)
{
    uint8_t *p = malloc(len ? len : 1);
    int rc;

    memcpy(p, b, len);
    rc = openib_connect_modex_decode(p, len, out, NPORTS, n);
    free(p);
    return rc;
}

static size_t encode_sample(struct openib_modex_port *in)
{
    size_t len = 0;

    sample_ports(in);
    CHECK_EQ(openib_connect_modex_encode(in, NPORTS, blob_buf, sizeof(blob_buf), &len),
             OPAL_SUCCESS);
    return len;
}

static void test_round_trip(void)
{
    struct openib_modex_port in[NPORTS], out[NPORTS];
    size_t len = encode_sample(in);
    int n = -1, i;

    CHECK(len > 12);
    CHECK(len <= openib_connect_modex_max_size(NPORTS));
    CHECK_EQ(decode_copy(blob_buf, len, out, &n), OPAL_SUCCESS);
    CHECK_EQ(n, NPORTS);
    for (i = 0; i < NPORTS; ++i) {
        CHECK(port_equal(&in[i], &out[i]));
    }

    /* Endian-safe: fixed big-endian positions, whatever the host. The first
     * port record starts at 12: u16 len, gid[16], u64 prefix, u16 lid. */
    CHECK_EQ(blob_buf[0], 'o');
    CHECK_EQ(blob_buf[1], 'i');
    CHECK_EQ(blob_buf[2], 2); /* version 2: with the transport byte */
    CHECK_EQ(blob_buf[3], NPORTS);
    CHECK_EQ(((size_t) blob_buf[4] << 24 | blob_buf[5] << 16 | blob_buf[6] << 8 | blob_buf[7]),
             len);
    CHECK_EQ(blob_buf[14], 0xf0);         /* gid[0] */
    CHECK_EQ(blob_buf[30], 0xfe);         /* subnet prefix, most significant first */
    CHECK_EQ(blob_buf[31], 0x80);
    CHECK_EQ(blob_buf[38], 0x12);         /* lid 0x1234 */
    CHECK_EQ(blob_buf[39], 0x34);

    /* Zero ports is a valid (empty) modex. */
    CHECK_EQ(openib_connect_modex_encode(in, 0, blob_buf, sizeof(blob_buf), &len), OPAL_SUCCESS);
    CHECK_EQ(len, 12);
    CHECK_EQ(decode_copy(blob_buf, len, out, &n), OPAL_SUCCESS);
    CHECK_EQ(n, 0);
}

static void test_every_truncation(void)
{
    struct openib_modex_port in[NPORTS], out[NPORTS];
    size_t len = encode_sample(in), cut;
    int n;

    for (cut = 0; cut < len; ++cut) {
        CHECK_EQ(decode_copy(blob_buf, cut, out, &n), OPAL_ERR_BAD_PARAM);
        /* and with the header's length and CRC rewritten to match the
         * shorter blob: the port records themselves must not fit. */
        if (cut >= 12) {
            uint8_t tmp[64 * 1024];

            memcpy(tmp, blob_buf, cut);
            tmp[4] = (uint8_t) (cut >> 24);
            tmp[5] = (uint8_t) (cut >> 16);
            tmp[6] = (uint8_t) (cut >> 8);
            tmp[7] = (uint8_t) cut;
            fix_crc(tmp, cut);
            CHECK_EQ(decode_copy(tmp, cut, out, &n), OPAL_ERR_BAD_PARAM);
        }
    }
    /* trailing bytes are not silently ignored either */
    blob_buf[len] = 0;
    CHECK_EQ(decode_copy(blob_buf, len + 1, out, &n), OPAL_ERR_BAD_PARAM);
}

/* Offsets of every length/count byte in the sample encoding. */
static int length_offsets(size_t *off, const struct openib_modex_port *in)
{
    size_t pos = 12;
    int n = 0, p, c;

    off[n++] = 3; /* nports */
    off[n++] = 4; off[n++] = 5; off[n++] = 6; off[n++] = 7; /* total_len */
    for (p = 0; p < NPORTS; ++p) {
        size_t name_len = strlen(in[p].dev_name);

        off[n++] = pos; off[n++] = pos + 1; /* port_len */
        pos += 2 + 16 + 8 + 2 + 4 + 1 + 1 + 1; /* ... link_layer, transport, port_num */
        off[n++] = pos; /* name_len */
        pos += 1 + name_len;
        off[n++] = pos; /* num_cpcs */
        pos += 1;
        for (c = 0; c < in[p].num_cpcs; ++c) {
            off[n++] = pos + 2; /* blob_len */
            pos += 3 + in[p].cpcs[c].blob_len;
        }
    }
    return n;
}

static void test_corrupt_lengths(void)
{
    struct openib_modex_port in[NPORTS], out[NPORTS];
    size_t len = encode_sample(in), off[64];
    uint8_t tmp[64 * 1024];
    int noff = length_offsets(off, in), i, v, n;

    CHECK(noff > 15);
    for (i = 0; i < noff; ++i) {
        for (v = 0; v < 256; ++v) {
            if (v == blob_buf[off[i]]) {
                continue;
            }
            memcpy(tmp, blob_buf, len);
            tmp[off[i]] = (uint8_t) v;
            /* as corrupted in transit: the CRC catches it */
            CHECK_EQ(decode_copy(tmp, len, out, &n), OPAL_ERR_BAD_PARAM);
            /* as written by a buggy encoder (CRC consistent): the lengths
             * themselves must be caught */
            {
                fix_crc(tmp, len);
                n = -1;
                CHECK_EQ(decode_copy(tmp, len, out, &n), OPAL_ERR_BAD_PARAM);
            }
        }
    }
}

static void test_every_byte_flip(void)
{
    struct openib_modex_port in[NPORTS], out[NPORTS];
    size_t len = encode_sample(in), i;
    uint8_t tmp[64 * 1024];
    int n, rc;

    for (i = 0; i < len; ++i) {
        memcpy(tmp, blob_buf, len);
        tmp[i] ^= 0x5a;
        rc = decode_copy(tmp, len, out, &n);
        /* byte 2 is the version: a different one is "not ours", the rest
         * is corruption */
        CHECK_EQ(rc, 2 == i ? OPAL_ERR_NOT_SUPPORTED : OPAL_ERR_BAD_PARAM);
    }
}

static void test_values_and_limits(void)
{
    struct openib_modex_port in[NPORTS], out[NPORTS], bad[1];
    size_t len = encode_sample(in), cap, l2;
    uint8_t tmp[64 * 1024];
    int n;

    /* More ports than the caller has room for: say how many. */
    n = 0;
    CHECK_EQ(openib_connect_modex_decode(blob_buf, len, out, 2, &n), OPAL_ERR_OUT_OF_RESOURCE);
    CHECK_EQ(n, NPORTS);

    /* Every capacity short of the need is refused without overrunning. */
    for (cap = 0; cap < len; ++cap) {
        uint8_t *p = malloc(cap ? cap : 1);

        CHECK_EQ(openib_connect_modex_encode(in, NPORTS, p, cap, &l2), OPAL_ERR_OUT_OF_RESOURCE);
        free(p);
    }

    /* Values the encoder refuses (and the decoder, when forced past the
     * encoder with a consistent CRC). */
    memcpy(bad, in, sizeof(bad));
    bad[0].cpcs[1].priority = 101;
    CHECK_EQ(openib_connect_modex_encode(bad, 1, tmp, sizeof(tmp), &l2), OPAL_ERR_BAD_PARAM);
    memcpy(bad, in, sizeof(bad));
    bad[0].cpcs[1].id = 3; /* duplicate of cpcs[0] */
    CHECK_EQ(openib_connect_modex_encode(bad, 1, tmp, sizeof(tmp), &l2), OPAL_ERR_BAD_PARAM);
    memcpy(bad, in, sizeof(bad));
    bad[0].cpcs[1].id = 0;
    CHECK_EQ(openib_connect_modex_encode(bad, 1, tmp, sizeof(tmp), &l2), OPAL_ERR_BAD_PARAM);
    memcpy(bad, in, sizeof(bad));
    bad[0].num_cpcs = OPENIB_MODEX_MAX_CPCS + 1;
    CHECK_EQ(openib_connect_modex_encode(bad, 1, tmp, sizeof(tmp), &l2), OPAL_ERR_BAD_PARAM);
    memcpy(bad, in, sizeof(bad));
    memset(bad[0].dev_name, 'x', sizeof(bad[0].dev_name)); /* no NUL */
    CHECK_EQ(openib_connect_modex_encode(bad, 1, tmp, sizeof(tmp), &l2), OPAL_ERR_BAD_PARAM);

    /* priority byte of port 0's first CPC forced to 101 behind a good CRC */
    {
        size_t pri = 12 + 2 + 16 + 8 + 2 + 4 + 1 + 1 + 1 + 1 + strlen(in[0].dev_name) + 1 + 1;

        memcpy(tmp, blob_buf, len);
        CHECK_EQ(tmp[pri], 60);
        tmp[pri] = 101;
        fix_crc(tmp, len);
        CHECK_EQ(decode_copy(tmp, len, out, &n), OPAL_ERR_BAD_PARAM);
        tmp[pri] = 100;
        fix_crc(tmp, len);
        CHECK_EQ(decode_copy(tmp, len, out, &n), OPAL_SUCCESS); /* the control */
    }

    CHECK_EQ(openib_connect_modex_decode(NULL, len, out, NPORTS, &n), OPAL_ERR_BAD_PARAM);
    CHECK_EQ(openib_connect_modex_encode(in, -1, tmp, sizeof(tmp), &l2), OPAL_ERR_BAD_PARAM);
}

/* The helpers the BTL uses around the codec. */
static void test_fill_and_peer_port(void)
{
    static const struct openib_cpc_component comp = {
        .size = sizeof(struct openib_cpc_component), .abi_version = 2, .name = "t", .id = 9,
    };
    struct openib_cpc_module m, *mods[1] = { &m };
    struct openib_cpc_port port, peer;
    struct openib_modex_port mp, out;
    size_t len;
    int n;

    openib_cpc_port_init(&port);
    port.dev_name = "rxe0";
    port.port_num = 1;
    port.lid = 0;
    port.mtu = 1024;
    port.link_layer = 2;
    port.gid[0] = 0xfe;
    port.gid[15] = 0x42;
    port.subnet_prefix = 0xfe80000000000000ull;
    openib_cpc_module_init(&m);
    m.component = &comp;
    m.priority = 33;
    m.blob_len = 3;
    memcpy(m.blob, "abc", 3);
    CHECK_EQ(openib_connect_modex_fill_port(&mp, &port, mods, 1), OPAL_SUCCESS);
    CHECK_EQ(openib_connect_modex_encode(&mp, 1, blob_buf, sizeof(blob_buf), &len), OPAL_SUCCESS);
    CHECK_EQ(openib_connect_modex_decode(blob_buf, len, &out, 1, &n), OPAL_SUCCESS);
    CHECK_EQ(out.num_cpcs, 1);
    CHECK_EQ(out.cpcs[0].id, 9);
    CHECK_EQ(out.cpcs[0].priority, 33);
    CHECK_EQ(memcmp(out.cpcs[0].blob, "abc", 3), 0);
    CHECK_EQ(openib_connect_modex_peer_port(&out, &peer), OPAL_SUCCESS);
    CHECK_EQ(peer.size, sizeof(peer));
    CHECK_EQ(strcmp(peer.dev_name, "rxe0"), 0);
    CHECK_EQ(peer.gid[15], 0x42);
    CHECK_EQ(peer.mtu, 1024);
    CHECK_EQ(peer.link_layer, 2);
    CHECK(peer.subnet_prefix == 0xfe80000000000000ull);
    CHECK_EQ(out.transport, OPENIB_MODEX_TRANSPORT_IB);
    CHECK_EQ(peer.caps & OPENIB_PORT_CAP_IWARP, 0);
    /* an iWARP port says so, and the peer's view of it keeps the cap */
    port.dev_name = "siw0";
    port.caps |= OPENIB_PORT_CAP_IWARP;
    CHECK_EQ(openib_connect_modex_fill_port(&mp, &port, mods, 1), OPAL_SUCCESS);
    CHECK_EQ(openib_connect_modex_encode(&mp, 1, blob_buf, sizeof(blob_buf), &len), OPAL_SUCCESS);
    CHECK_EQ(openib_connect_modex_decode(blob_buf, len, &out, 1, &n), OPAL_SUCCESS);
    CHECK_EQ(out.transport, OPENIB_MODEX_TRANSPORT_IWARP);
    CHECK_EQ(openib_connect_modex_peer_port(&out, &peer), OPAL_SUCCESS);
    CHECK_EQ(peer.caps & OPENIB_PORT_CAP_IWARP, OPENIB_PORT_CAP_IWARP);
    CHECK_EQ(openib_connect_modex_fill_port(&mp, &port, mods, OPENIB_MODEX_MAX_CPCS + 1),
             OPAL_ERR_BAD_PARAM);
}

int main(void)
{
    test_round_trip();
    test_every_truncation();
    test_corrupt_lengths();
    test_every_byte_flip();
    test_values_and_limits();
    test_fill_and_peer_port();
    return test_report("test_cpc_modex");
}

/*
 * modex_wire.c - the modex blob: every port's identity and CPC list.
 *
 * Wire format, version 2 (v1 had no transport byte). All integers
 * big-endian; no padding anywhere.
 *
 *   header (12 bytes)
 *     u8  'o' 'i'      magic: this is an openib modex at all
 *     u8  version      2
 *     u8  nports
 *     u32 total_len    the whole blob, header included
 *     u32 crc32        IEEE CRC-32 of bytes [0, 8) and [12, total_len)
 *   per port
 *     u16 port_len     bytes of this port record after this field
 *     u8  gid[16]
 *     u64 subnet_prefix
 *     u16 lid
 *     u32 mtu
 *     u8  link_layer
 *     u8  transport    0 InfiniBand/RoCE, 1 iWARP (IBV_TRANSPORT_*): ports of
 *                      different transports never talk to each other
 *     u8  port_num
 *     u8  name_len (<= 31), name bytes (no NUL)
 *     u8  num_cpcs (<= OPENIB_MODEX_MAX_CPCS)
 *     per CPC: u8 id, u8 priority (<= 100), u8 blob_len, blob
 *
 * The lengths are redundant on purpose (total, per port, per blob, and a
 * CRC): the decoder demands that they all agree exactly, so a truncated or
 * corrupted blob is refused instead of being half-read. Versioning rules:
 * wire/README.md.
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <string.h>

#include "wire/modex_wire.h"
#include "wire/wire_be.h"

#define MODEX_MAGIC0 'o'
#define MODEX_MAGIC1 'i'
#define MODEX_VERSION 2
#define MODEX_HDR_LEN 12
#define MODEX_NAME_MAX (sizeof(((struct openib_modex_port *) 0)->dev_name) - 1)
/* Port record after its u16 length, without name and CPCs. */
#define MODEX_PORT_FIXED (16 + 8 + 2 + 4 + 1 + 1 + 1 + 1 + 1)

/* IEEE 802.3 CRC-32 (reflected, poly 0xEDB88320), bit by bit: the modex is
 * decoded once per peer, so a table buys nothing. */
static uint32_t crc32_update(uint32_t crc, const uint8_t *p, size_t len)
{
    size_t i;
    int k;

    for (i = 0; i < len; ++i) {
        crc ^= p[i];
        for (k = 0; k < 8; ++k) {
            crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1u));
        }
    }
    return crc;
}

/* The CRC covers everything but its own field, header included, so a
 * corrupted port count or length is caught like any other byte. */
static uint32_t modex_crc(const uint8_t *buf, size_t len)
{
    uint32_t crc = 0xffffffffu;

    crc = crc32_update(crc, buf, 8);
    crc = crc32_update(crc, buf + MODEX_HDR_LEN, len - MODEX_HDR_LEN);
    return ~crc;
}

/* ---- writer: bounds-checked, remembers the first overflow ---- */

struct wr {
    uint8_t *buf;
    size_t cap, pos;
    bool full;
};

static void put_bytes(struct wr *w, const void *src, size_t n)
{
    if (w->full || w->cap - w->pos < n) {
        w->full = true;
        return;
    }
    memcpy(w->buf + w->pos, src, n);
    w->pos += n;
}

static void put_be(struct wr *w, uint64_t v, int nbytes)
{
    uint8_t b[8];

    cpc_be_put(b, v, nbytes);
    put_bytes(w, b, (size_t) nbytes);
}

/* ---- reader: never looks at a byte at or past `end` ---- */

struct rd {
    const uint8_t *buf;
    size_t pos, end;
    bool bad;
};

static const uint8_t *get_bytes(struct rd *r, size_t n)
{
    const uint8_t *p;

    if (r->bad || r->pos > r->end || r->end - r->pos < n) {
        r->bad = true;
        return NULL;
    }
    p = r->buf + r->pos;
    r->pos += n;
    return p;
}

static uint64_t get_be(struct rd *r, int nbytes)
{
    const uint8_t *p = get_bytes(r, (size_t) nbytes);
    uint64_t v = 0;

    if (NULL != p) {
        cpc_be_get(p, &v, nbytes);
    }
    return v;
}

bool openib_connect_modex_cpcs_valid(const struct openib_modex_port *mp)
{
    int i, j;

    if (mp->num_cpcs > OPENIB_MODEX_MAX_CPCS) {
        return false;
    }
    for (i = 0; i < mp->num_cpcs; ++i) {
        if (0 == mp->cpcs[i].id || mp->cpcs[i].priority > 100) {
            return false;
        }
        for (j = 0; j < i; ++j) {
            if (mp->cpcs[j].id == mp->cpcs[i].id) {
                return false; /* the matching rule needs one entry per CPC */
            }
        }
    }
    return true;
}

size_t openib_connect_modex_max_size(int nports)
{
    if (nports < 0) {
        return 0;
    }
    return MODEX_HDR_LEN +
           (size_t) nports * (2 + MODEX_PORT_FIXED + MODEX_NAME_MAX +
                              OPENIB_MODEX_MAX_CPCS * (3 + OPENIB_CPC_BLOB_MAX));
}

int openib_connect_modex_encode(const struct openib_modex_port *ports, int nports,
                                uint8_t *buf, size_t cap, size_t *len)
{
    struct wr w = { .buf = buf, .cap = cap };
    int p, i;

    if ((NULL == ports && nports > 0) || nports < 0 || nports > 255 || NULL == buf ||
        NULL == len) {
        return OPAL_ERR_BAD_PARAM;
    }
    *len = 0;
    put_be(&w, MODEX_MAGIC0, 1);
    put_be(&w, MODEX_MAGIC1, 1);
    put_be(&w, MODEX_VERSION, 1);
    put_be(&w, (uint64_t) nports, 1);
    put_be(&w, 0, 4); /* total_len, patched below */
    put_be(&w, 0, 4); /* crc, patched below */

    for (p = 0; p < nports; ++p) {
        const struct openib_modex_port *mp = &ports[p];
        size_t name_len = strnlen(mp->dev_name, sizeof(mp->dev_name));
        size_t start;

        if (name_len > MODEX_NAME_MAX || !openib_connect_modex_cpcs_valid(mp)) {
            return OPAL_ERR_BAD_PARAM;
        }
        start = w.pos;
        put_be(&w, 0, 2); /* port_len, patched below */
        put_bytes(&w, mp->gid, 16);
        put_be(&w, mp->subnet_prefix, 8);
        put_be(&w, mp->lid, 2);
        put_be(&w, mp->mtu, 4);
        put_be(&w, mp->link_layer, 1);
        put_be(&w, mp->transport, 1);
        put_be(&w, mp->port_num, 1);
        put_be(&w, name_len, 1);
        put_bytes(&w, mp->dev_name, name_len);
        put_be(&w, mp->num_cpcs, 1);
        for (i = 0; i < mp->num_cpcs; ++i) {
            put_be(&w, mp->cpcs[i].id, 1);
            put_be(&w, mp->cpcs[i].priority, 1);
            put_be(&w, mp->cpcs[i].blob_len, 1);
            put_bytes(&w, mp->cpcs[i].blob, mp->cpcs[i].blob_len);
        }
        if (w.full) {
            return OPAL_ERR_OUT_OF_RESOURCE;
        }
        cpc_be_put(buf + start, w.pos - start - 2, 2);
    }
    if (w.full) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    cpc_be_put(buf + 4, w.pos, 4);
    cpc_be_put(buf + 8, modex_crc(buf, w.pos), 4);
    *len = w.pos;
    return OPAL_SUCCESS;
}

static int decode_port(struct rd *r, struct openib_modex_port *mp)
{
    struct rd pr;
    const uint8_t *p;
    size_t port_len, name_len;
    int i;

    port_len = (size_t) get_be(r, 2);
    if (r->bad || port_len < MODEX_PORT_FIXED || r->end - r->pos < port_len) {
        return OPAL_ERR_BAD_PARAM;
    }
    /* Parse inside the port's own bounds, then demand it used them all. */
    pr = (struct rd){ .buf = r->buf, .pos = r->pos, .end = r->pos + port_len };
    r->pos += port_len;

    memset(mp, 0, sizeof(*mp));
    p = get_bytes(&pr, 16);
    if (NULL != p) {
        memcpy(mp->gid, p, 16);
    }
    mp->subnet_prefix = get_be(&pr, 8);
    mp->lid = (uint16_t) get_be(&pr, 2);
    mp->mtu = (uint32_t) get_be(&pr, 4);
    mp->link_layer = (uint8_t) get_be(&pr, 1);
    mp->transport = (uint8_t) get_be(&pr, 1);
    mp->port_num = (uint8_t) get_be(&pr, 1);
    name_len = (size_t) get_be(&pr, 1);
    if (pr.bad || name_len > MODEX_NAME_MAX) {
        return OPAL_ERR_BAD_PARAM;
    }
    p = get_bytes(&pr, name_len);
    if (NULL == p || NULL != memchr(p, '\0', name_len)) {
        return OPAL_ERR_BAD_PARAM;
    }
    memcpy(mp->dev_name, p, name_len);
    mp->dev_name[name_len] = '\0';
    mp->num_cpcs = (uint8_t) get_be(&pr, 1);
    if (pr.bad || mp->num_cpcs > OPENIB_MODEX_MAX_CPCS) {
        return OPAL_ERR_BAD_PARAM;
    }
    for (i = 0; i < mp->num_cpcs; ++i) {
        struct openib_modex_cpc *c = &mp->cpcs[i];

        c->id = (uint8_t) get_be(&pr, 1);
        c->priority = (uint8_t) get_be(&pr, 1);
        c->blob_len = (uint8_t) get_be(&pr, 1);
        p = get_bytes(&pr, c->blob_len);
        if (NULL == p) {
            return OPAL_ERR_BAD_PARAM;
        }
        memcpy(c->blob, p, c->blob_len);
    }
    if (pr.bad || pr.pos != pr.end || !openib_connect_modex_cpcs_valid(mp)) {
        return OPAL_ERR_BAD_PARAM;
    }
    return OPAL_SUCCESS;
}

int openib_connect_modex_decode(const uint8_t *buf, size_t len,
                                struct openib_modex_port *ports, int max, int *nports)
{
    struct rd r = { .buf = buf, .pos = 0, .end = len };
    struct openib_modex_port scratch;
    uint32_t total, crc;
    int count, p, rc;

    if (NULL == buf || NULL == nports || max < 0 || (NULL == ports && max > 0)) {
        return OPAL_ERR_BAD_PARAM;
    }
    *nports = 0;
    if (len < MODEX_HDR_LEN || MODEX_MAGIC0 != buf[0] || MODEX_MAGIC1 != buf[1]) {
        return OPAL_ERR_BAD_PARAM;
    }
    if (MODEX_VERSION != buf[2]) {
        /* Intact, but from a release that speaks another format. */
        return OPAL_ERR_NOT_SUPPORTED;
    }
    r.pos = 3;
    count = (int) get_be(&r, 1);
    total = (uint32_t) get_be(&r, 4);
    crc = (uint32_t) get_be(&r, 4);
    if (r.bad || total != len) {
        return OPAL_ERR_BAD_PARAM;
    }
    if (crc != modex_crc(buf, len)) {
        return OPAL_ERR_BAD_PARAM;
    }
    /* First pass: the whole blob must be well-formed before anything else
     * (the port count included) is believed. */
    r.pos = MODEX_HDR_LEN;
    for (p = 0; p < count; ++p) {
        rc = decode_port(&r, &scratch);
        if (OPAL_SUCCESS != rc) {
            return rc;
        }
    }
    if (r.pos != r.end) {
        return OPAL_ERR_BAD_PARAM; /* bytes no port record accounts for */
    }
    if (count > max) {
        *nports = count; /* tells the caller how much room it needs */
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    /* Second pass into the caller's array: cannot fail any more. */
    r.pos = MODEX_HDR_LEN;
    for (p = 0; p < count; ++p) {
        (void) decode_port(&r, &ports[p]);
    }
    *nports = count;
    return OPAL_SUCCESS;
}

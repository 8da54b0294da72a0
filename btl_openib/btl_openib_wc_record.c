/*
 * btl_openib_wc_record.c - build and walk versioned completion records
 * (include/openib/openib_wc.h), the form a completion takes for readers
 * outside the BTL. The progress loop itself reads ibv_wc directly
 * (btl_openib_wc.h) and builds no record.
 *
 * All access to the caller's buffer goes through memcpy: the buffer may be
 * any byte array, and the walkers must never read a byte past `len`.
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <string.h>

#include "openib/openib_wc.h"

/* OPENIB_WC_* are OPAL codes spelled out (the header needs no Open MPI
 * header): asserted in common/openib_errno.c. */

/* Published layouts: changing any of these breaks every reader out there. */
_Static_assert(sizeof(struct openib_wc) == 24, "wc base v1 layout");
_Static_assert(sizeof(struct openib_wc_addr) == 16, "wc addr layout");
_Static_assert(sizeof(struct openib_wc_imm) == 8, "wc imm layout");
_Static_assert(sizeof(struct openib_wc_ts) == 8, "wc ts layout");

#define WC_BASE_SIZE sizeof(struct openib_wc)
#define WC_MAGIC_OFF offsetof(struct openib_wc, magic)

/* Extension sizes indexed by bit number; 0 = not a known extension. */
static const size_t wc_ext_sizes[32] = {
    [8] = sizeof(struct openib_wc_addr),
    [9] = sizeof(struct openib_wc_imm),
    [10] = sizeof(struct openib_wc_ts),
};

static int is_single_bit(uint32_t v)
{
    return v && !(v & (v - 1));
}

size_t openib_wc_ext_size(uint32_t flag)
{
    if (!is_single_bit(flag) || flag < (1u << OPENIB_WC_FLAG_SHIFT)) {
        return 0;
    }
    return wc_ext_sizes[__builtin_ctz(flag)];
}

/* Bytes taken by the extensions for the flags in `mask`, or -1 when one of
 * them is unknown. */
static long ext_bytes(uint32_t mask)
{
    long total = 0;

    while (mask) {
        uint32_t bit = mask & -mask;
        size_t sz = openib_wc_ext_size(bit);

        if (0 == sz) {
            return -1;
        }
        total += (long) sz;
        mask &= ~bit;
    }
    return total;
}

long openib_wc_record_size(uint32_t magic)
{
    long ext;

    if ((magic & OPENIB_WC_VERSION_MASK) != OPENIB_WC_VERSION) {
        return OPENIB_WC_ERR_UNKNOWN;
    }
    ext = ext_bytes(magic & ~OPENIB_WC_VERSION_MASK);
    if (ext < 0) {
        return OPENIB_WC_ERR_UNKNOWN;
    }
    return (long) WC_BASE_SIZE + ext;
}

static uint32_t read_magic(const uint8_t *buf)
{
    uint32_t magic;

    memcpy(&magic, buf + WC_MAGIC_OFF, sizeof(magic));
    return magic;
}

/* The magic of a record whose base fits and whose version we know. */
static int base_magic(const void *buf, size_t len, uint32_t *magic)
{
    if (NULL == buf) {
        return OPENIB_WC_ERR_INVAL;
    }
    if (len < WC_BASE_SIZE) {
        return OPENIB_WC_ERR_TRUNCATED;
    }
    *magic = read_magic(buf);
    if ((*magic & OPENIB_WC_VERSION_MASK) != OPENIB_WC_VERSION) {
        return OPENIB_WC_ERR_UNKNOWN;
    }
    return OPENIB_WC_OK;
}

int openib_wc_build_begin(struct openib_wc_builder *b, void *buf, size_t cap, uint64_t id,
                          uint32_t status, uint32_t opcode, uint32_t length)
{
    struct openib_wc base = {
        .id = id,
        .magic = OPENIB_WC_VERSION,
        .status = status,
        .opcode = opcode,
        .length = length,
    };

    if (NULL == b || NULL == buf) {
        return OPENIB_WC_ERR_INVAL;
    }
    b->buf = buf;
    b->cap = cap;
    b->len = 0;
    if (cap < WC_BASE_SIZE) {
        return OPENIB_WC_ERR_NOSPACE;
    }
    memcpy(buf, &base, sizeof(base));
    b->len = WC_BASE_SIZE;
    return OPENIB_WC_OK;
}

int openib_wc_build_add(struct openib_wc_builder *b, uint32_t flag, const void *ext,
                        size_t ext_len)
{
    size_t sz = openib_wc_ext_size(flag);
    uint32_t magic;
    long before;
    size_t off;

    if (NULL == b || NULL == b->buf || b->len < WC_BASE_SIZE || NULL == ext) {
        return OPENIB_WC_ERR_INVAL;
    }
    if (0 == sz || ext_len != sz) {
        return OPENIB_WC_ERR_INVAL;
    }
    magic = read_magic(b->buf);
    if (magic & flag) {
        return OPENIB_WC_ERR_INVAL;
    }
    if (b->cap - b->len < sz) {
        return OPENIB_WC_ERR_NOSPACE;
    }
    /* The new record goes after every present lower flag; higher ones move up. */
    before = ext_bytes(magic & ~OPENIB_WC_VERSION_MASK & (flag - 1));
    if (before < 0) {
        return OPENIB_WC_ERR_UNKNOWN;
    }
    off = WC_BASE_SIZE + (size_t) before;
    memmove(b->buf + off + sz, b->buf + off, b->len - off);
    memcpy(b->buf + off, ext, sz);
    magic |= flag;
    memcpy(b->buf + WC_MAGIC_OFF, &magic, sizeof(magic));
    b->len += sz;
    return OPENIB_WC_OK;
}

long openib_wc_check(const void *buf, size_t len)
{
    uint32_t magic;
    long size;
    int rc = base_magic(buf, len, &magic);

    if (OPENIB_WC_OK != rc) {
        return rc;
    }
    size = openib_wc_record_size(magic);
    if (size < 0) {
        return size;
    }
    if ((size_t) size > len) {
        return OPENIB_WC_ERR_TRUNCATED;
    }
    return size;
}

int openib_wc_base(const void *buf, size_t len, struct openib_wc *out)
{
    uint32_t magic;
    int rc = base_magic(buf, len, &magic);

    if (OPENIB_WC_OK != rc) {
        return rc;
    }
    if (NULL == out) {
        return OPENIB_WC_ERR_INVAL;
    }
    memcpy(out, buf, WC_BASE_SIZE);
    return OPENIB_WC_OK;
}

int openib_wc_find(const void *buf, size_t len, uint32_t flag, const void **ext,
                   size_t *ext_len)
{
    size_t sz = openib_wc_ext_size(flag);
    uint32_t magic;
    long before;
    size_t off;
    int rc;

    if (0 == sz || NULL == ext) {
        return OPENIB_WC_ERR_INVAL;
    }
    rc = base_magic(buf, len, &magic);
    if (OPENIB_WC_OK != rc) {
        return rc;
    }
    if (!(magic & flag)) {
        return OPENIB_WC_ERR_NOT_FOUND;
    }
    /* Only the flags below ours decide where it is, so unknown higher flags
     * do not matter here. */
    before = ext_bytes(magic & ~OPENIB_WC_VERSION_MASK & (flag - 1));
    if (before < 0) {
        return OPENIB_WC_ERR_UNKNOWN;
    }
    off = WC_BASE_SIZE + (size_t) before;
    if (off > len || len - off < sz) {
        return OPENIB_WC_ERR_TRUNCATED;
    }
    *ext = (const uint8_t *) buf + off;
    if (NULL != ext_len) {
        *ext_len = sz;
    }
    return OPENIB_WC_OK;
}

static int get_copy(const void *buf, size_t len, uint32_t flag, void *out, size_t out_len)
{
    const void *ext;
    size_t ext_len;
    int rc;

    if (NULL == out) {
        return OPENIB_WC_ERR_INVAL;
    }
    rc = openib_wc_find(buf, len, flag, &ext, &ext_len);
    if (OPENIB_WC_OK != rc) {
        return rc;
    }
    if (ext_len != out_len) {
        return OPENIB_WC_ERR_INVAL;
    }
    memcpy(out, ext, out_len);
    return OPENIB_WC_OK;
}

int openib_wc_get_addr(const void *buf, size_t len, struct openib_wc_addr *out)
{
    return get_copy(buf, len, OPENIB_WC_EXT_ADDR, out, sizeof(*out));
}

int openib_wc_get_imm(const void *buf, size_t len, struct openib_wc_imm *out)
{
    return get_copy(buf, len, OPENIB_WC_EXT_IMM, out, sizeof(*out));
}

int openib_wc_get_ts(const void *buf, size_t len, struct openib_wc_ts *out)
{
    return get_copy(buf, len, OPENIB_WC_EXT_TS, out, sizeof(*out));
}

int openib_wc_iter_init(struct openib_wc_iter *it, const void *buf, size_t len)
{
    uint32_t magic;
    int rc;

    if (NULL == it) {
        return OPENIB_WC_ERR_INVAL;
    }
    rc = base_magic(buf, len, &magic);
    if (OPENIB_WC_OK != rc) {
        return rc;
    }
    it->buf = buf;
    it->len = len;
    it->off = WC_BASE_SIZE;
    it->flags_left = magic & ~OPENIB_WC_VERSION_MASK;
    return OPENIB_WC_OK;
}

int openib_wc_iter_next(struct openib_wc_iter *it, uint32_t *flag, const void **ext,
                        size_t *ext_len)
{
    uint32_t bit;
    size_t sz;

    if (NULL == it || NULL == it->buf) {
        return OPENIB_WC_ERR_INVAL;
    }
    if (0 == it->flags_left) {
        return 0;
    }
    bit = it->flags_left & -it->flags_left;
    sz = openib_wc_ext_size(bit);
    if (0 == sz) {
        /* Unknown size: nothing from here on can be located. Stay stuck here
         * so every later call reports the same error. */
        return OPENIB_WC_ERR_UNKNOWN;
    }
    if (it->off > it->len || it->len - it->off < sz) {
        return OPENIB_WC_ERR_TRUNCATED;
    }
    if (NULL != flag) {
        *flag = bit;
    }
    if (NULL != ext) {
        *ext = it->buf + it->off;
    }
    if (NULL != ext_len) {
        *ext_len = sz;
    }
    it->off += sz;
    it->flags_left &= ~bit;
    return 1;
}

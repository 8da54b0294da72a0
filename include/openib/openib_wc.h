/*
 * openib_wc.h - the versioned work-completion record.
 *
 * One completion is a base record followed by optional extension records:
 *
 *   [ struct openib_wc ][ ext for the lowest set flag ][ next flag ] ...
 *
 * `magic` carries the base layout version in its low 8 bits
 * (OPENIB_WC_VERSION_MASK) and, above them, one flag per extension record
 * present (OPENIB_WC_EXT_*). Extensions follow the base in increasing flag
 * order, so a reader finds one by adding up the sizes of the lower flags
 * that are set. Every record is a multiple of 8 bytes and the base starts
 * 8-aligned, so each extension is 8-aligned too when the buffer is.
 *
 * Compatibility rules (the same spirit as openib_abi.h):
 *   - The base layout of a version never changes; a different base means a
 *     new version, and a reader rejects versions it does not know.
 *   - Flag bits are allocated upwards and never reused; an extension's
 *     layout never changes once published (a new layout is a new flag).
 *   - A reader that meets a flag it does not know cannot know that record's
 *     size, so nothing *after* it can be located. Because bits grow upwards,
 *     every known extension lies before the unknown ones: openib_wc_find()
 *     still returns known extensions, while openib_wc_check(), the record
 *     size and iteration past the last known flag report
 *     OPENIB_WC_ERR_UNKNOWN (the record cannot be skipped or fully read).
 *
 * The CQ poller of the data path fills these records; these helpers build
 * and walk them. Records live in host memory in host byte order (they never
 * cross the wire). Return codes are Open MPI's OPAL_* values, spelled out
 * so this header needs no Open MPI header.
 */
#ifndef OPENIB_WC_H
#define OPENIB_WC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OPENIB_WC_VERSION       1u
#define OPENIB_WC_VERSION_MASK  0xffu
#define OPENIB_WC_FLAG_SHIFT    8

/* Extension flags, in record order (lowest bit first). */
#define OPENIB_WC_EXT_ADDR  (1u << 8)   /* struct openib_wc_addr */
#define OPENIB_WC_EXT_IMM   (1u << 9)   /* struct openib_wc_imm */
#define OPENIB_WC_EXT_TS    (1u << 10)  /* struct openib_wc_ts */
#define OPENIB_WC_EXT_KNOWN (OPENIB_WC_EXT_ADDR | OPENIB_WC_EXT_IMM | OPENIB_WC_EXT_TS)

/* Return codes (OPAL_* values). */
#define OPENIB_WC_OK             0
#define OPENIB_WC_ERR_NOSPACE   -2    /* OPAL_ERR_OUT_OF_RESOURCE: buffer too small to build */
#define OPENIB_WC_ERR_INVAL     -5    /* OPAL_ERR_BAD_PARAM: bad argument, duplicate flag */
#define OPENIB_WC_ERR_UNKNOWN   -8    /* OPAL_ERR_NOT_SUPPORTED: unknown version or flag */
#define OPENIB_WC_ERR_NOT_FOUND -13   /* OPAL_ERR_NOT_FOUND: extension not present */
#define OPENIB_WC_ERR_TRUNCATED -26   /* OPAL_ERR_UNPACK_READ_PAST_END_OF_BUFFER */

/* Base record, version 1: 24 bytes. */
struct openib_wc {
    uint64_t id;        /* the work request id */
    uint32_t magic;     /* version | OPENIB_WC_EXT_* flags */
    uint32_t status;    /* enum ibv_wc_status */
    uint32_t opcode;    /* enum ibv_wc_opcode */
    uint32_t length;    /* bytes transferred */
};

/* OPENIB_WC_EXT_ADDR: where a receive came from. 16 bytes. */
struct openib_wc_addr {
    uint32_t src_qp;
    uint16_t slid;
    uint16_t pkey_index;
    uint8_t port_num;
    uint8_t sl;
    uint8_t gid_index;
    uint8_t wc_flags;   /* low bits of ibv_wc_flags (e.g. IBV_WC_GRH) */
    uint32_t reserved;  /* zero */
};

/* OPENIB_WC_EXT_IMM: immediate data (network byte order as verbs gives it). 8 bytes. */
struct openib_wc_imm {
    uint32_t imm_data;
    uint32_t reserved;  /* zero */
};

/* OPENIB_WC_EXT_TS: completion timestamp in device clock ticks. 8 bytes. */
struct openib_wc_ts {
    uint64_t timestamp;
};

/* Size of the extension record for one known flag, 0 for an unknown flag or
 * a value that is not a single flag bit. */
size_t openib_wc_ext_size(uint32_t flag);

/* Total size of a record with this magic; OPENIB_WC_ERR_UNKNOWN (negative)
 * for an unknown version or any unknown flag. */
long openib_wc_record_size(uint32_t magic);

/* ---- building ---- */

struct openib_wc_builder {
    uint8_t *buf;
    size_t cap;
    size_t len;         /* bytes used so far */
};

/* Start a record in buf (cap bytes): writes the base with no extensions. */
int openib_wc_build_begin(struct openib_wc_builder *b, void *buf, size_t cap, uint64_t id,
                          uint32_t status, uint32_t opcode, uint32_t length);

/* Add one extension record. Flags may be added in any order: the record is
 * inserted at its place in flag order. Fails (record unchanged) on an unknown
 * flag, a wrong ext_len, a flag already present (ERR_INVAL) or not enough
 * room (ERR_NOSPACE). */
int openib_wc_build_add(struct openib_wc_builder *b, uint32_t flag, const void *ext,
                        size_t ext_len);

/* Bytes used by the finished record. */
static inline size_t openib_wc_build_len(const struct openib_wc_builder *b)
{
    return b->len;
}

/* ---- reading ---- */

/* Validate a whole record in len bytes: known version, only known flags,
 * nothing truncated. Returns the record size (> 0) or a negative error. */
long openib_wc_check(const void *buf, size_t len);

/* Copy the base record out (OPENIB_WC_ERR_TRUNCATED / _UNKNOWN version). */
int openib_wc_base(const void *buf, size_t len, struct openib_wc *out);

/* Locate the extension for `flag`. Works for known flags even when unknown
 * higher flags are present (see the rules above). *ext points into buf. */
int openib_wc_find(const void *buf, size_t len, uint32_t flag, const void **ext,
                   size_t *ext_len);

/* Typed copies of the known extensions (safe for unaligned buffers). */
int openib_wc_get_addr(const void *buf, size_t len, struct openib_wc_addr *out);
int openib_wc_get_imm(const void *buf, size_t len, struct openib_wc_imm *out);
int openib_wc_get_ts(const void *buf, size_t len, struct openib_wc_ts *out);

/* Iterate the extensions in record order:
 *   struct openib_wc_iter it;
 *   if (openib_wc_iter_init(&it, buf, len) == 0)
 *       while ((rc = openib_wc_iter_next(&it, &flag, &ext, &ext_len)) > 0) ...
 * next() returns 1 with a record, 0 at the end, or a negative error
 * (an unknown flag, a truncated record). */
struct openib_wc_iter {
    const uint8_t *buf;
    size_t len;
    size_t off;
    uint32_t flags_left;
};
int openib_wc_iter_init(struct openib_wc_iter *it, const void *buf, size_t len);
int openib_wc_iter_next(struct openib_wc_iter *it, uint32_t *flag, const void **ext,
                        size_t *ext_len);

#ifdef __cplusplus
}
#endif
#endif /* OPENIB_WC_H */

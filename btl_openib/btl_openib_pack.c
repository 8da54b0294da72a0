/*
 * btl_openib_pack.c - user data into send fragments, at any position.
 *
 * Why not opal_convertor_raw() at the convertor's position: in Open MPI 4.1
 * raw() is right only when the convertor stands on a block boundary. After
 * opal_convertor_set_position() or opal_convertor_pack() to a byte inside a
 * block of several elements, the first iovec raw() returns starts at the
 * right address but has the length of the part of the block already done
 * instead of the part left, and the blocks after it are displaced by the
 * difference: bytes skipped or sent twice. ob1 sets the position before
 * every fragment of a pipelined send, so packing with raw() from there
 * corrupted every non-contiguous message above the eager limit.
 *
 * So there are two ways to pack non-contiguous data:
 *  - host memory whose copy hook would be the built-in memcpy:
 *    opal_convertor_pack(), right at every position (what every BTL does);
 *  - memory whose every copy a hook must see (an override, or device
 *    memory): a private "walker" convertor that only raw() ever moves,
 *    from the start of the data, so it stands on boundaries of raw's own
 *    making. The batch of iovecs that covers the position goes to the hook
 *    with the offset into it (the hook's `off` argument trims the first
 *    block), batch after batch.
 *
 * Cost of the hook path: a cursor (a walker and its last batch) is kept for
 * the last few data descriptions, so ob1's in-order fragments go on where
 * the previous one stopped: per fragment, the blocks of the fragment, one
 * comparison of the description and one positioning of the convertor from
 * the start (both O(elements of the description), at most the type's
 * block count; whole loops are skipped, not walked). A position before
 * the cursor, or a description not cached, walks from the start:
 * O(blocks before the position), so a pattern that jumps back on every
 * fragment costs O(blocks^2 / fragment).
 *
 * A cursor is used only when everything raw() reads is the same, byte for
 * byte: base address, count, sizes, bounds and every element of the
 * description. It is keyed on content, never on pointers, so a datatype
 * freed and re-created at the same address with another layout cannot
 * meet a stale cursor. The walker borrows the live convertor's description
 * (identical by then) on every use, never an old one.
 *
 * One cache per module, guarded by openib_lock like the rest of its state
 * (prepare_src and sendi run under it).
 */
#include "opal_config.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "opal/constants.h"
#include "opal/datatype/opal_convertor.h"
#include "opal/datatype/opal_datatype.h"
#include "opal/datatype/opal_datatype_internal.h"

#include "btl_openib/btl_openib_pack.h"
#include "hmem/openib_hmem_btl.h"

/* Concurrent non-contiguous sends whose fragments interleave on a module
 * each keep their cursor up to this many. */
#define PACK_CURSORS 4
/* iovecs per raw() call: a hook call covers up to this many blocks. */
#define PACK_IOVS 64

struct pack_cursor {
    bool live;                    /* walker constructed */
    bool keyed;                   /* the key below describes the walker */
    opal_convertor_t walker;
    /* the key: everything raw() reads besides the walker's own stack */
    const unsigned char *base;
    size_t count, local_size;
    ptrdiff_t lb, ub;
    dt_elem_desc_t *desc;         /* a copy of the description's elements */
    size_t desc_n, desc_cap;
    /* the batch raw() gave last: bytes [start, start + len) of the stream */
    struct iovec iov[PACK_IOVS];
    uint32_t n;
    size_t start, len;
};

struct openib_pack_cache {
    struct pack_cursor cur[PACK_CURSORS];
    unsigned next;                /* the slot a new description takes */
};

/* Elements raw() may read: the used ones and the closing end-of-loop that
 * commit places after them. */
static size_t desc_elems(const dt_type_desc_t *d)
{
    return d->used + 1 <= d->length ? d->used + 1 : d->used;
}

/* Field by field: a loop element has padding, which memcmp would read. */
static bool elem_equal(const dt_elem_desc_t *a, const dt_elem_desc_t *b)
{
    if (a->elem.common.type != b->elem.common.type ||
        a->elem.common.flags != b->elem.common.flags) {
        return false;
    }
    switch (a->elem.common.type) {
    case OPAL_DATATYPE_LOOP:
        return a->loop.items == b->loop.items && a->loop.loops == b->loop.loops &&
               a->loop.extent == b->loop.extent;
    case OPAL_DATATYPE_END_LOOP:
        return a->end_loop.items == b->end_loop.items && a->end_loop.size == b->end_loop.size &&
               a->end_loop.first_elem_disp == b->end_loop.first_elem_disp;
    default:
        return a->elem.count == b->elem.count && a->elem.blocklen == b->elem.blocklen &&
               a->elem.extent == b->elem.extent && a->elem.disp == b->elem.disp;
    }
}

static bool cursor_matches(const struct pack_cursor *c, const opal_convertor_t *conv)
{
    const dt_type_desc_t *d = conv->use_desc;
    size_t i;

    if (!c->keyed || c->base != conv->pBaseBuf || c->count != conv->count ||
        c->local_size != conv->local_size || c->lb != conv->pDesc->lb ||
        c->ub != conv->pDesc->ub || c->desc_n != desc_elems(d)) {
        return false;
    }
    for (i = 0; i < c->desc_n; ++i) {
        if (!elem_equal(&c->desc[i], &d->desc[i])) {
            return false;
        }
    }
    return true;
}

/* The walker back at the start of conv's data. */
static int cursor_restart(struct pack_cursor *c, const opal_convertor_t *conv)
{
    int rc;

    if (c->live) {
        OBJ_DESTRUCT(&c->walker);
    }
    OBJ_CONSTRUCT(&c->walker, opal_convertor_t);
    c->live = true;
    c->n = 0;
    c->start = c->len = 0;
    rc = opal_convertor_copy_and_prepare_for_send(conv, conv->pDesc, conv->count, conv->pBaseBuf,
                                                  0, &c->walker);
    /* Rebinding the walker to conv's description later is only sound if
     * both walk the same one (the optimized or the full description). */
    if (OPAL_SUCCESS != rc || c->walker.use_desc != conv->use_desc) {
        c->keyed = false;
        return OPAL_SUCCESS != rc ? rc : OPAL_ERR_NOT_SUPPORTED;
    }
    return OPAL_SUCCESS;
}

static int cursor_key(struct pack_cursor *c, const opal_convertor_t *conv)
{
    size_t n = desc_elems(conv->use_desc);

    c->keyed = false;
    if (n > c->desc_cap) {
        dt_elem_desc_t *grown = realloc(c->desc, n * sizeof(*grown));

        if (NULL == grown) {
            return OPAL_ERR_OUT_OF_RESOURCE;
        }
        c->desc = grown;
        c->desc_cap = n;
    }
    memcpy(c->desc, conv->use_desc->desc, n * sizeof(*c->desc));
    c->desc_n = n;
    c->base = conv->pBaseBuf;
    c->count = conv->count;
    c->local_size = conv->local_size;
    c->lb = conv->pDesc->lb;
    c->ub = conv->pDesc->ub;
    c->keyed = true;
    return OPAL_SUCCESS;
}

/* A cursor for conv whose batch starts at or before pos. */
static int cursor_for(struct openib_pack_cache *cache, opal_convertor_t *conv, size_t pos,
                      struct pack_cursor **out)
{
    struct pack_cursor *c = NULL;
    int i, rc;

    for (i = 0; i < PACK_CURSORS; ++i) {
        if (cursor_matches(&cache->cur[i], conv)) {
            c = &cache->cur[i];
            break;
        }
    }
    if (NULL == c) {
        c = &cache->cur[cache->next];
        cache->next = (cache->next + 1) % PACK_CURSORS;
        rc = cursor_key(c, conv);
        if (OPAL_SUCCESS == rc) {
            rc = cursor_restart(c, conv);
        }
        if (OPAL_SUCCESS != rc) {
            return rc;
        }
    } else if (pos < c->start) {
        rc = cursor_restart(c, conv);
        if (OPAL_SUCCESS != rc) {
            return rc;
        }
    }
    /* Identical content by now: read the live description, not the one
     * the walker was prepared with (it may have been freed since). */
    c->walker.pDesc = conv->pDesc;
    c->walker.use_desc = conv->use_desc;
    *out = c;
    return OPAL_SUCCESS;
}

/* The walker's next batch (whole blocks: it never stops inside one). */
static int cursor_next(struct pack_cursor *c)
{
    size_t len = 0;
    uint32_t n = PACK_IOVS;

    c->start += c->len;
    c->len = 0;
    c->n = 0;
    opal_convertor_raw(&c->walker, c->iov, &n, &len);
    if (0 == n || 0 == len) {
        c->keyed = false; /* the data ended before the position: not ours to trust */
        return OPAL_ERROR;
    }
    c->n = n;
    c->len = len;
    return OPAL_SUCCESS;
}

static int pack_hooked(const struct openib_hmem_object *h, struct openib_pack_cache **cachep,
                       opal_convertor_t *conv, char *dst, size_t want, size_t *done)
{
    size_t pos = conv->bConverted, end = pos + want, zero = 0, packed = 0;
    struct pack_cursor *c;
    int rc;

    /* raw() describes local bytes; a conversion would have to be packed. */
    if (!(conv->flags & CONVERTOR_HOMOGENEOUS)) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    /* Stop where opal_convertor_pack would: a non-contiguous send
     * convertor stands only between basic elements (set_position rounds
     * down), and ob1 starts the next fragment where this one ended. The
     * convertor is moved there from the start of the data: in 4.1 a forward
     * move from a position inside a loop of the description lands wrong,
     * one from the start is right (and skips whole loops, O(description)). */
    if (pos > 0) {
        opal_convertor_set_position(conv, &zero);
    }
    rc = opal_convertor_set_position(conv, &end);
    if (OPAL_SUCCESS != rc || conv->bConverted < pos) {
        return OPAL_ERROR;
    }
    want = conv->bConverted - pos;
    *done = 0;
    if (0 == want) {
        return OPAL_SUCCESS;
    }
    if (NULL == *cachep) {
        *cachep = calloc(1, sizeof(**cachep));
        if (NULL == *cachep) {
            return OPAL_ERR_OUT_OF_RESOURCE;
        }
    }
    rc = cursor_for(*cachep, conv, pos, &c);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    while (packed < want) {
        enum openib_hmem_iface iface;
        size_t n, batch_end = c->start + c->len;
        uint64_t dev;
        ssize_t got;

        if (pos >= batch_end) {
            rc = cursor_next(c);
            if (OPAL_SUCCESS != rc) {
                return rc;
            }
            continue;
        }
        n = batch_end - pos < want - packed ? batch_end - pos : want - packed;
        openib_hmem_detect(c->iov[0].iov_base, &iface, &dev);
        got = openib_hmem_copy_from_iov(h, iface, dev, dst + packed, n, c->iov, c->n,
                                        pos - c->start);
        if (got < 0 || (size_t) got != n) {
            return OPAL_ERROR;
        }
        packed += n;
        pos += n;
    }
    *done = packed;
    return OPAL_SUCCESS;
}

static int pack_contiguous(const struct openib_hmem_object *h, opal_convertor_t *conv, void *dst,
                           size_t want)
{
    enum openib_hmem_iface iface;
    uint64_t dev;
    void *src;
    size_t pos;
    ssize_t got;

    opal_convertor_get_current_pointer(conv, &src);
    openib_hmem_detect(src, &iface, &dev);
    got = openib_hmem_copy_from_buf(h, iface, dev, dst, src, want);
    if (got < 0 || (size_t) got != want) {
        return OPAL_ERROR;
    }
    pos = conv->bConverted + want;
    opal_convertor_set_position(conv, &pos);
    return OPAL_SUCCESS;
}

int openib_pack(const struct openib_hmem_object *h, struct openib_pack_cache **cache,
                opal_convertor_t *conv, void *dst, size_t *size)
{
    size_t want = *size, left = conv->local_size - conv->bConverted;
    struct iovec iov;
    uint32_t iov_n = 1;
    int rc;

    if (want > left) {
        want = left;
    }
    *size = 0;
    if (0 == want) {
        return OPAL_SUCCESS;
    }
    if (!opal_convertor_need_buffers(conv)) {
        rc = pack_contiguous(h, conv, dst, want);
        if (OPAL_SUCCESS == rc) {
            *size = want;
        }
        return rc;
    }
    /* The first data byte tells where the buffer lives (the base itself
     * may lie outside it, e.g. MPI_BOTTOM with absolute displacements). */
    if (!openib_hmem_is_plain_host(h, conv->pBaseBuf + conv->pDesc->true_lb)) {
        return pack_hooked(h, cache, conv, dst, want, size);
    }
    iov.iov_base = dst;
    iov.iov_len = want;
    rc = opal_convertor_pack(conv, &iov, &iov_n, &want);
    if (rc < 0) {
        return OPAL_ERROR;
    }
    *size = want;
    return OPAL_SUCCESS;
}

void openib_pack_cache_free(struct openib_pack_cache **cache)
{
    int i;

    if (NULL == cache || NULL == *cache) {
        return;
    }
    for (i = 0; i < PACK_CURSORS; ++i) {
        struct pack_cursor *c = &(*cache)->cur[i];

        if (c->live) {
            OBJ_DESTRUCT(&c->walker);
        }
        free(c->desc);
    }
    free(*cache);
    *cache = NULL;
}

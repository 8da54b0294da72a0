/*
 * hmem_object.c - HMEM objects: the override table, the tree that passes it
 * to children, set_op/get_op/set_ops, counters, the published root.
 *
 * The work is done in OPAL codes (hmem_obj_*); what callers reach - the ops
 * table of openib/openib_hmem.h and the object functions of
 * openib_hmem_btl.h - is the ABI edge, one openib_err_to_abi_errno() each.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "hmem/hmem_private.h"

/* Guards the tree links and the list of all objects. Copies never take it:
 * they read the table with atomic loads. */
static pthread_mutex_t hmem_tree_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hmem_obj *hmem_all_objects;
static struct openib_hmem_object *hmem_published_root;

/* Per op type: where it lives in struct openib_hmem_override_ops and the
 * built-in default get_op hands out. */
static const struct hmem_op_desc {
    const char *name;
    size_t ops_offset; /* in struct openib_hmem_override_ops */
    size_t ops_end;    /* the caller's size must reach this to carry it */
    union openib_hmem_op dflt;
} hmem_op_desc[HMEM_OP_NUM] = {
    [OPENIB_HMEM_OP_COPY_FROM_HMEM_IOV] = {
        .name = "copy_from_hmem_iov",
        .ops_offset = offsetof(struct openib_hmem_override_ops, copy_from_hmem_iov),
        .ops_end = OPENIB_SIZE_THROUGH(struct openib_hmem_override_ops, copy_from_hmem_iov),
        .dflt = { .copy_from_hmem_iov = openib_hmem_default_copy_from_hmem_iov },
    },
    [OPENIB_HMEM_OP_COPY_TO_HMEM_IOV] = {
        .name = "copy_to_hmem_iov",
        .ops_offset = offsetof(struct openib_hmem_override_ops, copy_to_hmem_iov),
        .ops_end = OPENIB_SIZE_THROUGH(struct openib_hmem_override_ops, copy_to_hmem_iov),
        .dflt = { .copy_to_hmem_iov = openib_hmem_default_copy_to_hmem_iov },
    },
};

static bool hmem_op_known(enum openib_hmem_op_type type)
{
    /* Compare as unsigned: a negative enum value is unknown too. */
    return (unsigned) type < HMEM_OP_NUM;
}

static void hmem_slot_store(struct hmem_obj *o, int t, union openib_hmem_op v)
{
    __atomic_store(&o->ovr[t], &v, __ATOMIC_RELEASE);
}

static union openib_hmem_op hmem_slot_load(const struct hmem_obj *o, int t)
{
    union openib_hmem_op v;

    __atomic_load(&o->ovr[t], &v, __ATOMIC_ACQUIRE);
    return v;
}

/* Store one slot in o and, when deep, in every descendant. Tree lock held. */
static void hmem_slot_store_tree(struct hmem_obj *o, int t, union openib_hmem_op v, bool deep)
{
    struct hmem_obj *c;

    hmem_slot_store(o, t, v);
    if (!deep) {
        return;
    }
    for (c = o->first_child; NULL != c; c = c->next_sibling) {
        hmem_slot_store_tree(c, t, v, true);
    }
}

/* Not our object: it supports nothing (-ENOSYS at the edge). An unknown op
 * type is OPAL_ERR_NOT_SUPPORTED (-EOPNOTSUPP). Both non-fatal. */
static int hmem_obj_set_op(struct openib_hmem_object *obj, enum openib_hmem_op_type type,
                           const union openib_hmem_op *op, uint64_t flags)
{
    struct hmem_obj *o = hmem_obj_of(obj);
    union openib_hmem_op v = OPENIB_HMEM_OP_INITIALIZER;

    if (NULL == o) {
        return OPAL_ERR_NOT_IMPLEMENTED;
    }
    if (!hmem_op_known(type)) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    if (flags & ~OPENIB_HMEM_FLAG_DESCENDANTS) {
        return OPAL_ERR_BAD_PARAM;
    }
    if (NULL != op) {
        v = *op;
    }
    pthread_mutex_lock(&hmem_tree_lock);
    hmem_slot_store_tree(o, type, v, 0 != (flags & OPENIB_HMEM_FLAG_DESCENDANTS));
    pthread_mutex_unlock(&hmem_tree_lock);
    return OPAL_SUCCESS;
}

static int hmem_obj_get_op(const struct openib_hmem_object *obj, enum openib_hmem_op_type type,
                           union openib_hmem_op *op, uint64_t flags)
{
    const struct hmem_obj *o = hmem_obj_of(obj);
    union openib_hmem_op v;

    if (NULL == o) {
        return OPAL_ERR_NOT_IMPLEMENTED;
    }
    if (!hmem_op_known(type)) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    if ((flags & ~OPENIB_HMEM_FLAG_DEFAULT) || NULL == op) {
        return OPAL_ERR_BAD_PARAM;
    }
    v = hmem_slot_load(o, type);
    /* Every member is a function pointer of the same size: testing one
     * member tests the slot. */
    if ((flags & OPENIB_HMEM_FLAG_DEFAULT) || NULL == v.copy_from_hmem_iov) {
        v = hmem_op_desc[type].dflt;
    }
    *op = v;
    return OPAL_SUCCESS;
}

static int hmem_obj_set_ops(struct openib_hmem_object *obj,
                            const struct openib_hmem_override_ops *ops)
{
    struct hmem_obj *o = hmem_obj_of(obj);
    union openib_hmem_op v[HMEM_OP_NUM];
    int rc, t;

    if (NULL == o) {
        return OPAL_ERR_NOT_IMPLEMENTED;
    }
    if (NULL == ops) {
        return OPAL_ERR_BAD_PARAM;
    }
    /* openib_abi.h's check answers in the ABI's -EINVAL / -E2BIG. */
    rc = openib_err_from_errno(-openib_abi_check_size(ops, ops->size,
                                                      OPENIB_HMEM_OVERRIDE_OPS_V1_SIZE,
                                                      sizeof(struct openib_hmem_override_ops)));
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    if (ops->flags & ~(uint32_t) OPENIB_HMEM_FLAG_DESCENDANTS) {
        return OPAL_ERR_BAD_PARAM;
    }
    /* Decide every slot before touching any: on error nothing changes. */
    for (t = 0; t < HMEM_OP_NUM; ++t) {
        memset(&v[t], 0, sizeof(v[t]));
        if (ops->size >= hmem_op_desc[t].ops_end) {
            memcpy(&v[t], (const char *) ops + hmem_op_desc[t].ops_offset, sizeof(v[t]));
        }
    }
    pthread_mutex_lock(&hmem_tree_lock);
    for (t = 0; t < HMEM_OP_NUM; ++t) {
        hmem_slot_store_tree(o, t, v[t], 0 != (ops->flags & OPENIB_HMEM_FLAG_DESCENDANTS));
    }
    pthread_mutex_unlock(&hmem_tree_lock);
    return OPAL_SUCCESS;
}

static int hmem_obj_stats(const struct openib_hmem_object *obj, struct openib_hmem_stats *st)
{
    const struct hmem_obj *o = hmem_obj_of(obj);
    struct openib_hmem_stats mine = OPENIB_HMEM_STATS_INITIALIZER;
    const int from = OPENIB_HMEM_OP_COPY_FROM_HMEM_IOV, to = OPENIB_HMEM_OP_COPY_TO_HMEM_IOV;
    uint32_t given;

    if (NULL == o) {
        return OPAL_ERR_NOT_IMPLEMENTED;
    }
    if (NULL == st || st->size < OPENIB_HMEM_STATS_V1_SIZE) {
        return OPAL_ERR_BAD_PARAM;
    }
    mine.from_hmem_calls = __atomic_load_n(&o->calls[from], __ATOMIC_RELAXED);
    mine.from_hmem_bytes = __atomic_load_n(&o->bytes[from], __ATOMIC_RELAXED);
    mine.from_hmem_override_calls = __atomic_load_n(&o->ovr_calls[from], __ATOMIC_RELAXED);
    mine.to_hmem_calls = __atomic_load_n(&o->calls[to], __ATOMIC_RELAXED);
    mine.to_hmem_bytes = __atomic_load_n(&o->bytes[to], __ATOMIC_RELAXED);
    mine.to_hmem_override_calls = __atomic_load_n(&o->ovr_calls[to], __ATOMIC_RELAXED);
    mine.errors = __atomic_load_n(&o->errors, __ATOMIC_RELAXED);
    /* An output struct: fill what the caller's size covers, zero the bytes
     * past what we know (zero = "nothing to report" for fields we lack). */
    given = st->size;
    if (given <= sizeof(mine)) {
        memcpy((char *) st + sizeof(st->size), (char *) &mine + sizeof(mine.size),
               given - sizeof(st->size));
    } else {
        memcpy((char *) st + sizeof(st->size), (char *) &mine + sizeof(mine.size),
               sizeof(mine) - sizeof(mine.size));
        memset((char *) st + sizeof(mine), 0, given - sizeof(mine));
    }
    st->size = given;
    return OPAL_SUCCESS;
}

/* ---- the ABI edge ---- */

static int hmem_set_op(struct openib_hmem_object *obj, enum openib_hmem_op_type type,
                       const union openib_hmem_op *op, uint64_t flags)
{
    return openib_err_to_abi_errno(hmem_obj_set_op(obj, type, op, flags));
}

static int hmem_get_op(const struct openib_hmem_object *obj, enum openib_hmem_op_type type,
                       union openib_hmem_op *op, uint64_t flags)
{
    return openib_err_to_abi_errno(hmem_obj_get_op(obj, type, op, flags));
}

static int hmem_set_ops(struct openib_hmem_object *obj,
                        const struct openib_hmem_override_ops *ops)
{
    return openib_err_to_abi_errno(hmem_obj_set_ops(obj, ops));
}

int openib_hmem_object_stats(const struct openib_hmem_object *obj, struct openib_hmem_stats *st)
{
    return openib_err_to_abi_errno(hmem_obj_stats(obj, st));
}

void openib_hmem_object_reset_stats(struct openib_hmem_object *obj)
{
    struct hmem_obj *o = hmem_obj_of(obj);
    int t;

    if (NULL == o) {
        return;
    }
    for (t = 0; t < HMEM_OP_NUM; ++t) {
        __atomic_store_n(&o->calls[t], 0, __ATOMIC_RELAXED);
        __atomic_store_n(&o->bytes[t], 0, __ATOMIC_RELAXED);
        __atomic_store_n(&o->ovr_calls[t], 0, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&o->errors, 0, __ATOMIC_RELAXED);
}

bool openib_hmem_object_overridden(const struct openib_hmem_object *obj,
                                   enum openib_hmem_op_type type)
{
    const struct hmem_obj *o = hmem_obj_of(obj);

    return NULL != o && hmem_op_known(type) && NULL != hmem_slot_load(o, type).copy_from_hmem_iov;
}

const struct openib_hmem_object_ops openib_hmem_obj_ops = {
    .size = sizeof(struct openib_hmem_object_ops),
    .set_op = hmem_set_op,
    .get_op = hmem_get_op,
    .set_ops = hmem_set_ops,
    .get_stats = openib_hmem_object_stats,
};

static int hmem_obj_create(struct openib_hmem_object *parent, const char *name,
                           struct openib_hmem_object **out)
{
    struct hmem_obj *p = NULL, *o;
    int t;

    if (NULL == out) {
        return OPAL_ERR_BAD_PARAM;
    }
    *out = NULL;
    if (NULL != parent && NULL == (p = hmem_obj_of(parent))) {
        return OPAL_ERR_BAD_PARAM;
    }
    o = calloc(1, sizeof(*o));
    if (NULL == o) {
        goto err_nomem;
    }
    o->name = strdup(NULL != name ? name : "hmem");
    if (NULL == o->name) {
        goto err_free_obj;
    }
    o->pub.size = sizeof(o->pub);
    o->pub.abi_version = OPENIB_HMEM_ABI_VERSION;
    o->pub.ops = &openib_hmem_obj_ops;
    o->pub.name = o->name;

    pthread_mutex_lock(&hmem_tree_lock);
    if (NULL != p) {
        /* Inherit the parent's table as it is now; later changes to the
         * parent reach us only through OPENIB_HMEM_FLAG_DESCENDANTS. */
        for (t = 0; t < HMEM_OP_NUM; ++t) {
            hmem_slot_store(o, t, hmem_slot_load(p, t));
        }
        o->parent = p;
        o->next_sibling = p->first_child;
        p->first_child = o;
    }
    o->all_next = hmem_all_objects;
    if (NULL != hmem_all_objects) {
        hmem_all_objects->all_prev = o;
    }
    hmem_all_objects = o;
    pthread_mutex_unlock(&hmem_tree_lock);

    *out = &o->pub;
    return OPAL_SUCCESS;

err_free_obj:
    free(o);
err_nomem:
    return OPAL_ERR_OUT_OF_RESOURCE;
}

int openib_hmem_object_create(struct openib_hmem_object *parent, const char *name,
                              struct openib_hmem_object **out)
{
    return openib_err_to_abi_errno(hmem_obj_create(parent, name, out));
}

void openib_hmem_object_free(struct openib_hmem_object *obj)
{
    struct hmem_obj *o = hmem_obj_of(obj), **pp, *c;

    if (NULL == o) {
        return;
    }
    pthread_mutex_lock(&hmem_tree_lock);
    if (NULL != o->parent) {
        for (pp = &o->parent->first_child; *pp != o; pp = &(*pp)->next_sibling) {
        }
        *pp = o->next_sibling;
    }
    /* Children outlive us as roots, keeping their tables. */
    while (NULL != (c = o->first_child)) {
        o->first_child = c->next_sibling;
        c->parent = NULL;
        c->next_sibling = NULL;
    }
    if (NULL != o->all_prev) {
        o->all_prev->all_next = o->all_next;
    } else {
        hmem_all_objects = o->all_next;
    }
    if (NULL != o->all_next) {
        o->all_next->all_prev = o->all_prev;
    }
    if (__atomic_load_n(&hmem_published_root, __ATOMIC_ACQUIRE) == obj) {
        __atomic_store_n(&hmem_published_root, NULL, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&hmem_tree_lock);
    free(o->name);
    free(o);
}

int hmem_obj_forget_library(const void *base)
{
    struct hmem_obj *o;
    union openib_hmem_op v, none = OPENIB_HMEM_OP_INITIALIZER;
    Dl_info info;
    void *addr;
    int t, n = 0;

    if (NULL == base) {
        return 0;
    }
    pthread_mutex_lock(&hmem_tree_lock);
    for (o = hmem_all_objects; NULL != o; o = o->all_next) {
        for (t = 0; t < HMEM_OP_NUM; ++t) {
            v = hmem_slot_load(o, t);
            if (NULL == v.copy_from_hmem_iov) {
                continue;
            }
            memcpy(&addr, &v, sizeof(addr));
            if (0 != dladdr(addr, &info) && info.dli_fbase == base) {
                hmem_slot_store(o, t, none);
                ++n;
            }
        }
    }
    pthread_mutex_unlock(&hmem_tree_lock);
    return n;
}

void openib_hmem_publish_root(struct openib_hmem_object *obj)
{
    __atomic_store_n(&hmem_published_root, obj, __ATOMIC_RELEASE);
}

/* Exported from the component for openib_hmem_find_root(); visible even if
 * the build ever turns default visibility off. */
__attribute__((visibility("default"))) struct openib_hmem_object *openib_hmem_root(void)
{
    return __atomic_load_n(&hmem_published_root, __ATOMIC_ACQUIRE);
}

/*
 * test_hmem_ops.c - overriding the copy operations: set_op per op, get_op,
 * not-supported results, inheritance by children created afterwards (and
 * not by earlier ones unless asked), the whole-struct set_ops form and its
 * size rules, counters.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "hmem/openib_hmem_btl.h"
#include "tests/unit/hmem/hmem_test.h"

#define FROM OPENIB_HMEM_OP_COPY_FROM_HMEM_IOV
#define TO OPENIB_HMEM_OP_COPY_TO_HMEM_IOV

/* Overrides that leave a recognisable mark instead of copying. */
static int mark_from_calls, mark_to_calls;

static ssize_t mark_from(void *dst, size_t len, enum openib_hmem_iface iface, uint64_t device,
                         const struct iovec *iov, size_t cnt, uint64_t off)
{
    mark_from_calls++;
    memset(dst, 0xA5, len);
    return (ssize_t) len;
}

static ssize_t mark_to(enum openib_hmem_iface iface, uint64_t device, const struct iovec *iov,
                       size_t cnt, uint64_t off, const void *src, size_t len)
{
    mark_to_calls++;
    memset(iov[0].iov_base, 0x5A, len);
    return (ssize_t) len;
}

static ssize_t liar_from(void *dst, size_t len, enum openib_hmem_iface iface, uint64_t device,
                         const struct iovec *iov, size_t cnt, uint64_t off)
{
    return (ssize_t) len + 1;
}

static ssize_t failing_from(void *dst, size_t len, enum openib_hmem_iface iface, uint64_t device,
                            const struct iovec *iov, size_t cnt, uint64_t off)
{
    return -ENOSPC;
}

static char src[64], dst[64];

static void fill(void)
{
    int i;

    for (i = 0; i < (int) sizeof(src); ++i) {
        src[i] = (char) (i + 1);
    }
    memset(dst, 0, sizeof(dst));
}

/* What copy_from through obj did: 1 = the mark override, 0 = a real copy. */
static int from_used_mark(struct openib_hmem_object *o)
{
    ssize_t rc;

    fill();
    rc = openib_hmem_copy_from_buf(o, OPENIB_HMEM_SYSTEM, 0, dst, src, 16);
    CHECK_EQ(rc, 16);
    if ((unsigned char) dst[0] == 0xA5 && (unsigned char) dst[15] == 0xA5) {
        return 1;
    }
    CHECK(0 == memcmp(dst, src, 16));
    return 0;
}

static int to_used_mark(struct openib_hmem_object *o)
{
    ssize_t rc;

    fill();
    rc = openib_hmem_copy_to_buf(o, OPENIB_HMEM_SYSTEM, 0, dst, src, 16);
    CHECK_EQ(rc, 16);
    if ((unsigned char) dst[0] == 0x5A && (unsigned char) dst[15] == 0x5A) {
        return 1;
    }
    CHECK(0 == memcmp(dst, src, 16));
    return 0;
}

static void test_set_op_each(void)
{
    struct openib_hmem_object *root;
    union openib_hmem_op op = OPENIB_HMEM_OP_INITIALIZER, got;

    CHECK_EQ(openib_hmem_object_create(NULL, "root", &root), 0);
    CHECK(0 == strcmp(root->name, "root"));
    CHECK_EQ(root->abi_version, OPENIB_HMEM_ABI_VERSION);

    /* Defaults copy. */
    CHECK_EQ(from_used_mark(root), 0);
    CHECK_EQ(to_used_mark(root), 0);

    /* Only copy_from overridden: copy_to keeps the default. */
    op.copy_from_hmem_iov = mark_from;
    CHECK_EQ(openib_hmem_set_op(root, FROM, &op, 0), 0);
    CHECK(openib_hmem_object_overridden(root, FROM));
    CHECK(!openib_hmem_object_overridden(root, TO));
    CHECK_EQ(from_used_mark(root), 1);
    CHECK_EQ(to_used_mark(root), 0);

    /* get_op returns the override; with FLAG_DEFAULT the default, which
     * really copies. */
    CHECK_EQ(openib_hmem_get_op(root, FROM, &got, 0), 0);
    CHECK(got.copy_from_hmem_iov == mark_from);
    CHECK_EQ(openib_hmem_get_op(root, FROM, &got, OPENIB_HMEM_FLAG_DEFAULT), 0);
    CHECK(got.copy_from_hmem_iov == openib_hmem_default_copy_from_hmem_iov);
    CHECK_EQ(openib_hmem_get_op(root, TO, &got, 0), 0);
    CHECK(got.copy_to_hmem_iov == openib_hmem_default_copy_to_hmem_iov);

    /* Then copy_to as well, independently. */
    op.copy_to_hmem_iov = mark_to;
    CHECK_EQ(openib_hmem_set_op(root, TO, &op, 0), 0);
    CHECK_EQ(from_used_mark(root), 1);
    CHECK_EQ(to_used_mark(root), 1);

    /* NULL member and NULL union both restore the default. */
    op.copy_from_hmem_iov = NULL;
    CHECK_EQ(openib_hmem_set_op(root, FROM, &op, 0), 0);
    CHECK_EQ(from_used_mark(root), 0);
    CHECK_EQ(to_used_mark(root), 1);
    CHECK_EQ(openib_hmem_set_op(root, TO, NULL, 0), 0);
    CHECK_EQ(to_used_mark(root), 0);
    CHECK_EQ(openib_hmem_get_op(root, TO, &got, 0), 0);
    CHECK(got.copy_to_hmem_iov == openib_hmem_default_copy_to_hmem_iov);

    openib_hmem_object_free(root);
}

static void test_not_supported(void)
{
    struct openib_hmem_object *root;
    union openib_hmem_op op = { .copy_from_hmem_iov = mark_from }, got;
    struct openib_hmem_override_ops ops = OPENIB_HMEM_OVERRIDE_OPS_INITIALIZER;
    struct openib_hmem_stats st = OPENIB_HMEM_STATS_INITIALIZER;
    /* Objects that are not the component's. */
    struct openib_hmem_object bare = OPENIB_HMEM_OBJECT_INITIALIZER;      /* ops NULL */
    struct openib_hmem_object_ops empty_ops = OPENIB_HMEM_OBJECT_OPS_INITIALIZER;
    struct openib_hmem_object hollow = OPENIB_HMEM_OBJECT_INITIALIZER;    /* ops all NULL */
    struct openib_hmem_object_ops short_ops; /* an older table: set_op only */
    struct openib_hmem_object old = OPENIB_HMEM_OBJECT_INITIALIZER;
    struct openib_hmem_object zero = { .size = 0 };
    int rc;

    hollow.ops = &empty_ops;
    memset(&short_ops, 0, sizeof(short_ops));
    short_ops.size = OPENIB_SIZE_THROUGH(struct openib_hmem_object_ops, set_op);
    CHECK_EQ(openib_hmem_object_create(NULL, "root", &root), 0);
    short_ops.set_op = root->ops->set_op;
    /* beyond its size: must never be called */
    short_ops.get_op = (int (*)(const struct openib_hmem_object *, enum openib_hmem_op_type,
                                union openib_hmem_op *, uint64_t)) 1;
    old.ops = &short_ops;
    zero.ops = &empty_ops;

    /* Unknown op types: -EOPNOTSUPP, non-fatal, nothing changes. */
    CHECK_EQ(openib_hmem_set_op(root, (enum openib_hmem_op_type) 2, &op, 0), -EOPNOTSUPP);
    CHECK_EQ(openib_hmem_set_op(root, (enum openib_hmem_op_type) 99, &op, 0), -EOPNOTSUPP);
    CHECK_EQ(openib_hmem_set_op(root, (enum openib_hmem_op_type) -1, &op, 0), -EOPNOTSUPP);
    CHECK_EQ(openib_hmem_get_op(root, (enum openib_hmem_op_type) 2, &got, 0), -EOPNOTSUPP);
    CHECK(openib_hmem_not_supported(-EOPNOTSUPP));
    CHECK(openib_hmem_not_supported(-ENOSYS));
    CHECK(!openib_hmem_not_supported(-EINVAL));
    CHECK(!openib_hmem_not_supported(0));
    CHECK_EQ(from_used_mark(root), 0);

    /* Unknown flags: -EINVAL (a request we cannot honour, not a missing op). */
    CHECK_EQ(openib_hmem_set_op(root, FROM, &op, 1ull << 40), -EINVAL);
    CHECK_EQ(openib_hmem_set_op(root, FROM, &op, OPENIB_HMEM_FLAG_DEFAULT), -EINVAL);
    CHECK_EQ(openib_hmem_get_op(root, FROM, &got, OPENIB_HMEM_FLAG_DESCENDANTS), -EINVAL);
    CHECK_EQ(openib_hmem_get_op(root, FROM, NULL, 0), -EINVAL);
    CHECK_EQ(from_used_mark(root), 0);

    /* Unsupported objects: -ENOSYS from every entry point. */
    CHECK_EQ(openib_hmem_set_op(NULL, FROM, &op, 0), -ENOSYS);
    CHECK_EQ(openib_hmem_get_op(NULL, FROM, &got, 0), -ENOSYS);
    CHECK_EQ(openib_hmem_set_ops(NULL, &ops), -ENOSYS);
    CHECK_EQ(openib_hmem_get_stats(NULL, &st), -ENOSYS);
    CHECK_EQ(openib_hmem_set_op(&bare, FROM, &op, 0), -ENOSYS);
    CHECK_EQ(openib_hmem_set_ops(&bare, &ops), -ENOSYS);
    CHECK_EQ(openib_hmem_set_op(&hollow, FROM, &op, 0), -ENOSYS);
    CHECK_EQ(openib_hmem_get_op(&hollow, FROM, &got, 0), -ENOSYS);
    CHECK_EQ(openib_hmem_set_ops(&hollow, &ops), -ENOSYS);
    CHECK_EQ(openib_hmem_get_stats(&hollow, &st), -ENOSYS);
    CHECK_EQ(openib_hmem_set_op(&zero, FROM, &op, 0), -ENOSYS);
    /* An older ops table: what its size covers works, the rest is -ENOSYS
     * (its set_op is the component's, which refuses a foreign object). */
    CHECK_EQ(openib_hmem_get_op(&old, FROM, &got, 0), -ENOSYS);
    CHECK_EQ(openib_hmem_set_ops(&old, &ops), -ENOSYS);
    rc = openib_hmem_set_op(&old, FROM, &op, 0);
    CHECK_EQ(rc, -ENOSYS);
    /* Copies and children refuse foreign objects too. */
    CHECK_EQ(openib_hmem_copy_from_buf(&hollow, OPENIB_HMEM_SYSTEM, 0, dst, src, 4), -EINVAL);
    {
        struct openib_hmem_object *child = (void *) 1;
        CHECK_EQ(openib_hmem_object_create(&hollow, "x", &child), -EINVAL);
        CHECK(NULL == child);
    }
    openib_hmem_object_free(&hollow); /* not ours: ignored, must not crash */
    openib_hmem_object_free(NULL);

    openib_hmem_object_free(root);
}

static void test_inheritance(void)
{
    struct openib_hmem_object *root, *before, *after, *grand, *before_child;
    union openib_hmem_op op = { .copy_from_hmem_iov = mark_from };
    union openib_hmem_op op_to = { .copy_to_hmem_iov = mark_to };

    CHECK_EQ(openib_hmem_object_create(NULL, "root", &root), 0);
    CHECK_EQ(openib_hmem_object_create(root, "before", &before), 0);
    CHECK_EQ(openib_hmem_object_create(before, "before.child", &before_child), 0);
    CHECK_EQ(openib_hmem_set_op(root, FROM, &op, 0), 0);
    CHECK_EQ(openib_hmem_object_create(root, "after", &after), 0);
    CHECK_EQ(openib_hmem_object_create(after, "after.child", &grand), 0);

    CHECK_EQ(from_used_mark(root), 1);
    CHECK_EQ(from_used_mark(after), 1);   /* created afterwards: inherits */
    CHECK_EQ(from_used_mark(grand), 1);   /* and passes it on */
    CHECK_EQ(from_used_mark(before), 0);  /* created before: unaffected */
    CHECK_EQ(from_used_mark(before_child), 0);
    CHECK_EQ(to_used_mark(after), 0);     /* the other op: default */

    /* A copy, not a link: resetting the root leaves 'after' overridden. */
    CHECK_EQ(openib_hmem_set_op(root, FROM, NULL, 0), 0);
    CHECK_EQ(from_used_mark(root), 0);
    CHECK_EQ(from_used_mark(after), 1);

    /* A child's own override does not climb to its parent. */
    CHECK_EQ(openib_hmem_set_op(before, TO, &op_to, 0), 0);
    CHECK_EQ(to_used_mark(before), 1);
    CHECK_EQ(to_used_mark(root), 0);
    CHECK_EQ(to_used_mark(before_child), 0);

    /* FLAG_DESCENDANTS reaches everything below, created before or after. */
    CHECK_EQ(openib_hmem_set_op(root, FROM, &op, OPENIB_HMEM_FLAG_DESCENDANTS), 0);
    CHECK_EQ(from_used_mark(before), 1);
    CHECK_EQ(from_used_mark(before_child), 1);
    CHECK_EQ(openib_hmem_set_op(root, FROM, NULL, OPENIB_HMEM_FLAG_DESCENDANTS), 0);
    CHECK_EQ(from_used_mark(after), 0);
    CHECK_EQ(from_used_mark(grand), 0);

    /* Freeing a parent leaves its children working (as roots). */
    openib_hmem_object_free(before);
    CHECK_EQ(to_used_mark(before_child), 0);
    CHECK_EQ(openib_hmem_set_op(before_child, TO, &op_to, 0), 0);
    CHECK_EQ(to_used_mark(before_child), 1);
    openib_hmem_object_free(before_child);
    openib_hmem_object_free(grand);
    openib_hmem_object_free(root);   /* before its child 'after' */
    CHECK_EQ(from_used_mark(after), 0);
    openib_hmem_object_free(after);
}

/* A caller compiled against a future header with one more op. */
struct override_ops_future {
    struct openib_hmem_override_ops v1;
    openib_hmem_copy_from_hmem_iov_fn copy_future;
    uint64_t future_flags;
};

static void test_set_ops(void)
{
    struct openib_hmem_object *root, *child;
    struct openib_hmem_override_ops ops;
    struct override_ops_future fut;

    CHECK_EQ(openib_hmem_object_create(NULL, "root", &root), 0);
    CHECK_EQ(openib_hmem_object_create(root, "child", &child), 0);

    /* Exact size, both ops. */
    CHECK_EQ(openib_hmem_override_ops_init(&ops), 0);
    CHECK_EQ(ops.size, sizeof(ops));
    CHECK_EQ(OPENIB_HMEM_OVERRIDE_OPS_V1_SIZE, sizeof(ops)); /* we are at v1 */
    ops.copy_from_hmem_iov = mark_from;
    ops.copy_to_hmem_iov = mark_to;
    CHECK_EQ(openib_hmem_set_ops(root, &ops), 0);
    CHECK_EQ(from_used_mark(root), 1);
    CHECK_EQ(to_used_mark(root), 1);
    CHECK_EQ(from_used_mark(child), 0); /* created before, no flag */

    /* The struct replaces the whole table: a NULL op is the default again. */
    ops.copy_to_hmem_iov = NULL;
    CHECK_EQ(openib_hmem_set_ops(root, &ops), 0);
    CHECK_EQ(from_used_mark(root), 1);
    CHECK_EQ(to_used_mark(root), 0);

    /* Smaller than v1 (a size that covers only the first op): -EINVAL, and
     * nothing changes. */
    ops.copy_to_hmem_iov = mark_to;
    ops.copy_from_hmem_iov = NULL;
    ops.size = OPENIB_SIZE_THROUGH(struct openib_hmem_override_ops, copy_from_hmem_iov);
    CHECK_EQ(openib_hmem_set_ops(root, &ops), -EINVAL);
    ops.size = 0;
    CHECK_EQ(openib_hmem_set_ops(root, &ops), -EINVAL);
    CHECK_EQ(openib_hmem_set_ops(root, NULL), -EINVAL);
    CHECK_EQ(from_used_mark(root), 1);
    CHECK_EQ(to_used_mark(root), 0);

    /* Unknown flag: -EINVAL, nothing changes; DESCENDANTS reaches 'child'. */
    ops.size = sizeof(ops);
    ops.flags = 1u << 7;
    CHECK_EQ(openib_hmem_set_ops(root, &ops), -EINVAL);
    CHECK_EQ(from_used_mark(root), 1);
    CHECK_EQ(to_used_mark(root), 0);
    ops.flags = (uint32_t) OPENIB_HMEM_FLAG_DESCENDANTS;
    CHECK_EQ(openib_hmem_set_ops(root, &ops), 0);
    CHECK_EQ(from_used_mark(root), 0);
    CHECK_EQ(to_used_mark(root), 1);
    CHECK_EQ(to_used_mark(child), 1);

    /* Larger (a newer caller) with a zero tail: accepted, v1 ops used. */
    memset(&fut, 0, sizeof(fut));
    fut.v1.size = sizeof(fut);
    fut.v1.copy_from_hmem_iov = mark_from;
    CHECK_EQ(openib_hmem_set_ops(root, &fut.v1), 0);
    CHECK_EQ(from_used_mark(root), 1);
    CHECK_EQ(to_used_mark(root), 0);

    /* Larger with a non-zero unknown tail: -E2BIG, nothing changes. */
    fut.v1.copy_from_hmem_iov = NULL;
    fut.v1.copy_to_hmem_iov = mark_to;
    fut.copy_future = mark_from;
    CHECK_EQ(openib_hmem_set_ops(root, &fut.v1), -E2BIG);
    fut.copy_future = NULL;
    fut.future_flags = 1;
    CHECK_EQ(openib_hmem_set_ops(root, &fut.v1), -E2BIG);
    CHECK_EQ(from_used_mark(root), 1);
    CHECK_EQ(to_used_mark(root), 0);

    openib_hmem_object_free(child);
    openib_hmem_object_free(root);
}

static void test_stats(void)
{
    struct openib_hmem_object *o;
    struct openib_hmem_stats st;
    union openib_hmem_op op = { .copy_from_hmem_iov = mark_from };
    struct {
        struct openib_hmem_stats v1;
        uint64_t future[3];
    } big;
    struct iovec iov[2] = { { src, 10 }, { src + 10, 20 } };

    CHECK_EQ(openib_hmem_object_create(NULL, "stats", &o), 0);
    CHECK_EQ(openib_hmem_copy_from_iov(o, OPENIB_HMEM_SYSTEM, 0, dst, 64, iov, 2, 5), 25);
    CHECK_EQ(openib_hmem_copy_to_iov(o, OPENIB_HMEM_SYSTEM, 0, iov, 2, 0, dst, 7), 7);
    CHECK_EQ(openib_hmem_copy_from_iov(o, OPENIB_HMEM_SYSTEM, 0, dst, 4, iov, 2, 31), -EINVAL);
    CHECK_EQ(openib_hmem_set_op(o, FROM, &op, 0), 0);
    CHECK_EQ(openib_hmem_copy_from_buf(o, OPENIB_HMEM_SYSTEM, 0, dst, src, 3), 3);

    CHECK_EQ(openib_hmem_stats_init(&st), 0);
    CHECK_EQ(openib_hmem_get_stats(o, &st), 0);
    CHECK_EQ(st.from_hmem_calls, 2);
    CHECK_EQ(st.from_hmem_bytes, 28);
    CHECK_EQ(st.from_hmem_override_calls, 1);
    CHECK_EQ(st.to_hmem_calls, 1);
    CHECK_EQ(st.to_hmem_bytes, 7);
    CHECK_EQ(st.to_hmem_override_calls, 0);
    CHECK_EQ(st.errors, 1);

    /* A broken override (claims more than asked) and a failing one. */
    op.copy_from_hmem_iov = liar_from;
    CHECK_EQ(openib_hmem_set_op(o, FROM, &op, 0), 0);
    CHECK_EQ(openib_hmem_copy_from_buf(o, OPENIB_HMEM_SYSTEM, 0, dst, src, 8), -EIO);
    op.copy_from_hmem_iov = failing_from;
    CHECK_EQ(openib_hmem_set_op(o, FROM, &op, 0), 0);
    CHECK_EQ(openib_hmem_copy_from_buf(o, OPENIB_HMEM_SYSTEM, 0, dst, src, 8), -ENOSPC);
    CHECK_EQ(openib_hmem_get_stats(o, &st), 0);
    CHECK_EQ(st.errors, 3);
    CHECK_EQ(st.from_hmem_calls, 2);

    /* Output struct from a newer caller: known fields filled, the rest
     * zeroed (even if the caller left garbage there). */
    memset(&big, 0xEE, sizeof(big));
    big.v1.size = sizeof(big);
    CHECK_EQ(openib_hmem_get_stats(o, &big.v1), 0);
    CHECK_EQ(big.v1.size, sizeof(big));
    CHECK_EQ(big.v1.from_hmem_bytes, 28);
    CHECK_EQ(big.v1.errors, 3);
    CHECK_EQ(big.future[0], 0);
    CHECK_EQ(big.future[2], 0);
    /* Smaller than v1: -EINVAL. */
    st.size = OPENIB_SIZE_THROUGH(struct openib_hmem_stats, to_hmem_bytes);
    CHECK_EQ(openib_hmem_get_stats(o, &st), -EINVAL);

    openib_hmem_object_reset_stats(o);
    st.size = sizeof(st);
    CHECK_EQ(openib_hmem_get_stats(o, &st), 0);
    CHECK_EQ(st.from_hmem_calls + st.to_hmem_calls + st.errors + st.from_hmem_bytes, 0);
    openib_hmem_object_free(o);
}

static void test_root_publish(void)
{
    struct openib_hmem_object *r;

    CHECK(NULL == openib_hmem_root());
    CHECK_EQ(openib_hmem_object_create(NULL, "published", &r), 0);
    openib_hmem_publish_root(r);
    CHECK(openib_hmem_root() == r);
    openib_hmem_object_free(r); /* freeing it unpublishes it */
    CHECK(NULL == openib_hmem_root());
}

static void test_initializers(void)
{
    struct openib_hmem_override_ops ops = OPENIB_HMEM_OVERRIDE_OPS_INITIALIZER, ops2;
    struct openib_hmem_stats st = OPENIB_HMEM_STATS_INITIALIZER;
    struct openib_hmem_object_ops oo = OPENIB_HMEM_OBJECT_OPS_INITIALIZER;
    struct openib_hmem_object ob = OPENIB_HMEM_OBJECT_INITIALIZER, ob2;
    struct openib_hmem_plugin_info pi = OPENIB_HMEM_PLUGIN_INFO_INITIALIZER("x", NULL, NULL), pi2;
    union openib_hmem_op u = OPENIB_HMEM_OP_INITIALIZER, u2;

    memset(&ops2, 0xFF, sizeof(ops2));
    openib_hmem_override_ops_init(&ops2);
    CHECK(0 == memcmp(&ops, &ops2, sizeof(ops)) || ops2.size == ops.size);
    CHECK(NULL == ops2.copy_from_hmem_iov && NULL == ops2.copy_to_hmem_iov && 0 == ops2.flags);
    openib_hmem_override_ops_destroy(&ops2);
    CHECK_EQ(st.size, sizeof(st));
    CHECK_EQ(oo.size, sizeof(oo));
    CHECK_EQ(ob.size, sizeof(ob));
    CHECK_EQ(ob.abi_version, OPENIB_HMEM_ABI_VERSION);
    openib_hmem_object_init(&ob2);
    CHECK_EQ(ob2.size, sizeof(ob2));
    CHECK(NULL == ob2.ops);
    openib_hmem_object_destroy(&ob2);
    CHECK_EQ(pi.size, sizeof(pi));
    CHECK_EQ(pi.abi_version, OPENIB_HMEM_ABI_VERSION);
    openib_hmem_plugin_info_init(&pi2);
    CHECK_EQ(pi2.abi_version, OPENIB_HMEM_ABI_VERSION);
    CHECK(NULL == pi2.init);
    openib_hmem_plugin_info_destroy(&pi2);
    memset(&u2, 0xFF, sizeof(u2));
    openib_hmem_op_init(&u2);
    CHECK(NULL == u.copy_from_hmem_iov && NULL == u2.copy_to_hmem_iov);
    openib_hmem_op_destroy(&u2);
    CHECK(0 == strcmp(openib_hmem_iface_name(OPENIB_HMEM_CUDA), "cuda"));
    CHECK(0 == strcmp(openib_hmem_iface_name((enum openib_hmem_iface) 17), "unknown"));
    /* Stable numbers. */
    CHECK_EQ(OPENIB_HMEM_SYSTEM, 0);
    CHECK_EQ(OPENIB_HMEM_CUDA, 1);
    CHECK_EQ(OPENIB_HMEM_ROCM, 2);
    CHECK_EQ(OPENIB_HMEM_ZE, 3);
    CHECK_EQ(OPENIB_HMEM_OP_COPY_FROM_HMEM_IOV, 0);
    CHECK_EQ(OPENIB_HMEM_OP_COPY_TO_HMEM_IOV, 1);
}

int main(void)
{
    test_initializers();
    test_set_op_each();
    test_not_supported();
    test_inheritance();
    test_set_ops();
    test_stats();
    test_root_publish();
    return unit_finish("test_hmem_ops");
}

/*
 * test_hmem_app.c - an application that links nothing of openib-ng and
 * finds the root object with openib_hmem_find_root() from the public
 * header: -ENOSYS before the component is loaded; found when it is loaded
 * privately (RTLD_LOCAL, through the soname) or globally; -ENODEV when it is
 * loaded without a root. Then it overrides an operation on the root with
 * OPENIB_HMEM_FLAG_DESCENDANTS and sees the component's existing module use
 * it. Each case runs in a child (loading is per process).
 * Built twice: plain (the header searches the global scope through
 * RTLD_DEFAULT where the C library has it) and as test_hmem_app_posix with
 * OPENIB_HMEM_FIND_ROOT_NO_RTLD_DEFAULT (through dlopen(NULL), as on C
 * libraries without RTLD_DEFAULT).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Our stand-in component's file name, for the RTLD_LOCAL fallback. */
#define OPENIB_HMEM_COMPONENT_SONAME "hmem_fake_component.so"
#include "openib/openib_hmem.h"

#include "tests/unit/hmem/hmem_test.h"

static int app_calls;

static ssize_t app_from(void *dst, size_t len, enum openib_hmem_iface iface, uint64_t device,
                        const struct iovec *iov, size_t cnt, uint64_t off)
{
    app_calls++;
    memset(dst, 'A', len);
    return (ssize_t) len;
}

static const char *component(void)
{
    return hmem_test_module("tests/unit/hmem", "hmem_fake_component");
}

static void loaded(int mode)
{
    struct openib_hmem_object *root = NULL;
    struct openib_hmem_stats st = OPENIB_HMEM_STATS_INITIALIZER;
    union openib_hmem_op op = { .copy_from_hmem_iov = app_from };
    ssize_t (*pack)(void *, const void *, size_t);
    char src[8] = "payload", dst[8] = "";
    void *h;

    CHECK_EQ(openib_hmem_find_root(&root), -ENOSYS);
    h = dlopen(component(), RTLD_NOW | mode);
    CHECK(NULL != h);
    if (NULL == h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return;
    }
    CHECK_EQ(openib_hmem_find_root(&root), 0);
    CHECK(NULL != root);
    if (NULL == root) {
        return;
    }
    CHECK(0 == strcmp(root->name, "fake_component"));
    CHECK_EQ(root->abi_version, OPENIB_HMEM_ABI_VERSION);

    *(void **) &pack = dlsym(h, "fake_component_pack");
    CHECK(NULL != pack);
    CHECK_EQ(pack(dst, src, 8), 8);
    CHECK(0 == memcmp(dst, "payload", 8));
    /* The module existed before: without DESCENDANTS it keeps the default. */
    CHECK_EQ(openib_hmem_set_op(root, OPENIB_HMEM_OP_COPY_FROM_HMEM_IOV, &op, 0), 0);
    CHECK_EQ(pack(dst, src, 8), 8);
    CHECK_EQ(app_calls, 0);
    CHECK_EQ(openib_hmem_set_op(root, OPENIB_HMEM_OP_COPY_FROM_HMEM_IOV, &op,
                                OPENIB_HMEM_FLAG_DESCENDANTS),
             0);
    CHECK_EQ(pack(dst, src, 8), 8);
    CHECK_EQ(app_calls, 1);
    CHECK(0 == memcmp(dst, "AAAAAAAA", 8));
    CHECK_EQ(openib_hmem_set_op(root, (enum openib_hmem_op_type) 5, &op, 0), -EOPNOTSUPP);
    CHECK_EQ(openib_hmem_get_stats(root, &st), 0);
    dlclose(h);
}

static void local(void) { loaded(RTLD_LOCAL); }
static void global(void) { loaded(RTLD_GLOBAL); }

static void no_root(void)
{
    struct openib_hmem_object *root = (void *) 1;
    void *h;

    setenv("FAKE_COMPONENT_NO_ROOT", "1", 1);
    h = dlopen(component(), RTLD_NOW | RTLD_LOCAL);
    CHECK(NULL != h);
    CHECK_EQ(openib_hmem_find_root(&root), -ENODEV);
    CHECK(NULL == root);
    CHECK_EQ(openib_hmem_find_root(NULL), -EINVAL);
    if (NULL != h) {
        dlclose(h);
    }
}

int main(void)
{
    struct openib_hmem_object *root = (void *) 1;

#ifdef OPENIB_HMEM_FIND_ROOT_NO_RTLD_DEFAULT
    printf("global-scope lookup through dlopen(NULL)\n");
#else
    printf("global-scope lookup through RTLD_DEFAULT\n");
#endif
    CHECK_EQ(openib_hmem_find_root(&root), -ENOSYS);
    CHECK(NULL == root);
    in_child("component loaded RTLD_LOCAL", local);
    in_child("component loaded RTLD_GLOBAL", global);
    in_child("component without a root", no_root);
#ifdef OPENIB_HMEM_FIND_ROOT_NO_RTLD_DEFAULT
    return unit_finish("test_hmem_app_posix");
#else
    return unit_finish("test_hmem_app");
#endif
}

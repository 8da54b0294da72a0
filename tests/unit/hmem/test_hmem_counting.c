/*
 * test_hmem_counting.c - the example counting plug-in, loaded through the
 * same path as btl_openib_hmem_override: it must count exactly the bytes
 * copied, leave data intact, honour OPENIB_HMEM_COUNT_OPS (one op only ->
 * the other runs the default, uncounted), and report its totals in
 * OPENIB_HMEM_COUNT_FILE when unloaded. Each mode runs in a child process
 * (a fresh load of the plug-in).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hmem/openib_hmem_btl.h"
#include "tests/unit/hmem/hmem_test.h"

static char count_file[256];

static const char *counting_so(void)
{
    return hmem_test_module("hmem/examples", "openib_hmem_counting");
}

/* In the child: load with the given mode, copy, check, unload. */
static int child(const char *mode, int expect_load_ok)
{
    struct openib_hmem_object *root, *module;
    struct openib_hmem_stats st = OPENIB_HMEM_STATS_INITIALIZER;
    unsigned char pool[512], host[512];
    struct iovec iov[3] = { { pool, 100 }, { pool + 100, 0 }, { pool + 200, 300 } };
    char why[512];
    int i, rc, only_to, only_from;

    unit_checks = unit_failures = 0;
    setenv("OPENIB_HMEM_COUNT_OPS", mode, 1);
    setenv("OPENIB_HMEM_COUNT_FILE", count_file, 1);
    CHECK_EQ(openib_hmem_object_create(NULL, "btl_openib", &root), 0);
    rc = openib_hmem_load_plugin(root, counting_so(), why, sizeof(why));
    if (!expect_load_ok) {
        CHECK_EQ(rc, -EINVAL);
        CHECK_STR_CONTAINS(why, "OPENIB_HMEM_COUNT_OPS='sideways'");
        return unit_finish(mode);
    }
    CHECK_EQ(rc, 0);
    if (0 != rc) {
        fprintf(stderr, "load: %s\n", why);
        return 1;
    }
    CHECK_EQ(openib_hmem_object_create(root, "module", &module), 0);
    for (i = 0; i < 512; ++i) {
        pool[i] = (unsigned char) (i * 13);
    }
    /* copy_from: 3 x 100 bytes at offsets 50, 150, 250 (crossing the empty
     * entry); copy_to: 2 x 50 bytes. */
    for (i = 0; i < 3; ++i) {
        CHECK_EQ(openib_hmem_copy_from_iov(module, OPENIB_HMEM_SYSTEM, 0, host, 100, iov, 3,
                                           50 + 100 * i),
                 100);
    }
    CHECK(0 == memcmp(host, pool + 350, 100)); /* last: offset 250 -> pool[350] */
    memset(host, 0xEE, 50);
    CHECK_EQ(openib_hmem_copy_to_iov(module, OPENIB_HMEM_SYSTEM, 0, iov, 3, 0, host, 50), 50);
    CHECK_EQ(openib_hmem_copy_to_iov(module, OPENIB_HMEM_SYSTEM, 0, iov, 3, 120, host, 50), 50);
    CHECK_EQ(pool[0], 0xEE);
    CHECK_EQ(pool[49], 0xEE);
    CHECK_EQ(pool[50], (unsigned char) (50 * 13));
    CHECK_EQ(pool[220], 0xEE); /* offset 120 = 20 bytes into the third entry */
    CHECK_EQ(openib_hmem_get_stats(module, &st), 0);
    CHECK_EQ(st.from_hmem_bytes, 300);
    CHECK_EQ(st.to_hmem_bytes, 100);
    only_to = !strcmp(mode, "to") || !strcmp(mode, "copy_to_hmem_iov");
    only_from = !strcmp(mode, "from") || !strcmp(mode, "copy_from_hmem_iov");
    CHECK_EQ(st.from_hmem_override_calls, only_to ? 0 : 3);
    CHECK_EQ(st.to_hmem_override_calls, only_from ? 0 : 2);

    openib_hmem_object_free(module);
    openib_hmem_object_free(root);
    openib_hmem_unload_plugins(); /* fini writes the totals */
    return unit_finish(mode);
}

static int run_child(const char *mode, int expect_load_ok, pid_t *pid_out)
{
    int status = 0;
    pid_t pid;

    fflush(NULL);
    pid = fork();
    if (0 == pid) {
        int rc = child(mode, expect_load_ok);
        fflush(NULL);
        _exit(rc);
    }
    *pid_out = pid;
    return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
           0 == WEXITSTATUS(status);
}

/* Find the line of pid in the count file and read its numbers. */
static int read_counts(pid_t pid, unsigned long long v[4], char *ops, size_t ops_len)
{
    FILE *f = fopen(count_file, "r");
    char line[512], want[32];
    int found = 0;

    if (NULL == f) {
        return 0;
    }
    snprintf(want, sizeof(want), "pid=%ld ", (long) pid);
    while (NULL != fgets(line, sizeof(line), f)) {
        char o[16];
        if (NULL == strstr(line, want)) {
            continue;
        }
        found += 5 == sscanf(strstr(line, "ops="),
                             "ops=%15s from_hmem_calls=%llu from_hmem_bytes=%llu "
                             "to_hmem_calls=%llu to_hmem_bytes=%llu",
                             o, &v[0], &v[1], &v[2], &v[3]);
        snprintf(ops, ops_len, "%s", o);
    }
    fclose(f);
    return found;
}

int main(void)
{
    static const struct {
        const char *mode;
        const char *reported;
        unsigned long long v[4]; /* from calls, from bytes, to calls, to bytes */
    } cases[] = {
        { .mode = "both", .reported = "both", .v = { 3, 300, 2, 100 } },
        { .mode = "", .reported = "both", .v = { 3, 300, 2, 100 } },
        { .mode = "from", .reported = "from", .v = { 3, 300, 0, 0 } },
        { .mode = "copy_to_hmem_iov", .reported = "to", .v = { 0, 0, 2, 100 } },
    };
    unsigned long long v[4];
    char ops[16];
    size_t i;
    pid_t pid;
    int ok;

    snprintf(count_file, sizeof(count_file), "/tmp/openib_hmem_count_%ld.txt", (long) getpid());
    unlink(count_file);
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
        ok = run_child(cases[i].mode, 1, &pid);
        CHECK(ok);
        CHECK_EQ(read_counts(pid, v, ops, sizeof(ops)), 1);
        CHECK(0 == strcmp(ops, cases[i].reported));
        CHECK_EQ(v[0], cases[i].v[0]);
        CHECK_EQ(v[1], cases[i].v[1]);
        CHECK_EQ(v[2], cases[i].v[2]);
        CHECK_EQ(v[3], cases[i].v[3]);
    }
    /* A bad mode fails init with a reason, and reports nothing. */
    ok = run_child("sideways", 0, &pid);
    CHECK(ok);
    CHECK_EQ(read_counts(pid, v, ops, sizeof(ops)), 0);
    unlink(count_file);
    return unit_finish("test_hmem_counting");
}

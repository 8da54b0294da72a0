/*
 * hmem_test.h - what the HMEM unit tests share: tests/unit/unit.h's checks,
 * a check that prints both numbers, where the test plug-ins were built, and
 * scenarios run in a child process.
 */
#ifndef OPENIB_HMEM_TEST_H
#define OPENIB_HMEM_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/unit.h"

#define CHECK_EQ(a, b)                                                                   \
    do {                                                                                 \
        long long a_ = (long long) (a), b_ = (long long) (b);                            \
        unit_checks++;                                                                   \
        if (a_ != b_) {                                                                  \
            unit_failures++;                                                             \
            fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %lld, %s == %lld\n", __FILE__, \
                    __LINE__, #a, a_, #b, b_);                                           \
        }                                                                                \
    } while (0)

/* Exit code automake's harness reads as SKIP. */
#define HMEM_TEST_SKIP 77

/* Path of a test module built by libtool under the build tree:
 * DIR/.libs/NAME.so. The harness exports OPENIB_BUILDDIR; the compile-time
 * HMEM_TEST_BUILDDIR covers running a test binary by hand. */
static inline const char *hmem_test_module(const char *dir, const char *name)
{
    static char buf[8][1024];
    static int next;
    const char *top = getenv("OPENIB_BUILDDIR");
    char *out = buf[next++ % 8];

#ifdef HMEM_TEST_BUILDDIR
    if (NULL == top || '\0' == top[0]) {
        top = HMEM_TEST_BUILDDIR;
    }
#endif
    if (NULL == top) {
        top = ".";
    }
    snprintf(out, sizeof(buf[0]), "%s/%s/.libs/%s.so", top, dir, name);
    return out;
}

/* Run one scenario in a forked child (HMEM start-up state is process-wide
 * and cannot be undone), with its own check counts; a child that fails or
 * dies counts as one failed check here. */
static inline void in_child(const char *name, void (*fn)(void))
{
    pid_t pid;
    int status = 0;

    fflush(NULL);
    pid = fork();
    if (0 == pid) {
        int rc;

        unit_checks = unit_failures = 0;
        fn();
        rc = unit_finish(name);
        fflush(NULL);
        _exit(rc);
    }
    unit_checks++;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        0 != WEXITSTATUS(status)) {
        unit_failures++;
        fprintf(stderr, "scenario '%s' failed (status 0x%x)\n", name, status);
    }
}

#endif

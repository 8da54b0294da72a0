/*
 * hmem_test.h - what the HMEM unit tests share: tests/unit/unit.h's checks,
 * a check that prints both numbers, and where the test plug-ins were built.
 */
#ifndef OPENIB_HMEM_TEST_H
#define OPENIB_HMEM_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

#endif

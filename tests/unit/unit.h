/*
 * unit.h - a minimal assertion kit for the unit tests: each failed check
 * prints where and what, and the test exits non-zero at the end.
 */
#ifndef OPENIB_UNIT_H
#define OPENIB_UNIT_H

#include <stdio.h>
#include <string.h>

static int unit_failures;
static int unit_checks;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        unit_checks++;                                                               \
        if (!(cond)) {                                                               \
            unit_failures++;                                                         \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                            \
    } while (0)

#define CHECK_STR_CONTAINS(hay, needle)                                                   \
    do {                                                                                  \
        unit_checks++;                                                                    \
        if (!strstr((hay), (needle))) {                                                   \
            unit_failures++;                                                              \
            fprintf(stderr, "%s:%d: '%s' does not contain '%s'\n", __FILE__, __LINE__,    \
                    (hay), (needle));                                                     \
        }                                                                                 \
    } while (0)

static inline int unit_finish(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, unit_checks, unit_failures);
    return unit_failures ? 1 : 0;
}

#endif

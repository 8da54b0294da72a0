/*
 * cpc_test.h - the few assertion macros the connect/ unit tests share.
 * A failed CHECK prints where and why, counts, and the test keeps going so
 * one run shows every failure; main() returns test_failures != 0.
 */
#ifndef CPC_TEST_H
#define CPC_TEST_H

#include <stdio.h>
#include <string.h>

static int test_failures;
static int test_checks;

#define CHECK(cond)                                                                   \
    do {                                                                              \
        ++test_checks;                                                                \
        if (!(cond)) {                                                                \
            ++test_failures;                                                          \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);  \
        }                                                                             \
    } while (0)

#define CHECK_EQ(a, b)                                                                \
    do {                                                                              \
        long long va_ = (long long) (a), vb_ = (long long) (b);                       \
        ++test_checks;                                                                \
        if (va_ != vb_) {                                                             \
            ++test_failures;                                                          \
            fprintf(stderr, "%s:%d: CHECK failed: %s == %s (%lld != %lld)\n",         \
                    __FILE__, __LINE__, #a, #b, va_, vb_);                             \
        }                                                                             \
    } while (0)

#define CHECK_STR_HAS(hay, needle)                                                    \
    do {                                                                              \
        const char *h_ = (hay), *n_ = (needle);                                       \
        ++test_checks;                                                                \
        if (NULL == h_ || NULL == strstr(h_, n_)) {                                   \
            ++test_failures;                                                          \
            fprintf(stderr, "%s:%d: CHECK failed: \"%s\" does not contain \"%s\"\n",  \
                    __FILE__, __LINE__, h_ ? h_ : "(null)", n_);                       \
        }                                                                             \
    } while (0)

static inline int test_report(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, test_checks, test_failures);
    return test_failures ? 1 : 0;
}

#endif

/*
 * btl_openib_clock.h - the BTL's monotonic clock (timeouts, statistics).
 */
#ifndef BTL_OPENIB_CLOCK_H
#define BTL_OPENIB_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t openib_now_usec(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t) t.tv_sec * 1000000u + (uint64_t) t.tv_nsec / 1000u;
}

static inline long openib_now_ms(void)
{
    return (long) (openib_now_usec() / 1000u);
}

#endif

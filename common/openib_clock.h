/*
 * openib_clock.h - the component's one monotonic clock: the BTL's timeouts
 * and statistics, the CPCs' deadlines and retries, the side channel's
 * keepalives. CLOCK_MONOTONIC: a wall-clock step must not fire or stall a
 * timeout.
 */
#ifndef OPENIB_CLOCK_H
#define OPENIB_CLOCK_H

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

/*
 * openib_evthread.c - a progress thread's stop that cannot be missed
 * (openib_evthread.h).
 */
#include "opal_config.h"

#include "opal/runtime/opal_progress_threads.h"

#include "common/openib_evthread.h"

static void on_tick(int fd, short what, void *arg)
{
    (void) fd;
    (void) what;
    (void) arg;
}

/* Open MPI's pause ends the thread's loop with a loopbreak, which is lost
 * when it lands between two turns of the loop (a new turn clears it): the
 * thread would then sleep in the base until its next event, and the join
 * with it. A tick every 10 ms ends each turn, so the thread sees that it
 * is to stop within one tick whatever became of the loopbreak. */
void openib_evthread_pause(const char *name, opal_event_base_t *base)
{
    struct timeval every = { .tv_sec = 0, .tv_usec = 10000 };
    opal_event_t tick;

    opal_event_set(base, &tick, -1, OPAL_EV_PERSIST, on_tick, NULL);
    opal_event_add(&tick, &every);
    (void) opal_progress_thread_pause(name);
    opal_event_del(&tick);
}

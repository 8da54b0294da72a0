/*
 * openib_evthread.h - a thread of our own on Open MPI's event layer, for
 * a listener that must answer while the MPI thread computes (the oob side
 * channel): opal_progress_thread_init runs the
 * thread and its opal_event base; this adds the one thing its stop lacks.
 */
#ifndef OPENIB_EVTHREAD_H
#define OPENIB_EVTHREAD_H

#include "opal_config.h"

#include "opal/mca/event/event.h"

/* The base of thread `name`, started now (NULL: it could not be). */
opal_event_base_t *openib_evthread_start(const char *name);

/* Stop thread `name` and join it, so that the caller can delete its
 * events without racing a callback; then openib_evthread_end. */
void openib_evthread_pause(const char *name, opal_event_base_t *base);

/* Free the thread's base (its events deleted). */
void openib_evthread_end(const char *name);

#endif

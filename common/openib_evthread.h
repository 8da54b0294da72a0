/*
 * openib_evthread.h - stopping a thread of our own on Open MPI's event
 * layer. The listeners that must answer while the MPI thread computes (the
 * oob side channel, the rdma_cm listener) each run on a progress thread
 * of Open MPI's (opal_progress_thread_init, _finalize); its pause alone can
 * miss its stop, and this is the one thing added to it.
 */
#ifndef OPENIB_EVTHREAD_H
#define OPENIB_EVTHREAD_H

#include "opal_config.h"

#include "opal/mca/event/event.h"

/* Stop progress thread `name` (its event base: base) and join it, so that
 * the caller can then delete its events without racing a callback and
 * call opal_progress_thread_finalize. */
void openib_evthread_pause(const char *name, opal_event_base_t *base);

#endif

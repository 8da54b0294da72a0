/*
 * btl_openib_async.h - asynchronous device events and failing endpoints.
 *
 * A watcher thread (btl_openib_async_thread.c) sleeps in poll() on every
 * device's async fd. It reads each event as soon as it happens, copies
 * what the handler needs, acknowledges it (so destroying a QP or SRQ never
 * waits on us) and raises openib_async_pending. Progress tests that flag
 * with one load on every call and handles the events in the MPI thread,
 * where endpoint and queue state live: a port going down, a QP error or a
 * shared receive queue running low is acted on at the next progress call,
 * and the data path pays no system call.
 */
#ifndef BTL_OPENIB_ASYNC_H
#define BTL_OPENIB_ASYNC_H

#include "opal/class/opal_list.h"

#include "btl_openib/btl_openib.h"

/* An event as the watcher saw it. */
struct openib_async_event {
    opal_list_item_t super;
    struct openib_device *dev;
    enum ibv_event_type type;
    uint32_t qp_num;            /* QP events: read before the acknowledgement */
    const struct ibv_srq *srq;  /* SRQ events: only compared, never followed */
    int port;                   /* port events */
};
typedef struct openib_async_event openib_async_event_t;
OBJ_CLASS_DECLARATION(openib_async_event_t);

int openib_async_init(struct openib_device *dev);

/* Start the watcher once the devices are open; stop it before they close
 * (events not handled by then are dropped). */
int openib_async_start(void);
void openib_async_stop(void);

/* Set by the watcher when events wait; cleared by openib_async_take. */
extern volatile int32_t openib_async_pending;

/* Move the waiting events to `into` (the MPI thread). */
void openib_async_take(opal_list_t *into);

/* Handle waiting events; returns how many. */
int openib_async_progress(void);

static inline int openib_async_poll(void)
{
    return OPAL_UNLIKELY(__atomic_load_n(&openib_async_pending, __ATOMIC_ACQUIRE))
               ? openib_async_progress()
               : 0;
}

/* Mark an endpoint FAILED: queued operations complete with an error, the
 * PML's error callback runs, later sends return OPAL_ERR_UNREACH. */
void openib_endpoint_fail(mca_btl_openib_endpoint_t *ep, int rc, const char *why);

/* The same without telling anyone: the peer closed its side on purpose
 * (it is finalizing), so this is the end, not a failure. */
void openib_endpoint_close_quietly(mca_btl_openib_endpoint_t *ep);

#endif

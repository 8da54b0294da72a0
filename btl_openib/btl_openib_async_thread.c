/*
 * btl_openib_async_thread.c - the watcher thread of the devices' async
 * event fds (see btl_openib_async.h for why a thread).
 */
#include "opal_config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "opal/constants.h"
#include "opal/sys/atomic.h"

#include "btl_openib/btl_openib_async.h"
#include "mca/btl_openib_params.h"

OBJ_CLASS_INSTANCE(openib_async_event_t, opal_list_item_t, NULL, NULL);

volatile int32_t openib_async_pending;

static struct {
    pthread_t thread;
    bool running;
    int stop_fd;                   /* eventfd: written once to end the thread */
    pthread_mutex_t lock;          /* guards events */
    opal_list_t events;
    int ndev;
    struct openib_device **devs;   /* the devices watched (fixed while running) */
} watch = { .stop_fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER };

/* Copy what the handler needs; the event is acknowledged right after. */
static void record(struct openib_device *dev, const struct ibv_async_event *ev)
{
    struct openib_async_event *e = OBJ_NEW(openib_async_event_t);

    if (NULL == e) {
        return;
    }
    e->dev = dev;
    e->type = ev->event_type;
    switch (ev->event_type) {
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED:
        e->qp_num = ev->element.qp->qp_num;
        break;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED:
        e->srq = ev->element.srq;
        break;
    case IBV_EVENT_PORT_ACTIVE:
    case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_LID_CHANGE:
    case IBV_EVENT_PKEY_CHANGE:
    case IBV_EVENT_SM_CHANGE:
    case IBV_EVENT_CLIENT_REREGISTER:
    case IBV_EVENT_GID_CHANGE:
        e->port = ev->element.port_num;
        break;
    default:
        break;
    }
    pthread_mutex_lock(&watch.lock);
    opal_list_append(&watch.events, &e->super);
    pthread_mutex_unlock(&watch.lock);
}

static void *watch_main(void *arg)
{
    struct pollfd *fds = arg;
    int i, n = watch.ndev;

    for (;;) {
        bool any = false;

        if (poll(fds, (nfds_t) n + 1, -1) < 0) {
            if (EINTR == errno) {
                continue;
            }
            OPENIB_VERBOSE(1, "async event watcher: poll failed: %s; events are no longer read",
                           strerror(errno));
            break;
        }
        if (fds[n].revents) {
            break; /* openib_async_stop */
        }
        for (i = 0; i < n; ++i) {
            struct ibv_async_event ev;

            /* the fds are non-blocking (openib_async_init) */
            while (fds[i].revents && 0 == ibv_get_async_event(watch.devs[i]->ctx, &ev)) {
                record(watch.devs[i], &ev);
                ibv_ack_async_event(&ev);
                any = true;
            }
        }
        if (any) {
            opal_atomic_wmb();
            __atomic_store_n(&openib_async_pending, 1, __ATOMIC_RELEASE);
        }
    }
    free(fds);
    return NULL;
}

int openib_async_start(void)
{
    struct pollfd *fds;
    int i, rc;

    OBJ_CONSTRUCT(&watch.events, opal_list_t);
    watch.ndev = mca_btl_openib_component.num_devices;
    watch.devs = mca_btl_openib_component.devices;
    watch.stop_fd = eventfd(0, EFD_CLOEXEC);
    fds = calloc((size_t) watch.ndev + 1, sizeof(*fds));
    if (watch.stop_fd < 0 || NULL == fds) {
        rc = OPAL_ERR_OUT_OF_RESOURCE;
        goto fail;
    }
    for (i = 0; i < watch.ndev; ++i) {
        fds[i] = (struct pollfd) { .fd = watch.devs[i]->ctx->async_fd, .events = POLLIN };
    }
    fds[watch.ndev] = (struct pollfd) { .fd = watch.stop_fd, .events = POLLIN };
    rc = pthread_create(&watch.thread, NULL, watch_main, fds);
    if (rc) {
        OPENIB_VERBOSE(1, "cannot start the async event watcher: %s", strerror(rc));
        rc = OPAL_ERR_OUT_OF_RESOURCE;
        goto fail;
    }
    watch.running = true;
    return OPAL_SUCCESS;

fail:
    free(fds);
    if (watch.stop_fd >= 0) {
        close(watch.stop_fd);
        watch.stop_fd = -1;
    }
    OBJ_DESTRUCT(&watch.events);
    return rc;
}

void openib_async_stop(void)
{
    opal_list_item_t *it;
    uint64_t one = 1;

    if (!watch.running) {
        return;
    }
    if (write(watch.stop_fd, &one, sizeof(one)) != (ssize_t) sizeof(one)) {
        OPENIB_VERBOSE(1, "waking the async event watcher failed: %s", strerror(errno));
    }
    pthread_join(watch.thread, NULL);
    watch.running = false;
    close(watch.stop_fd);
    watch.stop_fd = -1;
    while (NULL != (it = opal_list_remove_first(&watch.events))) {
        OBJ_RELEASE(it);
    }
    OBJ_DESTRUCT(&watch.events);
    __atomic_store_n(&openib_async_pending, 0, __ATOMIC_RELAXED);
}

void openib_async_take(opal_list_t *into)
{
    /* before taking: a later event sets it again */
    __atomic_store_n(&openib_async_pending, 0, __ATOMIC_SEQ_CST);
    pthread_mutex_lock(&watch.lock);
    opal_list_join(into, opal_list_get_end(into), &watch.events);
    pthread_mutex_unlock(&watch.lock);
}

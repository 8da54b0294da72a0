/*
 * cpc_rdma_cm_listen.c - the rdma_cm listeners' own event channel, read by
 * a thread, so that a process computing outside MPI still answers the
 * connection requests sent to it.
 *
 * Why: nothing else answers for such a process. Its kernel's CM does send
 * an MRA for it (about 68 s of grace for RC requests), but that is a
 * kernel detail we do not rely on, and our initiator bounds each step far
 * below it anyway; a process that computes for minutes before its first
 * message to a peer would see every request to it time out.
 *
 * What the thread does, and only this. It reads the listeners' channel:
 * each CONNECT_REQUEST is copied and queued for the MPI thread (other
 * events, e.g. for a request's cm_id before the MPI thread moved it, are
 * acknowledged and dropped: the MPI thread's own answer then fails and it
 * handles that). A request the MPI thread has not taken within
 * RCM_BUSY_GRACE_MS is taken back by the thread and answered REJ(BUSY)
 * ("alive, ask again"; wire/rdma_cm_wire.c) and its cm_id destroyed.
 * Except an iWARP QP request (QREQ): it follows a handshake this process
 * accepted, and its initiator cannot ask again (a refused iWARP
 * connection leaves its QP in error), so it waits for the MPI thread
 * however long that takes (a loaded node can take more than the grace);
 * the initiator's own deadline bounds the wait. The
 * answer needs only our process name: the thread touches no endpoint, QP,
 * CPC or BTL state and calls nothing back, so the MPI thread needs no lock
 * for any of those, and a request from a peer we have no endpoint for is
 * answered the same way. Whoever removes a request from the queue (under
 * the lock) owns its cm_id and answers it; nobody else touches it.
 *
 * The MPI thread takes requests in its progress (rcm_listen_take) and
 * answers each as before (cpc_rdma_cm_responder.c); one it accepts is first
 * moved to the main channel (rdma_migrate_id), so the events that follow
 * (ESTABLISHED, ...) reach the MPI thread.
 *
 * Locking: one mutex guards the queue and the stored process name. The
 * thread also holds it while it reads and acknowledges an event and queues
 * the copy: a listener's rdma_destroy_id returns only once its events are
 * acknowledged, so after it, rcm_listen_forget() (taking the lock) sees
 * every request of that listener that can ever be queued. Calls that may
 * wait (reject, destroy, migrate) are made without the lock, by both
 * threads. The thread is an Open MPI progress thread of its own
 * (common/openib_evthread.h): it sleeps in its event base while nothing
 * is queued; with requests queued it wakes when the oldest one's grace
 * runs out.
 */
#include "opal_config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "opal/constants.h"
#include "opal/mca/event/event.h"
#include "opal/runtime/opal_progress_threads.h"

#include "common/openib_evthread.h"

#include "connect/cpc_active.h"
#include "connect/cpc_rdma_cm.h"

/* How long a request waits for the MPI thread before the thread says
 * "busy". Below the shortest step an initiator waits for an answer (1 s,
 * cpc_rdma_cm_conn.c), so every initiator hears it in time, whatever its
 * timeout; far above the time a process inside MPI takes to look at the
 * queue (every few hundred progress calls: microseconds to a millisecond),
 * so a process in MPI answers for itself. */
#define RCM_BUSY_GRACE_MS 250
/* Requests waiting for the MPI thread; past that, "busy" at once. */
#define RCM_QUEUE_MAX 256
/* One progress thread of Open MPI's for the listeners of every port. */
static const char thread_name[] = "openib rdma_cm listener";

/* Events read per wake-up, so answers never wait long for the lock. */
#define RCM_READ_MAX 64

struct pending {
    struct rcm_event ev;
    long at_ms;
    bool hold;                     /* a QREQ: never answered "busy" here */
};

static struct {
    pthread_mutex_t lock;
    opal_event_base_t *base;       /* the listener thread's */
    opal_event_t readable;         /* the channel has events */
    opal_event_t timer;            /* the oldest request's grace runs out */
    struct rdma_event_channel *ch;
    int refs;
    struct pending *q;             /* oldest first */
    int n;
    int count;                     /* n, read without the lock (atomics) */
    uint8_t local_id[RCM_ID_LEN];  /* zeros until the first endpoint */
} lst = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* with lst.lock held: take out request i */
static void take(int i, struct pending *out)
{
    *out = lst.q[i];
    memmove(&lst.q[i], &lst.q[i + 1], (size_t) (lst.n - 1 - i) * sizeof(lst.q[0]));
    lst.n--;
    __atomic_store_n(&lst.count, lst.n, __ATOMIC_RELEASE);
}

static void pop_front(struct pending *out)
{
    take(0, out);
}

/* with lst.lock held: the oldest request the thread may answer "busy"
 * (not held), or -1 */
static int oldest_busy_candidate(void)
{
    int i;

    for (i = 0; i < lst.n; ++i) {
        if (!lst.q[i].hold) {
            return i;
        }
    }
    return -1;
}

static void answer_busy(struct rdma_cm_id *id, const uint8_t *local_id)
{
    uint8_t pd[RCM_BUSY_LEN];

    rcm_busy_encode(pd, local_id);
    (void) rdma_reject(id, pd, sizeof(pd));
    rdma_destroy_id(id);
}

/* with lst.lock held: read what the channel has; a request that finds the
 * queue full goes to busy[] (answered after the lock is dropped). */
static int read_events(struct rdma_cm_id **busy, int nbusy)
{
    int k;

    for (k = 0; k < RCM_READ_MAX; ++k) {
        struct rdma_cm_event *raw;
        const struct rcm_listen_ctx *l;

        if (0 != rdma_get_cm_event(lst.ch, &raw)) {
            break; /* EAGAIN: drained */
        }
        l = raw->listen_id ? raw->listen_id->context : NULL;
        if (RDMA_CM_EVENT_CONNECT_REQUEST == raw->event && NULL != l &&
            RCM_TAG_LISTENER == l->tag) {
            if (lst.n < RCM_QUEUE_MAX) {
                struct pending *p = &lst.q[lst.n];
                const struct rdma_conn_param *c = &raw->param.conn;

                memset(&p->ev, 0, sizeof(p->ev));
                p->ev.type = raw->event;
                p->ev.status = raw->status;
                p->ev.id = raw->id;
                p->ev.listen_id = raw->listen_id;
                p->ev.mod = l->mod;
                p->ev.qp_num = c->qp_num;
                p->ev.responder_resources = c->responder_resources;
                p->ev.initiator_depth = c->initiator_depth;
                if (NULL != c->private_data && c->private_data_len > 0) {
                    p->ev.priv_len = c->private_data_len; /* uint8_t: fits */
                    memcpy(p->ev.priv, c->private_data, p->ev.priv_len);
                }
                p->at_ms = openib_now_ms();
                {
                    struct rcm_msg m;

                    p->hold = OPAL_SUCCESS == rcm_msg_decode(p->ev.priv, p->ev.priv_len, &m) &&
                              RCM_QREQ == m.type;
                }
                lst.n++;
                __atomic_store_n(&lst.count, lst.n, __ATOMIC_RELEASE);
                openib_connect_work_queued();
            } else {
                busy[nbusy++] = raw->id;
            }
        }
        rdma_ack_cm_event(raw);
    }
    return nbusy;
}

static void arm_timer(void);

/* The listener thread, on either event: what the channel has, then every
 * request whose grace ran out answered "busy". */
static void on_listen_event(int fd, short what, void *arg)
{
    struct rdma_cm_id *busy[2 * RCM_READ_MAX];
    uint8_t local_id[RCM_ID_LEN];
    int nbusy = 0, i;
    long t;

    (void) fd;
    (void) arg;
    pthread_mutex_lock(&lst.lock);
    if (what & OPAL_EV_READ) {
        nbusy = read_events(busy, 0);
    }
    t = openib_now_ms();
    while (nbusy < (int) (sizeof(busy) / sizeof(busy[0])) &&
           (i = oldest_busy_candidate()) >= 0 && t - lst.q[i].at_ms >= RCM_BUSY_GRACE_MS) {
        struct pending p;
        take(i, &p);
        busy[nbusy++] = p.ev.id; /* ours now: the MPI thread did not take it */
    }
    memcpy(local_id, lst.local_id, sizeof(local_id));
    pthread_mutex_unlock(&lst.lock);
    for (i = 0; i < nbusy; ++i) {
        answer_busy(busy[i], local_id);
    }
    arm_timer();
}

/* On the listener thread: with requests queued, wake when the oldest
 * one's grace runs out; else sleep until the channel has something. */
static void arm_timer(void)
{
    long wait = -1;
    int i;

    pthread_mutex_lock(&lst.lock);
    i = oldest_busy_candidate();
    if (i >= 0) {
        wait = lst.q[i].at_ms + RCM_BUSY_GRACE_MS - openib_now_ms();
        wait = wait < 0 ? 0 : wait;
    }
    pthread_mutex_unlock(&lst.lock);
    opal_event_evtimer_del(&lst.timer);
    if (wait >= 0) {
        struct timeval tv = { .tv_sec = wait / 1000, .tv_usec = (wait % 1000) * 1000 };
        opal_event_evtimer_add(&lst.timer, &tv);
    }
}

struct rdma_event_channel *rcm_listen_get(char *why, size_t why_len)
{
    int flags;

    if (lst.refs > 0) {
        lst.refs++;
        return lst.ch;
    }
    lst.ch = rdma_create_event_channel();
    if (NULL == lst.ch) {
        snprintf(why, why_len, "cannot open the rdma_cm event channel: %s (rdma_ucm not loaded?)",
                 strerror(errno));
        return NULL;
    }
    flags = fcntl(lst.ch->fd, F_GETFL);
    if (flags < 0 || fcntl(lst.ch->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        snprintf(why, why_len, "cannot make the rdma_cm listener channel non-blocking: %s",
                 strerror(errno));
        goto err_ch;
    }
    lst.q = calloc(RCM_QUEUE_MAX, sizeof(*lst.q));
    if (NULL == lst.q) {
        snprintf(why, why_len, "out of memory for the rdma_cm listener");
        goto err_ch;
    }
    lst.n = 0;
    lst.count = 0;
    lst.base = opal_progress_thread_init(thread_name);
    if (NULL == lst.base) {
        snprintf(why, why_len, "cannot start the rdma_cm listener thread");
        goto err_q;
    }
    opal_event_set(lst.base, &lst.readable, lst.ch->fd, OPAL_EV_READ | OPAL_EV_PERSIST,
                   on_listen_event, NULL);
    opal_event_evtimer_set(lst.base, &lst.timer, on_listen_event, NULL);
    opal_event_add(&lst.readable, NULL);
    lst.refs = 1;
    return lst.ch;

err_q:
    free(lst.q);
    lst.q = NULL;
err_ch:
    rdma_destroy_event_channel(lst.ch);
    lst.ch = NULL;
    return NULL;
}

void rcm_listen_put(void)
{
    int i;

    if (lst.refs <= 0 || --lst.refs > 0) {
        return;
    }
    openib_evthread_pause(thread_name, lst.base);
    opal_event_del(&lst.readable);
    opal_event_evtimer_del(&lst.timer);
    (void) opal_progress_thread_finalize(thread_name);
    lst.base = NULL;
    /* Every listener is gone (its module destroyed it): what is left are
     * requests nobody answered; destroying one refuses it. */
    for (i = 0; i < lst.n; ++i) {
        rdma_destroy_id(lst.q[i].ev.id);
    }
    lst.n = 0;
    lst.count = 0;
    free(lst.q);
    lst.q = NULL;
    rdma_destroy_event_channel(lst.ch);
    lst.ch = NULL;
}

struct rdma_event_channel *rcm_listen_channel(void)
{
    return lst.ch;
}

void rcm_listen_forget(const struct rcm_module *mod)
{
    struct rdma_cm_id *drop[RCM_QUEUE_MAX];
    int i, k, n = 0;

    if (NULL == lst.q) {
        return;
    }
    pthread_mutex_lock(&lst.lock);
    for (i = k = 0; i < lst.n; ++i) {
        if (lst.q[i].ev.mod == mod) {
            drop[n++] = lst.q[i].ev.id;
        } else {
            lst.q[k++] = lst.q[i];
        }
    }
    lst.n = k;
    __atomic_store_n(&lst.count, lst.n, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&lst.lock);
    /* the module is going: refuse (the peer hears that nothing listens) */
    for (i = 0; i < n; ++i) {
        rdma_destroy_id(drop[i]);
    }
}

bool rcm_listen_take(struct rcm_event *ev)
{
    struct pending p;

    if (0 == __atomic_load_n(&lst.count, __ATOMIC_ACQUIRE)) {
        return false;
    }
    pthread_mutex_lock(&lst.lock);
    if (0 == lst.n) {
        pthread_mutex_unlock(&lst.lock);
        return false;
    }
    pop_front(&p);
    pthread_mutex_unlock(&lst.lock);
    *ev = p.ev;
    return true;
}

void rcm_listen_set_local_id(const void *id)
{
    pthread_mutex_lock(&lst.lock);
    memcpy(lst.local_id, id, RCM_ID_LEN);
    pthread_mutex_unlock(&lst.lock);
}

/*
 * cpc_oob_channel_thread.c - the side channel's service thread: what each
 * open session needs before its transport's I/O (the message the full
 * ring held, the idle limit, keepalives), the descriptors it waits on
 * (the wake-up descriptor, the listeners, the UD ports and the sessions)
 * and starting and stopping it all. Locking: cpc_oob_channel_int.h.
 *
 * The thread is an Open MPI progress thread (opal_progress_thread_init)
 * running an opal_event base of its own: the side channel must answer
 * while the MPI thread computes, so it cannot ride opal_progress. Each
 * turn ("a round") looks at every session under the lock and says what
 * it waits for: one event per descriptor, one timer for the earliest
 * deadline. A descriptor event, the timer or a wake-up ends the round;
 * the next one starts once the events ready at the same time were served.
 */
#include "opal_config.h"

#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "opal/constants.h"
#include "opal/mca/event/event.h"
#include "opal/runtime/opal_progress_threads.h"

#include "common/openib_evthread.h"

#include "connect/cpc_oob_channel_int.h"
#include "connect/cpc_oob_params.h"
#include "wire/oob_wire.h"

void oob_chan_min_timeout(int *timeout, long wait)
{
    if (wait < 0) {
        wait = 0;
    }
    if (*timeout < 0 || wait < *timeout) {
        *timeout = (int) wait;
    }
}

bool oob_chan_plan_common(int i, long t, int idle_ms, int *timeout)
{
    struct session *s = sess_at(i);

    if (s->held && oob_ch.ev_count < MAX_EVENTS) {
        /* the ring has room again: the held message goes first */
        (void) oob_chan_on_frame(i);
        if (s->state == S_FREE) {
            return false;
        }
    }
    if (oob_chan_unverified(s) && 0 == s->pending && !s->held) {
        long wait = s->idle_from_ms + idle_ms - t;
        if (wait <= 0) {
            char d[48];
            snprintf(d, sizeof(d), "no handshake message within %d s", idle_ms / 1000);
            oob_chan_log_refusal(R_IDLE, s->peer_addr, s->ud_port >= 0 ? &s->ud : NULL,
                                 idle_ms >= 1000 ? d : "no handshake message");
            oob_chan_sess_free(i);
            return false;
        }
        oob_chan_min_timeout(timeout, wait);
    }
    if (!s->closing) {
        /* keepalive: PING a session silent for ping_ms */
        long last = s->heard_ms > s->pinged_ms ? s->heard_ms : s->pinged_ms;
        long wait = last + oob_ch.ping_ms - t;

        if (wait <= 0) {
            oob_chan_queue_ka(s, OOB_KA_PING);
            s->pinged_ms = t;
            wait = oob_ch.ping_ms;
        }
        oob_chan_min_timeout(timeout, wait);
    } else {
        oob_chan_min_timeout(timeout, s->close_by_ms - t);
    }
    return true;
}

/* One progress thread of Open MPI's per process, for both oob and xoob
 * (oob_ch.refs counts them). */
static const char thread_name[] = "openib oob side channel";

/* What a round waits for, rebuilt every round: descriptors with the poll
 * events wanted (the transports speak poll's language), and one
 * opal_event each. Grown with the sessions, never shrunk. */
static struct {
    opal_event_base_t *base;
    opal_event_t wake;   /* the wake-up descriptor, persistent */
    opal_event_t timer;  /* the round's earliest deadline */
    opal_event_t next;   /* activated: run the next round */
    opal_event_t *ev;    /* ev[k] watches pfd[k] */
    int nadded;          /* ev[0..nadded) are added */
    struct pollfd *pfd;
    int *map;       /* >= 0 session slot; <= -2 listener socket;
                       <= -(2 + MAX_LISTENERS * OOB_MAX_ADDRS) UD port */
    unsigned *gen;
    int *step;
    int cap;
} ps;

#define MAP_UD_BASE (-2 - MAX_LISTENERS * OOB_MAX_ADDRS)

static bool grow_poll_set(int nslots)
{
    int cap = MAX_LISTENERS * OOB_MAX_ADDRS + MAX_UDPORTS + nslots;
    struct pollfd *pfd;
    opal_event_t *ev;
    int *map, *step;
    unsigned *gen;

    if (cap <= ps.cap) {
        return true;
    }
    /* safe to move: no ev[k] is added between rounds */
    pfd = realloc(ps.pfd, sizeof(*pfd) * cap);
    ps.pfd = pfd ? pfd : ps.pfd;
    ev = realloc(ps.ev, sizeof(*ev) * cap);
    ps.ev = ev ? ev : ps.ev;
    map = realloc(ps.map, sizeof(*map) * cap);
    ps.map = map ? map : ps.map;
    gen = realloc(ps.gen, sizeof(*gen) * cap);
    ps.gen = gen ? gen : ps.gen;
    step = realloc(ps.step, sizeof(*step) * cap);
    ps.step = step ? step : ps.step;
    if (!pfd || !ev || !map || !gen || !step) {
        return false;
    }
    ps.cap = cap;
    return true;
}

/* With the lock held: the listeners' and UD ports' descriptors, and what
 * they need first (closing, draining). */
static int plan_ports(int n)
{
    int i, j;

    for (i = 0; i < MAX_LISTENERS; ++i) {
        struct listener *l = &oob_ch.l[i];
        if (l->closing) {
            for (j = 0; j < l->nfd; ++j) {
                close(l->fd[j]);
            }
            *l = (struct listener) { .nfd = 0 };
            continue;
        }
        for (j = 0; l->owner && j < l->nfd; ++j) {
            ps.pfd[n] = (struct pollfd) { .fd = l->fd[j], .events = POLLIN };
            ps.map[n++] = -2 - (i * OOB_MAX_ADDRS + j);
        }
    }
    for (i = 0; i < MAX_UDPORTS; ++i) {
        struct udport *u = &oob_ch.u[i];
        if (u->closing) {
            oob_ud_port_gone(i);
            continue;
        }
        if (u->ops) {
            oob_ud_drain(i); /* before any timer is judged */
            ps.pfd[n] = (struct pollfd) { .fd = u->ops->fd(u->port), .events = POLLIN };
            ps.map[n++] = MAP_UD_BASE - i;
        }
    }
    return n;
}

/* Service thread, no lock: what was reported on entry k. */
static void serve(int k)
{
    struct pollfd *p = &ps.pfd[k];
    int m = ps.map[k];

    if (m <= MAP_UD_BASE) {
        struct udport *u = &oob_ch.u[MAP_UD_BASE - m];
        pthread_mutex_lock(&oob_ch.lock);
        if (u->ops && !u->closing) {
            u->ops->rearm(u->port); /* the next round drains it */
        }
        pthread_mutex_unlock(&oob_ch.lock);
    } else if (m <= -2) {
        int li = (-2 - m) / OOB_MAX_ADDRS;
        void *owner;
        pthread_mutex_lock(&oob_ch.lock);
        owner = oob_ch.l[li].owner;
        pthread_mutex_unlock(&oob_ch.lock);
        if (owner) { /* the socket stays open until this thread closes it */
            oob_tcp_accept(p->fd, owner);
        }
    } else {
        /* Handling an earlier entry may have freed this slot (an
         * eviction) and given it to a new session: a slot's generation
         * changes whenever its handle dies. */
        struct session *s = sess_at(m);
        bool same, ud;
        pthread_mutex_lock(&oob_ch.lock);
        same = s->gen == ps.gen[k] && (s->state == S_CONNECTING || s->state == S_OPEN);
        ud = s->ud_port >= 0;
        pthread_mutex_unlock(&oob_ch.lock);
        if (same && ud) {
            oob_ud_probe_serve(m, p->revents);
        } else if (same) {
            oob_tcp_serve(m, p->events, p->revents);
        }
    }
}

static void next_round(void)
{
    opal_event_active(&ps.next, OPAL_EV_WRITE, 1);
}

/* A descriptor is ready. The round ends here, but the next one starts
 * only after the other events ready now were served: "next" is queued
 * behind them. */
static void on_fd(int fd, short what, void *arg)
{
    int k = (int) (intptr_t) arg;

    (void) fd;
    ps.pfd[k].revents = (short) (((what & OPAL_EV_READ) ? POLLIN : 0) |
                                 ((what & OPAL_EV_WRITE) ? POLLOUT : 0));
    serve(k);
    next_round();
}

static void on_wake(int fd, short what, void *arg)
{
    uint64_t v;
    ssize_t r = read(fd, &v, sizeof(v));

    (void) r;
    (void) what;
    (void) arg;
    next_round();
}

static void on_timer(int fd, short what, void *arg)
{
    (void) fd;
    (void) what;
    (void) arg;
    next_round();
}

static void arm_timer(int ms)
{
    struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

    opal_event_evtimer_add(&ps.timer, &tv);
}

/* Drop what the last round waited for. Before any descriptor can be
 * closed: an event must not outlive its descriptor, or a new socket with
 * the same number would be missed. Sessions freed while serving close
 * theirs before this runs; libevent takes the failed removal in silence. */
static void drop_events(void)
{
    int k;

    for (k = 0; k < ps.nadded; ++k) {
        opal_event_del(&ps.ev[k]);
    }
    ps.nadded = 0;
    opal_event_evtimer_del(&ps.timer);
}

/* One round: every session's timers and state under the lock, then the
 * sockets to start connecting, or else the events to wait for. */
static void on_round(int fd, short what, void *arg)
{
    int n = 0, nstep = 0, i, k, timeout = -1, idle_ms = oob_params_idle_ms();
    long t = openib_now_ms();

    (void) fd;
    (void) what;
    (void) arg;
    drop_events();
    pthread_mutex_lock(&oob_ch.lock);
    if (!grow_poll_set(oob_ch.nslots)) {
        /* no memory for the poll set: look again shortly */
        pthread_mutex_unlock(&oob_ch.lock);
        arm_timer(10);
        return;
    }
    n = plan_ports(n);
    oob_ch.paused = false;
    for (i = 0; i < oob_ch.nslots; ++i) {
        struct session *s = sess_at(i);
        int ev;
        if (s->state == S_FREE) {
            continue;
        }
        ev = s->ud_port >= 0 ? oob_ud_plan(i, t, idle_ms, &timeout)
                             : oob_tcp_plan(i, t, idle_ms, &timeout);
        if (ev < 0) {
            ps.step[nstep++] = i;
        } else if (ev > 0) {
            /* a session that wants nothing is not watched at all: its
             * hang-up would wake us in a loop */
            ps.pfd[n] = (struct pollfd) { .fd = s->fd, .events = (short) ev };
            ps.gen[n] = s->gen;
            ps.map[n++] = i;
        }
    }
    pthread_mutex_unlock(&oob_ch.lock);

    if (nstep) {
        for (k = 0; k < nstep; ++k) {
            if (sess_at(ps.step[k])->ud_port >= 0) {
                oob_ud_probe_step(ps.step[k]);
            } else {
                oob_tcp_step(ps.step[k]);
            }
        }
        next_round(); /* watch the new sockets in the next round */
        return;
    }
    for (k = 0; k < n; ++k) {
        short flags = (short) (((ps.pfd[k].events & POLLIN) ? OPAL_EV_READ : 0) |
                               ((ps.pfd[k].events & POLLOUT) ? OPAL_EV_WRITE : 0));
        opal_event_set(ps.base, &ps.ev[k], ps.pfd[k].fd, flags, on_fd, (void *) (intptr_t) k);
        opal_event_add(&ps.ev[k], NULL);
    }
    ps.nadded = n;
    /* Idle (no session open): no timer, so the thread sleeps until a
     * descriptor or a wake-up has something, rather than waking a
     * spinning rank's CPU 10 times a second. Sessions exist only while
     * handshakes are under way. */
    if (timeout >= 0) {
        arm_timer(timeout);
    }
}

/* With the lock held: the thread's first round waits for it, so the
 * events are set before any round runs. */
static int start_thread(void)
{
    ps.base = opal_progress_thread_init(thread_name);
    if (NULL == ps.base) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    opal_event_set(ps.base, &ps.wake, oob_ch.wake_fd, OPAL_EV_READ | OPAL_EV_PERSIST, on_wake,
                   NULL);
    opal_event_evtimer_set(ps.base, &ps.timer, on_timer, NULL);
    opal_event_set(ps.base, &ps.next, -1, 0, on_round, NULL);
    opal_event_add(&ps.wake, NULL);
    next_round();
    return OPAL_SUCCESS;
}

/* The thread stopped first (joined), so nothing runs a callback while its
 * events go. */
static void stop_thread(void)
{
    openib_evthread_pause(thread_name, ps.base);
    drop_events();
    opal_event_del(&ps.wake);
    opal_event_del(&ps.next);
    (void) opal_progress_thread_finalize(thread_name);
    ps.base = NULL;
}

int oob_chan_start(void)
{
    int rc = OPAL_SUCCESS;

    /* Held throughout, so a second caller never sees a channel counted
     * but not started, nor one whose start is failing. */
    pthread_mutex_lock(&oob_ch.lock);
    if (oob_ch.refs++ > 0) {
        pthread_mutex_unlock(&oob_ch.lock);
        return OPAL_SUCCESS;
    }
    oob_ch.ev = calloc(MAX_EVENTS, sizeof(*oob_ch.ev));
    oob_ch.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (!oob_ch.ev || oob_ch.wake_fd < 0 || OPAL_SUCCESS != start_thread()) {
        free(oob_ch.ev);
        oob_ch.ev = NULL;
        if (oob_ch.wake_fd >= 0) {
            close(oob_ch.wake_fd);
        }
        oob_ch.wake_fd = -1;
        oob_ch.refs = 0;
        rc = OPAL_ERR_OUT_OF_RESOURCE;
    }
    pthread_mutex_unlock(&oob_ch.lock);
    return rc;
}

void oob_chan_stop(void)
{
    int i, j;

    pthread_mutex_lock(&oob_ch.lock);
    if (oob_ch.refs == 0 || --oob_ch.refs > 0) {
        pthread_mutex_unlock(&oob_ch.lock);
        return;
    }
    pthread_mutex_unlock(&oob_ch.lock);
    stop_thread(); /* a round it runs before it stops is dropped with it */
    pthread_mutex_lock(&oob_ch.lock);
    for (i = 0; i < MAX_UDPORTS; ++i) {
        if (oob_ch.u[i].ops) {
            oob_ud_port_gone(i);
        }
    }
    for (i = 0; i < oob_ch.nslots; ++i) {
        if (sess_at(i)->state != S_FREE) {
            oob_chan_sess_free(i);
        }
    }
    for (i = 0; i < MAX_CHUNKS; ++i) {
        free(oob_ch.chunk[i]);
        oob_ch.chunk[i] = NULL;
    }
    oob_ch.nslots = oob_ch.hint = 0;
    for (i = 0; i < MAX_LISTENERS; ++i) {
        for (j = 0; j < oob_ch.l[i].nfd; ++j) {
            close(oob_ch.l[i].fd[j]);
        }
        oob_ch.l[i] = (struct listener) { .nfd = 0 };
    }
    close(oob_ch.wake_fd);
    oob_ch.wake_fd = -1;
    free(oob_ch.ev);
    oob_ch.ev = NULL;
    oob_ch.ev_head = oob_ch.ev_tail = oob_ch.ev_count = 0;
    oob_ch.log_n = 0;
    free(ps.pfd);
    free(ps.ev);
    free(ps.map);
    free(ps.gen);
    free(ps.step);
    memset(&ps, 0, sizeof(ps));
    pthread_mutex_unlock(&oob_ch.lock);
}

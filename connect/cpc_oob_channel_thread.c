/*
 * cpc_oob_channel_thread.c - the side channel's service thread: what each
 * open session needs before its transport's I/O (the message the full
 * ring held, the idle limit, keepalives), the poll set over the wake-up
 * descriptor, the listeners, the UD ports and the sessions, and starting
 * and stopping it all. Locking: cpc_oob_channel_int.h.
 */
#include "opal_config.h"

#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "opal/constants.h"

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

/* The thread's poll set, grown with the sessions (never shrunk). */
static struct {
    struct pollfd *pfd;
    int *map;       /* >= 0 session slot; -1 wake; <= -2 listener socket;
                       <= -(2 + MAX_LISTENERS * OOB_MAX_ADDRS) UD port */
    unsigned *gen;
    int *step;
    int cap;
} ps;

#define MAP_UD_BASE (-2 - MAX_LISTENERS * OOB_MAX_ADDRS)

static bool grow_poll_set(int nslots)
{
    int cap = 1 + MAX_LISTENERS * OOB_MAX_ADDRS + MAX_UDPORTS + nslots;
    struct pollfd *pfd;
    int *map, *step;
    unsigned *gen;

    if (cap <= ps.cap) {
        return true;
    }
    pfd = realloc(ps.pfd, sizeof(*pfd) * cap);
    ps.pfd = pfd ? pfd : ps.pfd;
    map = realloc(ps.map, sizeof(*map) * cap);
    ps.map = map ? map : ps.map;
    gen = realloc(ps.gen, sizeof(*gen) * cap);
    ps.gen = gen ? gen : ps.gen;
    step = realloc(ps.step, sizeof(*step) * cap);
    ps.step = step ? step : ps.step;
    if (!pfd || !map || !gen || !step) {
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

/* Service thread, no lock: what poll reported on entry k. */
static void serve(int k)
{
    struct pollfd *p = &ps.pfd[k];
    int m = ps.map[k];

    if (m == -1) {
        uint64_t v;
        ssize_t r = read(oob_ch.wake_fd, &v, sizeof(v));
        (void) r;
    } else if (m <= MAP_UD_BASE) {
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

static void *thread_main(void *arg)
{
    (void) arg;
    for (;;) {
        int n = 0, nstep = 0, i, k, timeout = -1, idle_ms = oob_params_idle_ms();
        long t = openib_now_ms();

        pthread_mutex_lock(&oob_ch.lock);
        if (oob_ch.stop) {
            pthread_mutex_unlock(&oob_ch.lock);
            break;
        }
        if (!grow_poll_set(oob_ch.nslots)) {
            /* no memory for the poll set: look again shortly */
            pthread_mutex_unlock(&oob_ch.lock);
            usleep(10000);
            continue;
        }
        ps.pfd[n] = (struct pollfd) { .fd = oob_ch.wake_fd, .events = POLLIN };
        ps.map[n++] = -1;
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
                /* a session that wants nothing is not polled at all: its
                 * POLLHUP would wake us in a loop */
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
            continue; /* poll the new sockets in the next round */
        }
        /* Idle (no session open): sleep until a descriptor or wake() has
         * something, rather than waking a spinning rank's CPU 10 times a
         * second. Sessions exist only while handshakes are under way. */
        if (poll(ps.pfd, n, timeout) <= 0) {
            continue;
        }
        for (k = 0; k < n; ++k) {
            if (ps.pfd[k].revents) {
                serve(k);
            }
        }
    }
    return NULL;
}

int oob_chan_start(void)
{
    int rc = OPAL_SUCCESS;

    pthread_mutex_lock(&oob_ch.lock);
    if (oob_ch.refs++ > 0) {
        goto out;
    }
    oob_ch.ev = calloc(MAX_EVENTS, sizeof(*oob_ch.ev));
    oob_ch.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    oob_ch.stop = 0;
    if (!oob_ch.ev || oob_ch.wake_fd < 0 ||
        pthread_create(&oob_ch.thread, NULL, thread_main, NULL)) {
        free(oob_ch.ev);
        oob_ch.ev = NULL;
        if (oob_ch.wake_fd >= 0) {
            close(oob_ch.wake_fd);
        }
        oob_ch.wake_fd = -1;
        oob_ch.refs = 0;
        rc = OPAL_ERR_OUT_OF_RESOURCE;
    }
out:
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
    oob_ch.stop = 1;
    oob_chan_wake();
    pthread_mutex_unlock(&oob_ch.lock);
    pthread_join(oob_ch.thread, NULL);
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
    free(ps.map);
    free(ps.gen);
    free(ps.step);
    memset(&ps, 0, sizeof(ps));
    pthread_mutex_unlock(&oob_ch.lock);
}

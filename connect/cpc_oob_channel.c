/*
 * cpc_oob_channel.c - the oob CPC's side channel: sessions, the event ring
 * that hands their messages to progress, keepalives, the limits on
 * sessions nobody has vouched for, and the service thread that runs both
 * transports (TCP: cpc_oob_channel_tcp.c, UD: cpc_oob_channel_ud.c).
 * Locking: cpc_oob_channel_int.h.
 */
#include "opal_config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "opal/constants.h"
#include "opal/prefetch.h"

#include "connect/cpc_active.h"
#include "connect/cpc_internal.h"
#include "connect/cpc_oob_channel_int.h"
#include "connect/cpc_oob_params.h"
#include "connect/cpc_oob_wire.h"
#include "connect/openib_connect.h"

#define PING_MS_MIN 200
#define PING_MS_MAX 10000
#define LOG_Q ((int) (sizeof(oob_ch.log) / sizeof(oob_ch.log[0])))
/* Refusals logged per reason: the first 10, then one in 100. */
#define LOG_FIRST 10
#define LOG_EVERY 100

static const char *const refusal_token[R_COUNT] = { "idle", "per-source-cap", "session-cap" };

struct oob_chan oob_ch = { .lock = PTHREAD_MUTEX_INITIALIZER, .gone = PTHREAD_COND_INITIALIZER,
                           .wake_fd = -1, .ping_ms = PING_MS_MAX };

long oob_chan_now_ms(void)
{
    return openib_cpc_now_ms();
}

void oob_chan_wake(void)
{
    uint64_t one = 1;
    ssize_t r = write(oob_ch.wake_fd, &one, sizeof(one));
    (void) r;
}

/* with the lock held: the slot of a live handle, or NULL */
static struct session *lookup(int h)
{
    struct session *s;

    if (h < 0 || SLOT_OF(h) >= oob_ch.nslots) {
        return NULL;
    }
    s = sess_at(SLOT_OF(h));
    return s->state != S_FREE && !s->closing && HANDLE(SLOT_OF(h), s->gen) == h ? s : NULL;
}

/* with the lock held. The thread logs nothing itself (opal_output is the
 * MPI thread's): it queues the line for oob_chan_poll to write. */
void oob_chan_log_refusal(enum refusal r, uint32_t addr, const struct oob_ud_addr *ud,
                          const char *detail)
{
    unsigned long n = ++oob_ch.refusals[r];
    char a[INET6_ADDRSTRLEN];

    if ((n > LOG_FIRST && n % LOG_EVERY) || oob_ch.log_n == LOG_Q) {
        return;
    }
    if (ud) {
        inet_ntop(AF_INET6, ud->gid, a, sizeof(a));
    } else {
        inet_ntop(AF_INET, &addr, a, sizeof(a));
    }
    snprintf(oob_ch.log[oob_ch.log_n], sizeof(oob_ch.log[0]),
             "openib: oob side channel: refused session from %s%s: %s (%s; %lu so far)", a,
             ud ? " over UD" : "", refusal_token[r], detail, n);
    __atomic_add_fetch(&oob_ch.log_n, 1, __ATOMIC_RELEASE);
    openib_connect_work_queued();
}

/* with the lock held; false when the ring is full */
static bool push_event(enum oob_event_type type, int sid, const uint8_t *msg,
                       enum oob_error error, const char *why)
{
    struct session *s = sess_at(sid);
    struct oob_event *e;

    if (oob_ch.ev_count == MAX_EVENTS) {
        return false;
    }
    e = &oob_ch.ev[oob_ch.ev_tail];
    oob_ch.ev_tail = (oob_ch.ev_tail + 1) % MAX_EVENTS;
    e->type = type;
    e->sid = HANDLE(sid, s->gen);
    e->owner = s->owner;
    e->listen_owner = s->listen_owner;
    e->peer_addr = s->peer_addr;
    e->via_ud = s->ud_port >= 0;
    e->ud_from = s->ud;
    e->error = error;
    if (msg) {
        memcpy(e->msg, msg, OOB_MSG_SIZE);
    }
    snprintf(e->why, sizeof(e->why), "%s", why ? why : "");
    __atomic_add_fetch(&oob_ch.ev_count, 1, __ATOMIC_RELEASE);
    openib_connect_work_queued();
    return true;
}

/* with the lock held, on the service thread (or after it stopped) */
void oob_chan_sess_free(int sid)
{
    struct session *s = sess_at(sid);
    unsigned gen = s->gen + 1; /* a live handle dies now; a freed slot never
                                  looks like what it held (see thread_main) */

    if (s->fd >= 0) {
        close(s->fd);
    }
    memset(s, 0, sizeof(*s));
    s->fd = -1;
    s->ud_port = -1;
    s->state = S_FREE;
    s->gen = gen & GEN_MASK;
}

/* with the lock held: the handle dies at once, the session when what was
 * queued is out (each transport's plan decides when) */
static void sess_mark_closing(struct session *s)
{
    if (!s->closing) {
        s->closing = true;
        s->gen = (s->gen + 1) & GEN_MASK;
        s->owner = NULL;
        s->close_by_ms = 0; /* the thread starts the clock (its plan) */
    }
}

/* with the lock held */
void oob_chan_sess_fail(int sid, enum oob_error error, const char *why)
{
    /* An error on the session is an ERROR event. The ring being full
     * cannot lose it: the CPC's silence bound for that session ends the
     * handshake anyway (the session is gone: no keepalives answer). */
    if (!sess_at(sid)->closing) {
        (void) push_event(OOB_EV_ERROR, sid, NULL, error, why);
    }
    oob_chan_sess_free(sid);
}

/* with the lock held: queue a keepalive if there is room (if not, the
 * session is busy with real messages, which prove as much) */
void oob_chan_queue_ka(struct session *s, uint8_t type)
{
    struct oob_ka k = { .type = type, .pending = (uint16_t) (s->pending > 0xffff ? 0xffff
                                                                                  : s->pending) };

    if (s->outlen + OOB_MSG_SIZE <= sizeof(s->out) &&
        OPAL_SUCCESS == oob_ka_encode(s->out + s->outlen, OOB_MSG_SIZE, &k)) {
        s->outlen += OOB_MSG_SIZE;
    }
}

/* with the lock held: the session may deliver another message to the CPC */
bool oob_chan_may_read(const struct session *s)
{
    return !s->closing && (s->trusted || !s->accepted || s->pending < UNTRUSTED_PENDING_MAX);
}

/* With the lock held: a whole frame arrived, it proves the peer alive
 * whatever it is. The channel's keepalives are answered and consumed here;
 * everything else is a CPC's message, queued for progress. False: stop
 * reading this session (closed, or its message waits for room). */
bool oob_chan_on_frame(int sid)
{
    struct session *s = sess_at(sid);
    struct oob_ka k;
    int rc;

    s->heard_ms = oob_chan_now_ms();
    rc = oob_ka_decode(s->in, OOB_MSG_SIZE, &k);
    if (OPAL_SUCCESS == rc) {
        s->inlen = 0;
        if (OOB_KA_PING == k.type && !s->closing) {
            oob_chan_queue_ka(s, OOB_KA_PONG);
        } else {
            s->peer_pending = k.pending;
        }
        return true;
    }
    if (OPAL_ERR_NOT_FOUND != rc) {
        oob_chan_sess_fail(sid, OOB_ERR_IO,
                           "the peer sent a side-channel keepalive of another version");
        return false;
    }
    if (s->closing) {
        s->inlen = 0; /* nobody will read it */
        return true;
    }
    if (!push_event(OOB_EV_MSG, sid, s->in, 0, NULL)) {
        /* Back-pressure, not loss: keep the message and stop reading this
         * session until the ring has room (TCP then holds the sender; UD
         * never gets here: it leaves the frame unacknowledged instead). */
        s->held = true;
        return false;
    }
    s->held = false;
    s->inlen = 0;
    s->pending++;
    s->spoke = true;
    return oob_chan_may_read(s);
}

/* With the lock held: a free slot (its fd -1), a new chunk of them when
 * every slot is taken; -1 when MAX_SLOTS are. A chunk comes zeroed (S_FREE)
 * and is not written before its slots are used: its pages cost memory only
 * once sessions have used them. */
int oob_chan_alloc_session(void)
{
    int i = 0, k;

    for (k = 0; k < oob_ch.nslots; ++k) {
        i = (oob_ch.hint + k) % oob_ch.nslots;
        if (sess_at(i)->state == S_FREE) {
            break;
        }
    }
    if (k == oob_ch.nslots) {
        if (oob_ch.nslots == MAX_SLOTS) {
            return -1;
        }
        oob_ch.chunk[oob_ch.nslots / CHUNK_SLOTS] = calloc(CHUNK_SLOTS, sizeof(struct session));
        if (NULL == oob_ch.chunk[oob_ch.nslots / CHUNK_SLOTS]) {
            return -1;
        }
        i = oob_ch.nslots;
        oob_ch.nslots += CHUNK_SLOTS;
    }
    oob_ch.hint = i + 1;
    sess_at(i)->fd = -1;
    sess_at(i)->ud_port = -1;
    return i;
}

/* with the lock held: an unverified accepted session that could be evicted */
static bool unverified(const struct session *s)
{
    return s->state == S_OPEN && s->accepted && !s->trusted && !s->closing;
}

/* Both from the same source: the same IPv4 address over TCP, the same
 * port (GID or LID) over UD, whatever the QP. */
static bool same_source(const struct session *s, uint32_t addr, const struct oob_ud_addr *ud)
{
    if ((s->ud_port >= 0) != (NULL != ud)) {
        return false;
    }
    if (NULL == ud) {
        return s->peer_addr == addr;
    }
    return ud->global ? s->ud.global && 0 == memcmp(s->ud.gid, ud->gid, 16)
                      : !s->ud.global && s->ud.lid == ud->lid;
}

/* with the lock held: the oldest unverified session that has said nothing
 * (from this source, or from anywhere when any) - an honest initiator
 * sends its request the moment it connects, so a silent one is the one
 * to drop */
static int oldest_silent(uint32_t addr, const struct oob_ud_addr *ud, bool any)
{
    int i, best = -1;

    for (i = 0; i < oob_ch.nslots; ++i) {
        const struct session *s = sess_at(i);
        if (unverified(s) && !s->spoke && 0 == s->pending && (any || same_source(s, addr, ud)) &&
            (best < 0 || s->opened_ms < sess_at(best)->opened_ms)) {
            best = i;
        }
    }
    return best;
}

bool oob_chan_admit(uint32_t addr, const struct oob_ud_addr *ud)
{
    int i, from_src = 0, all = 0, victim = -1;
    enum refusal why = R_SESSION_CAP;

    for (i = 0; i < oob_ch.nslots; ++i) {
        if (unverified(sess_at(i))) {
            all++;
            from_src += same_source(sess_at(i), addr, ud);
        }
    }
    if (from_src >= oob_params_per_source()) {
        why = R_PER_SOURCE;
        victim = oldest_silent(addr, ud, false);
    } else if (all >= UNTRUSTED_MAX) {
        victim = oldest_silent(addr, ud, true);
    }
    if (from_src >= oob_params_per_source() || all >= UNTRUSTED_MAX) {
        if (victim < 0) {
            oob_chan_log_refusal(why, addr, ud, "the new session refused");
            return false;
        }
        oob_chan_log_refusal(why, sess_at(victim)->peer_addr,
                             sess_at(victim)->ud_port >= 0 ? &sess_at(victim)->ud : NULL,
                             "its oldest silent session closed");
        oob_chan_sess_free(victim);
    }
    return true;
}

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
    if (unverified(s) && 0 == s->pending && !s->held) {
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
        long t = oob_chan_now_ms();

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

int oob_chan_send(int h, const uint8_t *msg)
{
    int rc = OPAL_SUCCESS;
    struct session *s;

    pthread_mutex_lock(&oob_ch.lock);
    s = lookup(h);
    if (NULL == s || s->outlen + OOB_MSG_SIZE > sizeof(s->out)) {
        rc = OPAL_ERR_UNREACH;
    } else {
        memcpy(s->out + s->outlen, msg, OOB_MSG_SIZE);
        s->outlen += OOB_MSG_SIZE;
        /* Our CPC answers on an accepted session only when it took the
         * peer's message for a job member's (strangers get no answer, or
         * one and a close): it has vouched for the session. */
        s->trusted = true;
        oob_chan_wake();
    }
    pthread_mutex_unlock(&oob_ch.lock);
    return rc;
}

void oob_chan_close(int h)
{
    struct session *s;

    pthread_mutex_lock(&oob_ch.lock);
    s = lookup(h);
    if (s) {
        /* Let what was queued (e.g. a final message) go out first; the
         * thread ends the session. */
        sess_mark_closing(s);
        oob_chan_wake();
    }
    pthread_mutex_unlock(&oob_ch.lock);
}

void oob_chan_trust(int h)
{
    struct session *s;

    pthread_mutex_lock(&oob_ch.lock);
    s = lookup(h);
    if (s) {
        s->trusted = true;
        oob_chan_wake(); /* it may have been paused for having too much unread */
    }
    pthread_mutex_unlock(&oob_ch.lock);
}

/* MPI thread: write out the refusals the service thread queued */
static void flush_log(void)
{
    char lines[LOG_Q][sizeof(oob_ch.log[0])];
    int n, i;

    pthread_mutex_lock(&oob_ch.lock);
    n = oob_ch.log_n;
    memcpy(lines, oob_ch.log, sizeof(lines[0]) * n);
    __atomic_store_n(&oob_ch.log_n, 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&oob_ch.lock);
    for (i = 0; i < n; ++i) {
        openib_cpc_log(1, "%s", lines[i]);
    }
}

bool oob_chan_poll(struct oob_event *ev)
{
    if (OPAL_LIKELY(0 == __atomic_load_n(&oob_ch.ev_count, __ATOMIC_ACQUIRE) &&
                    0 == __atomic_load_n(&oob_ch.log_n, __ATOMIC_ACQUIRE))) {
        return false;
    }
    if (oob_ch.log_n) {
        flush_log();
    }
    pthread_mutex_lock(&oob_ch.lock);
    if (0 == oob_ch.ev_count) {
        pthread_mutex_unlock(&oob_ch.lock);
        return false;
    }
    *ev = oob_ch.ev[oob_ch.ev_head];
    oob_ch.ev_head = (oob_ch.ev_head + 1) % MAX_EVENTS;
    __atomic_sub_fetch(&oob_ch.ev_count, 1, __ATOMIC_RELEASE);
    if (OOB_EV_MSG == ev->type) {
        struct session *s = lookup(ev->sid);
        if (s && s->pending > 0) {
            s->pending--; /* taken: the PONGs stop saying "not taken yet" */
            if (0 == s->pending) {
                s->idle_from_ms = oob_chan_now_ms(); /* the CPC looked: its deadline restarts */
            }
        }
    }
    if (oob_ch.paused) {
        oob_chan_wake(); /* a session waits for room we just made */
    }
    pthread_mutex_unlock(&oob_ch.lock);
    return true;
}

void oob_chan_set_ping_ms(int ms)
{
    ms = ms < PING_MS_MIN ? PING_MS_MIN : ms > PING_MS_MAX ? PING_MS_MAX : ms;
    pthread_mutex_lock(&oob_ch.lock);
    if (ms < oob_ch.ping_ms) {
        oob_ch.ping_ms = ms;
        if (oob_ch.wake_fd >= 0) {
            oob_chan_wake();
        }
    }
    pthread_mutex_unlock(&oob_ch.lock);
}

int oob_chan_liveness(int h, long *heard_ms, int *peer_pending)
{
    struct session *s;
    int rc = OPAL_ERR_NOT_FOUND;

    pthread_mutex_lock(&oob_ch.lock);
    s = lookup(h);
    if (s) {
        *heard_ms = s->heard_ms;
        *peer_pending = s->peer_pending;
        rc = OPAL_SUCCESS;
    }
    pthread_mutex_unlock(&oob_ch.lock);
    return rc;
}

int oob_chan_backlog(void)
{
    return __atomic_load_n(&oob_ch.ev_count, __ATOMIC_ACQUIRE);
}

int oob_chan_backlog_max(void)
{
    return MAX_EVENTS;
}

void oob_chan_counts(struct oob_chan_counts *out)
{
    pthread_mutex_lock(&oob_ch.lock);
    *out = oob_ch.counts;
    pthread_mutex_unlock(&oob_ch.lock);
}

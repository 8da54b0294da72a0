/*
 * cpc_oob_channel.c - the oob CPC's side-channel thread and sockets.
 *
 * Locking: ch.lock guards what both threads touch (session state, handles,
 * the output queue, the event ring, counters) and is held only to change
 * that state. Every socket call (accept, connect, send, recv) is made by
 * the service thread without it, on fields only that thread uses (fd,
 * input frame, bytes being written, connect progress). Only the service
 * thread closes a socket or frees a slot, so a slot stays valid while it
 * does I/O unlocked; the MPI thread's close just marks the session.
 */
#include "opal_config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "opal/constants.h"
#include "opal/prefetch.h"

#include "connect/cpc_internal.h"
#include "connect/cpc_oob_channel.h"
#include "connect/cpc_oob_params.h"
#include "connect/cpc_oob_wire.h"
#include "connect/openib_connect.h"

#define MAX_SESSIONS 1024
#define MAX_LISTENERS 16
#define MAX_EVENTS 4096
#define OUTQ 4                    /* messages queued per session */
/* A connect gets this long per address while other addresses remain, so
 * an unreachable one costs little; the last address gets longer: a SYN
 * dropped by a listener whose accept queue is momentarily full (many
 * ranks connecting at once) is sent again only after 1 s and 3 s, and
 * abandoning it early only adds a new connection to that queue. */
#define CONNECT_TRY_MS 2000
#define CONNECT_LAST_MS 15000
#define FLUSH_MS 2000             /* a closed session's last message may take this long */
/* ...and then the peer this long to read it and close its side. A peer's
 * thread on a loaded node may not run for seconds; closing first (with its
 * keepalives unread) would reset the connection, and the reset can
 * destroy our last message before that thread reads it. */
#define DRAIN_MS 30000
#define PING_MS_MIN 200
#define PING_MS_MAX 10000
/* Unverified accepted sessions, all sources together: half the slots, so
 * a flood from many addresses still leaves the other half for our own
 * handshakes and verified peers. */
#define UNTRUSTED_MAX (MAX_SESSIONS / 2)
/* Messages an unverified session may have waiting for the CPC: an honest
 * initiator sends one request and waits; more is a flood, and reading it
 * stops until the CPC has looked (so strangers can hold at most
 * UNTRUSTED_MAX * this of the ring). */
#define UNTRUSTED_PENDING_MAX 4
#define ACCEPT_BATCH 64           /* per wake-up, so a flood cannot starve sessions */
#define LOG_Q 64
/* Refusals logged per reason: the first 10, then one in 100. */
#define LOG_FIRST 10
#define LOG_EVERY 100

enum sess_state { S_FREE = 0, S_START, S_CONNECTING, S_OPEN };

enum refusal { R_IDLE = 0, R_PER_SOURCE, R_SESSION_CAP, R_COUNT };
static const char *const refusal_token[R_COUNT] = { "idle", "per-source-cap", "session-cap" };

/* A session handle is slot | generation << 12: a slot is reused as soon as
 * it is freed, so a handle the caller still holds must not reach the
 * slot's next session (e.g. closing an old session must not close a new
 * connection that took its slot). */
#define SLOT_BITS 12
#define HANDLE(slot, gen) ((int) ((gen) << SLOT_BITS | (slot)))
#define SLOT_OF(h) ((h) & ((1 << SLOT_BITS) - 1))
#define GEN_MASK 0x7ffff

struct session {
    /* shared: under ch.lock */
    enum sess_state state;
    unsigned gen;
    bool closing;             /* handle dead (closed or evicted): flush, then free */
    bool accepted;
    bool trusted;             /* oob_chan_trust: a verified job member */
    bool spoke;               /* accepted: delivered a whole CPC message */
    void *owner;
    void *listen_owner;
    uint32_t peer_addr;       /* accepted: remote IPv4, network order */
    long opened_ms;           /* accepted: when (eviction takes the oldest) */
    long idle_from_ms;        /* accepted, unverified: the idle deadline counts from here */
    long close_by_ms;         /* closing: free even if the flush is not done */
    long heard_ms;            /* last frame from the peer, 0 = none yet */
    long pinged_ms;           /* last PING sent, or when the session opened */
    int pending;              /* its messages not taken by oob_chan_poll yet */
    int peer_pending;         /* the peer's count, from its last PONG */
    uint8_t out[OUTQ * OOB_MSG_SIZE]; /* queued, not handed to the thread yet */
    size_t outlen;

    /* the service thread's own: no lock */
    int fd;
    uint32_t addrs[OOB_MAX_ADDRS];
    int naddr, ai;
    int refused;              /* addresses that refused the connection */
    int last_errno;           /* the last connect failure */
    uint16_t port;
    long deadline_ms;         /* connecting: give up on this address */
    uint8_t in[OOB_MSG_SIZE];
    size_t inlen;
    bool held;                /* in[] is a whole message the full ring could not take */
    bool shut;                /* closing: our side is shut down, reading to the end */
    uint8_t wbuf[OUTQ * OOB_MSG_SIZE]; /* being written */
    size_t wlen;
};

struct listener {
    int fd[OOB_MAX_ADDRS];    /* one per selected address, same port */
    int nfd;
    void *owner;
    bool closing;             /* unlistened: the thread closes the sockets */
};

static struct {
    pthread_t thread;
    pthread_mutex_t lock;
    int refs;
    int wake_fd;
    volatile int stop;
    struct session s[MAX_SESSIONS];
    struct listener l[MAX_LISTENERS];
    struct oob_event *ev;          /* ring */
    int ev_head, ev_tail;
    volatile int ev_count;         /* read without the lock on the fast path */
    int ping_ms;                   /* keepalive interval */
    bool paused;                   /* a session's reading waits for the CPC */
    char log[LOG_Q][160];          /* refusals, written out by the MPI thread */
    volatile int log_n;
    unsigned long refusals[R_COUNT];
} ch = { .lock = PTHREAD_MUTEX_INITIALIZER, .wake_fd = -1, .ping_ms = PING_MS_MAX };

static long now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000L + t.tv_nsec / 1000000L;
}

static void wake(void)
{
    uint64_t one = 1;
    ssize_t r = write(ch.wake_fd, &one, sizeof(one));
    (void) r;
}

/* with ch.lock held: the slot of a live handle, or NULL */
static struct session *lookup(int h)
{
    struct session *s;

    if (h < 0 || SLOT_OF(h) >= MAX_SESSIONS) {
        return NULL;
    }
    s = &ch.s[SLOT_OF(h)];
    return s->state != S_FREE && !s->closing && HANDLE(SLOT_OF(h), s->gen) == h ? s : NULL;
}

/* with ch.lock held. The thread logs nothing itself (opal_output is the
 * MPI thread's): it queues the line for oob_chan_poll to write. */
static void log_refusal(enum refusal r, uint32_t addr, const char *detail)
{
    unsigned long n = ++ch.refusals[r];
    char a[INET_ADDRSTRLEN];

    if ((n > LOG_FIRST && n % LOG_EVERY) || ch.log_n == LOG_Q) {
        return;
    }
    inet_ntop(AF_INET, &addr, a, sizeof(a));
    snprintf(ch.log[ch.log_n], sizeof(ch.log[0]),
             "openib: oob side channel: refused session from %s: %s (%s; %lu so far)", a,
             refusal_token[r], detail, n);
    __atomic_add_fetch(&ch.log_n, 1, __ATOMIC_RELEASE);
    openib_connect_work_queued();
}

/* with ch.lock held; false when the ring is full */
static bool push_event(enum oob_event_type type, int sid, const uint8_t *msg,
                       enum oob_error error, const char *why)
{
    struct oob_event *e;

    if (ch.ev_count == MAX_EVENTS) {
        return false;
    }
    e = &ch.ev[ch.ev_tail];
    ch.ev_tail = (ch.ev_tail + 1) % MAX_EVENTS;
    e->type = type;
    e->sid = HANDLE(sid, ch.s[sid].gen);
    e->owner = ch.s[sid].owner;
    e->listen_owner = ch.s[sid].listen_owner;
    e->peer_addr = ch.s[sid].peer_addr;
    e->error = error;
    if (msg) {
        memcpy(e->msg, msg, OOB_MSG_SIZE);
    }
    snprintf(e->why, sizeof(e->why), "%s", why ? why : "");
    __atomic_add_fetch(&ch.ev_count, 1, __ATOMIC_RELEASE);
    openib_connect_work_queued();
    return true;
}

/* with ch.lock held, on the service thread (or after it stopped) */
static void sess_free(int sid)
{
    struct session *s = &ch.s[sid];
    unsigned gen = s->gen + 1; /* a live handle dies now; a freed slot never
                                  looks like what it held (see thread_main) */

    if (s->fd >= 0) {
        close(s->fd);
    }
    memset(s, 0, sizeof(*s));
    s->fd = -1;
    s->state = S_FREE;
    s->gen = gen & GEN_MASK;
}

/* with ch.lock held: the handle dies at once, the socket when what was
 * queued is out and the peer has closed its side too (or FLUSH_MS, then
 * DRAIN_MS, passed: plan_session) */
static void sess_mark_closing(struct session *s)
{
    if (!s->closing) {
        s->closing = true;
        s->gen = (s->gen + 1) & GEN_MASK;
        s->owner = NULL;
        s->close_by_ms = 0; /* the thread starts the clock (plan_session) */
    }
}

/* with ch.lock held */
static void sess_fail(int sid, enum oob_error error, const char *why)
{
    /* An error on the session is an ERROR event. The ring being full
     * cannot lose it: the CPC's silence bound for that session ends the
     * handshake anyway (the session is gone: no keepalives answer). */
    if (!ch.s[sid].closing) {
        (void) push_event(OOB_EV_ERROR, sid, NULL, error, why);
    }
    sess_free(sid);
}

/* Every address was tried: say why none worked. Refused everywhere means
 * the peer's listening socket is closed, i.e. its process is gone; one
 * address refusing is no proof (it may be a local interface of ours that
 * the peer published too, e.g. a container bridge). With ch.lock held. */
static void connect_failed(int sid)
{
    struct session *s = &ch.s[sid];
    char why[96];

    if (s->naddr > 0 && s->refused == s->naddr) {
        sess_fail(sid, OOB_ERR_REFUSED, "connection refused at every address the peer published");
        return;
    }
    snprintf(why, sizeof(why), "could not connect to any published address (last: %s)",
             s->last_errno ? strerror(s->last_errno) : "no address");
    sess_fail(sid, OOB_ERR_IO, why);
}

static void note_connect_error(struct session *s, int err)
{
    s->last_errno = err;
    if (ECONNREFUSED == err) {
        s->refused++;
    }
}

/* with ch.lock held: queue a keepalive if there is room (if not, the
 * session is busy with real messages, which prove as much) */
static void queue_ka(struct session *s, uint8_t type)
{
    struct oob_ka k = { .type = type, .pending = (uint16_t) (s->pending > 0xffff ? 0xffff
                                                                                  : s->pending) };

    if (s->outlen + OOB_MSG_SIZE <= sizeof(s->out) &&
        OPAL_SUCCESS == oob_ka_encode(s->out + s->outlen, OOB_MSG_SIZE, &k)) {
        s->outlen += OOB_MSG_SIZE;
    }
}

static int nonblock(int fd)
{
    int f = fcntl(fd, F_GETFL);
    return f < 0 ? -1 : fcntl(fd, F_SETFL, f | O_NONBLOCK);
}

/* Service thread, no lock: start connecting to the next address; false
 * when none is left. A non-blocking connect returns at once. */
static bool try_next_addr(struct session *s)
{
    while (s->ai < s->naddr) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(s->port),
                                  .sin_addr.s_addr = s->addrs[s->ai++] };
        int one = 1;

        if (s->fd >= 0) {
            close(s->fd);
        }
        s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s->fd < 0 || nonblock(s->fd)) {
            continue;
        }
        setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        s->deadline_ms = now_ms() + (s->ai < s->naddr ? CONNECT_TRY_MS : CONNECT_LAST_MS);
        if (0 == connect(s->fd, (struct sockaddr *) &sa, sizeof(sa)) || errno == EINPROGRESS) {
            return true;
        }
        note_connect_error(s, errno);
    }
    return false;
}

/* Service thread: the next address of a session being opened, then the
 * state change under the lock. */
static void connect_step(int sid)
{
    struct session *s = &ch.s[sid];
    bool ok = try_next_addr(s);

    pthread_mutex_lock(&ch.lock);
    if (s->closing) {
        sess_free(sid);
    } else if (ok) {
        s->state = S_CONNECTING;
    } else {
        connect_failed(sid);
    }
    pthread_mutex_unlock(&ch.lock);
}

/* Service thread, no lock: 0, or the errno that ends the session */
static int do_write(struct session *s)
{
    while (s->wlen) {
        ssize_t n = send(s->fd, s->wbuf, s->wlen, MSG_NOSIGNAL);
        if (n < 0) {
            return errno == EAGAIN || errno == EINTR ? 0 : errno;
        }
        memmove(s->wbuf, s->wbuf + n, s->wlen - n);
        s->wlen -= n;
    }
    return 0;
}

/* With ch.lock held: a whole frame arrived, it proves the peer alive
 * whatever it is. The channel's keepalives are answered and consumed here;
 * everything else is a CPC's message, queued for progress. False: stop
 * reading this session (closed, or its message waits for room). */
static bool on_frame(int sid)
{
    struct session *s = &ch.s[sid];
    struct oob_ka k;
    int rc;

    s->heard_ms = now_ms();
    rc = oob_ka_decode(s->in, OOB_MSG_SIZE, &k);
    if (OPAL_SUCCESS == rc) {
        s->inlen = 0;
        if (OOB_KA_PING == k.type && !s->closing) {
            queue_ka(s, OOB_KA_PONG);
        } else {
            s->peer_pending = k.pending;
        }
        return true;
    }
    if (OPAL_ERR_NOT_FOUND != rc) {
        sess_fail(sid, OOB_ERR_IO, "the peer sent a side-channel keepalive of another version");
        return false;
    }
    if (s->closing) {
        s->inlen = 0; /* nobody will read it */
        return true;
    }
    if (!push_event(OOB_EV_MSG, sid, s->in, 0, NULL)) {
        /* Back-pressure, not loss: keep the message and stop reading this
         * session until the ring has room (TCP then holds the sender). */
        s->held = true;
        return false;
    }
    s->held = false;
    s->inlen = 0;
    s->pending++;
    s->spoke = true;
    return s->trusted || !s->accepted || s->pending < UNTRUSTED_PENDING_MAX;
}

/* Service thread: read what is there without the lock, taking it per
 * whole frame. */
static void do_read(int sid)
{
    struct session *s = &ch.s[sid];
    ssize_t n;
    bool go;

    for (;;) {
        n = recv(s->fd, s->in + s->inlen, OOB_MSG_SIZE - s->inlen, 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
            int err = n < 0 ? errno : 0;
            pthread_mutex_lock(&ch.lock);
            if (n == 0) {
                sess_fail(sid, OOB_ERR_CLOSED, "the peer closed the side channel");
            } else {
                sess_fail(sid, OOB_ERR_IO, strerror(err));
            }
            pthread_mutex_unlock(&ch.lock);
            return;
        }
        if (n < 0) {
            return;
        }
        s->inlen += n;
        if (s->inlen < OOB_MSG_SIZE) {
            continue;
        }
        pthread_mutex_lock(&ch.lock);
        go = on_frame(sid);
        pthread_mutex_unlock(&ch.lock);
        if (!go) {
            return;
        }
    }
}

static int alloc_session(void)
{
    int i;
    for (i = 0; i < MAX_SESSIONS; ++i) {
        if (ch.s[i].state == S_FREE) {
            ch.s[i].fd = -1;
            return i;
        }
    }
    return -1;
}

/* with ch.lock held: an unverified accepted session that could be evicted */
static bool unverified(const struct session *s)
{
    return s->state == S_OPEN && s->accepted && !s->trusted && !s->closing;
}

/* with ch.lock held: the oldest unverified session that has said nothing
 * (from addr, or from anywhere when any) - an honest initiator sends its
 * request the moment it connects, so a silent one is the one to drop */
static int oldest_silent(uint32_t addr, bool any)
{
    int i, best = -1;

    for (i = 0; i < MAX_SESSIONS; ++i) {
        const struct session *s = &ch.s[i];
        if (unverified(s) && !s->spoke && 0 == s->pending && (any || s->peer_addr == addr) &&
            (best < 0 || s->opened_ms < ch.s[best].opened_ms)) {
            best = i;
        }
    }
    return best;
}

/* With ch.lock held: take an accepted connection into a session unless
 * the limits on unverified sessions say no; false = close fd. */
static bool admit(int fd, uint32_t addr, void *owner)
{
    int i, from_src = 0, all = 0, victim = -1, sid;
    enum refusal why = R_SESSION_CAP;
    long t = now_ms();

    for (i = 0; i < MAX_SESSIONS; ++i) {
        if (unverified(&ch.s[i])) {
            all++;
            from_src += ch.s[i].peer_addr == addr;
        }
    }
    if (from_src >= oob_params_per_source()) {
        why = R_PER_SOURCE;
        victim = oldest_silent(addr, false);
    } else if (all >= UNTRUSTED_MAX) {
        victim = oldest_silent(addr, true);
    }
    if (from_src >= oob_params_per_source() || all >= UNTRUSTED_MAX) {
        if (victim < 0) {
            log_refusal(why, addr, "the new connection closed");
            return false;
        }
        log_refusal(why, ch.s[victim].peer_addr, "its oldest silent session closed");
        sess_free(victim);
    }
    sid = alloc_session();
    if (sid < 0) {
        log_refusal(R_SESSION_CAP, addr, "no free session");
        return false;
    }
    ch.s[sid] = (struct session) { .state = S_OPEN, .fd = fd, .listen_owner = owner,
                                   .accepted = true, .gen = ch.s[sid].gen, .pinged_ms = t,
                                   .opened_ms = t, .idle_from_ms = t, .peer_addr = addr };
    return true;
}

/* Service thread: accept without the lock, admit with it */
static void do_accept(int lfd, void *owner)
{
    int k;

    for (k = 0; k < ACCEPT_BATCH; ++k) {
        struct sockaddr_in from = { 0 };
        socklen_t fromlen = sizeof(from);
        int fd = accept4(lfd, (struct sockaddr *) &from, &fromlen, SOCK_NONBLOCK | SOCK_CLOEXEC);
        int one = 1;
        bool ok;

        if (fd < 0) {
            return;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        pthread_mutex_lock(&ch.lock);
        ok = admit(fd, from.sin_addr.s_addr, owner);
        pthread_mutex_unlock(&ch.lock);
        if (!ok) {
            close(fd);
        }
    }
}

static void min_timeout(int *timeout, long wait)
{
    if (wait < 0) {
        wait = 0;
    }
    if (*timeout < 0 || wait < *timeout) {
        *timeout = (int) wait;
    }
}

/* With ch.lock held, on the service thread: timers and state changes of
 * one session before polling; returns the poll events wanted (0 = none),
 * or -1 when the session needs connect_step first. */
/* Whether a non-blocking connect has completed by now (without waiting).
 * Asked before a connect is given up: a thread that did not run for a
 * while (a loaded or oversubscribed node) finds the deadline passed
 * although the connection was made long ago. */
static bool connect_done(const struct session *s)
{
    struct pollfd p = { .fd = s->fd, .events = POLLOUT };
    socklen_t len = sizeof(int);
    int err = 0;

    return 1 == poll(&p, 1, 0) && (p.revents & POLLOUT) &&
           0 == getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len) && 0 == err;
}

static int plan_session(int i, long t, int idle_ms, int *timeout)
{
    struct session *s = &ch.s[i];
    bool reading;
    size_t take;

    if (s->closing && 0 == s->close_by_ms) {
        /* from when this thread first sees it: a thread that did not run
         * for a while (a loaded node) still sends the last message */
        s->close_by_ms = t + FLUSH_MS;
    }
    if (s->closing && (s->state != S_OPEN || t >= s->close_by_ms)) {
        sess_free(i);
        return 0;
    }
    if (s->closing && 0 == s->wlen && 0 == s->outlen) {
        /* All sent: FIN, then read until the peer closes too. Closing a
         * socket with unread bytes (a keepalive that crossed our last
         * message) resets the connection, and a reset can destroy our
         * last message in the peer's kernel before its thread reads it. */
        if (!s->shut) {
            (void) shutdown(s->fd, SHUT_WR);
            s->shut = true;
            s->close_by_ms = t + DRAIN_MS;
        }
        min_timeout(timeout, s->close_by_ms - t);
        return POLLIN;
    }
    if (s->state == S_START) {
        return -1;
    }
    if (s->state == S_CONNECTING) {
        if (t > s->deadline_ms && !connect_done(s)) {
            note_connect_error(s, ETIMEDOUT);
            return -1;
        }
        min_timeout(timeout, 100); /* look at its deadline again */
        return POLLOUT;
    }
    if (s->held && ch.ev_count < MAX_EVENTS) {
        /* the ring has room again: the held message goes first */
        (void) on_frame(i);
        if (s->state == S_FREE) {
            return 0;
        }
    }
    if (unverified(s) && 0 == s->pending && !s->held) {
        long wait = s->idle_from_ms + idle_ms - t;
        if (wait <= 0) {
            char d[48];
            snprintf(d, sizeof(d), "no handshake message within %d s", idle_ms / 1000);
            log_refusal(R_IDLE, s->peer_addr, idle_ms >= 1000 ? d : "no handshake message");
            sess_free(i);
            return 0;
        }
        min_timeout(timeout, wait);
    }
    if (!s->closing) {
        /* keepalive: PING a session silent for ping_ms */
        long last = s->heard_ms > s->pinged_ms ? s->heard_ms : s->pinged_ms;
        long wait = last + ch.ping_ms - t;

        if (wait <= 0) {
            queue_ka(s, OOB_KA_PING);
            s->pinged_ms = t;
            wait = ch.ping_ms;
        }
        min_timeout(timeout, wait);
    } else {
        min_timeout(timeout, s->close_by_ms - t);
    }
    /* hand queued messages to the thread's write buffer */
    take = sizeof(s->wbuf) - s->wlen;
    take = take < s->outlen ? take : s->outlen;
    if (take) {
        memcpy(s->wbuf + s->wlen, s->out, take);
        s->wlen += take;
        memmove(s->out, s->out + take, s->outlen - take);
        s->outlen -= take;
    }
    reading = !s->closing && !s->held &&
              (s->trusted || !s->accepted || s->pending < UNTRUSTED_PENDING_MAX);
    if (!reading && !s->closing) {
        ch.paused = true; /* oob_chan_poll wakes us when it makes room */
    }
    return (s->wlen ? POLLOUT : 0) | (reading ? POLLIN : 0);
}

/* Service thread: after poll, one session's socket, no lock; events is
 * what was polled for */
static void serve_session(int sid, short events, short revents)
{
    struct session *s = &ch.s[sid];
    int err;

    if (s->state == S_CONNECTING) {
        socklen_t len = sizeof(err);
        err = 0;
        getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err || (revents & (POLLERR | POLLHUP))) {
            note_connect_error(s, err ? err : EIO);
            connect_step(sid);
            return;
        }
        pthread_mutex_lock(&ch.lock);
        s->state = S_OPEN;
        s->pinged_ms = now_ms();
        pthread_mutex_unlock(&ch.lock);
        return; /* the next round writes (the first message is queued) */
    }
    if (revents & POLLOUT) {
        err = do_write(s);
        if (err) {
            pthread_mutex_lock(&ch.lock);
            sess_fail(sid, OOB_ERR_IO, strerror(err));
            pthread_mutex_unlock(&ch.lock);
            return;
        }
    }
    /* a session not polled for input is not read, even on a hang-up: its
     * held message or the CPC's backlog comes first */
    if ((events & POLLIN) && (revents & (POLLIN | POLLHUP | POLLERR))) {
        do_read(sid);
    }
}

static void *thread_main(void *arg)
{
    static struct pollfd pfd[1 + MAX_LISTENERS * OOB_MAX_ADDRS + MAX_SESSIONS];
    static int map[1 + MAX_LISTENERS * OOB_MAX_ADDRS + MAX_SESSIONS];
    static unsigned gen[1 + MAX_LISTENERS * OOB_MAX_ADDRS + MAX_SESSIONS];
    static int step[MAX_SESSIONS];

    (void) arg;
    for (;;) {
        int n = 0, nstep = 0, i, j, k, timeout = -1, idle_ms = oob_params_idle_ms();
        long t = now_ms();

        pthread_mutex_lock(&ch.lock);
        if (ch.stop) {
            pthread_mutex_unlock(&ch.lock);
            break;
        }
        pfd[n] = (struct pollfd) { .fd = ch.wake_fd, .events = POLLIN };
        map[n++] = -1;
        for (i = 0; i < MAX_LISTENERS; ++i) {
            struct listener *l = &ch.l[i];
            if (l->closing) {
                for (j = 0; j < l->nfd; ++j) {
                    close(l->fd[j]);
                }
                *l = (struct listener) { .nfd = 0 };
                continue;
            }
            for (j = 0; l->owner && j < l->nfd; ++j) {
                pfd[n] = (struct pollfd) { .fd = l->fd[j], .events = POLLIN };
                map[n++] = -2 - (i * OOB_MAX_ADDRS + j);
            }
        }
        ch.paused = false;
        for (i = 0; i < MAX_SESSIONS; ++i) {
            int ev;
            if (ch.s[i].state == S_FREE) {
                continue;
            }
            ev = plan_session(i, t, idle_ms, &timeout);
            if (ev < 0) {
                step[nstep++] = i;
            } else if (ev > 0) {
                /* a session that wants nothing is not polled at all: its
                 * POLLHUP would wake us in a loop */
                pfd[n] = (struct pollfd) { .fd = ch.s[i].fd, .events = (short) ev };
                gen[n] = ch.s[i].gen;
                map[n++] = i;
            }
        }
        pthread_mutex_unlock(&ch.lock);

        if (nstep) {
            for (k = 0; k < nstep; ++k) {
                connect_step(step[k]);
            }
            continue; /* poll the new sockets in the next round */
        }
        /* Idle (no session open): sleep until a socket or wake() has
         * something, rather than waking a spinning rank's CPU 10 times a
         * second. Sessions exist only while handshakes are under way. */
        if (poll(pfd, n, timeout) <= 0) {
            continue;
        }
        for (k = 0; k < n; ++k) {
            if (!pfd[k].revents) {
                continue;
            }
            if (map[k] == -1) {
                uint64_t v;
                ssize_t r = read(ch.wake_fd, &v, sizeof(v));
                (void) r;
            } else if (map[k] <= -2) {
                int li = (-2 - map[k]) / OOB_MAX_ADDRS;
                void *owner;
                pthread_mutex_lock(&ch.lock);
                owner = ch.l[li].owner;
                pthread_mutex_unlock(&ch.lock);
                if (owner) { /* the socket stays open until this thread closes it */
                    do_accept(pfd[k].fd, owner);
                }
            } else {
                /* Handling an earlier entry may have freed this slot (an
                 * eviction) and given it to a new session: a slot's
                 * generation changes whenever its handle dies. */
                struct session *s = &ch.s[map[k]];
                bool same;
                pthread_mutex_lock(&ch.lock);
                same = s->gen == gen[k] && (s->state == S_CONNECTING || s->state == S_OPEN);
                pthread_mutex_unlock(&ch.lock);
                if (same) {
                    serve_session(map[k], pfd[k].events, pfd[k].revents);
                }
            }
        }
    }
    return NULL;
}

int oob_chan_start(void)
{
    int rc = OPAL_SUCCESS, i;

    pthread_mutex_lock(&ch.lock);
    if (ch.refs++ > 0) {
        goto out;
    }
    ch.ev = calloc(MAX_EVENTS, sizeof(*ch.ev));
    ch.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    for (i = 0; i < MAX_SESSIONS; ++i) {
        ch.s[i].fd = -1;
    }
    ch.stop = 0;
    if (!ch.ev || ch.wake_fd < 0 || pthread_create(&ch.thread, NULL, thread_main, NULL)) {
        free(ch.ev);
        ch.ev = NULL;
        if (ch.wake_fd >= 0) {
            close(ch.wake_fd);
        }
        ch.refs = 0;
        rc = OPAL_ERR_OUT_OF_RESOURCE;
    }
out:
    pthread_mutex_unlock(&ch.lock);
    return rc;
}

void oob_chan_stop(void)
{
    int i, j;

    pthread_mutex_lock(&ch.lock);
    if (ch.refs == 0 || --ch.refs > 0) {
        pthread_mutex_unlock(&ch.lock);
        return;
    }
    ch.stop = 1;
    wake();
    pthread_mutex_unlock(&ch.lock);
    pthread_join(ch.thread, NULL);
    for (i = 0; i < MAX_SESSIONS; ++i) {
        if (ch.s[i].state != S_FREE) {
            sess_free(i);
        }
    }
    for (i = 0; i < MAX_LISTENERS; ++i) {
        for (j = 0; j < ch.l[i].nfd; ++j) {
            close(ch.l[i].fd[j]);
        }
        ch.l[i] = (struct listener) { .nfd = 0 };
    }
    close(ch.wake_fd);
    ch.wake_fd = -1;
    free(ch.ev);
    ch.ev = NULL;
    ch.ev_head = ch.ev_tail = ch.ev_count = 0;
    ch.log_n = 0;
}

static void close_all(int *fd, int n)
{
    while (n-- > 0) {
        close(fd[n]);
    }
}

/* One listening socket per selected address, all on the same port (the
 * blob publishes one port): the first takes an ephemeral port, the others
 * bind to it; if another socket holds that port on one of the addresses,
 * start over with a new port. */
static int bind_selected(int *fd, int *nfd, uint16_t *port_out)
{
    uint32_t addrs[OOB_MAX_ADDRS];
    int naddr = oob_local_addrs(addrs, OOB_MAX_ADDRS), attempt, i;

    if (0 == naddr) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    for (attempt = 0; attempt < 16; ++attempt) {
        uint16_t port = 0;
        bool retry = false;

        *nfd = 0;
        for (i = 0; i < naddr; ++i) {
            struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = addrs[i],
                                      .sin_port = htons(port) };
            socklen_t len = sizeof(sa);
            int f = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

            if (f < 0) {
                close_all(fd, *nfd);
                return OPAL_ERR_OUT_OF_RESOURCE;
            }
            if (bind(f, (struct sockaddr *) &sa, sizeof(sa))) {
                retry = EADDRINUSE == errno && port != 0;
                close(f);
                close_all(fd, *nfd);
                if (retry) {
                    break;
                }
                return OPAL_ERROR;
            }
            /* the kernel caps the queue at net.core.somaxconn */
            if (listen(f, SOMAXCONN) || getsockname(f, (struct sockaddr *) &sa, &len)) {
                close(f);
                close_all(fd, *nfd);
                return OPAL_ERROR;
            }
            port = ntohs(sa.sin_port);
            fd[(*nfd)++] = f;
        }
        if (!retry) {
            *port_out = port;
            return OPAL_SUCCESS;
        }
    }
    return OPAL_ERROR;
}

int oob_chan_listen(void *owner, uint16_t *port_out, int *lid_out)
{
    int fd[OOB_MAX_ADDRS], nfd = 0, i, rc;
    uint16_t port = 0;

    rc = bind_selected(fd, &nfd, &port);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    pthread_mutex_lock(&ch.lock);
    for (i = 0; i < MAX_LISTENERS && (ch.l[i].owner || ch.l[i].closing); ++i) {
    }
    if (i == MAX_LISTENERS) {
        pthread_mutex_unlock(&ch.lock);
        close_all(fd, nfd);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    ch.l[i] = (struct listener) { .owner = owner, .nfd = nfd };
    memcpy(ch.l[i].fd, fd, sizeof(fd[0]) * nfd);
    wake();
    pthread_mutex_unlock(&ch.lock);
    *port_out = port;
    *lid_out = i;
    return OPAL_SUCCESS;
}

void oob_chan_unlisten(int lid)
{
    pthread_mutex_lock(&ch.lock);
    if (lid >= 0 && lid < MAX_LISTENERS && ch.l[lid].owner) {
        /* the thread may be polling these sockets: it closes them */
        ch.l[lid].owner = NULL;
        ch.l[lid].closing = true;
        wake();
    }
    pthread_mutex_unlock(&ch.lock);
}

int oob_chan_connect(const uint32_t *addrs, int naddr, uint16_t port, const uint8_t *msg,
                     void *owner, int *sid_out)
{
    struct session *s;
    int sid;

    pthread_mutex_lock(&ch.lock);
    sid = alloc_session();
    if (sid < 0) {
        pthread_mutex_unlock(&ch.lock);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    s = &ch.s[sid];
    /* the thread connects (socket calls are its job); a failure, even an
     * immediate one, comes as an OOB_EV_ERROR */
    *s = (struct session) { .state = S_START, .fd = -1, .owner = owner, .port = port,
                            .gen = s->gen, .naddr = naddr > OOB_MAX_ADDRS ? OOB_MAX_ADDRS : naddr };
    memcpy(s->addrs, addrs, sizeof(uint32_t) * s->naddr);
    memcpy(s->out, msg, OOB_MSG_SIZE);
    s->outlen = OOB_MSG_SIZE;
    *sid_out = HANDLE(sid, s->gen);
    wake();
    pthread_mutex_unlock(&ch.lock);
    return OPAL_SUCCESS;
}

int oob_chan_send(int h, const uint8_t *msg)
{
    int rc = OPAL_SUCCESS;
    struct session *s;

    pthread_mutex_lock(&ch.lock);
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
        wake();
    }
    pthread_mutex_unlock(&ch.lock);
    return rc;
}

void oob_chan_close(int h)
{
    struct session *s;

    pthread_mutex_lock(&ch.lock);
    s = lookup(h);
    if (s) {
        /* Let what was queued (e.g. a final message) go out first; the
         * thread closes the socket. */
        sess_mark_closing(s);
        wake();
    }
    pthread_mutex_unlock(&ch.lock);
}

void oob_chan_trust(int h)
{
    struct session *s;

    pthread_mutex_lock(&ch.lock);
    s = lookup(h);
    if (s) {
        s->trusted = true;
        wake(); /* it may have been paused for having too much unread */
    }
    pthread_mutex_unlock(&ch.lock);
}

/* MPI thread: write out the refusals the service thread queued */
static void flush_log(void)
{
    char lines[LOG_Q][sizeof(ch.log[0])];
    int n, i;

    pthread_mutex_lock(&ch.lock);
    n = ch.log_n;
    memcpy(lines, ch.log, sizeof(lines[0]) * n);
    __atomic_store_n(&ch.log_n, 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&ch.lock);
    for (i = 0; i < n; ++i) {
        openib_cpc_log(1, "%s", lines[i]);
    }
}

bool oob_chan_poll(struct oob_event *ev)
{
    if (OPAL_LIKELY(0 == __atomic_load_n(&ch.ev_count, __ATOMIC_ACQUIRE) &&
                    0 == __atomic_load_n(&ch.log_n, __ATOMIC_ACQUIRE))) {
        return false;
    }
    if (ch.log_n) {
        flush_log();
    }
    pthread_mutex_lock(&ch.lock);
    if (0 == ch.ev_count) {
        pthread_mutex_unlock(&ch.lock);
        return false;
    }
    *ev = ch.ev[ch.ev_head];
    ch.ev_head = (ch.ev_head + 1) % MAX_EVENTS;
    __atomic_sub_fetch(&ch.ev_count, 1, __ATOMIC_RELEASE);
    if (OOB_EV_MSG == ev->type) {
        struct session *s = lookup(ev->sid);
        if (s && s->pending > 0) {
            s->pending--; /* taken: the PONGs stop saying "not taken yet" */
            if (0 == s->pending) {
                s->idle_from_ms = now_ms(); /* the CPC looked: its deadline restarts */
            }
        }
    }
    if (ch.paused) {
        wake(); /* a session waits for room we just made */
    }
    pthread_mutex_unlock(&ch.lock);
    return true;
}

void oob_chan_set_ping_ms(int ms)
{
    ms = ms < PING_MS_MIN ? PING_MS_MIN : ms > PING_MS_MAX ? PING_MS_MAX : ms;
    pthread_mutex_lock(&ch.lock);
    if (ms < ch.ping_ms) {
        ch.ping_ms = ms;
        if (ch.wake_fd >= 0) {
            wake();
        }
    }
    pthread_mutex_unlock(&ch.lock);
}

int oob_chan_liveness(int h, long *heard_ms, int *peer_pending)
{
    struct session *s;
    int rc = OPAL_ERR_NOT_FOUND;

    pthread_mutex_lock(&ch.lock);
    s = lookup(h);
    if (s) {
        *heard_ms = s->heard_ms;
        *peer_pending = s->peer_pending;
        rc = OPAL_SUCCESS;
    }
    pthread_mutex_unlock(&ch.lock);
    return rc;
}

int oob_chan_backlog(void)
{
    return __atomic_load_n(&ch.ev_count, __ATOMIC_ACQUIRE);
}

int oob_chan_backlog_max(void)
{
    return MAX_EVENTS;
}

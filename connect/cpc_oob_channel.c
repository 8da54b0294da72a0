/*
 * cpc_oob_channel.c - the oob CPC's side-channel thread and sockets.
 */
#include "opal_config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
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

#include "connect/cpc_oob_channel.h"
#include "connect/cpc_oob_wire.h"
#include "connect/openib_connect.h"

#define MAX_SESSIONS 1024
#define MAX_LISTENERS 16
#define MAX_EVENTS 4096
#define OUTQ 4                    /* messages queued per session */
#define CONNECT_TRY_MS 2000       /* per address */
#define PING_MS_MIN 200
#define PING_MS_MAX 10000

enum sess_state { S_FREE = 0, S_CONNECTING, S_OPEN };

/* A session handle is slot | generation << 12: a slot is reused as soon as
 * it is freed, so a handle the caller still holds must not reach the
 * slot's next session (e.g. closing an old session must not close a new
 * connection that took its slot). */
#define SLOT_BITS 12
#define HANDLE(slot, gen) ((int) ((gen) << SLOT_BITS | (slot)))
#define SLOT_OF(h) ((h) & ((1 << SLOT_BITS) - 1))
#define GEN_MASK 0x7ffff

struct session {
    enum sess_state state;
    unsigned gen;
    int fd;
    void *owner;
    void *listen_owner;
    uint32_t addrs[OOB_MAX_ADDRS];
    int naddr, ai;
    int refused;              /* addresses that refused the connection */
    int last_errno;           /* the last connect failure */
    uint16_t port;
    uint32_t peer_addr;       /* accepted: remote IPv4, network order */
    long deadline_ms;         /* connecting: give up on this address */
    long heard_ms;            /* last frame from the peer, 0 = none yet */
    long pinged_ms;           /* last PING sent, or when the session opened */
    int pending;              /* its messages not taken by oob_chan_poll yet */
    int peer_pending;         /* the peer's count, from its last PONG */
    uint8_t out[OUTQ * OOB_MSG_SIZE];
    size_t outlen;
    uint8_t in[OOB_MSG_SIZE];
    size_t inlen;
    bool close_after_flush;
    bool trusted;             /* oob_chan_trust: a verified job member */
};

struct listener {
    int fd;
    void *owner;
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
    return s->state != S_FREE && HANDLE(SLOT_OF(h), s->gen) == h ? s : NULL;
}

/* with ch.lock held; false when the queue is full */
static bool push_event(enum oob_event_type type, int sid, const uint8_t *msg,
                       enum oob_error error, const char *why)
{
    struct oob_event *e;

    if (ch.ev_count == MAX_EVENTS) {
        /* Lost: the waiting side hears nothing more on that session and
         * its silence bound ends the handshake. */
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

/* with ch.lock held */
static void sess_free(int sid)
{
    struct session *s = &ch.s[sid];
    unsigned gen = s->gen;

    if (s->fd >= 0) {
        close(s->fd);
    }
    memset(s, 0, sizeof(*s));
    s->fd = -1;
    s->state = S_FREE;
    s->gen = (gen + 1) & GEN_MASK;
}

static void sess_fail(int sid, enum oob_error error, const char *why)
{
    (void) push_event(OOB_EV_ERROR, sid, NULL, error, why);
    sess_free(sid);
}

/* Every address was tried: say why none worked. Refused everywhere means
 * the peer's listening socket is closed, i.e. its process is gone; one
 * address refusing is no proof (it may be a local interface of ours that
 * the peer published too, e.g. a container bridge). */
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

/* Start connecting to the current address; false when none is left. */
static bool try_next_addr(int sid)
{
    struct session *s = &ch.s[sid];

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
        s->deadline_ms = now_ms() + CONNECT_TRY_MS;
        if (0 == connect(s->fd, (struct sockaddr *) &sa, sizeof(sa)) || errno == EINPROGRESS) {
            s->state = S_CONNECTING;
            return true;
        }
        note_connect_error(s, errno);
    }
    return false;
}

static void do_write(int sid)
{
    struct session *s = &ch.s[sid];
    ssize_t n;

    while (s->outlen) {
        n = send(s->fd, s->out, s->outlen, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno != EAGAIN && errno != EINTR) {
                sess_fail(sid, OOB_ERR_IO, strerror(errno));
            }
            return;
        }
        memmove(s->out, s->out + n, s->outlen - n);
        s->outlen -= n;
    }
    if (s->close_after_flush) {
        sess_free(sid);
    }
}

/* A whole frame arrived: it proves the peer alive whatever it is. The
 * channel's keepalives are answered and consumed here; everything else is
 * a CPC's message, queued for progress. */
static bool on_frame(int sid)
{
    struct session *s = &ch.s[sid];
    struct oob_ka k;
    int rc;

    s->heard_ms = now_ms();
    rc = oob_ka_decode(s->in, OOB_MSG_SIZE, &k);
    if (OPAL_SUCCESS == rc) {
        if (OOB_KA_PING == k.type) {
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
    if (!push_event(OOB_EV_MSG, sid, s->in, 0, NULL)) {
        /* closing makes the sender retry rather than wait for an answer
         * to a message nobody will read */
        sess_fail(sid, OOB_ERR_IO, "too many side-channel messages waiting for this process");
        return false;
    }
    s->pending++;
    return true;
}

static void do_read(int sid)
{
    struct session *s = &ch.s[sid];
    ssize_t n;

    for (;;) {
        n = recv(s->fd, s->in + s->inlen, OOB_MSG_SIZE - s->inlen, 0);
        if (n == 0) {
            sess_fail(sid, OOB_ERR_CLOSED, "the peer closed the side channel");
            return;
        }
        if (n < 0) {
            if (errno != EAGAIN && errno != EINTR) {
                sess_fail(sid, OOB_ERR_IO, strerror(errno));
            }
            return;
        }
        s->inlen += n;
        if (s->inlen == OOB_MSG_SIZE) {
            s->inlen = 0;
            if (!on_frame(sid)) {
                return;
            }
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

static void do_accept(struct listener *l)
{
    for (;;) {
        struct sockaddr_in from = { 0 };
        socklen_t fromlen = sizeof(from);
        int fd = accept4(l->fd, (struct sockaddr *) &from, &fromlen, SOCK_NONBLOCK | SOCK_CLOEXEC);
        int sid, one = 1;
        if (fd < 0) {
            return;
        }
        sid = alloc_session();
        if (sid < 0) {
            close(fd);
            continue;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        ch.s[sid] = (struct session) { .state = S_OPEN, .fd = fd, .listen_owner = l->owner,
                                       .gen = ch.s[sid].gen, .pinged_ms = now_ms(),
                                       .peer_addr = from.sin_addr.s_addr };
    }
}

static void *thread_main(void *arg)
{
    struct pollfd pfd[1 + MAX_LISTENERS + MAX_SESSIONS];
    int map[1 + MAX_LISTENERS + MAX_SESSIONS];

    (void) arg;
    while (!ch.stop) {
        int n = 0, i, k, timeout = -1;
        long t = now_ms();

        pthread_mutex_lock(&ch.lock);
        pfd[n] = (struct pollfd) { .fd = ch.wake_fd, .events = POLLIN };
        map[n++] = -1;
        for (i = 0; i < MAX_LISTENERS; ++i) {
            if (ch.l[i].owner) {
                pfd[n] = (struct pollfd) { .fd = ch.l[i].fd, .events = POLLIN };
                map[n++] = -2 - i;
            }
        }
        for (i = 0; i < MAX_SESSIONS; ++i) {
            struct session *s = &ch.s[i];
            if (s->state == S_CONNECTING && t > s->deadline_ms) {
                note_connect_error(s, ETIMEDOUT);
                if (!try_next_addr(i)) {
                    connect_failed(i);
                    continue;
                }
            }
            if (s->state == S_FREE) {
                continue;
            }
            if (s->state == S_CONNECTING) {
                if (timeout < 0 || timeout > 100) {
                    timeout = 100; /* look at its deadline again */
                }
            } else if (!s->close_after_flush) {
                /* keepalive: PING a session silent for ping_ms */
                long last = s->heard_ms > s->pinged_ms ? s->heard_ms : s->pinged_ms;
                long wait = last + ch.ping_ms - t;

                if (wait <= 0) {
                    queue_ka(s, OOB_KA_PING);
                    s->pinged_ms = t;
                    wait = ch.ping_ms;
                }
                if (timeout < 0 || wait < timeout) {
                    timeout = (int) wait;
                }
            }
            pfd[n] = (struct pollfd) {
                .fd = s->fd,
                .events = (s->state == S_CONNECTING || s->outlen ? POLLOUT : 0) | POLLIN,
            };
            map[n++] = i;
        }
        pthread_mutex_unlock(&ch.lock);

        /* Idle (no session open): sleep until a socket or wake() has
         * something, rather than waking a spinning rank's CPU 10 times a
         * second. Sessions exist only while handshakes are under way. */
        if (poll(pfd, n, timeout) <= 0) {
            continue;
        }
        pthread_mutex_lock(&ch.lock);
        for (k = 0; k < n; ++k) {
            if (!pfd[k].revents) {
                continue;
            }
            if (map[k] == -1) {
                uint64_t v;
                ssize_t r = read(ch.wake_fd, &v, sizeof(v));
                (void) r;
            } else if (map[k] <= -2) {
                do_accept(&ch.l[-2 - map[k]]);
            } else {
                int sid = map[k];
                struct session *s = &ch.s[sid];
                if (s->state == S_FREE) {
                    continue; /* closed while we polled */
                }
                if (s->state == S_CONNECTING) {
                    int err = 0;
                    socklen_t len = sizeof(err);
                    getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len);
                    if (err || (pfd[k].revents & (POLLERR | POLLHUP))) {
                        note_connect_error(s, err ? err : EIO);
                        if (!try_next_addr(sid)) {
                            connect_failed(sid);
                        }
                        continue;
                    }
                    s->state = S_OPEN;
                    s->pinged_ms = now_ms();
                }
                if (s->state == S_OPEN && (pfd[k].revents & POLLOUT)) {
                    do_write(sid);
                }
                if (s->state == S_OPEN && (pfd[k].revents & (POLLIN | POLLHUP | POLLERR))) {
                    do_read(sid);
                }
            }
        }
        pthread_mutex_unlock(&ch.lock);
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
    int i;

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
        if (ch.l[i].owner) {
            close(ch.l[i].fd);
            ch.l[i].owner = NULL;
        }
    }
    close(ch.wake_fd);
    ch.wake_fd = -1;
    free(ch.ev);
    ch.ev = NULL;
    ch.ev_head = ch.ev_tail = ch.ev_count = 0;
}

int oob_chan_listen(void *owner, uint16_t *port_out, int *lid_out)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY) };
    socklen_t len = sizeof(sa);
    int fd, i;

    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) || listen(fd, 128) ||
        getsockname(fd, (struct sockaddr *) &sa, &len)) {
        close(fd);
        return OPAL_ERROR;
    }
    pthread_mutex_lock(&ch.lock);
    for (i = 0; i < MAX_LISTENERS && ch.l[i].owner; ++i) {
    }
    if (i == MAX_LISTENERS) {
        pthread_mutex_unlock(&ch.lock);
        close(fd);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    ch.l[i] = (struct listener) { .fd = fd, .owner = owner };
    wake();
    pthread_mutex_unlock(&ch.lock);
    *port_out = ntohs(sa.sin_port);
    *lid_out = i;
    return OPAL_SUCCESS;
}

void oob_chan_unlisten(int lid)
{
    pthread_mutex_lock(&ch.lock);
    if (lid >= 0 && lid < MAX_LISTENERS && ch.l[lid].owner) {
        close(ch.l[lid].fd);
        ch.l[lid].owner = NULL;
    }
    pthread_mutex_unlock(&ch.lock);
}

int oob_chan_connect(const uint32_t *addrs, int naddr, uint16_t port, const uint8_t *msg,
                     void *owner, int *sid_out)
{
    int sid, rc = OPAL_SUCCESS;

    pthread_mutex_lock(&ch.lock);
    sid = alloc_session();
    if (sid < 0) {
        rc = OPAL_ERR_OUT_OF_RESOURCE;
        goto out;
    }
    ch.s[sid] = (struct session) { .fd = -1, .owner = owner, .port = port, .gen = ch.s[sid].gen,
                                   .naddr = naddr > OOB_MAX_ADDRS ? OOB_MAX_ADDRS : naddr };
    memcpy(ch.s[sid].addrs, addrs, sizeof(uint32_t) * ch.s[sid].naddr);
    memcpy(ch.s[sid].out, msg, OOB_MSG_SIZE);
    ch.s[sid].outlen = OOB_MSG_SIZE;
    *sid_out = HANDLE(sid, ch.s[sid].gen);
    if (!try_next_addr(sid)) {
        connect_failed(sid); /* e.g. refused at once on this host */
        goto out;
    }
    wake();
out:
    pthread_mutex_unlock(&ch.lock);
    return rc;
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
        /* Let what was queued (e.g. a final message) go out first. */
        if (s->outlen) {
            s->close_after_flush = true;
            s->owner = NULL;
            wake();
        } else {
            sess_free(SLOT_OF(h));
        }
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
    }
    pthread_mutex_unlock(&ch.lock);
}

bool oob_chan_poll(struct oob_event *ev)
{
    if (OPAL_LIKELY(0 == __atomic_load_n(&ch.ev_count, __ATOMIC_ACQUIRE))) {
        return false;
    }
    pthread_mutex_lock(&ch.lock);
    *ev = ch.ev[ch.ev_head];
    ch.ev_head = (ch.ev_head + 1) % MAX_EVENTS;
    __atomic_sub_fetch(&ch.ev_count, 1, __ATOMIC_RELEASE);
    if (OOB_EV_MSG == ev->type) {
        struct session *s = lookup(ev->sid);
        if (s && s->pending > 0) {
            s->pending--; /* taken: the PONGs stop saying "not taken yet" */
        }
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

int oob_local_addrs(uint32_t *addrs, int max)
{
    struct ifaddrs *ifa, *p;
    int n = 0, pass;

    if (getifaddrs(&ifa)) {
        return 0;
    }
    /* non-loopback first, so remote peers try a routable address first */
    for (pass = 0; pass < 2; ++pass) {
        for (p = ifa; p && n < max; p = p->ifa_next) {
            bool lo;
            if (!p->ifa_addr || p->ifa_addr->sa_family != AF_INET || !(p->ifa_flags & IFF_UP)) {
                continue;
            }
            lo = (p->ifa_flags & IFF_LOOPBACK) != 0;
            if (lo == (pass == 0)) {
                continue;
            }
            addrs[n++] = ((struct sockaddr_in *) p->ifa_addr)->sin_addr.s_addr;
        }
    }
    freeifaddrs(ifa);
    return n;
}

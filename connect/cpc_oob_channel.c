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

#define MAX_SESSIONS 1024
#define MAX_LISTENERS 16
#define MAX_EVENTS 4096
#define OUTQ 4                    /* messages queued per session */
#define CONNECT_TRY_MS 2000       /* per address */

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
    uint16_t port;
    long deadline_ms;
    uint8_t out[OUTQ * OOB_MSG_SIZE];
    size_t outlen;
    uint8_t in[OOB_MSG_SIZE];
    size_t inlen;
    bool close_after_flush;
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
} ch = { .lock = PTHREAD_MUTEX_INITIALIZER, .wake_fd = -1 };

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

/* with ch.lock held */
static void push_event(enum oob_event_type type, int sid, const uint8_t *msg, const char *why)
{
    struct oob_event *e;

    if (ch.ev_count == MAX_EVENTS) {
        return; /* the handshake times out and retries */
    }
    e = &ch.ev[ch.ev_tail];
    ch.ev_tail = (ch.ev_tail + 1) % MAX_EVENTS;
    e->type = type;
    e->sid = HANDLE(sid, ch.s[sid].gen);
    e->owner = ch.s[sid].owner;
    e->listen_owner = ch.s[sid].listen_owner;
    if (msg) {
        memcpy(e->msg, msg, OOB_MSG_SIZE);
    }
    snprintf(e->why, sizeof(e->why), "%s", why ? why : "");
    __atomic_add_fetch(&ch.ev_count, 1, __ATOMIC_RELEASE);
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

static void sess_fail(int sid, const char *why)
{
    push_event(OOB_EV_ERROR, sid, NULL, why);
    sess_free(sid);
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
                sess_fail(sid, strerror(errno));
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

static void do_read(int sid)
{
    struct session *s = &ch.s[sid];
    ssize_t n;

    for (;;) {
        n = recv(s->fd, s->in + s->inlen, OOB_MSG_SIZE - s->inlen, 0);
        if (n == 0) {
            sess_fail(sid, "the peer closed the side channel");
            return;
        }
        if (n < 0) {
            if (errno != EAGAIN && errno != EINTR) {
                sess_fail(sid, strerror(errno));
            }
            return;
        }
        s->inlen += n;
        if (s->inlen == OOB_MSG_SIZE) {
            push_event(OOB_EV_MSG, sid, s->in, NULL);
            s->inlen = 0;
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
        int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), sid, one = 1;
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
                                       .gen = ch.s[sid].gen };
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
            if (s->state == S_CONNECTING && t > s->deadline_ms && !try_next_addr(i)) {
                sess_fail(i, "could not connect to any published address");
                continue;
            }
            if (s->state == S_FREE) {
                continue;
            }
            if (s->state == S_CONNECTING) {
                timeout = 100; /* look at its deadline again */
            }
            pfd[n] = (struct pollfd) {
                .fd = s->fd,
                .events = (s->state == S_CONNECTING || s->outlen ? POLLOUT : 0) | POLLIN,
            };
            map[n++] = i;
        }
        pthread_mutex_unlock(&ch.lock);

        /* Idle (no connect under way): sleep until a socket or wake() has
         * something, rather than waking a spinning rank's CPU 10 times a
         * second. */
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
                        if (!try_next_addr(sid)) {
                            sess_fail(sid, "could not connect to any published address");
                        }
                        continue;
                    }
                    s->state = S_OPEN;
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
    if (!try_next_addr(sid)) {
        sess_free(sid);
        rc = OPAL_ERR_UNREACH;
        goto out;
    }
    *sid_out = HANDLE(sid, ch.s[sid].gen);
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

bool oob_chan_poll(struct oob_event *ev)
{
    if (OPAL_LIKELY(0 == __atomic_load_n(&ch.ev_count, __ATOMIC_ACQUIRE))) {
        return false;
    }
    pthread_mutex_lock(&ch.lock);
    *ev = ch.ev[ch.ev_head];
    ch.ev_head = (ch.ev_head + 1) % MAX_EVENTS;
    __atomic_sub_fetch(&ch.ev_count, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&ch.lock);
    return true;
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

/*
 * cpc_oob_channel_tcp.c - the side channel's TCP transport: listening
 * sockets, one connection per session, and the TCP connect that probes a
 * UD peer that does not answer. Locking: cpc_oob_channel_int.h.
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
#include <sys/socket.h>
#include <unistd.h>

#include "opal/constants.h"

#include "common/openib_errno.h"
#include "connect/cpc_oob_channel_int.h"

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
#define ACCEPT_BATCH 64           /* per wake-up, so a flood cannot starve sessions */

/* Every address was tried: say why none worked. Refused everywhere means
 * the peer's listening socket is closed, i.e. its process is gone; one
 * address refusing is no proof (it may be a local interface of ours that
 * the peer published too, e.g. a container bridge). With the lock held. */
static void connect_failed(int sid)
{
    struct session *s = sess_at(sid);
    char why[96];

    if (s->naddr > 0 && s->refused == s->naddr) {
        oob_chan_sess_fail(sid, OOB_ERR_REFUSED,
                           "connection refused at every address the peer published");
        return;
    }
    snprintf(why, sizeof(why), "could not connect to any published address (last: %s)",
             s->last_errno ? strerror(s->last_errno) : "no address");
    oob_chan_sess_fail(sid, OOB_ERR_IO, why);
}

void oob_tcp_note_error(struct session *s, int err)
{
    s->last_errno = err;
    if (ECONNREFUSED == err) {
        s->refused++;
    }
}

static int nonblock(int fd)
{
    int f = fcntl(fd, F_GETFL);
    return f < 0 || fcntl(fd, F_SETFL, f | O_NONBLOCK) < 0 ? OPAL_ERROR : OPAL_SUCCESS;
}

/* Service thread, no lock: start connecting to the next address; false
 * when none is left. A non-blocking connect returns at once. */
bool oob_tcp_try_next_addr(struct session *s)
{
    while (s->ai < s->naddr) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(s->port),
                                  .sin_addr.s_addr = s->addrs[s->ai++] };
        int one = 1;

        if (s->fd >= 0) {
            close(s->fd);
        }
        s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s->fd < 0 || OPAL_SUCCESS != nonblock(s->fd)) {
            continue;
        }
        setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        s->deadline_ms = openib_now_ms() +
                         (s->ai < s->naddr ? CONNECT_TRY_MS : CONNECT_LAST_MS);
        if (0 == connect(s->fd, (struct sockaddr *) &sa, sizeof(sa)) || errno == EINPROGRESS) {
            return true;
        }
        oob_tcp_note_error(s, errno);
    }
    return false;
}

/* Service thread: the next address of a session being opened, then the
 * state change under the lock. */
void oob_tcp_step(int sid)
{
    struct session *s = sess_at(sid);
    bool ok = oob_tcp_try_next_addr(s);

    pthread_mutex_lock(&oob_ch.lock);
    if (s->closing) {
        oob_chan_sess_free(sid);
    } else if (ok) {
        s->state = S_CONNECTING;
    } else {
        connect_failed(sid);
    }
    pthread_mutex_unlock(&oob_ch.lock);
}

/* Service thread, no lock: OPAL_SUCCESS (also when the socket is full: the
 * rest goes next round), or the error that ends the session, its errno in
 * *err for the message */
static int do_write(struct session *s, int *err)
{
    while (s->wlen) {
        ssize_t n = send(s->fd, s->wbuf, s->wlen, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR) {
                return OPAL_SUCCESS;
            }
            *err = errno;
            return openib_err_from_errno(*err);
        }
        memmove(s->wbuf, s->wbuf + n, s->wlen - n);
        s->wlen -= n;
    }
    return OPAL_SUCCESS;
}

/* Service thread: read what is there without the lock, taking it per
 * whole frame. */
static void do_read(int sid)
{
    struct session *s = sess_at(sid);
    ssize_t n;
    bool go;
    int err;

    for (;;) {
        n = recv(s->fd, s->in + s->inlen, OOB_MSG_SIZE - s->inlen, 0);
        err = n < 0 ? errno : 0; /* read once, at the call: for the message */
        if (n == 0 || (n < 0 && err != EAGAIN && err != EINTR)) {
            pthread_mutex_lock(&oob_ch.lock);
            if (n == 0) {
                oob_chan_sess_fail(sid, OOB_ERR_CLOSED, "the peer closed the side channel");
            } else {
                oob_chan_sess_fail(sid, OOB_ERR_IO, strerror(err));
            }
            pthread_mutex_unlock(&oob_ch.lock);
            return;
        }
        if (n < 0) {
            return;
        }
        s->inlen += n;
        if (s->inlen < OOB_MSG_SIZE) {
            continue;
        }
        pthread_mutex_lock(&oob_ch.lock);
        go = oob_chan_on_frame(sid);
        pthread_mutex_unlock(&oob_ch.lock);
        if (!go) {
            return;
        }
    }
}

/* Service thread: accept without the lock, admit with it */
void oob_tcp_accept(int lfd, void *owner)
{
    int k;

    for (k = 0; k < ACCEPT_BATCH; ++k) {
        struct sockaddr_in from = { 0 };
        socklen_t fromlen = sizeof(from);
        int fd = accept4(lfd, (struct sockaddr *) &from, &fromlen, SOCK_NONBLOCK | SOCK_CLOEXEC);
        int one = 1, sid = -1;

        if (fd < 0) {
            return;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        pthread_mutex_lock(&oob_ch.lock);
        if (oob_chan_admit(from.sin_addr.s_addr, NULL)) {
            sid = oob_chan_alloc_session();
            if (sid < 0) {
                oob_chan_log_refusal(R_SESSION_CAP, from.sin_addr.s_addr, NULL,
                                     "no free session");
            }
        }
        if (sid >= 0) {
            struct session *s = sess_at(sid);
            long t = openib_now_ms();

            *s = (struct session) { .state = S_OPEN, .fd = fd, .listen_owner = owner,
                                    .accepted = true, .gen = s->gen, .pinged_ms = t,
                                    .opened_ms = t, .idle_from_ms = t, .ud_port = -1,
                                    .peer_addr = from.sin_addr.s_addr };
            oob_ch.counts.tcp_accepted++;
        }
        pthread_mutex_unlock(&oob_ch.lock);
        if (sid < 0) {
            close(fd);
        }
    }
}

/* Whether a non-blocking connect has completed by now (without waiting).
 * Asked before a connect is given up: a thread that did not run for a
 * while (a loaded or oversubscribed node) finds the deadline passed
 * although the connection was made long ago. */
bool oob_tcp_connect_done(const struct session *s)
{
    struct pollfd p = { .fd = s->fd, .events = POLLOUT };
    socklen_t len = sizeof(int);
    int err = 0;

    return 1 == poll(&p, 1, 0) && (p.revents & POLLOUT) &&
           0 == getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len) && 0 == err;
}

/* With the lock held, on the service thread: timers and state changes of
 * one TCP session before polling; returns the poll events wanted (0 =
 * none), or -1 when the session needs oob_tcp_step first. */
int oob_tcp_plan(int i, long t, int idle_ms, int *timeout)
{
    struct session *s = sess_at(i);
    bool reading;
    size_t take;

    if (s->closing && 0 == s->close_by_ms) {
        /* from when this thread first sees it: a thread that did not run
         * for a while (a loaded node) still sends the last message */
        s->close_by_ms = t + FLUSH_MS;
    }
    if (s->closing && (s->state != S_OPEN || t >= s->close_by_ms)) {
        oob_chan_sess_free(i);
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
        oob_chan_min_timeout(timeout, s->close_by_ms - t);
        return POLLIN;
    }
    if (s->state == S_START) {
        return -1;
    }
    if (s->state == S_CONNECTING) {
        if (t > s->deadline_ms && !oob_tcp_connect_done(s)) {
            oob_tcp_note_error(s, ETIMEDOUT);
            return -1;
        }
        oob_chan_min_timeout(timeout, 100); /* look at its deadline again */
        return POLLOUT;
    }
    if (!oob_chan_plan_common(i, t, idle_ms, timeout)) {
        return 0;
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
    reading = !s->held && oob_chan_may_read(s);
    if (!reading && !s->closing) {
        oob_ch.paused = true; /* oob_chan_poll wakes us when it makes room */
    }
    return (s->wlen ? POLLOUT : 0) | (reading ? POLLIN : 0);
}

/* Service thread: after poll, one session's socket, no lock; events is
 * what was polled for */
void oob_tcp_serve(int sid, short events, short revents)
{
    struct session *s = sess_at(sid);
    int err;

    if (s->state == S_CONNECTING) {
        socklen_t len = sizeof(err);
        err = 0;
        getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err || (revents & (POLLERR | POLLHUP))) {
            oob_tcp_note_error(s, err ? err : EIO);
            oob_tcp_step(sid);
            return;
        }
        pthread_mutex_lock(&oob_ch.lock);
        s->state = S_OPEN;
        s->pinged_ms = openib_now_ms();
        pthread_mutex_unlock(&oob_ch.lock);
        return; /* the next round writes (the first message is queued) */
    }
    if (revents & POLLOUT) {
        if (OPAL_SUCCESS != do_write(s, &err)) {
            pthread_mutex_lock(&oob_ch.lock);
            oob_chan_sess_fail(sid, OOB_ERR_IO, strerror(err));
            pthread_mutex_unlock(&oob_ch.lock);
            return;
        }
    }
    /* a session not polled for input is not read, even on a hang-up: its
     * held message or the CPC's backlog comes first */
    if ((events & POLLIN) && (revents & (POLLIN | POLLHUP | POLLERR))) {
        do_read(sid);
    }
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
    pthread_mutex_lock(&oob_ch.lock);
    for (i = 0; i < MAX_LISTENERS && (oob_ch.l[i].owner || oob_ch.l[i].closing); ++i) {
    }
    if (i == MAX_LISTENERS) {
        pthread_mutex_unlock(&oob_ch.lock);
        close_all(fd, nfd);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    oob_ch.l[i] = (struct listener) { .owner = owner, .nfd = nfd };
    memcpy(oob_ch.l[i].fd, fd, sizeof(fd[0]) * nfd);
    oob_chan_wake();
    pthread_mutex_unlock(&oob_ch.lock);
    *port_out = port;
    *lid_out = i;
    return OPAL_SUCCESS;
}

void oob_chan_unlisten(int lid)
{
    pthread_mutex_lock(&oob_ch.lock);
    if (lid >= 0 && lid < MAX_LISTENERS && oob_ch.l[lid].owner) {
        /* the thread may be polling these sockets: it closes them */
        oob_ch.l[lid].owner = NULL;
        oob_ch.l[lid].closing = true;
        oob_chan_wake();
    }
    pthread_mutex_unlock(&oob_ch.lock);
}

int oob_chan_connect(const uint32_t *addrs, int naddr, uint16_t port, const uint8_t *msg,
                     void *owner, int *sid_out)
{
    struct session *s;
    int sid;

    pthread_mutex_lock(&oob_ch.lock);
    sid = oob_chan_alloc_session();
    if (sid < 0) {
        pthread_mutex_unlock(&oob_ch.lock);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    s = sess_at(sid);
    /* the thread connects (socket calls are its job); a failure, even an
     * immediate one, comes as an OOB_EV_ERROR */
    *s = (struct session) { .state = S_START, .fd = -1, .owner = owner, .port = port,
                            .gen = s->gen, .ud_port = -1 };
    oob_ch.counts.tcp_opened++;
    *sid_out = oob_chan_opened(sid, addrs, naddr, msg);
    pthread_mutex_unlock(&oob_ch.lock);
    return OPAL_SUCCESS;
}

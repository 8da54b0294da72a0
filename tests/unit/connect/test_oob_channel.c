/*
 * test_oob_channel.c - the side channel's liveness, over real TCP sockets
 * on this host, both ends in this process:
 *   - a message nobody takes (the receiving process "computes outside
 *     MPI": nothing calls oob_chan_poll) still gets its session kept alive:
 *     the threads exchange keepalives, the sender sees frames arrive and
 *     the peer's PONG saying one message is not taken yet; once taken, the
 *     count drops to 0, and a reply travels back;
 *   - keepalives never reach the CPC (only the real messages are events);
 *   - a listener that is gone: every address refuses, OOB_ERR_REFUSED;
 *   - the peer closing its side: OOB_ERR_CLOSED;
 *   - a hung peer (a socket nobody reads, the TCP handshake done by the
 *     kernel): the session stays silent, no frame is ever heard;
 *   - a keepalive of another version ends the session (not misread);
 * and its limits on sessions nobody has vouched for (oob_chan_trust):
 *   - a silent session, and one sending only PINGs, are closed after the
 *     idle deadline and logged ("refused", address, "idle"); a session
 *     the CPC trusted is not;
 *   - per source address: cap+5 silent sessions from 127.0.0.1 leave at
 *     most cap open ("per-source-cap" logged), an honest session still
 *     gets its request through and its reply back, and once trusted it
 *     survives another flood; when every session from the source has
 *     spoken, a new one is closed at once;
 *   - back-pressure: a trusted session sends more messages than the event
 *     ring holds while nobody takes them: the ring fills, then draining
 *     it yields every message, in order, none lost.
 * The listener is on loopback (btl_openib_oob_if_include=lo: the default
 * leaves loopback out). Waits are bounded (10 s) hang guards, never timing
 * assertions.
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "connect/cpc_oob_channel.h"
#include "connect/cpc_oob_params.h"
#include "connect/openib_connect.h"
#include "wire/oob_wire.h"
#include "tests/unit/connect/cpc_test.h"
#include "tests/unit/connect/cpc_test_opal.h"

static char lst_owner, me;
static uint32_t loopback;

static void pause_ms(long ms)
{
    struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&t, NULL);
}

/* Poll until an event arrives or 10 s pass. */
static bool next_event(struct oob_event *ev)
{
    time_t end = time(NULL) + 10;

    while (time(NULL) < end) {
        if (oob_chan_poll(ev)) {
            return true;
        }
        pause_ms(5);
    }
    return false;
}

static void frame(uint8_t *buf, enum oob_type type)
{
    static const uint8_t key[OPENIB_AUTH_TOKEN_LEN] = { 3 };
    struct oob_msg m = { .env.type = type, .env.src = { 1 }, .env.dst = { 2 } };

    CHECK_EQ(oob_msg_encode(buf, OOB_MSG_SIZE, &m, key), OPAL_SUCCESS);
}

/* A TCP port on loopback with nothing listening on it. */
static uint16_t closed_port(void)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = loopback };
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    CHECK(0 == bind(fd, (struct sockaddr *) &sa, sizeof(sa)));
    CHECK(0 == getsockname(fd, (struct sockaddr *) &sa, &len));
    close(fd);
    return ntohs(sa.sin_port);
}

static void busy_receiver(uint16_t port)
{
    struct oob_event ev;
    uint8_t req[OOB_MSG_SIZE], rep[OOB_MSG_SIZE];
    long heard = 0;
    int sid = -1, pending = 0, acc;
    time_t end;

    frame(req, OOB_REQ);
    CHECK_EQ(oob_chan_connect(&loopback, 1, port, req, &me, &sid), OPAL_SUCCESS);
    /* nobody takes the REQ; the threads keep the session alive */
    end = time(NULL) + 10;
    do {
        pause_ms(50);
        CHECK_EQ(oob_chan_liveness(sid, &heard, &pending), OPAL_SUCCESS);
    } while ((0 == heard || 1 != pending) && time(NULL) < end);
    CHECK(heard > 0);
    CHECK_EQ(pending, 1);
    /* the "busy" process looks at last: the REQ is the only event (every
     * keepalive so far was consumed by the threads) */
    CHECK(next_event(&ev));
    CHECK_EQ(ev.type, OOB_EV_MSG);
    CHECK(NULL == ev.owner);
    CHECK(&lst_owner == ev.listen_owner);
    CHECK(0 == memcmp(ev.msg, req, OOB_MSG_SIZE));
    CHECK(!oob_chan_poll(&ev));
    acc = ev.sid;
    /* taken: the PONGs say so */
    end = time(NULL) + 10;
    do {
        pause_ms(50);
        CHECK_EQ(oob_chan_liveness(sid, &heard, &pending), OPAL_SUCCESS);
    } while (0 != pending && time(NULL) < end);
    CHECK_EQ(pending, 0);
    /* the answer goes back on the accepted session */
    frame(rep, OOB_REP);
    CHECK_EQ(oob_chan_send(acc, rep), OPAL_SUCCESS);
    CHECK(next_event(&ev));
    CHECK_EQ(ev.type, OOB_EV_MSG);
    CHECK(&me == ev.owner);
    CHECK_EQ(ev.sid, sid);
    CHECK(0 == memcmp(ev.msg, rep, OOB_MSG_SIZE));
    /* the accepted side ends it: the opener hears "closed" */
    oob_chan_close(acc);
    CHECK(next_event(&ev));
    CHECK_EQ(ev.type, OOB_EV_ERROR);
    CHECK_EQ(ev.sid, sid);
    CHECK_EQ(ev.error, OOB_ERR_CLOSED);
    CHECK_EQ(oob_chan_liveness(sid, &heard, &pending), OPAL_ERR_NOT_FOUND);
}

static void gone_listener(void)
{
    struct oob_event ev;
    uint8_t req[OOB_MSG_SIZE];
    uint32_t two[2] = { loopback, loopback };
    int sid = -1;

    frame(req, OOB_REQ);
    CHECK_EQ(oob_chan_connect(two, 2, closed_port(), req, &me, &sid), OPAL_SUCCESS);
    CHECK(next_event(&ev));
    CHECK_EQ(ev.type, OOB_EV_ERROR);
    CHECK_EQ(ev.sid, sid);
    CHECK(&me == ev.owner);
    CHECK_EQ(ev.error, OOB_ERR_REFUSED);
    CHECK_STR_HAS(ev.why, "connection refused at every address");
}

static void hung_peer(void)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = loopback };
    socklen_t len = sizeof(sa);
    struct oob_event ev;
    uint8_t req[OOB_MSG_SIZE];
    long heard = -1;
    int fd = socket(AF_INET, SOCK_STREAM, 0), sid = -1, pending = -1;

    /* listens, never accepts nor reads: the kernel completes the TCP
     * handshake, as for a stopped process */
    CHECK(0 == bind(fd, (struct sockaddr *) &sa, sizeof(sa)));
    CHECK(0 == listen(fd, 4));
    CHECK(0 == getsockname(fd, (struct sockaddr *) &sa, &len));
    frame(req, OOB_REQ);
    CHECK_EQ(oob_chan_connect(&loopback, 1, ntohs(sa.sin_port), req, &me, &sid), OPAL_SUCCESS);
    pause_ms(1000); /* several keepalive intervals */
    CHECK_EQ(oob_chan_liveness(sid, &heard, &pending), OPAL_SUCCESS);
    CHECK_EQ(heard, 0); /* silence: what a CPC's deadline counts */
    CHECK(!oob_chan_poll(&ev));
    oob_chan_close(sid);
    close(fd);
}

static void other_keepalive_version(uint16_t port)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = loopback,
                              .sin_port = htons(port) };
    struct oob_ka k = { .type = OOB_KA_PING };
    struct oob_event ev;
    uint8_t buf[OOB_MSG_SIZE];
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    CHECK_EQ(oob_ka_encode(buf, sizeof(buf), &k), OPAL_SUCCESS);
    buf[4] = 2; /* a newer peer's */
    CHECK(0 == connect(fd, (struct sockaddr *) &sa, sizeof(sa)));
    CHECK_EQ(write(fd, buf, sizeof(buf)), (ssize_t) sizeof(buf));
    CHECK(next_event(&ev));
    CHECK_EQ(ev.type, OOB_EV_ERROR);
    CHECK(&lst_owner == ev.listen_owner);
    CHECK_EQ(ev.error, OOB_ERR_IO);
    CHECK_STR_HAS(ev.why, "keepalive of another version");
    close(fd);
}

/* ---- limits on unverified sessions ---- */

static char logbuf[16384];

static void log_hook(const char *line)
{
    size_t used = strlen(logbuf);

    snprintf(logbuf + used, sizeof(logbuf) - used, "%s\n", line);
}

/* A raw TCP client to the listener, as a stranger would be. */
static int raw_connect(uint16_t port)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = loopback,
                              .sin_port = htons(port) };
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    CHECK(0 == connect(fd, (struct sockaddr *) &sa, sizeof(sa)));
    return fd;
}

/* Has the other side closed fd? (never blocks) */
static bool closed_by_peer(int fd)
{
    char b[OOB_MSG_SIZE];
    ssize_t n;

    do {
        n = recv(fd, b, sizeof(b), MSG_DONTWAIT); /* PONGs may be there first */
    } while (n > 0);
    return 0 == n || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/* A message the channel hands to the CPC (not a keepalive): numbered. */
static void test_msg(uint8_t *buf, unsigned i)
{
    memset(buf, 0x5a, OOB_MSG_SIZE);
    memcpy(buf, "TEST", 4);
    buf[4] = (uint8_t) (i >> 24);
    buf[5] = (uint8_t) (i >> 16);
    buf[6] = (uint8_t) (i >> 8);
    buf[7] = (uint8_t) i;
}

static void drain(void)
{
    struct oob_event ev;
    while (oob_chan_poll(&ev)) {
    }
}

static void idle_deadline(uint16_t port)
{
    struct oob_ka k = { .type = OOB_KA_PING };
    struct oob_event ev;
    uint8_t ping[OOB_MSG_SIZE], m[OOB_MSG_SIZE];
    int silent, pinger, trusted;
    bool a = false, b = false;
    time_t end;

    logbuf[0] = '\0';
    oob_params_set_limits(300, 0);
    CHECK_EQ(oob_ka_encode(ping, sizeof(ping), &k), OPAL_SUCCESS);
    silent = raw_connect(port);
    pinger = raw_connect(port);
    trusted = raw_connect(port);
    test_msg(m, 1);
    CHECK_EQ(write(trusted, m, sizeof(m)), (ssize_t) sizeof(m));
    CHECK(next_event(&ev));
    CHECK_EQ(ev.type, OOB_EV_MSG);
    CHECK(0 == memcmp(ev.msg, m, sizeof(m)));
    CHECK(ev.peer_addr == loopback);
    oob_chan_trust(ev.sid);
    end = time(NULL) + 10;
    while ((!a || !b) && time(NULL) < end) {
        CHECK_EQ(write(pinger, ping, sizeof(ping)), (ssize_t) sizeof(ping));
        pause_ms(50);
        drain(); /* also writes the channel's log */
        a = a || closed_by_peer(silent);
        b = b || closed_by_peer(pinger);
    }
    CHECK(a);
    CHECK(b); /* PINGs do not count as a handshake */
    drain();
    CHECK_STR_HAS(logbuf, "refused session from 127.0.0.1: idle");
    CHECK(!closed_by_peer(trusted));
    test_msg(m, 2);
    CHECK_EQ(write(trusted, m, sizeof(m)), (ssize_t) sizeof(m));
    CHECK(next_event(&ev));
    CHECK_EQ(ev.type, OOB_EV_MSG);
    CHECK(0 == memcmp(ev.msg, m, sizeof(m)));
    oob_chan_close(ev.sid);
    close(silent);
    close(pinger);
    close(trusted);
    oob_params_set_limits(0, 0);
}

#define CAP 4

static int count_closed(int *fd, int n)
{
    int i, c = 0;
    for (i = 0; i < n; ++i) {
        c += closed_by_peer(fd[i]);
    }
    return c;
}

static void per_source_cap(uint16_t port)
{
    int flood[CAP + 5], more[CAP + 5], spoke[CAP], extra, i, acc = -1, sid = -1, c = 0;
    uint8_t req[OOB_MSG_SIZE], rep[OOB_MSG_SIZE];
    struct oob_event ev;
    time_t end;

    logbuf[0] = '\0';
    oob_params_set_limits(0, CAP);
    for (i = 0; i < CAP + 5; ++i) {
        flood[i] = raw_connect(port);
    }
    /* the honest initiator: a real session that sends at once */
    test_msg(req, 100);
    CHECK_EQ(oob_chan_connect(&loopback, 1, port, req, &me, &sid), OPAL_SUCCESS);
    CHECK(next_event(&ev));
    CHECK_EQ(ev.type, OOB_EV_MSG);
    CHECK(&lst_owner == ev.listen_owner);
    CHECK(0 == memcmp(ev.msg, req, OOB_MSG_SIZE));
    acc = ev.sid;
    oob_chan_trust(acc);
    end = time(NULL) + 10;
    while ((c = count_closed(flood, CAP + 5)) < 6 && time(NULL) < end) {
        pause_ms(20);
    }
    CHECK(c >= 6); /* at most CAP open, less the one the honest session took */
    /* another flood: the trusted session is not among the evicted */
    for (i = 0; i < CAP + 5; ++i) {
        more[i] = raw_connect(port);
    }
    end = time(NULL) + 10;
    while (count_closed(more, CAP + 5) < 5 && time(NULL) < end) {
        pause_ms(20);
    }
    test_msg(rep, 101);
    CHECK_EQ(oob_chan_send(acc, rep), OPAL_SUCCESS);
    CHECK(next_event(&ev));
    CHECK_EQ(ev.type, OOB_EV_MSG);
    CHECK_EQ(ev.sid, sid);
    CHECK(0 == memcmp(ev.msg, rep, OOB_MSG_SIZE));
    oob_chan_close(acc);
    oob_chan_close(sid);
    drain();
    CHECK_STR_HAS(logbuf, "refused session from 127.0.0.1: per-source-cap");
    for (i = 0; i < CAP + 5; ++i) {
        close(flood[i]);
        close(more[i]);
    }
    /* every session from here has spoken (nobody took their messages):
     * none is silent to evict, so a new one is closed at once */
    for (i = 0; i < CAP; ++i) {
        uint8_t m[OOB_MSG_SIZE];
        spoke[i] = raw_connect(port);
        test_msg(m, 200 + i);
        CHECK_EQ(write(spoke[i], m, sizeof(m)), (ssize_t) sizeof(m));
    }
    /* all delivered: all admitted (the sessions closed above end with
     * ERROR events, skipped) */
    for (i = 0; i < CAP && next_event(&ev);) {
        i += OOB_EV_MSG == ev.type;
    }
    CHECK_EQ(i, CAP);
    extra = raw_connect(port);
    end = time(NULL) + 10;
    while (!closed_by_peer(extra) && time(NULL) < end) {
        pause_ms(20);
    }
    CHECK(closed_by_peer(extra));
    CHECK_EQ(count_closed(spoke, CAP), 0);
    for (i = 0; i < CAP; ++i) {
        close(spoke[i]);
    }
    close(extra);
    drain();
    oob_params_set_limits(0, 0);
}

#define NFLOOD 5000

struct writer {
    int fd;
    int sent;
};

static void *write_all(void *arg)
{
    struct writer *w = arg;
    uint8_t m[OOB_MSG_SIZE];

    for (w->sent = 0; w->sent < NFLOOD; ++w->sent) {
        test_msg(m, 1000 + w->sent);
        if (write(w->fd, m, sizeof(m)) != (ssize_t) sizeof(m)) {
            break;
        }
    }
    return NULL;
}

static void back_pressure(uint16_t port)
{
    struct writer w = { .fd = raw_connect(port) };
    uint8_t m[OOB_MSG_SIZE];
    struct oob_event ev;
    pthread_t t;
    int got = 0, in_order = 0, sid;
    time_t end;

    /* the first message makes the session one the CPC vouches for */
    test_msg(m, 999);
    CHECK_EQ(write(w.fd, m, sizeof(m)), (ssize_t) sizeof(m));
    /* (the sessions of the tests before end with ERROR events, at any
     * time: only MSG events are ours) */
    while (next_event(&ev) && OOB_EV_MSG != ev.type) {
    }
    CHECK(0 == memcmp(ev.msg, m, sizeof(m)));
    sid = ev.sid;
    oob_chan_trust(sid);
    CHECK(0 == pthread_create(&t, NULL, write_all, &w));
    /* nobody takes events: the ring fills up, and stays full (the rest
     * waits in TCP) */
    end = time(NULL) + 20;
    while (oob_chan_backlog() < oob_chan_backlog_max() && time(NULL) < end) {
        pause_ms(20);
    }
    CHECK_EQ(oob_chan_backlog(), oob_chan_backlog_max());
    CHECK(NFLOOD > oob_chan_backlog_max());
    end = time(NULL) + 20;
    while (got < NFLOOD && time(NULL) < end) {
        if (!oob_chan_poll(&ev)) {
            pause_ms(1);
            continue;
        }
        if (OOB_EV_MSG != ev.type) {
            continue;
        }
        test_msg(m, 1000 + got);
        CHECK_EQ(ev.sid, sid);
        in_order += 0 == memcmp(ev.msg, m, sizeof(m));
        ++got;
    }
    pthread_join(t, NULL);
    CHECK_EQ(w.sent, NFLOOD);
    CHECK_EQ(got, NFLOOD);
    CHECK_EQ(in_order, NFLOOD);
    while (oob_chan_poll(&ev)) {
        CHECK(OOB_EV_MSG != ev.type); /* nothing more than was sent */
    }
    oob_chan_close(sid);
    close(w.fd);
}

int main(int argc, char **argv)
{
    uint16_t port = 0;
    int lid = -1;

    /* as in an MPI process: Open MPI's event layer, with threads, runs the
     * side channel's thread */
    if (OPAL_SUCCESS != test_opal_init(&argc, &argv)) {
        return 1;
    }

    loopback = htonl(INADDR_LOOPBACK);
    openib_connect_set_verbose(-1, 1);
    openib_connect_set_log_hook(log_hook);
    oob_params_set_if("lo", NULL);
    CHECK_EQ(oob_chan_start(), OPAL_SUCCESS);
    oob_chan_set_ping_ms(200);
    CHECK_EQ(oob_chan_listen(&lst_owner, &port, &lid), OPAL_SUCCESS);
    busy_receiver(port);
    gone_listener();
    hung_peer();
    other_keepalive_version(port);
    idle_deadline(port);
    per_source_cap(port);
    back_pressure(port);
    oob_chan_unlisten(lid);
    oob_chan_stop();
    test_opal_fini();
    return test_report("test_oob_channel");
}

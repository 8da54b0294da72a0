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
 *   - a keepalive of another version ends the session (not misread).
 * Waits are bounded (10 s) hang guards, never timing assertions.
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "connect/cpc_oob_channel.h"
#include "connect/cpc_oob_wire.h"
#include "tests/unit/connect/cpc_test.h"

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
    struct oob_msg m = { .type = type, .src = { 1 }, .dst = { 2 } };

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

int main(void)
{
    uint16_t port = 0;
    int lid = -1;

    loopback = htonl(INADDR_LOOPBACK);
    CHECK_EQ(oob_chan_start(), OPAL_SUCCESS);
    oob_chan_set_ping_ms(200);
    CHECK_EQ(oob_chan_listen(&lst_owner, &port, &lid), OPAL_SUCCESS);
    busy_receiver(port);
    gone_listener();
    hung_peer();
    other_keepalive_version(port);
    oob_chan_unlisten(lid);
    oob_chan_stop();
    return test_report("test_oob_channel");
}

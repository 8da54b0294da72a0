/*
 * test_oob_channel_ud.c - the side channel's UD sessions, over a fake
 * datagram port (two "ports" in this process joined by in-memory queues
 * that can lose, duplicate and reorder datagrams), driven by the real
 * service thread:
 *   - a handshake's three messages go A -> B -> A -> B in order; the
 *     accepted session names its source (UD, the sender's QP and GID);
 *   - with 30 % of the datagrams lost and 20 % duplicated, 16 sessions at
 *     once deliver every message exactly once and in order (checked by
 *     content), datagrams were sent again (the counter), and closing
 *     sessions ends them on both sides;
 *   - keepalives never reach the CPC, and a message nobody takes is
 *     reported by the PONGs as pending while the sender hears the peer;
 *   - an unverified session delivers at most 4 messages before the CPC
 *     looks; the rest stay unacknowledged and arrive once it does, in
 *     order;
 *   - a peer that closes its session: OOB_ERR_CLOSED on ours; a frame for
 *     a session the peer no longer has: OOB_ERR_CLOSED (its RESET);
 *   - a frame that claims an open session from another source is ignored;
 *   - a silent peer: its TCP listener gone (every address refuses) ->
 *     OOB_ERR_REFUSED; a listener that accepts -> OOB_ERR_UD_SILENT after
 *     the give-up time (shortened here); with no address to probe ->
 *     OOB_ERR_UD_SILENT;
 *   - unlisten destroys the port before it returns.
 * Waits are bounded (10-20 s) hang guards, never timing assertions.
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "connect/cpc_oob_channel.h"
#include "connect/cpc_oob_params.h"
#include "connect/openib_connect.h"
#include "wire/oob_wire.h"
#include "tests/unit/connect/cpc_test.h"
#include "tests/unit/connect/cpc_test_opal.h"

/* ---- the fake datagram port ---- */

#define QCAP 4096
struct dgram {
    struct oob_ud_addr from;
    size_t len;
    uint8_t buf[OOB_UD_FRAME_MAX];
};

struct fport {
    struct oob_ud_addr me;
    struct fport *peer;          /* where sends go (both ports see each other) */
    struct dgram *q;             /* received, not taken */
    int head, n;
    int efd;
    bool deaf;                   /* drops everything it is sent */
    bool destroyed;
};

static pthread_mutex_t net = PTHREAD_MUTEX_INITIALIZER;
static unsigned loss_pct, dup_pct, rnd_state = 12345;
static unsigned long sent_total;

static unsigned rnd(void)
{
    rnd_state = rnd_state * 1103515245u + 12345u;
    return (rnd_state >> 16) & 0x7fff;
}

static void deliver_to(struct fport *to, const struct oob_ud_addr *from, const uint8_t *buf,
                       size_t len)
{
    struct dgram *d;
    uint64_t one = 1;

    if (to->deaf || to->n == QCAP) {
        return;
    }
    d = &to->q[(to->head + to->n++) % QCAP];
    d->from = *from;
    d->len = len;
    memcpy(d->buf, buf, len);
    (void) !write(to->efd, &one, sizeof(one));
}

static int f_send(void *vp, const struct oob_ud_addr *to, const uint8_t *buf, size_t len)
{
    struct fport *p = vp;

    pthread_mutex_lock(&net);
    sent_total++;
    /* only the peer's QP number is served; anything else is lost */
    if (p->peer && to->qpn == p->peer->me.qpn && rnd() % 100 >= loss_pct) {
        deliver_to(p->peer, &p->me, buf, len);
        if (rnd() % 100 < dup_pct) {
            deliver_to(p->peer, &p->me, buf, len);
        }
    }
    pthread_mutex_unlock(&net);
    return OPAL_SUCCESS;
}

static bool f_recv(void *vp, struct oob_ud_addr *from, uint8_t *buf, size_t cap, size_t *len)
{
    struct fport *p = vp;
    bool got = false;

    pthread_mutex_lock(&net);
    if (p->n > 0) {
        struct dgram *d = &p->q[p->head];
        /* now and then take the second first: datagrams may reorder */
        if (p->n > 1 && rnd() % 8 == 0) {
            struct dgram tmp = *d;
            *d = p->q[(p->head + 1) % QCAP];
            p->q[(p->head + 1) % QCAP] = tmp;
        }
        *from = d->from;
        *len = d->len;
        memcpy(buf, d->buf, d->len < cap ? d->len : cap);
        p->head = (p->head + 1) % QCAP;
        p->n--;
        got = true;
    }
    pthread_mutex_unlock(&net);
    return got;
}

static int f_fd(void *vp)
{
    return ((struct fport *) vp)->efd;
}

static void f_rearm(void *vp)
{
    uint64_t v;

    (void) !read(((struct fport *) vp)->efd, &v, sizeof(v));
}

static void f_destroy(void *vp)
{
    struct fport *p = vp;

    p->destroyed = true; /* the test frees it */
}

static const struct oob_dgram_ops fake_ops = {
    .send = f_send, .recv = f_recv, .fd = f_fd, .rearm = f_rearm, .destroy = f_destroy,
};

static struct fport *fport_new(uint32_t qpn, uint8_t gid_last)
{
    struct fport *p = calloc(1, sizeof(*p));

    p->q = calloc(QCAP, sizeof(*p->q));
    p->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    p->me.qpn = qpn;
    p->me.global = true;
    p->me.gid[0] = 0xfe;
    p->me.gid[1] = 0x80;
    p->me.gid[15] = gid_last;
    return p;
}

static void fport_free(struct fport *p)
{
    close(p->efd);
    free(p->q);
    free(p);
}

/* ---- helpers ---- */

static char owner_a, owner_b, me;
static uint32_t loopback;

static void pause_ms(long ms)
{
    struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&t, NULL);
}

static bool next_event(struct oob_event *ev, int secs)
{
    time_t end = time(NULL) + secs;

    while (time(NULL) < end) {
        if (oob_chan_poll(ev)) {
            return true;
        }
        pause_ms(2);
    }
    return false;
}

/* A distinct, checkable message: session k, message i. */
static void msg(uint8_t *buf, int k, int i)
{
    static const uint8_t key[OPENIB_AUTH_TOKEN_LEN] = { 3 };
    struct oob_msg m = { .env.type = OOB_REQ, .env.reason = (uint16_t) (k * 100 + i),
                         .env.src = { 1 }, .env.dst = { 2 } };

    CHECK_EQ(oob_msg_encode(buf, OOB_MSG_SIZE, &m, key), OPAL_SUCCESS);
}

static int msg_id(const uint8_t *buf)
{
    struct oob_msg m;

    return OPAL_SUCCESS == oob_msg_decode(buf, OOB_MSG_SIZE, &m) ? m.env.reason : -1;
}

static struct fport *pa, *pb;
static int ua = -1, ub = -1;

static void ports_up(void)
{
    pa = fport_new(0x100, 1);
    pb = fport_new(0x200, 2);
    pa->peer = pb;
    pb->peer = pa;
    CHECK_EQ(oob_chan_listen_ud(&owner_a, &fake_ops, pa, &ua), OPAL_SUCCESS);
    CHECK_EQ(oob_chan_listen_ud(&owner_b, &fake_ops, pb, &ub), OPAL_SUCCESS);
}

static void ports_down(void)
{
    oob_chan_unlisten_ud(ua);
    oob_chan_unlisten_ud(ub);
    CHECK(pa->destroyed && pb->destroyed); /* before unlisten returned */
    fport_free(pa);
    fport_free(pb);
}

/* ---- cases ---- */

static void handshake(void)
{
    struct oob_event ev;
    uint8_t m[OOB_MSG_SIZE];
    int sa = -1, sb;

    msg(m, 0, 1);
    CHECK_EQ(oob_chan_connect_ud(ua, &pb->me, NULL, 0, 0, m, &me, &sa), OPAL_SUCCESS);
    CHECK(next_event(&ev, 10));
    CHECK_EQ(ev.type, OOB_EV_MSG);
    CHECK(NULL == ev.owner && &owner_b == ev.listen_owner);
    CHECK(ev.via_ud);
    CHECK_EQ(ev.ud_from.qpn, pa->me.qpn);
    CHECK(0 == memcmp(ev.ud_from.gid, pa->me.gid, 16));
    CHECK_EQ(msg_id(ev.msg), 1);
    sb = ev.sid;
    msg(m, 0, 2);
    CHECK_EQ(oob_chan_send(sb, m), OPAL_SUCCESS);
    CHECK(next_event(&ev, 10));
    CHECK_EQ(ev.type, OOB_EV_MSG);
    CHECK(&me == ev.owner && ev.sid == sa);
    CHECK_EQ(msg_id(ev.msg), 2);
    msg(m, 0, 3);
    CHECK_EQ(oob_chan_send(sa, m), OPAL_SUCCESS);
    oob_chan_close(sa); /* after the last frame is acknowledged */
    CHECK(next_event(&ev, 10));
    CHECK_EQ(ev.type, OOB_EV_MSG);
    CHECK(ev.sid == sb);
    CHECK_EQ(msg_id(ev.msg), 3);
    /* A's close reaches B: its session ends as a TCP one would */
    CHECK(next_event(&ev, 10));
    CHECK_EQ(ev.type, OOB_EV_ERROR);
    CHECK(ev.sid == sb);
    CHECK_EQ(ev.error, OOB_ERR_CLOSED);
    CHECK(!oob_chan_poll(&ev));
}

#define NSESS 16
#define NMSG 3

static void lossy(void)
{
    struct oob_chan_counts before, after;
    struct oob_event ev;
    uint8_t m[OOB_MSG_SIZE];
    int sa[NSESS], sb[NSESS], got_b[NSESS], got_a[NSESS], k, i, nclosed = 0;
    /* a bound, not a timing: with 30% loss a frame may be sent 5-6 times at
     * a doubling RTO (up to 2 s each), and `make check -j` loads the host;
     * 20 s was once too short there */
    time_t end = time(NULL) + 60;

    oob_chan_counts(&before);
    loss_pct = 30;
    dup_pct = 20;
    for (k = 0; k < NSESS; ++k) {
        msg(m, k, 0);
        CHECK_EQ(oob_chan_connect_ud(ua, &pb->me, NULL, 0, 0, m, &me, &sa[k]), OPAL_SUCCESS);
        /* the rest queue behind it (a session holds OUTQ frames) */
        for (i = 1; i < NMSG; ++i) {
            msg(m, k, i);
            CHECK_EQ(oob_chan_send(sa[k], m), OPAL_SUCCESS);
        }
        sb[k] = -1;
        got_a[k] = got_b[k] = 0;
    }
    /* B echoes each message back on its session; both sides count them in
     * order */
    while (time(NULL) < end) {
        int done = 0;
        for (k = 0; k < NSESS; ++k) {
            done += got_a[k] == NMSG;
        }
        if (done == NSESS) {
            break;
        }
        if (!oob_chan_poll(&ev)) {
            pause_ms(1);
            continue;
        }
        CHECK_EQ(ev.type, OOB_EV_MSG);
        k = msg_id(ev.msg) / 100;
        i = msg_id(ev.msg) % 100;
        CHECK(k >= 0 && k < NSESS);
        if (ev.owner == &me) {
            CHECK_EQ(ev.sid, sa[k]);
            CHECK_EQ(i, got_a[k]); /* in order, once */
            got_a[k]++;
        } else {
            CHECK(ev.listen_owner == &owner_b);
            if (sb[k] < 0) {
                sb[k] = ev.sid;
                oob_chan_trust(sb[k]);
            }
            CHECK_EQ(ev.sid, sb[k]);
            CHECK_EQ(i, got_b[k]);
            got_b[k]++;
            CHECK_EQ(oob_chan_send(sb[k], ev.msg), OPAL_SUCCESS);
        }
    }
    for (k = 0; k < NSESS; ++k) {
        CHECK_EQ(got_b[k], NMSG);
        CHECK_EQ(got_a[k], NMSG);
        oob_chan_close(sa[k]);
    }
    oob_chan_counts(&after);
    CHECK_EQ(after.ud_opened - before.ud_opened, NSESS);
    CHECK_EQ(after.ud_accepted - before.ud_accepted, NSESS);
    CHECK(after.ud_resent > before.ud_resent); /* 30 % lost: some went twice */
    /* every one of B's sessions ends: closed by A */
    end = time(NULL) + 20;
    while (nclosed < NSESS && time(NULL) < end) {
        if (!oob_chan_poll(&ev)) {
            pause_ms(2);
            continue;
        }
        CHECK_EQ(ev.type, OOB_EV_ERROR);
        CHECK_EQ(ev.error, OOB_ERR_CLOSED);
        nclosed++;
    }
    CHECK_EQ(nclosed, NSESS);
    loss_pct = dup_pct = 0;
}

/* B closes its session sb: A's session sa ends (B's CLOSE, or the RESET
 * that A's next frame meets). */
static void closes_peer(int sb, int sa)
{
    struct oob_event ev;

    oob_chan_close(sb);
    CHECK(next_event(&ev, 10));
    CHECK_EQ(ev.type, OOB_EV_ERROR);
    CHECK_EQ(ev.sid, sa);
    CHECK_EQ(ev.error, OOB_ERR_CLOSED);
}

/* A message nobody takes: the peer's thread still answers (acknowledgements,
 * PONGs saying one is pending). Then more than 4 from an unverified
 * session wait unacknowledged until the CPC looks. */
static void busy_and_backpressure(void)
{
    struct oob_event ev;
    uint8_t m[OOB_MSG_SIZE];
    long heard = 0;
    int sa = -1, sb = -1, pending = 0, i, n;
    time_t end;

    oob_chan_set_ping_ms(200);
    msg(m, 0, 0);
    CHECK_EQ(oob_chan_connect_ud(ua, &pb->me, NULL, 0, 0, m, &me, &sa), OPAL_SUCCESS);
    end = time(NULL) + 10;
    do {
        pause_ms(50);
        CHECK_EQ(oob_chan_liveness(sa, &heard, &pending), OPAL_SUCCESS);
    } while ((0 == heard || 1 != pending) && time(NULL) < end);
    CHECK(heard > 0);
    CHECK_EQ(pending, 1);
    /* 3 more (the queue holds 4): B has 4 unverified and takes no more */
    for (i = 1; i < 4; ++i) {
        msg(m, 0, i);
        CHECK_EQ(oob_chan_send(sa, m), OPAL_SUCCESS);
    }
    end = time(NULL) + 10;
    do {
        pause_ms(50);
        CHECK_EQ(oob_chan_liveness(sa, &heard, &pending), OPAL_SUCCESS);
    } while (4 != pending && time(NULL) < end);
    CHECK_EQ(pending, 4);
    for (i = 4; i < 6; ++i) { /* these stay unacknowledged for now */
        msg(m, 0, i);
        while (OPAL_SUCCESS != oob_chan_send(sa, m) && time(NULL) < end) {
            pause_ms(20);
        }
    }
    pause_ms(600);
    /* all six arrive, in order, as the CPC takes them (only keepalive
     * events never show up) */
    for (n = 0; n < 6; ++n) {
        CHECK(next_event(&ev, 10));
        CHECK_EQ(ev.type, OOB_EV_MSG);
        CHECK_EQ(msg_id(ev.msg), n);
        sb = ev.sid;
    }
    CHECK(!oob_chan_poll(&ev));
    closes_peer(sb, sa);
}

static void wait_heard(int sid)
{
    time_t end = time(NULL) + 10;
    long heard = 0;
    int pending;

    while (0 == heard && time(NULL) < end &&
           OPAL_SUCCESS == oob_chan_liveness(sid, &heard, &pending)) {
        pause_ms(10);
    }
    CHECK(heard > 0);
}

/* A frame naming an open session but from another source is not taken;
 * one for a session B no longer has gets a RESET. */
static void strangers(void)
{
    struct oob_event ev;
    struct oob_ud_hdr h;
    uint8_t m[OOB_MSG_SIZE], frame[OOB_UD_FRAME_MAX];
    struct oob_ud_addr spoof;
    size_t len;
    int sa = -1, sb;

    msg(m, 0, 7);
    CHECK_EQ(oob_chan_connect_ud(ua, &pb->me, NULL, 0, 0, m, &me, &sa), OPAL_SUCCESS);
    CHECK(next_event(&ev, 10));
    sb = ev.sid;
    oob_chan_trust(sb);
    wait_heard(sa);
    /* "A" from another QP, data for B's session: ignored (no event) */
    spoof = pa->me;
    spoof.qpn = 0x999;
    h = (struct oob_ud_hdr) { .kind = OOB_UD_DATA, .src_sid = 1, .dst_sid = 0, .seq = 0 };
    msg(m, 0, 8);
    CHECK_EQ(oob_ud_encode(frame, sizeof(frame), &h, m, &len), OPAL_SUCCESS);
    pthread_mutex_lock(&net);
    deliver_to(pb, &spoof, frame, len);
    pthread_mutex_unlock(&net);
    pause_ms(300);
    CHECK(!oob_chan_poll(&ev));
    closes_peer(sb, sa);
    /* a session A still has, whose peer lost it without a CLOSE: RESET */
    msg(m, 0, 9);
    CHECK_EQ(oob_chan_connect_ud(ua, &pb->me, NULL, 0, 0, m, &me, &sa), OPAL_SUCCESS);
    CHECK(next_event(&ev, 10));
    sb = ev.sid;
    wait_heard(sa); /* B acknowledged the OPEN */
    pthread_mutex_lock(&net);
    pa->deaf = true; /* B's CLOSE is lost... */
    pthread_mutex_unlock(&net);
    oob_chan_close(sb);
    pause_ms(300);
    pthread_mutex_lock(&net);
    pa->deaf = false;
    pthread_mutex_unlock(&net);
    msg(m, 0, 10); /* ...and A's next frame gets the RESET */
    CHECK_EQ(oob_chan_send(sa, m), OPAL_SUCCESS);
    CHECK(next_event(&ev, 10));
    CHECK_EQ(ev.type, OOB_EV_ERROR);
    CHECK_EQ(ev.sid, sa);
    CHECK_EQ(ev.error, OOB_ERR_CLOSED);
    CHECK_STR_HAS(ev.why, "no such side-channel session");
}

static int tcp_socket_on(uint16_t *port, bool listening)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = loopback };
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    CHECK(0 == bind(fd, (struct sockaddr *) &sa, sizeof(sa)));
    CHECK(0 == getsockname(fd, (struct sockaddr *) &sa, &len));
    *port = ntohs(sa.sin_port);
    if (listening) {
        CHECK(0 == listen(fd, 16));
        return fd;
    }
    close(fd);
    return -1;
}

/* A session to `to` (probing `port` on loopback, none when 0) ends with
 * error `err`, its reason saying `why`. */
static void ends_with(const struct oob_ud_addr *to, uint16_t port, enum oob_error err,
                      const char *why)
{
    struct oob_event ev;
    uint8_t m[OOB_MSG_SIZE];
    int sa = -1;

    msg(m, 0, 0);
    CHECK_EQ(oob_chan_connect_ud(ua, to, &loopback, port ? 1 : 0, port, m, &me, &sa),
             OPAL_SUCCESS);
    CHECK(next_event(&ev, 15));
    CHECK_EQ(ev.type, OOB_EV_ERROR);
    CHECK_EQ(ev.sid, sa);
    CHECK_EQ(ev.error, err);
    CHECK_STR_HAS(ev.why, why);
}

static void silent_peer(void)
{
    struct oob_ud_addr nobody = pb->me;
    uint16_t port;
    int lfd;

    nobody.qpn = 0x777; /* no QP there: every datagram is lost */
    oob_chan_ud_timing(3000, 300);
    /* its process is gone: the probe is refused at once */
    (void) tcp_socket_on(&port, false);
    ends_with(&nobody, port, OOB_ERR_REFUSED, "refused");
    /* its process is there (its listener accepts) but UD does not get
     * through: UD_SILENT after the give-up time */
    lfd = tcp_socket_on(&port, true);
    ends_with(&nobody, port, OOB_ERR_UD_SILENT, "while its TCP listener accepts");
    close(lfd);
    /* nothing to probe: UD_SILENT too */
    ends_with(&nobody, 0, OOB_ERR_UD_SILENT, "nothing acknowledged");
    oob_chan_ud_timing(0, 0);
}

int main(int argc, char **argv)
{
    /* as in an MPI process: Open MPI's event layer, with threads, runs the
     * side channel's thread */
    if (OPAL_SUCCESS != test_opal_init(&argc, &argv)) {
        return 1;
    }
    inet_pton(AF_INET, "127.0.0.1", &loopback);
    CHECK_EQ(oob_chan_start(), OPAL_SUCCESS);
    ports_up();
    handshake();
    lossy();
    busy_and_backpressure();
    strangers();
    silent_peer();
    ports_down();
    /* a bad port number is refused, not crashed on */
    {
        uint8_t m[OOB_MSG_SIZE] = { 0 };
        int sid;
        CHECK_EQ(oob_chan_connect_ud(ua, &pb->me, NULL, 0, 0, m, &me, &sid), OPAL_ERR_UNREACH);
    }
    oob_chan_stop();
    test_opal_fini();
    return test_report("test_oob_channel_ud");
}

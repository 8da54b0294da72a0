/*
 * openib_hostile.c - a stranger on the network (t-security-hostile.sh). It
 * is no part of any MPI job: it knows what anyone who can reach a node can
 * learn (a rank's side-channel address and port, a guessable process name)
 * and attacks that rank's oob side channel, one mode per run:
 *
 *   probe    is IP:PORT an oob side channel? (it answers a keepalive PING)
 *   garbage  random bytes, truncated frames, frames with oob's magic that
 *            oob's own decoder refuses (bad version, type, counts)
 *   forged   well-formed requests with a forged source (a non-member; a
 *            real member's name), a wrong destination, a wrong MAC
 *   capture  (root) sniff request frames off the wire (AF_PACKET) while a
 *            job connects, into a file; replay sends them again
 *   replay   send captured requests again to where they went
 *   idle     open many TCP connections and hold them silent
 *   flood    many connections sending valid-looking frames as fast as
 *            they can
 *
 * Each mode prints one line "hostile: MODE: key=value ..." with what was
 * sent and how the target answered: "closed" counts sessions the target
 * closed (EOF or reset), "refused" connections it refused, "rep" replies
 * that would have handed us a connection (must stay 0), "rej" rejects,
 * "silent" sessions left open without an answer. Every wait is bounded
 * (--timeout, default 120 s, is a hard stop).
 *
 * Frames are built with the CPC's own encoder (wire/oob_wire.c,
 * compiled in); build_request() (hostile_lib.c) is the only place that
 * knows what a request carries.
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "wire/oob_wire.h"
#include "wire/xoob_wire.h"
#include "tests/integration/hostile/hostile_lib.h"

struct opts {
    const char *mode;
    struct hostile_opts c;
    struct sockaddr_in target;
    bool have_target;
    struct in_addr bind;        /* source address for our connections */
    bool have_bind;
    int conns, frames, hold_s;
};

static struct opts o = { .c = { .secs = 60, .timeout_s = 120, .seed = 0x686f7374696c65ull },
                         .conns = 32, .frames = 200, .hold_s = 10 };

/* ---- sockets ---- */

static int open_conn(bool nonblock)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
    int one = 1;

    if (fd < 0) {
        return -1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (o.have_bind) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr = o.bind };
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa))) {
            close(fd);
            return -1;
        }
    }
    return fd;
}

/* A blocking connection to the target with a bounded connect. -1 with
 * t->refused or t->failed counted. */
static int connect_target(const struct sockaddr_in *to, struct tally *t)
{
    int fd = open_conn(true), err = 0;
    socklen_t el = sizeof(err);
    struct pollfd p;

    if (fd < 0) {
        t->failed++;
        return -1;
    }
    if (connect(fd, (const struct sockaddr *) to, sizeof(*to)) && errno != EINPROGRESS) {
        err = errno;
    } else {
        p = (struct pollfd) { .fd = fd, .events = POLLOUT };
        if (poll(&p, 1, 5000) != 1) {
            err = ETIMEDOUT;
        } else {
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
        }
    }
    if (err) {
        if (ECONNREFUSED == err) {
            t->refused++;
        } else {
            t->failed++;
        }
        close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    t->conns++;
    return fd;
}

static bool send_all(int fd, const uint8_t *b, size_t n)
{
    while (n) {
        ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
        if (w < 0 && EINTR == errno) {
            continue;
        }
        if (w <= 0) {
            return false;
        }
        b += w;
        n -= (size_t) w;
    }
    return true;
}

/* Listen for the target's answer for up to wait_ms: counts a REP/REJ (or
 * other frame), a close, or silence. Keepalive PINGs are not an answer. */
static void await_answer(int fd, int wait_ms, struct tally *t)
{
    uint8_t f[OOB_MSG_SIZE];
    size_t have = 0;
    long end = now_ms() + wait_ms;

    for (;;) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        long left = end - now_ms();
        ssize_t r;

        if (left <= 0 || poll(&p, 1, (int) left) != 1) {
            t->silent++;
            return;
        }
        r = recv(fd, f + have, sizeof(f) - have, 0);
        if (r <= 0) {
            t->closed++;
            return;
        }
        have += (size_t) r;
        if (have == sizeof(f)) {
            have = 0;
            hostile_answer(f, t);
        }
    }
}

/* One connection: send bytes, half-close when asked, await the answer. */
static void one_shot(const uint8_t *b, size_t n, bool half_close, struct tally *t)
{
    int fd = connect_target(&o.target, t);

    if (fd < 0) {
        return;
    }
    if (send_all(fd, b, n)) {
        t->sent++;
    } else {
        t->closed++;
        close(fd);
        return;
    }
    if (half_close) {
        shutdown(fd, SHUT_WR);
    }
    await_answer(fd, 1500, t);
    close(fd);
}

/* ---- modes ---- */

static int mode_probe(void)
{
    struct oob_ka k = { .type = OOB_KA_PING };
    uint8_t f[OOB_MSG_SIZE];
    struct tally t = { 0 };
    long end;
    size_t have = 0;
    int fd;

    oob_ka_encode(f, sizeof(f), &k);
    fd = connect_target(&o.target, &t);
    if (fd < 0 || !send_all(fd, f, sizeof(f))) {
        printf("hostile: probe: %s:%u: no connection\n", inet_ntoa(o.target.sin_addr),
               ntohs(o.target.sin_port));
        return 1;
    }
    for (end = now_ms() + 5000; now_ms() < end;) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        ssize_t r;

        if (poll(&p, 1, 500) != 1) {
            continue;
        }
        r = recv(fd, f + have, sizeof(f) - have, 0);
        if (r <= 0) {
            break;
        }
        have += (size_t) r;
        if (have == sizeof(f)) {
            if (OPAL_SUCCESS == oob_ka_decode(f, sizeof(f), &k) && OOB_KA_PONG == k.type) {
                printf("hostile: probe: %s:%u answers keepalives: an oob side channel\n",
                       inet_ntoa(o.target.sin_addr), ntohs(o.target.sin_port));
                close(fd);
                return 0;
            }
            have = 0;
        }
    }
    close(fd);
    printf("hostile: probe: %s:%u: no PONG\n", inet_ntoa(o.target.sin_addr),
           ntohs(o.target.sin_port));
    return 1;
}

/* A frame that begins like a real one of ours but that the CPC's own
 * decoder refuses: found by mutating real frames, so nothing here knows
 * which byte is the version or a count. */
static void bad_frame(uint8_t f[OOB_MSG_SIZE], bool xoob)
{
    static const uint8_t edges[] = { 0, 1, 9, 0x7f, 0x80, 0xff };
    static const uint8_t any_key[OPENIB_AUTH_TOKEN_LEN];
    struct oob_msg m;
    struct xoob_msg x;

    for (;;) {
        if (xoob) {
            memset(&x, 0, sizeof(x));
            x.env.type = XOOB_REQ;
            memcpy(x.env.src, o.c.member, sizeof(x.env.src));
            memcpy(x.env.dst, o.c.name, sizeof(x.env.dst));
            xoob_msg_encode(&x, f, OOB_MSG_SIZE, any_key); /* refused by its layout */
        } else {
            build_request(f, OOB_REQ, o.c.member, o.c.name, NULL);
        }
        for (int k = 1 + (int) (rnd() % 3); k > 0; --k) {
            f[4 + rnd() % 60] = edges[rnd() % sizeof(edges)]; /* keep the magic */
        }
        if (xoob ? OPAL_SUCCESS != xoob_msg_decode(f, OOB_MSG_SIZE, &x)
                 : OPAL_SUCCESS != oob_msg_decode(f, OOB_MSG_SIZE, &m)) {
            return;
        }
    }
}

static int mode_garbage(void)
{
    uint8_t f[512];
    struct tally t = { 0 };
    int n = o.c.count ? o.c.count : 60;

    for (int i = 0; i < n; ++i) {
        size_t len;

        switch (i % 5) {
        case 0: /* random bytes, any length */
            len = 1 + rnd() % 400;
            rnd_fill(f, len);
            one_shot(f, len, false, &t);
            break;
        case 1: /* a real request cut short, then our side closes */
            build_request(f, OOB_REQ, o.c.member, o.c.name, NULL);
            one_shot(f, 1 + rnd() % (OOB_MSG_SIZE - 1), true, &t);
            break;
        case 2: /* oob's magic, fields its decoder refuses */
            bad_frame(f, false);
            one_shot(f, OOB_MSG_SIZE, false, &t);
            break;
        case 3: /* xoob's magic, fields its decoder refuses */
            bad_frame(f, true);
            one_shot(f, OOB_MSG_SIZE, false, &t);
            break;
        default: /* a keepalive of another version, then a longer frame */
            {
                struct oob_ka k = { .type = OOB_KA_PING };
                oob_ka_encode(f, OOB_MSG_SIZE, &k);
                f[4] = 0x7f;
                len = OOB_MSG_SIZE + 1 + rnd() % 300;
                rnd_fill(f + OOB_MSG_SIZE, len - OOB_MSG_SIZE);
                one_shot(f, len, false, &t);
            }
            break;
        }
    }
    print_tally("garbage", &t, NULL);
    return 0;
}

static int mode_forged(void)
{
    uint8_t f[OOB_MSG_SIZE], stranger[OOB_ID_LEN], wrong_dst[OOB_ID_LEN], key[16];
    struct tally t = { 0 };
    int n = o.c.count ? o.c.count : 5;

    memcpy(stranger, o.c.name, sizeof(stranger));
    name_jobid_add(stranger, 1);   /* another job's rank */
    memcpy(wrong_dst, o.c.name, sizeof(wrong_dst));
    name_vpid_add(wrong_dst, 1000); /* no such rank */
    for (int i = 0; i < n; ++i) {
        rnd_fill(key, sizeof(key));
        /* a non-member's name */
        build_request(f, OOB_REQ, stranger, o.c.name, key);
        one_shot(f, sizeof(f), false, &t);
        /* a real member's name, a MAC under a guessed key */
        build_request(f, OOB_REQ, o.c.member, o.c.name, key);
        one_shot(f, sizeof(f), false, &t);
        /* a real member's name, no MAC */
        build_request(f, OOB_REQ, o.c.member, o.c.name, NULL);
        one_shot(f, sizeof(f), false, &t);
        /* for another process than the one listening */
        build_request(f, OOB_REQ, o.c.member, wrong_dst, key);
        one_shot(f, sizeof(f), false, &t);
        /* an RTU out of the blue, posing as the member */
        build_request(f, OOB_RTU, o.c.member, o.c.name, key);
        one_shot(f, sizeof(f), false, &t);
    }
    print_tally("forged", &t, NULL);
    return 0;
}

/* A TCP segment whose payload is exactly one oob request frame. */
static bool keep_request(const uint8_t *pkt, size_t r, char *line, size_t cap)
{
    size_t ihl = (size_t) (pkt[0] & 0x0f) * 4, tot = (size_t) pkt[2] << 8 | pkt[3], doff;
    struct oob_msg m;
    struct in_addr dst;
    int n;

    if (pkt[9] != IPPROTO_TCP || tot > r || ihl + 20 > tot) {
        return false;
    }
    doff = (size_t) (pkt[ihl + 12] >> 4) * 4;
    if (ihl + doff + OOB_MSG_SIZE != tot ||
        OPAL_SUCCESS != oob_msg_decode(pkt + ihl + doff, OOB_MSG_SIZE, &m) ||
        OOB_REQ != m.env.type) {
        return false;
    }
    memcpy(&dst, pkt + 16, 4);
    n = snprintf(line, cap, "%s %u ", inet_ntoa(dst), (unsigned) (pkt[ihl + 2] << 8 | pkt[ihl + 3]));
    hostile_hex(line + n, pkt + ihl + doff, OOB_MSG_SIZE);
    return true;
}

static int mode_capture(void)
{
    return hostile_capture(o.c.file, o.c.count ? o.c.count : 4, o.c.secs, o.c.stop_file, keep_request);
}

static int mode_replay(void)
{
    FILE *in = fopen(o.c.file, "r");
    char ip[64], hex[2 * OOB_MSG_SIZE + 2];
    unsigned port;
    struct tally t = { 0 };
    long frames = 0;

    if (NULL == in) {
        die("cannot read %s", o.c.file);
    }
    while (3 == fscanf(in, "%63s %u %321s", ip, &port, hex)) {
        uint8_t f[OOB_MSG_SIZE];
        struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((uint16_t) port) };
        int fd;

        if (!hostile_unhex(hex, f, OOB_MSG_SIZE) || !inet_aton(ip, &to.sin_addr)) {
            continue;
        }
        frames++;
        for (int rep = 0; rep < 2; ++rep) { /* twice: a replay of a replay too */
            fd = connect_target(&to, &t);
            if (fd < 0) {
                continue;
            }
            if (send_all(fd, f, sizeof(f))) {
                t.sent++;
                await_answer(fd, 1500, &t);
            } else {
                t.closed++;
            }
            close(fd);
        }
    }
    fclose(in);
    {
        char extra[64];
        snprintf(extra, sizeof(extra), "captured=%ld", frames);
        print_tally("replay", &t, extra);
    }
    return frames > 0 ? 0 : 1;
}

static void raise_nofile(long need)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl)) {
        return;
    }
    if ((long) rl.rlim_max < need) {
        rl.rlim_max = (rlim_t) need; /* root may */
    }
    rl.rlim_cur = rl.rlim_max;
    (void) setrlimit(RLIMIT_NOFILE, &rl);
}

/* Open n connections at once (non-blocking), wait for them to complete;
 * fds[i] is -1 for those that failed. */
static void open_many(int *fds, int n, struct tally *t)
{
    struct pollfd *p = calloc((size_t) n, sizeof(*p));
    long end = now_ms() + 30000;
    int pending = 0;

    for (int i = 0; i < n; ++i) {
        fds[i] = open_conn(true);
        if (fds[i] < 0) {
            t->failed++;
            continue;
        }
        if (connect(fds[i], (struct sockaddr *) &o.target, sizeof(o.target)) &&
            errno != EINPROGRESS) {
            if (ECONNREFUSED == errno) {
                t->refused++;
            } else {
                t->failed++;
            }
            close(fds[i]);
            fds[i] = -1;
            continue;
        }
        pending++;
    }
    while (pending > 0 && now_ms() < end) {
        for (int i = 0; i < n; ++i) {
            p[i] = (struct pollfd) { .fd = fds[i] >= 0 ? fds[i] : -1, .events = POLLOUT };
        }
        if (poll(p, (nfds_t) n, 500) <= 0) {
            continue;
        }
        pending = 0;
        for (int i = 0; i < n; ++i) {
            int err = 0;
            socklen_t el = sizeof(err);

            if (fds[i] < 0) {
                continue;
            }
            if (!(p[i].revents & (POLLOUT | POLLERR | POLLHUP))) {
                pending++;
                continue;
            }
            getsockopt(fds[i], SOL_SOCKET, SO_ERROR, &err, &el);
            if (err) {
                if (ECONNREFUSED == err) {
                    t->refused++;
                } else {
                    t->failed++;
                }
                close(fds[i]);
                fds[i] = -1;
            }
        }
    }
    for (int i = 0; i < n; ++i) {
        if (fds[i] >= 0) {
            t->conns++;
        }
    }
    free(p);
}

/* Count the sessions the target closes within ms (reading and dropping
 * whatever it sends: keepalive PINGs we never answer). */
static void watch_closes(int *fds, int n, long ms, struct tally *t)
{
    struct pollfd *p = calloc((size_t) n, sizeof(*p));
    long end = now_ms() + ms;

    while (now_ms() < end) {
        int live = 0;

        for (int i = 0; i < n; ++i) {
            p[i] = (struct pollfd) { .fd = fds[i], .events = POLLIN };
            live += fds[i] >= 0;
        }
        if (0 == live) {
            break;
        }
        if (poll(p, (nfds_t) n, 500) <= 0) {
            continue;
        }
        for (int i = 0; i < n; ++i) {
            uint8_t junk[4096];

            if (fds[i] < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR))) {
                continue;
            }
            if (recv(fds[i], junk, sizeof(junk), MSG_DONTWAIT) <= 0) {
                t->closed++;
                close(fds[i]);
                fds[i] = -1;
            }
        }
    }
    for (int i = 0; i < n; ++i) {
        if (fds[i] >= 0) {
            t->silent++;
            close(fds[i]);
            fds[i] = -1;
        }
    }
    free(p);
}

static int mode_idle(void)
{
    int n = o.c.count ? o.c.count : 2000;
    int *fds = calloc((size_t) n, sizeof(int));
    char extra[96];

    struct tally t = { 0 };

    raise_nofile(n + 64);
    open_many(fds, n, &t);
    watch_closes(fds, n, o.hold_s * 1000L, &t);
    snprintf(extra, sizeof(extra), "asked=%d held_s=%d from=%s", n, o.hold_s,
             o.have_bind ? inet_ntoa(o.bind) : "default");
    /* sessions still open after the hold are counted as silent */
    print_tally("idle", &t, extra);
    free(fds);
    return 0;
}

static int mode_flood(void)
{
    int n = o.conns, per = o.frames;
    int *fds = calloc((size_t) n, sizeof(int));
    long *left = calloc((size_t) n, sizeof(long));
    struct pollfd *p = calloc((size_t) n, sizeof(*p));
    uint8_t f[OOB_MSG_SIZE], stranger[OOB_ID_LEN], key[16];
    struct tally t = { 0 };
    long end;
    char extra[64];

    raise_nofile(n + 64);
    memcpy(stranger, o.c.name, sizeof(stranger));
    name_jobid_add(stranger, 1);
    open_many(fds, n, &t);
    for (int i = 0; i < n; ++i) {
        left[i] = fds[i] >= 0 ? per : 0;
    }
    end = now_ms() + 30000;
    while (now_ms() < end) {
        int busy = 0;

        for (int i = 0; i < n; ++i) {
            p[i] = (struct pollfd) { .fd = left[i] > 0 ? fds[i] : -1, .events = POLLOUT };
            busy += left[i] > 0;
        }
        if (0 == busy || poll(p, (nfds_t) n, 500) <= 0) {
            if (0 == busy) {
                break;
            }
            continue;
        }
        for (int i = 0; i < n; ++i) {
            if (left[i] <= 0 || !(p[i].revents & (POLLOUT | POLLERR | POLLHUP))) {
                continue;
            }
            while (left[i] > 0) {
                ssize_t w;

                rnd_fill(key, sizeof(key));
                build_request(f, OOB_REQ, (left[i] & 1) ? stranger : o.c.member, o.c.name, key);
                w = send(fds[i], f, sizeof(f), MSG_NOSIGNAL | MSG_DONTWAIT);
                if (w == (ssize_t) sizeof(f)) {
                    t.sent++;
                    left[i]--;
                    continue;
                }
                if (w < 0 && (EAGAIN == errno || EWOULDBLOCK == errno)) {
                    break;
                }
                /* a partial frame or an error: the target closed or reset */
                t.closed++;
                left[i] = 0;
                close(fds[i]);
                fds[i] = -1;
                break;
            }
        }
    }
    watch_closes(fds, n, 3000, &t);
    snprintf(extra, sizeof(extra), "asked=%dx%d", n, per);
    print_tally("flood", &t, extra);
    free(fds);
    free(left);
    free(p);
    return 0;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: openib_hostile MODE [--target IP:PORT] [--name JOBID.VPID]\n"
            "         [--member JOBID.VPID] [--bind SRCIP] [--file F] [--stop-file F]\n"
            "         [--count N] [--conns N] [--frames N] [--hold S] [--secs S]\n"
            "         [--timeout S] [--seed N]\n"
            "MODE: probe garbage forged capture replay idle flood\n");
    exit(2);
}

int main(int argc, char **argv)
{
    int rc;

    if (argc < 2) {
        usage();
    }
    o.mode = argv[1];
    for (int i = 2; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (NULL == v) {
            usage();
        }
        ++i;
        if (hostile_opt(&o.c, a, v)) {
            continue;
        }
        if (0 == strcmp(a, "--target")) {
            char ip[64], *colon;
            snprintf(ip, sizeof(ip), "%s", v);
            colon = strrchr(ip, ':');
            if (!colon) {
                usage();
            }
            *colon = '\0';
            o.target = (struct sockaddr_in) { .sin_family = AF_INET,
                                              .sin_port = htons((uint16_t) atoi(colon + 1)) };
            if (!inet_aton(ip, &o.target.sin_addr)) {
                usage();
            }
            o.have_target = true;
        } else if (0 == strcmp(a, "--bind")) {
            if (!inet_aton(v, &o.bind)) {
                usage();
            }
            o.have_bind = true;
        } else if (0 == strcmp(a, "--conns")) {
            o.conns = atoi(v);
        } else if (0 == strcmp(a, "--frames")) {
            o.frames = atoi(v);
        } else if (0 == strcmp(a, "--hold")) {
            o.hold_s = atoi(v);
        } else {
            usage();
        }
    }
    signal(SIGPIPE, SIG_IGN);
    hostile_start(&o.c);
    if (0 == strcmp(o.mode, "capture")) {
        if (!o.c.file) {
            usage();
        }
        return mode_capture();
    }
    if (0 == strcmp(o.mode, "replay")) {
        if (!o.c.file) {
            usage();
        }
        return mode_replay();
    }
    if (!o.have_target || (!o.c.have_name && strcmp(o.mode, "probe"))) {
        usage();
    }
    if (0 == strcmp(o.mode, "probe")) {
        rc = mode_probe();
    } else if (0 == strcmp(o.mode, "garbage")) {
        rc = mode_garbage();
    } else if (0 == strcmp(o.mode, "forged")) {
        rc = mode_forged();
    } else if (0 == strcmp(o.mode, "idle")) {
        rc = mode_idle();
    } else if (0 == strcmp(o.mode, "flood")) {
        rc = mode_flood();
    } else {
        usage();
        rc = 2;
    }
    return rc;
}

/*
 * hostile_lib.c - what the strangers of the security tests share
 * (hostile_lib.h).
 */
#define _GNU_SOURCE
#include "opal_config.h"
#include "opal/constants.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/hostile/hostile_lib.h"

static uint64_t rng = 1;

uint64_t rnd(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545f4914f6cdd1dull;
}

void rnd_fill(void *p, size_t n)
{
    for (size_t i = 0; i < n; ++i) {
        ((uint8_t *) p)[i] = (uint8_t) rnd();
    }
}

long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

void die(const char *fmt, const char *arg)
{
    fprintf(stderr, "%s: ", program_invocation_short_name);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n");
    exit(2);
}

/* "JOBID.VPID" (decimal, as ORTE prints them) -> the 8 bytes oob carries:
 * opal_process_name_t {u32 jobid, u32 vpid} in host order, as cpc_oob.c
 * copies cep->local_id. */
void parse_name(const char *s, uint8_t out[OOB_ID_LEN])
{
    char *end;
    unsigned long j = strtoul(s, &end, 10), v;
    uint32_t jv[2];

    if (*end != '.') {
        die("bad process name '%s' (want JOBID.VPID)", s);
    }
    v = strtoul(end + 1, &end, 10);
    if (*end) {
        die("bad process name '%s' (want JOBID.VPID)", s);
    }
    jv[0] = (uint32_t) j;
    jv[1] = (uint32_t) v;
    memcpy(out, jv, OOB_ID_LEN);
}

void name_vpid_add(uint8_t name[OOB_ID_LEN], uint32_t d)
{
    uint32_t jv[2];

    memcpy(jv, name, sizeof(jv));
    jv[1] += d;
    memcpy(name, jv, sizeof(jv));
}

void name_jobid_add(uint8_t name[OOB_ID_LEN], uint32_t d)
{
    uint32_t jv[2];

    memcpy(jv, name, sizeof(jv));
    jv[0] += d;
    memcpy(name, jv, sizeof(jv));
}

/* ---- the one place that knows what a request carries ----
 * A request from src to dst with plausible QP data. key: the MAC key a
 * stranger guesses (random), NULL for none: the frame is sealed with key,
 * or its MAC field (the frame's last bytes) is left zero. */
void build_request(uint8_t frame[OOB_MSG_SIZE], enum oob_type type, const uint8_t *src,
                   const uint8_t *dst, const uint8_t *key)
{
    static const uint8_t no_key[OPENIB_AUTH_TOKEN_LEN];
    struct oob_msg m;
    struct openib_cpc_qp_info q;

    openib_cpc_qp_info_init(&q);
    q.mtu = 1024;
    rnd_fill(q.gid, sizeof(q.gid));
    q.lid = 0;
    q.num_qps = 3;
    for (int i = 0; i < 3; ++i) {
        q.qpn[i] = (uint32_t) rnd() & 0xffffff;
        q.psn[i] = (uint32_t) rnd() & 0xffffff;
    }
    q.rq_layout = (uint32_t) rnd();
    q.mailbox_rkey = (uint32_t) rnd();
    q.mailbox_addr = rnd();
    memset(&m, 0, sizeof(m));
    m.env.type = type;
    memcpy(m.env.src, src, OOB_ID_LEN);
    memcpy(m.env.dst, dst, OOB_ID_LEN);
    m.q = q;
    rnd_fill(m.env.nonce, sizeof(m.env.nonce));
    if (OPAL_SUCCESS != oob_msg_encode(frame, OOB_MSG_SIZE, &m, key ? key : no_key)) {
        die("%s", "oob_msg_encode refused a request");
    }
    if (NULL == key) {
        memset(frame + OOB_MSG_SIZE - OPENIB_AUTH_MAC_LEN, 0, OPENIB_AUTH_MAC_LEN);
    }
}

void print_tally(const char *mode, const struct tally *t, const char *extra)
{
    printf("hostile: %s: sent=%ld conns=%ld refused=%ld closed=%ld rep=%ld rej=%ld other=%ld "
           "silent=%ld failed=%ld%s%s\n",
           mode, t->sent, t->conns, t->refused, t->closed, t->rep, t->rej, t->other, t->silent,
           t->failed, extra ? " " : "", extra ? extra : "");
    fflush(stdout);
}

static void on_alarm(int sig)
{
    static const char msg[] = "hostile: --timeout reached, stopping\n";

    (void) sig;
    (void) !write(2, msg, sizeof(msg) - 1);
    _exit(124);
}

void hostile_deadline(int timeout_s)
{
    signal(SIGALRM, on_alarm);
    alarm((unsigned) timeout_s);
}

void hostile_seed(uint64_t seed)
{
    rng = seed ? seed : 1;
}

void hostile_answer(const uint8_t f[OOB_MSG_SIZE], struct tally *t)
{
    struct oob_msg m;
    struct oob_ka k;

    if (OPAL_SUCCESS == oob_ka_decode(f, OOB_MSG_SIZE, &k)) {
        return; /* the channel's keepalive: not an answer */
    }
    if (OPAL_SUCCESS == oob_msg_decode(f, OOB_MSG_SIZE, &m) && OOB_REP == m.env.type) {
        t->rep++;
    } else if (OPAL_SUCCESS == oob_msg_decode(f, OOB_MSG_SIZE, &m) && OOB_REJ == m.env.type) {
        t->rej++;
    } else {
        t->other++;
    }
}


int hostile_capture(const char *file, int want, int secs, const char *stop_file,
                    hostile_keep_fn keep)
{
    int fd = socket(AF_PACKET, SOCK_DGRAM, htons(ETH_P_IP)), got = 0;
    long seen = 0, end = now_ms() + secs * 1000L;
    FILE *out;

    if (fd < 0) {
        perror("hostile: AF_PACKET socket (root needed)");
        return 2;
    }
    out = fopen(file, "w");
    if (NULL == out) {
        die("cannot write %s", file);
    }
    printf("hostile: capture: listening\n");
    fflush(stdout);
    while (got < want && now_ms() < end) {
        uint8_t pkt[65536];
        char line[1024];
        struct sockaddr_ll from;
        socklen_t fl = sizeof(from);
        struct pollfd p = { .fd = fd, .events = POLLIN };
        struct stat st;
        ssize_t r;

        if (stop_file && 0 == stat(stop_file, &st)) {
            break;
        }
        if (poll(&p, 1, 200) != 1) {
            continue;
        }
        r = recvfrom(fd, pkt, sizeof(pkt), 0, (struct sockaddr *) &from, &fl);
        if (r < 20 || PACKET_OUTGOING == from.sll_pkttype) {
            continue; /* loopback shows each packet twice */
        }
        seen++;
        if ((pkt[0] >> 4) == 4 && keep(pkt, (size_t) r, line, sizeof(line))) {
            fprintf(out, "%s\n", line);
            fflush(out);
            got++;
        }
    }
    fclose(out);
    close(fd);
    printf("hostile: capture: captured=%d requests packets_seen=%ld\n", got, seen);
    return got > 0 ? 0 : 1;
}

void hostile_hex(char *out, const uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n; ++i) {
        sprintf(out + 2 * i, "%02x", b[i]);
    }
}

bool hostile_unhex(const char *hex, uint8_t *b, size_t n)
{
    if (strlen(hex) != 2 * n) {
        return false;
    }
    for (size_t i = 0; i < n; ++i) {
        unsigned x;
        if (1 != sscanf(hex + 2 * i, "%2x", &x)) {
            return false;
        }
        b[i] = (uint8_t) x;
    }
    return true;
}

bool hostile_opt(struct hostile_opts *c, const char *a, const char *v)
{
    if (0 == strcmp(a, "--name")) {
        parse_name(v, c->name);
        c->have_name = true;
    } else if (0 == strcmp(a, "--member")) {
        parse_name(v, c->member);
        c->have_member = true;
    } else if (0 == strcmp(a, "--file")) {
        c->file = v;
    } else if (0 == strcmp(a, "--stop-file")) {
        c->stop_file = v;
    } else if (0 == strcmp(a, "--count")) {
        c->count = atoi(v);
    } else if (0 == strcmp(a, "--secs")) {
        c->secs = atoi(v);
    } else if (0 == strcmp(a, "--timeout")) {
        c->timeout_s = atoi(v);
    } else if (0 == strcmp(a, "--seed")) {
        c->seed = strtoull(v, NULL, 0);
    } else {
        return false;
    }
    return true;
}

void hostile_start(struct hostile_opts *c)
{
    hostile_seed(c->seed);
    hostile_deadline(c->timeout_s);
    if (!c->have_member) {
        memcpy(c->member, c->name, OOB_ID_LEN);
        name_vpid_add(c->member, 1);
    }
}

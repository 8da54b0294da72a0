/*
 * openib_hostile_ud.c - a stranger on the fabric (t-security-hostile-ud.sh).
 * No part of any MPI job, it has a UD QP of its own on the same device and
 * knows what anyone there can learn: a rank's UD side-channel QP number
 * (the Q_Key is a constant), its GID, a guessable process name. It attacks
 * that rank's oob side channel over UD, one mode per run:
 *
 *   garbage  random datagrams, then sessions opened with frames that oob's
 *            decoder refuses (bad magic, version, type, counts)
 *   forged   sessions opened with well-formed requests from another job,
 *            a rank the job does not have, a member's name without or
 *            with a guessed MAC, a wrong
 *            destination, and an RTU nobody asked for
 *   capture  (root) sniff the job's OPEN frames off the wire (RoCE v2,
 *            UDP port 4791) while it connects, into a file
 *   replay   send captured OPENs again to where they went
 *   flood    --count requests from strangers as fast as it can, then
 *            --count sessions opened with keepalives only (they never
 *            speak)
 *
 * Each mode prints "hostile: MODE: key=value ..." (hostile_lib.h): what it
 * sent and what came back on its QP: acknowledgements (the peer's thread
 * takes frames before they are judged, as a TCP kernel accepts), closes,
 * and "rep", "rej", "other": CPC answers, which a stranger must never get.
 * Every wait is bounded (--timeout, default 120 s, is a hard stop).
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wire/oob_wire.h"
#include "tests/integration/hostile/hostile_lib.h"

#define QKEY 0x4f494255u  /* the side channel's, a constant (cpc_oob_ud.c) */
#define NRECV 128
#define SLOT 512
#define ROCE_PORT 4791

static struct {
    const char *mode, *dev;
    struct hostile_opts c;
    struct in_addr src, target;   /* our IPv4 (selects our GID), the target's */
    uint32_t qpn;                 /* the target's UD QP */
} o = { .dev = "rxe0",
        .c = { .count = 20, .secs = 60, .timeout_s = 120, .seed = 0x7564686f7374ull } };

/* ---- our UD QP ---- */

static struct {
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    struct ibv_mr *mr;
    uint8_t *buf;
    int gid_index;
} v;

static uint32_t next_sid = 0x40000000u; /* our sessions' names */

/* The GID index of an IPv4 address on port 1 (RoCE: ::ffff:a.b.c.d; the
 * last of its entries, RoCE v2 after v1). */
static int gid_of(struct in_addr ip)
{
    struct ibv_port_attr pa;
    union ibv_gid g;
    int i, found = -1;

    if (ibv_query_port(v.ctx, 1, &pa)) {
        die("%s", "ibv_query_port failed");
    }
    for (i = 0; i < pa.gid_tbl_len; ++i) {
        if (0 == ibv_query_gid(v.ctx, 1, i, &g) && 0 == memcmp(g.raw + 12, &ip, 4) &&
            0xff == g.raw[10] && 0xff == g.raw[11]) {
            found = i;
        }
    }
    return found;
}

static void post_recv(int i)
{
    struct ibv_sge sge = { .addr = (uintptr_t) (v.buf + (size_t) i * SLOT), .length = SLOT,
                           .lkey = v.mr->lkey };
    struct ibv_recv_wr wr = { .wr_id = (uint64_t) i, .sg_list = &sge, .num_sge = 1 }, *bad;

    if (ibv_post_recv(v.qp, &wr, &bad)) {
        die("%s", "ibv_post_recv failed");
    }
}

static void ud_open(void)
{
    struct ibv_device **list = ibv_get_device_list(NULL);
    struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_UD,
                                   .cap = { .max_send_wr = 64, .max_recv_wr = NRECV,
                                            .max_send_sge = 1, .max_recv_sge = 1 } };
    struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY };
    int i;

    for (i = 0; list && list[i] && strcmp(ibv_get_device_name(list[i]), o.dev); ++i) {
    }
    if (!list || !list[i] || !(v.ctx = ibv_open_device(list[i]))) {
        die("no device %s", o.dev);
    }
    ibv_free_device_list(list);
    v.gid_index = gid_of(o.src);
    if (v.gid_index < 0) {
        die("%s: no GID for our --src address", o.dev);
    }
    v.pd = ibv_alloc_pd(v.ctx);
    v.cq = v.pd ? ibv_create_cq(v.ctx, NRECV + 64, NULL, NULL, 0) : NULL;
    v.buf = calloc(NRECV + 64, SLOT);
    v.mr = v.cq && v.buf ? ibv_reg_mr(v.pd, v.buf, (size_t) (NRECV + 64) * SLOT,
                                      IBV_ACCESS_LOCAL_WRITE)
                         : NULL;
    qa.send_cq = qa.recv_cq = v.cq;
    v.qp = v.mr ? ibv_create_qp(v.pd, &qa) : NULL;
    if (!v.qp ||
        ibv_modify_qp(v.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY)) {
        die("%s", "cannot make a UD QP");
    }
    a = (struct ibv_qp_attr) { .qp_state = IBV_QPS_RTR };
    if (ibv_modify_qp(v.qp, &a, IBV_QP_STATE)) {
        die("%s", "UD QP to RTR failed");
    }
    a = (struct ibv_qp_attr) { .qp_state = IBV_QPS_RTS };
    if (ibv_modify_qp(v.qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN)) {
        die("%s", "UD QP to RTS failed");
    }
    for (i = 0; i < NRECV; ++i) {
        post_recv(i);
    }
}

static struct ibv_ah *ah_to(struct in_addr ip)
{
    static struct ibv_ah *ah;
    static struct in_addr for_ip;
    struct ibv_ah_attr a = { .is_global = 1, .port_num = 1 };

    if (ah && for_ip.s_addr == ip.s_addr) {
        return ah;
    }
    a.grh.dgid.raw[10] = a.grh.dgid.raw[11] = 0xff;
    memcpy(a.grh.dgid.raw + 12, &ip, 4);
    a.grh.sgid_index = (uint8_t) v.gid_index;
    a.grh.hop_limit = 64;
    ah = ibv_create_ah(v.pd, &a);
    if (!ah) {
        die("%s", "ibv_create_ah failed");
    }
    for_ip = ip;
    return ah;
}

/* Take what came back (acknowledgements, closes, answers) into the tally. */
static void reap(struct tally *t)
{
    struct ibv_wc wc[16];
    int n, i;

    while ((n = ibv_poll_cq(v.cq, 16, wc)) > 0) {
        for (i = 0; i < n; ++i) {
            struct oob_ud_hdr h;
            const uint8_t *payload;

            if (!(wc[i].opcode & IBV_WC_RECV)) {
                continue; /* our send's completion */
            }
            if (IBV_WC_SUCCESS == wc[i].status && wc[i].byte_len > 40 &&
                OPAL_SUCCESS == oob_ud_decode(v.buf + wc[i].wr_id * SLOT + 40,
                                              wc[i].byte_len - 40, &h, &payload)) {
                if (OOB_UD_CLOSE == h.kind || OOB_UD_RESET == h.kind) {
                    t->closed++;
                } else if (OOB_UD_ACK == h.kind) {
                    t->conns++; /* taken by the peer's thread, not judged yet */
                } else if (payload) {
                    hostile_answer(payload, t);
                }
            }
            post_recv((int) wc[i].wr_id);
        }
    }
}

static void send_to(struct in_addr ip, uint32_t qpn, const uint8_t *buf, size_t len,
                    struct tally *t)
{
    static int slot;
    uint8_t *b = v.buf + (size_t) (NRECV + slot) * SLOT;
    struct ibv_sge sge = { .addr = (uintptr_t) b, .length = (uint32_t) len, .lkey = v.mr->lkey };
    struct ibv_send_wr wr = { .opcode = IBV_WR_SEND, .sg_list = &sge, .num_sge = 1,
                              .send_flags = IBV_SEND_SIGNALED }, *bad;

    slot = (slot + 1) % 64;
    memcpy(b, buf, len);
    wr.wr.ud.ah = ah_to(ip);
    wr.wr.ud.remote_qpn = qpn;
    wr.wr.ud.remote_qkey = QKEY;
    if (ibv_post_send(v.qp, &wr, &bad)) {
        t->failed++;
    } else {
        t->sent++;
    }
    usleep(2000); /* at most 64 in flight: their slots are reused */
    reap(t);
}

/* Open a session of our own with this first frame (an OPEN). */
static void open_with(const uint8_t frame[OOB_MSG_SIZE], struct tally *t)
{
    struct oob_ud_hdr h = { .kind = OOB_UD_OPEN, .src_sid = next_sid++,
                            .dst_sid = OOB_UD_NO_SID, .seq = 0 };
    uint8_t d[OOB_UD_FRAME_MAX];
    size_t len;

    if (OPAL_SUCCESS != oob_ud_encode(d, sizeof(d), &h, frame, &len)) {
        die("%s", "oob_ud_encode refused an OPEN");
    }
    send_to(o.target, o.qpn, d, len, t);
}

/* What came back for a while after the last frame. */
static void listen_ms(long ms, struct tally *t)
{
    long end = now_ms() + ms;

    while (now_ms() < end) {
        reap(t);
        usleep(5000);
    }
}

/* ---- modes ---- */

static int mode_garbage(void)
{
    struct tally t = { 0 };
    uint8_t d[OOB_UD_FRAME_MAX + 64], f[OOB_MSG_SIZE];
    int i;

    for (i = 0; i < o.c.count; ++i) {
        size_t n = 1 + rnd() % sizeof(d);

        rnd_fill(d, n);
        if (0 == i % 2) {
            memcpy(d, "OIBU", 4); /* our magic, then nonsense */
        }
        send_to(o.target, o.qpn, d, n, &t);
    }
    for (i = 0; i < o.c.count; ++i) {
        build_request(f, OOB_REQ, o.c.member, o.c.name, NULL);
        switch (i % 4) {
        case 0:
            rnd_fill(f, sizeof(f)); /* no oob frame at all */
            break;
        case 1:
            f[4] = 99; /* another version */
            break;
        case 2:
            f[5] = 77; /* no such type */
            break;
        default:
            f[46] = 200; /* more QPs than there can be */
            break;
        }
        open_with(f, &t);
    }
    listen_ms(1500, &t);
    print_tally("garbage", &t, NULL);
    return 0;
}

static int mode_forged(void)
{
    struct tally t = { 0 };
    uint8_t f[OOB_MSG_SIZE], key[OPENIB_AUTH_TOKEN_LEN], stranger[OOB_ID_LEN],
        outsider[OOB_ID_LEN], wrong_dst[OOB_ID_LEN];
    int i;

    memcpy(stranger, o.c.name, OOB_ID_LEN);
    name_jobid_add(stranger, 7); /* another job: only the MAC can tell */
    memcpy(outsider, o.c.name, OOB_ID_LEN);
    name_vpid_add(outsider, 1000); /* our job, no such rank */
    memcpy(wrong_dst, o.c.name, OOB_ID_LEN);
    name_vpid_add(wrong_dst, 1000);
    for (i = 0; i < o.c.count; ++i) {
        rnd_fill(key, sizeof(key));
        build_request(f, OOB_REQ, stranger, o.c.name, key);
        open_with(f, &t);
        build_request(f, OOB_REQ, outsider, o.c.name, key);
        open_with(f, &t);
        build_request(f, OOB_REQ, o.c.member, o.c.name, key);
        open_with(f, &t);
        build_request(f, OOB_REQ, o.c.member, o.c.name, NULL);
        open_with(f, &t);
        build_request(f, OOB_REQ, o.c.member, wrong_dst, key);
        open_with(f, &t);
        build_request(f, OOB_RTU, o.c.member, o.c.name, key);
        open_with(f, &t);
    }
    listen_ms(1500, &t);
    print_tally("forged", &t, NULL);
    return 0;
}

/* RoCE v2 over IPv4: IP, UDP to 4791, BTH (12 bytes, opcode 0x64: UD SEND
 * only), DETH (8), the datagram, ICRC (4). Keeps OPENs carrying a request. */
static bool keep_open(const uint8_t *pkt, size_t r, char *line, size_t cap)
{
    size_t ihl = (size_t) (pkt[0] & 0x0f) * 4, n;
    const uint8_t *payload, *d;
    struct oob_ud_hdr h;
    struct oob_msg m;
    struct in_addr dst;
    int k;

    if (pkt[9] != IPPROTO_UDP || r < ihl + 8 + 20 + 4 ||
        ROCE_PORT != (pkt[ihl + 2] << 8 | pkt[ihl + 3]) || 0x64 != pkt[ihl + 8]) {
        return false;
    }
    d = pkt + ihl + 8 + 20;
    n = r - ihl - 8 - 20 - 4;
    if (OPAL_SUCCESS != oob_ud_decode(d, n, &h, &payload) || OOB_UD_OPEN != h.kind ||
        OPAL_SUCCESS != oob_msg_decode(payload, OOB_MSG_SIZE, &m) || OOB_REQ != m.env.type) {
        return false;
    }
    memcpy(&dst, pkt + 16, 4);
    k = snprintf(line, cap, "%s %u ", inet_ntoa(dst),
                 (unsigned) (pkt[ihl + 8 + 5] << 16 | pkt[ihl + 8 + 6] << 8 | pkt[ihl + 8 + 7]));
    hostile_hex(line + k, d, n);
    return true;
}

static int mode_capture(void)
{
    return hostile_capture(o.c.file, o.c.count, o.c.secs, o.c.stop_file, keep_open);
}

static int mode_replay(void)
{
    FILE *in = fopen(o.c.file, "r");
    char ip[64], hex[2 * OOB_UD_FRAME_MAX + 2];
    unsigned qpn;
    struct tally t = { 0 };
    long frames = 0;
    char extra[64];

    if (NULL == in) {
        die("cannot read %s", o.c.file);
    }
    while (3 == fscanf(in, "%63s %u %369s", ip, &qpn, hex)) {
        uint8_t d[OOB_UD_FRAME_MAX];
        struct in_addr to;

        if (!hostile_unhex(hex, d, OOB_UD_FRAME_MAX) || !inet_aton(ip, &to)) {
            continue;
        }
        frames++;
        send_to(to, qpn, d, sizeof(d), &t); /* as captured: its sender's session name */
        d[8] ^= 0x80; /* and as a new session of ours */
        send_to(to, qpn, d, sizeof(d), &t);
    }
    fclose(in);
    listen_ms(1500, &t);
    snprintf(extra, sizeof(extra), "captured=%ld", frames);
    print_tally("replay", &t, extra);
    return frames > 0 ? 0 : 1;
}

static int mode_flood(void)
{
    struct tally t = { 0 };
    struct oob_ka k = { .type = OOB_KA_PING };
    uint8_t f[OOB_MSG_SIZE], key[OPENIB_AUTH_TOKEN_LEN], stranger[OOB_ID_LEN];
    int i;

    /* strangers' requests, as fast as we can (each refused, its session
     * closed) */
    memcpy(stranger, o.c.name, OOB_ID_LEN);
    name_jobid_add(stranger, 3);
    for (i = 0; i < o.c.count; ++i) {
        rnd_fill(key, sizeof(key));
        build_request(f, OOB_REQ, stranger, o.c.name, key);
        open_with(f, &t);
    }
    /* then sessions that never speak, keepalives only: beyond the
     * per-source limit the oldest go, the rest when they have been idle
     * too long */
    if (OPAL_SUCCESS != oob_ka_encode(f, sizeof(f), &k)) {
        die("%s", "oob_ka_encode failed");
    }
    for (i = 0; i < o.c.count; ++i) {
        open_with(f, &t);
    }
    listen_ms(1500, &t);
    print_tally("flood", &t, NULL);
    return 0;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: openib_hostile_ud MODE --src OURIP [--dev DEV] [--target IP --qpn N]\n"
            "         [--name JOBID.VPID] [--member JOBID.VPID] [--file F] [--stop-file F]\n"
            "         [--count N] [--secs S] [--timeout S] [--seed N]\n"
            "MODE: garbage forged capture replay flood\n");
    exit(2);
}

int main(int argc, char **argv)
{
    bool have_src = false, have_target = false;

    if (argc < 2) {
        usage();
    }
    o.mode = argv[1];
    for (int i = 2; i + 1 < argc; i += 2) {
        const char *a = argv[i], *val = argv[i + 1];

        if (hostile_opt(&o.c, a, val)) {
            continue;
        }
        if (0 == strcmp(a, "--src")) {
            have_src = inet_aton(val, &o.src);
        } else if (0 == strcmp(a, "--target")) {
            have_target = inet_aton(val, &o.target);
        } else if (0 == strcmp(a, "--qpn")) {
            o.qpn = (uint32_t) strtoul(val, NULL, 0);
        } else if (0 == strcmp(a, "--dev")) {
            o.dev = val;
        } else {
            usage();
        }
    }
    hostile_start(&o.c);
    if (0 == strcmp(o.mode, "capture")) {
        if (!o.c.file) {
            usage();
        }
        return mode_capture();
    }
    if (!have_src) {
        usage();
    }
    ud_open();
    if (0 == strcmp(o.mode, "replay")) {
        if (!o.c.file) {
            usage();
        }
        return mode_replay();
    }
    if (!have_target || !o.qpn || !o.c.have_name) {
        usage();
    }
    if (0 == strcmp(o.mode, "garbage")) {
        return mode_garbage();
    }
    if (0 == strcmp(o.mode, "forged")) {
        return mode_forged();
    }
    if (0 == strcmp(o.mode, "flood")) {
        return mode_flood();
    }
    usage();
    return 2;
}

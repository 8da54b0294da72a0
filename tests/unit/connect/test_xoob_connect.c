/*
 * test_xoob_connect.c - the xoob CPC end to end in one process, over the
 * real side channel (TCP on this host) with a fake BTL standing in for the
 * XRC verbs: three endpoints to processes of one remote node share one send
 * QP made and connected once (one REQ, one target QP), each learns its own
 * peer's SRQ numbers from the modex blob, a fourth endpoint joining later
 * connects at once without any exchange, the last endpoint's teardown
 * destroys the shared QP exactly once, and a receive-queue layout mismatch
 * is refused by the responder and fails every waiting endpoint with the
 * reason. Without XRC ops or on a port without XRC, query declines.
 *
 * Authentication: the responder answers only requests sealed with its
 * token, meant for it, from its job: a stranger's forged request, a
 * request for another process and a replayed request each make no target
 * QP and get no answer (the session is closed), and each is logged at
 * verbose 1 with "refused", the source address and its reason token. A
 * member asking for more target QPs than the cap is refused (logged "cap").
 *
 * A busy peer is not a dead one (btl_openib_connect_xoob_timeout 1 s here):
 *   - busy: the responder is another process that does not progress for
 *     three timeouts (it "computes outside MPI"); its side-channel thread
 *     keeps the session alive, the driver neither fails nor completes
 *     meanwhile, and connects once the responder progresses;
 *   - gone: the responder's listener is closed: the driver fails at once,
 *     "connection refused", not after the timeout;
 *   - hung: a socket nobody reads (the kernel accepted the connection):
 *     silence, and the driver fails on the timeout, saying so.
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "connect/cpc_auth.h"
#include "connect/cpc_oob.h"
#include "connect/cpc_xoob.h"
#include "connect/openib_connect.h"
#include "wire/xoob_wire.h"
#include "tests/unit/connect/cpc_test.h"
#include "tests/unit/connect/cpc_test_opal.h"

struct fake_btl {
    uint32_t srqn[XOOB_MAX_SRQS];
    int nsrq;
    uint32_t layout;
    int qp_created, qp_destroyed, qp_connected, tgt_made;
    uint32_t connected_to;          /* target QPN the send QP was connected to */
    uint32_t tgt_for_qpn, tgt_for_psn;
    int fake_qp;                    /* its address is the QP handle */
};

struct fake_ep {
    struct openib_cpc_endpoint cep;
    struct openib_cpc_port peer_port;
    uint8_t local_id[8], peer_id[8];
    uint8_t blob[255];
    int completed, failed, attached, detached, fail_rc;
    uint32_t srqn[XOOB_MAX_SRQS];
    int nsrq;
    uint32_t offered;               /* send WQEs per queue the CPC set aside */
    void *qp;
    char why[200];
};

static int f_port_srqs(void *btl, uint32_t *srqn, int max, int *n, uint32_t *layout)
{
    struct fake_btl *b = btl;

    if (layout) {
        *layout = b->layout;
    }
    if (n) {
        if (b->nsrq > max) {
            return OPAL_ERR_OUT_OF_RESOURCE;
        }
        memcpy(srqn, b->srqn, sizeof(uint32_t) * b->nsrq);
        *n = b->nsrq;
    }
    return OPAL_SUCCESS;
}

static int f_send_qp_create(void *btl, int sharers, void **qp, uint32_t *qpn, uint32_t *psn,
                            uint32_t *cap)
{
    struct fake_btl *b = btl;

    b->qp_created++;
    *qp = &b->fake_qp;
    *qpn = 0x100 + (uint32_t) b->qp_created;
    *psn = 0x4242;
    *cap = 256u * (uint32_t) sharers;
    return OPAL_SUCCESS;
}

static int f_send_qp_connect(void *btl, void *qp, uint32_t psn, const struct openib_cpc_xrc_peer *t,
                             char *why, size_t len)
{
    struct fake_btl *b = btl;

    (void) why;
    (void) len;
    CHECK(qp == &b->fake_qp);
    CHECK_EQ(psn, 0x4242);
    b->qp_connected++;
    b->connected_to = t->qpn;
    return OPAL_SUCCESS;
}

static void f_send_qp_destroy(void *btl, void *qp)
{
    struct fake_btl *b = btl;

    CHECK(qp == &b->fake_qp);
    b->qp_destroyed++;
}

static int f_tgt_qp_get(void *btl, const struct openib_cpc_xrc_peer *ini, uint32_t *tgt, char *why,
                        size_t len)
{
    struct fake_btl *b = btl;

    (void) why;
    (void) len;
    b->tgt_made++;
    b->tgt_for_qpn = ini->qpn;
    b->tgt_for_psn = ini->psn;
    *tgt = 0x500 + (uint32_t) b->tgt_made;
    return OPAL_SUCCESS;
}

/* The BTL's own cap on an endpoint's send WQEs per queue (max_send_wr). */
#define FAKE_EP_WQE_CAP 64

static int f_ep_attach(void *btl_ep, void *qp, const uint32_t *srqn, int n, uint32_t *per_q,
                       char *why, size_t len)
{
    struct fake_ep *e = btl_ep;

    (void) why;
    (void) len;
    CHECK(*per_q > 0);
    e->offered = *per_q;
    if (*per_q > FAKE_EP_WQE_CAP) {
        *per_q = FAKE_EP_WQE_CAP;
    }
    e->attached++;
    e->nsrq = n;
    memcpy(e->srqn, srqn, sizeof(uint32_t) * n);
    e->qp = qp;
    return OPAL_SUCCESS;
}

static void f_ep_detach(void *btl_ep)
{
    struct fake_ep *e = btl_ep;

    e->detached++;
}

static const struct openib_cpc_xrc_ops fake_ops = {
    .size = sizeof(struct openib_cpc_xrc_ops),
    .port_srqs = f_port_srqs,
    .send_qp_create = f_send_qp_create,
    .send_qp_connect = f_send_qp_connect,
    .send_qp_destroy = f_send_qp_destroy,
    .tgt_qp_get = f_tgt_qp_get,
    .ep_attach = f_ep_attach,
    .ep_detach = f_ep_detach,
};

static void cb_complete(void *btl_ep)
{
    ((struct fake_ep *) btl_ep)->completed++;
}

static void cb_failed(void *btl_ep, int rc, const char *why)
{
    struct fake_ep *e = btl_ep;

    e->failed++;
    e->fail_rc = rc;
    snprintf(e->why, sizeof(e->why), "%s", why ? why : "");
}

/* The responder's endpoint for the initiator (the BTL makes it on demand:
 * endpoint_for_peer); the one this test set up, when the name matches. */
static struct fake_ep *responder;

static struct openib_cpc_endpoint *cb_for_peer(void *btl, const void *peer_id, size_t len,
                                               char *why, size_t why_len)
{
    (void) btl;
    if (responder && 8 == len && 0 == memcmp(peer_id, responder->peer_id, 8)) {
        return &responder->cep;
    }
    snprintf(why, why_len, "no such process");
    return NULL;
}

static const struct openib_cpc_btl_ops fake_btl_ops = {
    .size = sizeof(struct openib_cpc_btl_ops),
    .connect_complete = cb_complete,
    .connect_failed = cb_failed,
    .endpoint_for_peer = cb_for_peer,
};

/* Verbose lines, for the refusals. */
static char log_buf[16384];

static void log_hook(const char *line)
{
    size_t n = strlen(log_buf);

    snprintf(log_buf + n, sizeof(log_buf) - n, "%s\n", line);
}

static void port_for(struct openib_cpc_port *p, struct fake_btl *b, uint8_t gid_last)
{
    openib_cpc_port_init(p);
    p->dev_name = "mlx5_9";
    p->caps = OPENIB_PORT_CAP_XRC | OPENIB_PORT_CAP_SRQ;
    p->port_num = 1;
    p->link_layer = 2;
    p->lid = 0;
    p->mtu = 1024;
    p->gid[15] = gid_last;
    p->btl = b;
    p->xrc = &fake_ops;
}

/* An endpoint of module m towards a process of the node whose blob (with
 * SRQ numbers replaced by srqn_base + q) and port are given. */
static void ep_for(struct fake_ep *e, const struct openib_cpc_module *peer_mod,
                   const struct openib_cpc_port *peer_port, uint32_t srqn_base, uint8_t vpid)
{
    struct xoob_blob b;
    size_t len = 0;
    int q;

    memset(e, 0, sizeof(*e));
    CHECK_EQ(xoob_blob_decode(peer_mod->blob, peer_mod->blob_len, &b), OPAL_SUCCESS);
    for (q = 0; q < b.nsrq; ++q) {
        b.srqn[q] = srqn_base + (uint32_t) q;
    }
    CHECK_EQ(xoob_blob_encode(&b, e->blob, sizeof(e->blob), &len), OPAL_SUCCESS);
    e->peer_port = *peer_port;
    e->peer_port.btl = NULL;
    e->local_id[7] = 1;
    e->peer_id[7] = vpid;
    openib_cpc_endpoint_init(&e->cep);
    e->cep.btl_ep = e;
    e->cep.btl_ops = &fake_btl_ops;
    e->cep.peer_desc = "test peer";
    e->cep.local_id = e->local_id;
    e->cep.peer_id = e->peer_id;
    e->cep.id_len = 8;
    e->cep.peer_blob = e->blob;
    e->cep.peer_blob_len = (uint8_t) len;
    e->cep.peer_port = &e->peer_port;
}

/* Module rm's endpoint towards the initiator (ini_mod's process, vpid
 * byte 1), as process `vpid`: the responder learns its name from it and
 * finds the initiator's token and addresses in it. */
static void responder_for(struct fake_ep *r, struct openib_cpc_module *rm,
                          const struct openib_cpc_module *ini_mod,
                          const struct openib_cpc_port *ini_port, uint8_t vpid)
{
    ep_for(r, ini_mod, ini_port, 1, 1);
    r->local_id[7] = vpid;
    r->peer_id[7] = 1;
    CHECK_EQ(rm->endpoint_init(rm, &r->cep), OPAL_SUCCESS);
    responder = r;
}

/* Progress until cond holds or 10 s pass. */
#define PROGRESS_UNTIL(cond)                                                   \
    do {                                                                       \
        time_t end_ = time(NULL) + 10;                                         \
        while (!(cond) && time(NULL) < end_) {                                 \
            openib_cpc_xoob_progress(false);                                   \
        }                                                                      \
    } while (0)

static void declines(void)
{
    struct openib_cpc_module *m = NULL;
    struct openib_cpc_port p;
    struct fake_btl b = { .nsrq = 2 };
    char why[160] = "";

    port_for(&p, &b, 1);
    p.xrc = NULL; /* a BTL without XRC objects */
    CHECK_EQ(openib_cpc_xoob_component.query(&p, 60, &m, why, sizeof(why)),
             OPAL_ERR_NOT_SUPPORTED);
    CHECK_STR_HAS(why, "no XRC receive queues were set up on mlx5_9:1");
    p.size = OPENIB_SIZE_THROUGH(struct openib_cpc_port, service_level); /* a v5 BTL */
    p.xrc = &fake_ops;
    CHECK_EQ(openib_cpc_xoob_component.query(&p, 60, &m, why, sizeof(why)),
             OPAL_ERR_NOT_SUPPORTED);
    CHECK_STR_HAS(why, "no XRC receive queues were set up on mlx5_9:1");
    port_for(&p, &b, 1);
    p.caps = OPENIB_PORT_CAP_SRQ;
    CHECK_EQ(openib_cpc_xoob_component.query(&p, 60, &m, why, sizeof(why)),
             OPAL_ERR_NOT_SUPPORTED);
    CHECK_STR_HAS(why, "device mlx5_9 does not support XRC");
    CHECK(NULL == m);
}

static void shared_send_qp(void)
{
    struct fake_btl ba = { .srqn = { 11, 12 }, .nsrq = 2, .layout = 0x77 };
    struct fake_btl bb = { .srqn = { 21, 22 }, .nsrq = 2, .layout = 0x77 };
    struct openib_cpc_port pa, pb;
    struct openib_cpc_module *ma = NULL, *mb = NULL;
    struct fake_ep e[4], r;
    char why[160] = "";
    int i;

    port_for(&pa, &ba, 1);
    port_for(&pb, &bb, 2);
    CHECK_EQ(openib_cpc_xoob_component.query(&pa, 60, &ma, why, sizeof(why)), OPAL_SUCCESS);
    CHECK_EQ(openib_cpc_xoob_component.query(&pb, 60, &mb, why, sizeof(why)), OPAL_SUCCESS);
    if (NULL == ma || NULL == mb) {
        fprintf(stderr, "query failed: %s\n", why);
        test_failures++;
        return;
    }
    /* the published blob carries the port's SRQ numbers */
    {
        struct xoob_blob b;
        CHECK_EQ(xoob_blob_decode(mb->blob, mb->blob_len, &b), OPAL_SUCCESS);
        CHECK_EQ(b.nsrq, 2);
        CHECK_EQ(b.srqn[0], 21);
        CHECK_EQ(b.srqn[1], 22);
    }
    responder_for(&r, mb, ma, &pa, 10); /* the driver's peer answers */
    /* A's endpoints to three processes of B's node, then a late fourth */
    for (i = 0; i < 4; ++i) {
        ep_for(&e[i], mb, &pb, 1000u * (uint32_t) (i + 1), (uint8_t) (10 + i));
        CHECK_EQ(ma->endpoint_init(ma, &e[i].cep), OPAL_SUCCESS);
    }
    for (i = 0; i < 3; ++i) {
        CHECK_EQ(ma->start_connect(ma, &e[i].cep), OPAL_SUCCESS);
    }
    CHECK_EQ(ba.qp_created, 1); /* one send QP for the node, not one per process */
    PROGRESS_UNTIL(e[0].completed + e[1].completed + e[2].completed == 3);
    CHECK_EQ(bb.tgt_made, 1);   /* one handshake */
    CHECK_EQ(bb.tgt_for_qpn, 0x101);
    CHECK_EQ(bb.tgt_for_psn, 0x4242);
    CHECK_EQ(ba.qp_connected, 1);
    CHECK_EQ(ba.connected_to, 0x501);
    for (i = 0; i < 3; ++i) {
        CHECK_EQ(e[i].completed, 1);
        CHECK_EQ(e[i].failed, 0);
        CHECK(e[i].qp == &ba.fake_qp);
        CHECK_EQ(e[i].nsrq, 2);
        CHECK_EQ(e[i].srqn[0], 1000u * (uint32_t) (i + 1)); /* its own peer's SRQs */
        CHECK_EQ(e[i].srqn[1], 1000u * (uint32_t) (i + 1) + 1);
        /* a fair share of the QP's 1024 WQEs (256 per sharer): 1024 / (2
         * queues x 4 endpoints) = 128 per queue; the BTL took its cap */
        CHECK_EQ(e[i].offered, 128);
    }
    /* the late one: connected synchronously, no exchange */
    CHECK_EQ(ma->start_connect(ma, &e[3].cep), OPAL_SUCCESS);
    CHECK_EQ(e[3].completed, 1);
    CHECK_EQ(e[3].srqn[0], 4000);
    CHECK_EQ(ba.qp_created, 1);
    CHECK_EQ(bb.tgt_made, 1);
    /* teardown: the QP goes with the last endpoint, once */
    for (i = 0; i < 4; ++i) {
        CHECK_EQ(ma->endpoint_finalize(ma, &e[i].cep), OPAL_SUCCESS);
        CHECK_EQ(e[i].detached, 1);
        CHECK_EQ(ba.qp_destroyed, i == 3 ? 1 : 0);
    }
    mb->endpoint_finalize(mb, &r.cep);
    responder = NULL;
    ma->finalize(ma);
    mb->finalize(mb);
}

static void layout_mismatch(void)
{
    struct fake_btl ba = { .srqn = { 11, 12 }, .nsrq = 2, .layout = 0x77 };
    struct fake_btl bb = { .srqn = { 21, 22 }, .nsrq = 2, .layout = 0x78 };
    struct openib_cpc_port pa, pb;
    struct openib_cpc_module *ma = NULL, *mb = NULL;
    struct fake_ep e[2], r;
    char why[160] = "";
    int i;

    port_for(&pa, &ba, 3);
    port_for(&pb, &bb, 4);
    CHECK_EQ(openib_cpc_xoob_component.query(&pa, 60, &ma, why, sizeof(why)), OPAL_SUCCESS);
    CHECK_EQ(openib_cpc_xoob_component.query(&pb, 60, &mb, why, sizeof(why)), OPAL_SUCCESS);
    if (NULL == ma || NULL == mb) {
        test_failures++;
        return;
    }
    responder_for(&r, mb, ma, &pa, 20);
    for (i = 0; i < 2; ++i) {
        ep_for(&e[i], mb, &pb, 100, (uint8_t) (20 + i));
        CHECK_EQ(ma->endpoint_init(ma, &e[i].cep), OPAL_SUCCESS);
        CHECK_EQ(ma->start_connect(ma, &e[i].cep), OPAL_SUCCESS);
    }
    PROGRESS_UNTIL(e[0].failed + e[1].failed == 2);
    CHECK_EQ(bb.tgt_made, 0);
    for (i = 0; i < 2; ++i) {
        CHECK_EQ(e[i].failed, 1);
        CHECK_EQ(e[i].completed, 0);
        CHECK_EQ(e[i].fail_rc, OPAL_ERR_BAD_PARAM);
        CHECK_STR_HAS(e[i].why, "btl_openib_receive_queues differs between the two processes");
    }
    /* sticky: starting again fails at once */
    CHECK(OPAL_SUCCESS != ma->start_connect(ma, &e[0].cep));
    CHECK_EQ(ba.qp_connected, 0);
    for (i = 0; i < 2; ++i) {
        ma->endpoint_finalize(ma, &e[i].cep);
    }
    CHECK_EQ(ba.qp_destroyed, 1); /* the QP made for the failed attempt too */
    mb->endpoint_finalize(mb, &r.cep);
    responder = NULL;
    ma->finalize(ma);
    mb->finalize(mb);
}

/* ---- a hostile client on the responder's side channel ---- */

static int raw_connect(uint32_t addr, uint16_t port)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = addr,
                              .sin_port = htons(port) };
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    if (fd >= 0 && 0 != connect(fd, (struct sockaddr *) &sa, sizeof(sa))) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* Send one frame on a new session and progress until the responder
 * answers or closes: 1 and the answer in ans, 0 when closed unanswered,
 * -1 on neither within 10 s. */
static int exchange(uint32_t addr, uint16_t port, const uint8_t *frame, uint8_t *ans)
{
    time_t end = time(NULL) + 10;
    size_t got = 0;
    int fd = raw_connect(addr, port), res = -1;

    if (fd < 0 || OOB_MSG_SIZE != write(fd, frame, OOB_MSG_SIZE)) {
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    while (time(NULL) < end) {
        ssize_t n;

        openib_cpc_xoob_progress(false);
        n = recv(fd, ans + got, OOB_MSG_SIZE - got, MSG_DONTWAIT);
        if (n > 0) {
            got += (size_t) n;
            if (OOB_MSG_SIZE == got) {
                res = 1;
                break;
            }
        } else if (0 == n) {
            res = 0;
            break;
        }
    }
    close(fd);
    return res;
}

/* A REQ from vpid byte 1 to vpid byte `to`, sealed with key. */
static void forge(uint8_t *buf, uint8_t to, uint32_t send_qpn, uint32_t layout,
                  const uint8_t *key, uint8_t *nonce)
{
    struct xoob_msg m = { .env.type = XOOB_REQ, .qpn = send_qpn, .psn = 7, .mtu = 1024,
                          .rq_layout = layout };

    m.env.src[7] = 1;
    m.env.dst[7] = to;
    CHECK_EQ(openib_auth_nonce(m.env.nonce), OPAL_SUCCESS);
    if (nonce) {
        memcpy(nonce, m.env.nonce, OPENIB_AUTH_NONCE_LEN);
    }
    CHECK_EQ(xoob_msg_encode(&m, buf, OOB_MSG_SIZE, key), OPAL_SUCCESS);
}

/* An answer as the initiator ini checks one from self (xoob's driver). */
static enum openib_refusal check_answer(const uint8_t *ans, const uint8_t *ini,
                                        const uint8_t *self, const uint8_t *token,
                                        const uint8_t *nonce, struct xoob_msg *out)
{
    return oob_check_answer_frame(xoob_msg_view(ans, OOB_MSG_SIZE, XOOB_REP, XOOB_REJ, out), ini,
                                  self, token, nonce);
}

static void strangers(void)
{
    struct fake_btl ba = { .srqn = { 11, 12 }, .nsrq = 2, .layout = 0x77 };
    struct fake_btl bb = { .srqn = { 21, 22 }, .nsrq = 2, .layout = 0x77 };
    const uint8_t *token = openib_auth_local_token(); /* one process: every token */
    struct openib_cpc_port pa, pb;
    struct openib_cpc_module *ma = NULL, *mb = NULL;
    uint8_t req[OOB_MSG_SIZE], ans[OOB_MSG_SIZE], nonce[OPENIB_AUTH_NONCE_LEN];
    uint8_t wrong_key[OPENIB_AUTH_TOKEN_LEN];
    uint8_t self[XOOB_ID_LEN] = { 0 }, ini[XOOB_ID_LEN] = { 0 };
    struct xoob_msg out;
    struct xoob_blob b;
    struct fake_ep r;
    char why[160] = "", expect[160];
    uint32_t q;

    port_for(&pa, &ba, 11);
    port_for(&pb, &bb, 12);
    CHECK_EQ(openib_cpc_xoob_component.query(&pa, 60, &ma, why, sizeof(why)), OPAL_SUCCESS);
    CHECK_EQ(openib_cpc_xoob_component.query(&pb, 60, &mb, why, sizeof(why)), OPAL_SUCCESS);
    if (NULL == ma || NULL == mb || NULL == token) {
        test_failures++;
        return;
    }
    CHECK_EQ(xoob_blob_decode(mb->blob, mb->blob_len, &b), OPAL_SUCCESS);
    responder_for(&r, mb, ma, &pa, 10);
    self[7] = 10;
    ini[7] = 1;
    log_buf[0] = 0;
    openib_connect_set_log_hook(log_hook);
    openib_connect_set_verbose(-1, 1);

    /* garbage, a wrong key, another process's request: no answer, nothing made */
    memset(req, 0x5a, sizeof(req));
    CHECK_EQ(exchange(b.addrs[0], b.port, req, ans), 0);
    memcpy(wrong_key, token, sizeof(wrong_key));
    wrong_key[0] ^= 1;
    forge(req, 10, 0x900, 0x77, wrong_key, NULL);
    CHECK_EQ(exchange(b.addrs[0], b.port, req, ans), 0);
    forge(req, 11, 0x900, 0x77, token, NULL);
    CHECK_EQ(exchange(b.addrs[0], b.port, req, ans), 0);
    CHECK_EQ(bb.tgt_made, 0);
    /* a member's request: answered, sealed with its token, echoing */
    forge(req, 10, 0x900, 0x77, token, nonce);
    CHECK_EQ(exchange(b.addrs[0], b.port, req, ans), 1);
    CHECK_EQ(check_answer(ans, ini, self, token, nonce, &out), REFUSAL_OK);
    CHECK_EQ(out.env.type, XOOB_REP);
    CHECK_EQ(bb.tgt_made, 1);
    /* the same bytes again: a replay, no answer, nothing made */
    CHECK_EQ(exchange(b.addrs[0], b.port, req, ans), 0);
    CHECK_EQ(bb.tgt_made, 1);
    /* the cap: a few send QPs per process, then REJ */
    for (q = 1; q < 4; ++q) {
        forge(req, 10, 0x900 + q, 0x77, token, nonce);
        CHECK_EQ(exchange(b.addrs[0], b.port, req, ans), 1);
        CHECK_EQ(check_answer(ans, ini, self, token, nonce, &out), REFUSAL_OK);
        CHECK_EQ(out.env.type, XOOB_REP);
    }
    CHECK_EQ(bb.tgt_made, 4);
    forge(req, 10, 0x9ff, 0x77, token, nonce);
    CHECK_EQ(exchange(b.addrs[0], b.port, req, ans), 1);
    CHECK_EQ(check_answer(ans, ini, self, token, nonce, &out), REFUSAL_OK);
    CHECK_EQ(out.env.type, XOOB_REJ);
    CHECK_EQ(bb.tgt_made, 4);
    /* a repeated request for a send QP it has: the same target QP, no new one */
    forge(req, 10, 0x901, 0x77, token, nonce);
    CHECK_EQ(exchange(b.addrs[0], b.port, req, ans), 1);
    CHECK_EQ(check_answer(ans, ini, self, token, nonce, &out), REFUSAL_OK);
    CHECK_EQ(out.env.type, XOOB_REP);
    /* a member's wrong queue layout: REJ with the parameter named, nothing made */
    forge(req, 10, 0x901, 0x78, token, nonce);
    CHECK_EQ(exchange(b.addrs[0], b.port, req, ans), 1);
    CHECK_EQ(check_answer(ans, ini, self, token, nonce, &out), REFUSAL_OK);
    CHECK_EQ(out.env.type, XOOB_REJ);
    CHECK_STR_HAS(out.why, "btl_openib_receive_queues");

    /* each refusal in the log: "refused", the source address, the reason */
    {
        char addr[INET_ADDRSTRLEN];
        const char *reasons[] = { "malformed", "bad-mac", "wrong-dst", "replay", "cap" };
        size_t i;

        inet_ntop(AF_INET, &b.addrs[0], addr, sizeof(addr));
        for (i = 0; i < sizeof(reasons) / sizeof(reasons[0]); ++i) {
            snprintf(expect, sizeof(expect), "openib: xoob: refused %s from %s: %s",
                     i ? "request" : "frame", addr, reasons[i]);
            CHECK_STR_HAS(log_buf, expect);
        }
    }
    openib_connect_set_log_hook(NULL);
    openib_connect_set_verbose(-1, 0);
    mb->endpoint_finalize(mb, &r.cep);
    responder = NULL;
    ma->finalize(ma);
    mb->finalize(mb);
}

static void pause_ms(long ms)
{
    struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&t, NULL);
}

/* Progress (this process is "in MPI") for ms milliseconds. */
static void progress_for(long ms)
{
    struct timespec t0, t;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        openib_cpc_xoob_progress(false);
        pause_ms(1);
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000L + (t.tv_nsec - t0.tv_nsec) / 1000000L < ms);
}

/* The responder, in a child process: publishes its blob, then computes
 * (no progress) until told to go on, answers, and waits to be told to
 * finish. Exits 0 if it made exactly one target QP. */
static void busy_child(int blob_fd, int go_fd)
{
    struct fake_btl ba = { .nsrq = 2 };
    struct fake_btl bb = { .srqn = { 31, 32 }, .nsrq = 2, .layout = 0x77 };
    struct openib_cpc_port pa, pb;
    struct openib_cpc_module *mb = NULL, ini;
    struct fake_ep r;
    char why[160] = "", c;
    time_t end;

    port_for(&pb, &bb, 6);
    if (OPAL_SUCCESS != openib_cpc_xoob_component.query(&pb, 60, &mb, why, sizeof(why))) {
        _exit(2);
    }
    /* the blobs go both ways, as through the modex */
    openib_cpc_module_init(&ini);
    port_for(&pa, &ba, 5);
    if (write(blob_fd, &mb->blob_len, 1) != 1 ||
        write(blob_fd, mb->blob, mb->blob_len) != (ssize_t) mb->blob_len ||
        read(go_fd, &ini.blob_len, 1) != 1 ||
        read(go_fd, ini.blob, ini.blob_len) != (ssize_t) ini.blob_len) {
        _exit(3);
    }
    responder_for(&r, mb, &ini, &pa, 30);
    if (read(go_fd, &c, 1) != 1) { /* busy: not in MPI, no progress */
        _exit(3);
    }
    end = time(NULL) + 10;
    while (0 == bb.tgt_made && time(NULL) < end) {
        openib_cpc_xoob_progress(false);
    }
    if (read(go_fd, &c, 1) != 1) { /* the driver has the answer */
        _exit(4);
    }
    mb->finalize(mb);
    _exit(1 == bb.tgt_made ? 0 : 5);
}

static void busy_responder(void)
{
    struct fake_btl ba = { .srqn = { 11, 12 }, .nsrq = 2, .layout = 0x77 };
    struct fake_btl bb = { .srqn = { 31, 32 }, .nsrq = 2, .layout = 0x77 };
    struct openib_cpc_port pa, pb;
    struct openib_cpc_module *ma = NULL, peer;
    struct fake_ep e;
    char why[160] = "";
    int to_parent[2], go[2], status = -1;
    pid_t pid;

    CHECK(0 == pipe(to_parent) && 0 == pipe(go));
    pid = fork();
    if (0 == pid) {
        close(to_parent[0]);
        close(go[1]);
        busy_child(to_parent[1], go[0]);
    }
    close(to_parent[1]);
    close(go[0]);
    openib_cpc_module_init(&peer);
    CHECK(read(to_parent[0], &peer.blob_len, 1) == 1 &&
          read(to_parent[0], peer.blob, peer.blob_len) == (ssize_t) peer.blob_len);
    port_for(&pb, &bb, 6); /* the child's port, as its modex would say */
    port_for(&pa, &ba, 5);
    CHECK_EQ(openib_cpc_xoob_component.query(&pa, 60, &ma, why, sizeof(why)), OPAL_SUCCESS);
    if (NULL == ma) {
        test_failures++;
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return;
    }
    CHECK(1 == write(go[1], &ma->blob_len, 1) &&
          (ssize_t) ma->blob_len == write(go[1], ma->blob, ma->blob_len));
    ep_for(&e, &peer, &pb, 700, 30);
    CHECK_EQ(ma->endpoint_init(ma, &e.cep), OPAL_SUCCESS);
    CHECK_EQ(ma->start_connect(ma, &e.cep), OPAL_SUCCESS);
    /* three timeouts while the responder computes: alive, so no failure */
    progress_for(3000);
    CHECK_EQ(e.failed, 0);
    CHECK_EQ(e.completed, 0);
    if (e.failed) {
        fprintf(stderr, "busy responder: %s\n", e.why);
    }
    CHECK(1 == write(go[1], "g", 1)); /* back in MPI */
    PROGRESS_UNTIL(e.completed + e.failed > 0);
    CHECK_EQ(e.completed, 1);
    CHECK_EQ(e.failed, 0);
    CHECK_EQ(ba.qp_connected, 1);
    CHECK_EQ(ba.connected_to, 0x501); /* the child's first target QP */
    CHECK_EQ(e.srqn[0], 700);
    CHECK(1 == write(go[1], "f", 1));
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status) && 0 == WEXITSTATUS(status));
    close(to_parent[0]);
    close(go[1]);
    ma->endpoint_finalize(ma, &e.cep);
    ma->finalize(ma);
}

static void gone_responder(void)
{
    struct fake_btl ba = { .srqn = { 11, 12 }, .nsrq = 2, .layout = 0x77 };
    struct fake_btl bb = { .srqn = { 21, 22 }, .nsrq = 2, .layout = 0x77 };
    struct openib_cpc_port pa, pb;
    struct openib_cpc_module *ma = NULL, *mb = NULL, peer;
    struct fake_ep e;
    char why[160] = "";

    port_for(&pa, &ba, 7);
    port_for(&pb, &bb, 8);
    CHECK_EQ(openib_cpc_xoob_component.query(&pa, 60, &ma, why, sizeof(why)), OPAL_SUCCESS);
    CHECK_EQ(openib_cpc_xoob_component.query(&pb, 60, &mb, why, sizeof(why)), OPAL_SUCCESS);
    if (NULL == ma || NULL == mb) {
        test_failures++;
        return;
    }
    peer = *mb;
    mb->finalize(mb); /* its listener closes, as when its process exits */
    ep_for(&e, &peer, &pb, 100, 40);
    CHECK_EQ(ma->endpoint_init(ma, &e.cep), OPAL_SUCCESS);
    CHECK_EQ(ma->start_connect(ma, &e.cep), OPAL_SUCCESS);
    PROGRESS_UNTIL(e.failed + e.completed > 0);
    CHECK_EQ(e.failed, 1);
    CHECK_EQ(e.completed, 0);
    CHECK_STR_HAS(e.why, "xoob: connection refused at every address the peer published: the "
                         "peer process has exited");
    ma->endpoint_finalize(ma, &e.cep);
    ma->finalize(ma);
}

static void hung_responder(void)
{
    struct fake_btl ba = { .srqn = { 11, 12 }, .nsrq = 2, .layout = 0x77 };
    struct openib_cpc_port pa, pb;
    struct openib_cpc_module *ma = NULL, peer;
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(sa);
    struct xoob_blob b;
    struct fake_ep e;
    char why[160] = "";
    size_t blen = 0;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    /* listens, never accepts nor reads: a stopped or hung process */
    CHECK(0 == bind(fd, (struct sockaddr *) &sa, sizeof(sa)));
    CHECK(0 == listen(fd, 4));
    CHECK(0 == getsockname(fd, (struct sockaddr *) &sa, &len));
    memset(&b, 0, sizeof(b));
    b.naddr = 1;
    b.addrs[0] = sa.sin_addr.s_addr;
    b.port = ntohs(sa.sin_port);
    b.node_id = 42;
    b.nsrq = 1;
    b.srqn[0] = 5;
    openib_cpc_module_init(&peer);
    CHECK_EQ(xoob_blob_encode(&b, peer.blob, sizeof(peer.blob), &blen), OPAL_SUCCESS);
    peer.blob_len = (uint8_t) blen;
    port_for(&pa, &ba, 9);
    port_for(&pb, &ba, 10);
    CHECK_EQ(openib_cpc_xoob_component.query(&pa, 60, &ma, why, sizeof(why)), OPAL_SUCCESS);
    if (NULL == ma) {
        test_failures++;
        close(fd);
        return;
    }
    ep_for(&e, &peer, &pb, 100, 50);
    CHECK_EQ(ma->endpoint_init(ma, &e.cep), OPAL_SUCCESS);
    CHECK_EQ(ma->start_connect(ma, &e.cep), OPAL_SUCCESS);
    PROGRESS_UNTIL(e.failed + e.completed > 0);
    CHECK_EQ(e.failed, 1);
    CHECK_EQ(e.fail_rc, OPAL_ERR_TIMEOUT);
    CHECK_STR_HAS(e.why, "xoob: no answer at all within 1 s (btl_openib_connect_xoob_timeout)");
    ma->endpoint_finalize(ma, &e.cep);
    ma->finalize(ma);
    close(fd);
}

int main(int argc, char **argv)
{
    /* first: the side channel's thread runs on Open MPI's event layer */
    if (OPAL_SUCCESS != test_opal_init(&argc, &argv)) {
        return 1;
    }
    declines();
    shared_send_qp();
    layout_mismatch();
    strangers();
    /* the liveness cases with a 1 s silence bound, set the way a user does */
    setenv("OMPI_MCA_btl_openib_connect_xoob_timeout", "1", 1);
    openib_cpc_xoob_component.register_params(&openib_cpc_xoob_component);
    busy_responder();
    gone_responder();
    hung_responder();
    openib_cpc_xoob_component.finalize();
    test_opal_fini();
    return test_report("test_xoob_connect");
}

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
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "connect/cpc_oob.h"
#include "connect/cpc_xoob.h"
#include "connect/cpc_xoob_wire.h"
#include "connect/openib_connect.h"
#include "tests/unit/connect/cpc_test.h"

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

static int f_send_qp_connect(void *btl, void *qp, uint32_t psn, const struct openib_xoob_peer *t,
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

static int f_tgt_qp_get(void *btl, const struct openib_xoob_peer *ini, uint32_t *tgt, char *why,
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

static int f_ep_attach(void *btl_ep, struct openib_xrc_node *node, const uint32_t *srqn, int n,
                       char *why, size_t len)
{
    struct fake_ep *e = btl_ep;
    uint32_t per_q;

    (void) why;
    (void) len;
    CHECK_EQ(openib_xrc_node_reserve(node, 64, n, &per_q), OPAL_SUCCESS);
    e->attached++;
    e->nsrq = n;
    memcpy(e->srqn, srqn, sizeof(uint32_t) * n);
    e->qp = node->qp;
    return OPAL_SUCCESS;
}

static void f_ep_detach(void *btl_ep, struct openib_xrc_node *node)
{
    struct fake_ep *e = btl_ep;

    openib_xrc_node_unreserve(node, 64, e->nsrq);
    e->detached++;
}

static const struct openib_xoob_btl_ops fake_ops = {
    .size = sizeof(struct openib_xoob_btl_ops),
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

static const struct openib_cpc_btl_ops fake_btl_ops = {
    .size = sizeof(struct openib_cpc_btl_ops),
    .connect_complete = cb_complete,
    .connect_failed = cb_failed,
};

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

/* Progress until cond holds or 10 s pass. */
#define PROGRESS_UNTIL(cond)                                                   \
    do {                                                                       \
        time_t end_ = time(NULL) + 10;                                         \
        while (!(cond) && time(NULL) < end_) {                                 \
            openib_cpc_oob_progress();                                         \
        }                                                                      \
    } while (0)

static void declines(void)
{
    struct openib_cpc_module *m = NULL;
    struct openib_cpc_port p;
    struct fake_btl b = { .nsrq = 2 };
    char why[160] = "";

    port_for(&p, &b, 1);
    openib_cpc_xoob_set_btl_ops(NULL);
    CHECK_EQ(openib_cpc_xoob_component.query(&p, 60, &m, why, sizeof(why)),
             OPAL_ERR_NOT_SUPPORTED);
    CHECK_STR_HAS(why, "no XRC receive queues were set up on mlx5_9:1");
    openib_cpc_xoob_set_btl_ops(&fake_ops);
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
    struct fake_ep e[4];
    char why[160] = "";
    int i;

    openib_cpc_xoob_set_btl_ops(&fake_ops);
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
    ma->finalize(ma);
    mb->finalize(mb);
}

static void layout_mismatch(void)
{
    struct fake_btl ba = { .srqn = { 11, 12 }, .nsrq = 2, .layout = 0x77 };
    struct fake_btl bb = { .srqn = { 21, 22 }, .nsrq = 2, .layout = 0x78 };
    struct openib_cpc_port pa, pb;
    struct openib_cpc_module *ma = NULL, *mb = NULL;
    struct fake_ep e[2];
    char why[160] = "";
    int i;

    openib_cpc_xoob_set_btl_ops(&fake_ops);
    port_for(&pa, &ba, 3);
    port_for(&pb, &bb, 4);
    CHECK_EQ(openib_cpc_xoob_component.query(&pa, 60, &ma, why, sizeof(why)), OPAL_SUCCESS);
    CHECK_EQ(openib_cpc_xoob_component.query(&pb, 60, &mb, why, sizeof(why)), OPAL_SUCCESS);
    if (NULL == ma || NULL == mb) {
        test_failures++;
        return;
    }
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
    ma->finalize(ma);
    mb->finalize(mb);
}

int main(void)
{
    declines();
    shared_send_qp();
    layout_mismatch();
    openib_cpc_xoob_component.finalize();
    return test_report("test_xoob_connect");
}

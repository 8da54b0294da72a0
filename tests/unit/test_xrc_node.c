/*
 * test_xrc_node.c - the XRC node table: endpoints to one remote node share
 * one entry (and its send QP), the first to join drives the connection and
 * the others wait for it, success and failure reach every waiter once in
 * join order, a failure is sticky, the driver leaving fails the others,
 * the last reference hands the QP back for destruction, and the shared
 * QP's send WQEs are never handed out twice.
 */
#include "opal_config.h"

#include <string.h>

#include "opal/constants.h"

#include "connect/cpc_xoob_node.h"
#include "tests/unit/unit.h"

struct waiter {
    int calls, rc, order;
    char why[128];
};

static int seq;

static void on_done(void *w, int rc, const char *why, void *arg)
{
    struct waiter *x = w;

    (void) arg;
    x->calls++;
    x->rc = rc;
    x->order = ++seq;
    snprintf(x->why, sizeof(x->why), "%s", why ? why : "");
}

static struct openib_xrc_node_key key_for(uint64_t node, uint8_t gid_last)
{
    struct openib_xrc_node_key k;

    memset(&k, 0, sizeof(k));
    k.node_id = node;
    k.gid[15] = gid_last;
    k.lid = 3;
    k.port_num = 1;
    return k;
}

static void sharing_and_refcount(void)
{
    struct openib_xrc_node_table t;
    struct openib_xrc_node_key ka = key_for(0x1111, 1), kb = key_for(0x2222, 2);
    struct openib_xrc_node_key ka_other_port = key_for(0x1111, 1);
    struct openib_xrc_node *a1, *a2, *b, *a3;
    int fake_qp;

    ka_other_port.port_num = 2;
    openib_xrc_node_table_init(&t);
    a1 = openib_xrc_node_get(&t, &ka);
    a2 = openib_xrc_node_get(&t, &ka);
    b = openib_xrc_node_get(&t, &kb);
    a3 = openib_xrc_node_get(&t, &ka_other_port);
    CHECK(a1 && a2 && b && a3);
    CHECK(a1 == a2);                 /* same node, same port: shared */
    CHECK(a1 != b);                  /* another node */
    CHECK(a1 != a3);                 /* same node, another port of it */
    CHECK(a1->refcount == 2);
    CHECK(t.count == 3);
    CHECK(a1->state == OPENIB_XRC_NODE_IDLE);

    a1->qp = &fake_qp;
    CHECK(NULL == openib_xrc_node_put(&t, a2));       /* one user left */
    CHECK(t.count == 3);
    CHECK(&fake_qp == openib_xrc_node_put(&t, a1));   /* last: QP handed back */
    CHECK(t.count == 2);
    CHECK(NULL == openib_xrc_node_put(&t, b));        /* never had a QP */
    /* a fresh get after the last put starts over */
    a1 = openib_xrc_node_get(&t, &ka);
    CHECK(a1 && a1->refcount == 1 && a1->state == OPENIB_XRC_NODE_IDLE && NULL == a1->qp);
    CHECK(openib_xrc_node_table_fini(&t) == 2);       /* a1 and a3 still referenced */
    CHECK(t.count == 0 && NULL == t.head);
}

static void waiters_succeed(void)
{
    struct openib_xrc_node_table t;
    struct openib_xrc_node_key k = key_for(0x3333, 3);
    struct waiter w1 = { 0 }, w2 = { 0 }, w3 = { 0 }, w4 = { 0 };
    struct openib_xrc_node *n;

    openib_xrc_node_table_init(&t);
    n = openib_xrc_node_get(&t, &k);
    CHECK(OPENIB_XRC_JOIN_DRIVE == openib_xrc_node_join(n, &w1));
    CHECK(n->state == OPENIB_XRC_NODE_CONNECTING);
    CHECK(OPENIB_XRC_JOIN_WAIT == openib_xrc_node_join(n, &w2));
    CHECK(OPENIB_XRC_JOIN_WAIT == openib_xrc_node_join(n, &w3));
    CHECK(w1.calls == 0 && w2.calls == 0); /* nobody hears anything before the end */
    seq = 0;
    n->tgt_qpn = 77;
    openib_xrc_node_complete(n, OPAL_SUCCESS, NULL, on_done, NULL);
    CHECK(n->state == OPENIB_XRC_NODE_CONNECTED);
    CHECK(w1.calls == 1 && w2.calls == 1 && w3.calls == 1);
    CHECK(w1.rc == OPAL_SUCCESS && w2.rc == OPAL_SUCCESS && w3.rc == OPAL_SUCCESS);
    CHECK(w1.order == 1 && w2.order == 2 && w3.order == 3);
    CHECK(n->nwaiters == 0);
    /* later endpoints need no handshake at all */
    CHECK(OPENIB_XRC_JOIN_READY == openib_xrc_node_join(n, &w4));
    CHECK(w4.calls == 0);
    openib_xrc_node_table_fini(&t);
}

static void failure_fans_out(void)
{
    struct openib_xrc_node_table t;
    struct openib_xrc_node_key k = key_for(0x4444, 4);
    struct waiter w1 = { 0 }, w2 = { 0 }, w3 = { 0 }, late = { 0 };
    struct openib_xrc_node *n;

    openib_xrc_node_table_init(&t);
    n = openib_xrc_node_get(&t, &k);
    CHECK(OPENIB_XRC_JOIN_DRIVE == openib_xrc_node_join(n, &w1));
    CHECK(OPENIB_XRC_JOIN_WAIT == openib_xrc_node_join(n, &w2));
    CHECK(OPENIB_XRC_JOIN_WAIT == openib_xrc_node_join(n, &w3));
    /* w2 goes away while waiting: it is not called back */
    CHECK(!openib_xrc_node_leave(n, &w2));
    openib_xrc_node_complete(n, OPAL_ERR_TIMEOUT, "no answer within 30 s", on_done, NULL);
    CHECK(n->state == OPENIB_XRC_NODE_FAILED);
    CHECK(w1.calls == 1 && w1.rc == OPAL_ERR_TIMEOUT);
    CHECK(w3.calls == 1 && w3.rc == OPAL_ERR_TIMEOUT);
    CHECK_STR_CONTAINS(w3.why, "no answer within 30 s");
    CHECK(w2.calls == 0);
    /* sticky: a later endpoint fails at once with the same code */
    CHECK(OPAL_ERR_TIMEOUT == openib_xrc_node_join(n, &late));
    CHECK_STR_CONTAINS(n->why, "no answer");
    openib_xrc_node_table_fini(&t);
}

static void driver_leaves(void)
{
    struct openib_xrc_node_table t;
    struct openib_xrc_node_key k = key_for(0x5555, 5);
    struct waiter drv = { 0 }, w = { 0 };
    struct openib_xrc_node *n;

    openib_xrc_node_table_init(&t);
    n = openib_xrc_node_get(&t, &k);
    CHECK(OPENIB_XRC_JOIN_DRIVE == openib_xrc_node_join(n, &drv));
    CHECK(OPENIB_XRC_JOIN_WAIT == openib_xrc_node_join(n, &w));
    CHECK(openib_xrc_node_leave(n, &drv)); /* the caller must fail the node now */
    openib_xrc_node_complete(n, OPAL_ERR_UNREACH, "driver closed", on_done, NULL);
    CHECK(drv.calls == 0);
    CHECK(w.calls == 1 && w.rc == OPAL_ERR_UNREACH);
    CHECK_STR_CONTAINS(w.why, "driver closed");
    openib_xrc_node_table_fini(&t);
}

static void many_waiters_grow(void)
{
    struct openib_xrc_node_table t;
    struct openib_xrc_node_key k = key_for(0x6666, 6);
    struct waiter w[50];
    struct openib_xrc_node *n;
    int i, ok = 1;

    memset(w, 0, sizeof(w));
    openib_xrc_node_table_init(&t);
    n = openib_xrc_node_get(&t, &k);
    CHECK(OPENIB_XRC_JOIN_DRIVE == openib_xrc_node_join(n, &w[0]));
    for (i = 1; i < 50; ++i) {
        ok &= OPENIB_XRC_JOIN_WAIT == openib_xrc_node_join(n, &w[i]);
    }
    CHECK(ok);
    seq = 0;
    openib_xrc_node_complete(n, OPAL_SUCCESS, NULL, on_done, NULL);
    for (i = 0, ok = 1; i < 50; ++i) {
        ok &= w[i].calls == 1 && w[i].order == i + 1;
    }
    CHECK(ok);
    openib_xrc_node_table_fini(&t);
}

static void wqe_budget(void)
{
    struct openib_xrc_node n;
    uint32_t g1, g2, g3, g4;

    memset(&n, 0, sizeof(n));
    n.wqe_cap = 1000;
    /* 3 queues, 256 per queue wanted: 768 of 1000 */
    CHECK(OPAL_SUCCESS == openib_xrc_node_reserve(&n, 256, 3, &g1));
    CHECK(g1 == 256 && n.wqe_used == 768);
    /* 232 left: 77 per queue, never more than what is left */
    CHECK(OPAL_SUCCESS == openib_xrc_node_reserve(&n, 256, 3, &g2));
    CHECK(g2 == 77 && n.wqe_used == 999);
    CHECK(OPAL_ERR_OUT_OF_RESOURCE == openib_xrc_node_reserve(&n, 256, 3, &g3));
    CHECK(g3 == 0 && n.wqe_used == 999);
    openib_xrc_node_unreserve(&n, g1, 3);
    CHECK(n.wqe_used == 231);
    CHECK(OPAL_SUCCESS == openib_xrc_node_reserve(&n, 256, 3, &g4));
    CHECK(g4 == 256 && n.wqe_used <= n.wqe_cap);
    CHECK(OPAL_ERR_BAD_PARAM == openib_xrc_node_reserve(&n, 1, 0, &g3));
}

int main(void)
{
    sharing_and_refcount();
    waiters_succeed();
    failure_fans_out();
    driver_leaves();
    many_waiters_grow();
    wqe_budget();
    return unit_finish("test_xrc_node");
}

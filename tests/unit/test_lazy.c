/* Lazy connection: CLOSED -> CONNECTING on the first send, queued sends drain
 * in order on completion, fail on failure, and FAILED rejects later sends. */
#include "opal_config.h"

#include "opal/constants.h"

#include "btl_openib/btl_openib_lazy.h"
#include "tests/unit/unit.h"

typedef struct item {
    opal_list_item_t super;
    int seq;
    int failed_rc;
} item_t;
OBJ_CLASS_INSTANCE(item_t, opal_list_item_t, NULL, NULL);

static int starts, start_rc, sent[64], nsent, failed;

static int t_start(void *ctx) { starts++; return start_rc; }
static int t_send(void *ctx, opal_list_item_t *it) { sent[nsent++] = ((struct item *) it)->seq; return OPAL_SUCCESS; }
static void t_fail(void *ctx, opal_list_item_t *it, int rc) { ((struct item *) it)->failed_rc = rc; failed++; }

static const struct openib_lazy_ops ops = { .start = t_start, .send = t_send, .fail = t_fail };

int main(void)
{
    struct openib_lazy_conn c;
    struct item items[10];
    int i;

    for (i = 0; i < 10; ++i) {
        OBJ_CONSTRUCT(&items[i], item_t);
        items[i].seq = i;
        items[i].failed_rc = 0;
    }

    /* first send starts the connection once; sends queue in order */
    openib_lazy_init(&c, &ops, NULL);
    CHECK(OPENIB_CONN_CLOSED == c.state);
    for (i = 0; i < 5; ++i) {
        CHECK(OPAL_SUCCESS == openib_lazy_submit(&c, &items[i].super));
    }
    CHECK(1 == starts);
    CHECK(OPENIB_CONN_CONNECTING == c.state);
    CHECK(0 == nsent);
    CHECK(OPAL_SUCCESS == openib_lazy_connected(&c));
    CHECK(OPENIB_CONN_CONNECTED == c.state);
    CHECK(5 == nsent);
    for (i = 0; i < 5; ++i) {
        CHECK(i == sent[i]);
    }
    /* once connected with nothing queued, the caller sends directly */
    CHECK(1 == openib_lazy_submit(&c, &items[5].super));
    CHECK(1 == starts);
    openib_lazy_fini(&c);

    /* failure fails every queued send, then later sends are unreachable */
    starts = 0;
    openib_lazy_init(&c, &ops, NULL);
    CHECK(OPAL_SUCCESS == openib_lazy_submit(&c, &items[6].super));
    CHECK(OPAL_SUCCESS == openib_lazy_submit(&c, &items[7].super));
    openib_lazy_failed(&c, OPAL_ERR_UNREACH, "peer went away");
    CHECK(OPENIB_CONN_FAILED == c.state);
    CHECK(2 == failed);
    CHECK(OPAL_ERR_UNREACH == items[6].failed_rc && OPAL_ERR_UNREACH == items[7].failed_rc);
    CHECK_STR_CONTAINS(c.why, "peer went away");
    CHECK(OPAL_ERR_UNREACH == openib_lazy_submit(&c, &items[8].super));
    CHECK(OPAL_ERR_UNREACH == openib_lazy_connected(&c));
    openib_lazy_fini(&c);

    /* a start that fails at once marks FAILED and fails the triggering send */
    failed = 0;
    start_rc = OPAL_ERROR;
    openib_lazy_init(&c, &ops, NULL);
    items[9].failed_rc = 0;
    CHECK(OPAL_ERR_UNREACH == openib_lazy_submit(&c, &items[9].super));
    CHECK(OPENIB_CONN_FAILED == c.state);
    CHECK(1 == failed && OPAL_ERROR == items[9].failed_rc);
    CHECK(0 == strcmp("FAILED", openib_lazy_state_name(c.state)));
    openib_lazy_fini(&c);

    /* an idle close: sends queue while CLOSING; back to CONNECTED (the
     * peer said not now) drains them in order; a reopen with nothing
     * queued stays CLOSED, with sends queued it connects again at once */
    struct item more[6];
    for (i = 0; i < 6; ++i) {
        OBJ_CONSTRUCT(&more[i], item_t);
        more[i].seq = 100 + i;
        more[i].failed_rc = 0;
    }
    starts = 0, start_rc = OPAL_SUCCESS, nsent = 0, failed = 0;
    openib_lazy_init(&c, &ops, NULL);
    CHECK(OPAL_SUCCESS == openib_lazy_start(&c));
    CHECK(OPAL_SUCCESS == openib_lazy_connected(&c));
    c.state = OPENIB_CONN_CLOSING;
    CHECK(0 == strcmp("CLOSING", openib_lazy_state_name(c.state)));
    CHECK(OPAL_SUCCESS == openib_lazy_submit(&c, &more[0].super));
    CHECK(OPAL_SUCCESS == openib_lazy_submit(&c, &more[1].super));
    CHECK(0 == nsent);
    CHECK(OPAL_SUCCESS == openib_lazy_connected(&c)); /* not now: resume */
    CHECK(2 == nsent && 100 == sent[0] && 101 == sent[1]);
    c.state = OPENIB_CONN_CLOSING;
    CHECK(OPAL_SUCCESS == openib_lazy_reopen(&c));
    CHECK(OPENIB_CONN_CLOSED == c.state && 1 == starts);
    c.state = OPENIB_CONN_CLOSING;
    CHECK(OPAL_SUCCESS == openib_lazy_submit(&c, &more[2].super));
    CHECK(OPAL_SUCCESS == openib_lazy_submit(&c, &more[3].super));
    CHECK(OPAL_SUCCESS == openib_lazy_reopen(&c));
    CHECK(OPENIB_CONN_CONNECTING == c.state && 2 == starts && 2 == nsent);
    CHECK(OPAL_SUCCESS == openib_lazy_connected(&c));
    CHECK(4 == nsent && 102 == sent[2] && 103 == sent[3]);
    /* a failure while CLOSING fails what waits */
    c.state = OPENIB_CONN_CLOSING;
    CHECK(OPAL_SUCCESS == openib_lazy_submit(&c, &more[4].super));
    openib_lazy_failed(&c, OPAL_ERR_UNREACH, "lost");
    CHECK(1 == failed && OPAL_ERR_UNREACH == more[4].failed_rc);
    CHECK(OPAL_ERR_UNREACH == openib_lazy_reopen(&c));
    openib_lazy_fini(&c);

    return unit_finish("test_lazy");
}

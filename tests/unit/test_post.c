/* common/openib_post.h: after a failed ibv_post_send, is the WR queued?
 * The providers' three ways to answer, each with a stand-in post_send:
 *  - refused before queueing (a WR that fails the provider's checks, a
 *    full queue): *bad_wr is the WR, the errno comes back and the caller
 *    may reuse the WR's fragment;
 *  - queued, then the doorbell failed (siw on a closing QP: -ENOTCONN with
 *    *bad_wr NULL, the CI failure of 2026-12-02; rxe's doorbell the same
 *    way): queued, 0, because its flush completion will come and name the
 *    fragment;
 *  - failed without touching *bad_wr: taken as not queued.
 * A WR that posted returns 0 and is passed to the provider unchanged. */
#include <errno.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "common/openib_post.h"
#include "tests/unit/unit.h"

enum mode { POSTS, REFUSES, QUEUES_THEN_FAILS, FAILS_SILENTLY };
static enum mode mode;
static struct ibv_send_wr *seen;

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
    (void) qp;
    seen = wr;
    switch (mode) {
    case POSTS:
        return 0;
    case REFUSES:
        *bad = wr;
        return ENOMEM;
    case QUEUES_THEN_FAILS:
        *bad = wr->next; /* siw: its cursor, past the queued WR */
        return ENOTCONN;
    case FAILS_SILENTLY:
    default:
        return EINVAL;
    }
}

int main(void)
{
    struct ibv_context ctx;
    struct ibv_qp qp;
    struct ibv_send_wr wr;

    memset(&ctx, 0, sizeof(ctx));
    memset(&qp, 0, sizeof(qp));
    memset(&wr, 0, sizeof(wr));
    ctx.ops.post_send = fake_post_send;
    qp.context = &ctx;

    mode = POSTS;
    CHECK(0 == openib_post_send_one(&qp, &wr));
    CHECK(seen == &wr);

    mode = REFUSES;
    CHECK(ENOMEM == openib_post_send_one(&qp, &wr));

    mode = QUEUES_THEN_FAILS;
    CHECK(0 == openib_post_send_one(&qp, &wr));

    mode = FAILS_SILENTLY;
    CHECK(EINVAL == openib_post_send_one(&qp, &wr));

    return unit_finish("test_post");
}

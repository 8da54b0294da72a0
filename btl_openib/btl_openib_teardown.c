/*
 * btl_openib_teardown.c - closing an endpoint that may have work in flight.
 *
 * Every work request posted on an endpoint's QPs ends as a completion in
 * the port's CQ, successful or flushed, and that completion names the
 * endpoint or one of its fragments. Destroying the QPs and freeing the
 * endpoint before those completions are polled hands progress freed
 * memory. So, before the QPs go:
 *  0. Settle (openib_endpoints_settle, for the batches of del_procs and
 *     finalize). A connection still being made is finished first: its
 *     peer may take it for made already (see settle_waits).
 *  1. Goodbye. On each QP of a connected endpoint, a signaled RDMA write
 *     sets the peer's mailbox word OPENIB_MAILBOX_CLOSED(q) (on iWARP
 *     followed by a read of that word, see say_goodbye). Its completion
 *     means everything posted before it on that QP has completed too (RC
 *     completes in order). The peer, which may still have a credit write to
 *     us in flight, reads the word when that write fails and takes it as
 *     the end it is, not as a lost connection.
 *  2. Flush. Every QP goes to ERR, and a send marker is posted behind what
 *     is left on it; the device completes it last.
 *  3. Progress polls the CQs until every goodbye and marker is in.
 * Endpoints are closed in batches (all of del_procs' or of a module), so
 * the waits overlap; each is bounded by the transport's own retry budget
 * (a live peer's NIC acknowledges in microseconds; a dead one is given up
 * on after ib_timeout x retries), so teardown never hangs.
 */
#include "opal_config.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "opal/constants.h"

#include "common/openib_clock.h"
#include "common/openib_post.h"
#include "btl_openib/btl_openib_credits.h"
#include "btl_openib/btl_openib_frag.h"
#include "btl_openib/btl_openib_send.h"
#include "btl_openib/btl_openib_teardown.h"
#include "connect/openib_connect.h"
#include "mca/btl_openib_params.h"

long openib_transport_giveup_ms(void)
{
    double per_try_ms = 4.096e-3 * (double) (1ull << (openib_params.ib_timeout & 31));

    return (long) (per_try_ms * (openib_params.ib_retry_count + 1)) + 1000;
}

/* The transport's give-up time, capped at 10 s: what a huge ib_timeout
 * would allow is not worth waiting for while closing. */
static long wait_budget_ms(void)
{
    long ms = openib_transport_giveup_ms();

    return ms > 10000 ? 10000 : ms;
}


/* A marker's completion needs room in the CQ like any send's: it takes one
 * from the port's send budget (btl_openib_cq.h), waiting for completions
 * to give some back when closing many endpoints at once has spent it. */
static bool take_budget(mca_btl_openib_module_t *m)
{
    long deadline = openib_now_ms() + wait_budget_ms();

    while (m->send_budget <= 0) {
        if (0 == openib_progress_cq(m) && openib_now_ms() > deadline) {
            OPENIB_VERBOSE(1, "%s:%d: no send completions for %ld ms while closing; the "
                           "remaining endpoints close without markers", m->dev->name,
                           m->port_num, wait_budget_ms());
            return false;
        }
    }
    m->send_budget--;
    return true;
}

static openib_frag_t *marker(mca_btl_openib_endpoint_t *ep, int q)
{
    openib_frag_t *f;

    if (!take_budget(ep->module)) {
        return NULL;
    }
    f = openib_frag_alloc_rdma(ep->module);
    if (NULL == f) {
        ep->module->send_budget++;
        return NULL;
    }
    f->kind = OPENIB_FRAG_MARKER;
    f->ep = ep;
    f->qp = (uint8_t) q;
    ep->markers++;
    opal_list_append(&ep->marker_frags, &f->des.super.super);
    return f;
}

/* A marker stays its endpoint's after its completion: a device may
 * complete a work request a second time while the QP is being flushed
 * (siw does, now and then, with the goodbye's RDMA read: a success, then
 * a flush; t-stress-siw-teardown), and that completion must still
 * find a marker, not a fragment that went back to its free list and was
 * taken for something else. */
void openib_teardown_marker_done(openib_frag_t *f, int status)
{
    mca_btl_openib_endpoint_t *ep = f->ep;

    if (OPAL_UNLIKELY(OPENIB_FRAG_MARKER_DONE == f->kind)) {
        OPENIB_VERBOSE(10, "%s: a teardown marker (opcode %d) on queue %d completed a second time "
                       "(status %s); ignored", ep->desc, (int) f->swr.opcode, (int) f->qp,
                       status >= 0 ? ibv_wc_status_str((enum ibv_wc_status) status) : "not queued");
        return;
    }
    f->kind = OPENIB_FRAG_MARKER_DONE;
    ep->module->send_budget++;
    ep->markers--;
}

void openib_teardown_markers_release(mca_btl_openib_endpoint_t *ep)
{
    opal_list_item_t *it;

    while (NULL != (it = opal_list_remove_first(&ep->marker_frags))) {
        openib_frag_t *f = (openib_frag_t *) it;

        if (OPENIB_FRAG_MARKER == f->kind) {
            /* never completed (the wait gave up); its QP is gone, and so
             * is the CQ entry its completion would have taken */
            openib_teardown_marker_done(f, IBV_WC_WR_FLUSH_ERR);
        }
        f->kind = OPENIB_FRAG_RDMA; /* its free list's kind */
        openib_frag_return(f);
    }
}

static bool qp_is_iwarp(const struct ibv_qp *qp)
{
    return IBV_TRANSPORT_IWARP == qp->context->device->transport_type;
}

/* One signaled goodbye work request on queue q, with its own marker. */
static void post_goodbye_wr(mca_btl_openib_endpoint_t *ep, int q, enum ibv_wr_opcode op,
                            struct ibv_sge sge, int flags)
{
    openib_frag_t *f = marker(ep, q);

    if (NULL == f) {
        return;
    }
    f->sge[0] = sge;
    f->swr = (struct ibv_send_wr) {
        .wr_id = (uintptr_t) f,
        .sg_list = f->sge,
        .num_sge = 1,
        .opcode = op,
        .send_flags = IBV_SEND_SIGNALED | flags,
        .wr.rdma = {
            .remote_addr = ep->peer_mailbox_addr + OPENIB_MAILBOX_CLOSED(q) * sizeof(uint32_t),
            .rkey = ep->peer_mailbox_rkey,
        },
    };
    if (openib_post_send_one(ep->qps[q].qp, &f->swr)) {
        openib_teardown_marker_done(f, OPENIB_MARKER_NOT_QUEUED); /* no completion will come */
    }
}

/* Step 1 on queue q: a write of 1 into the peer's closed word.
 * On iWARP a write's completion only says the write was handed to the
 * transport (siw: put in the TCP socket), not that the peer placed it, so
 * the reset of the flush could overtake it and the peer would see a lost
 * connection. There a read of the same word follows: its response comes
 * after the peer has placed the writes before it, so its completion is the
 * goodbye's. The read lands in our credit_src word of the same index,
 * which no credit write uses. */
static void say_goodbye(mca_btl_openib_endpoint_t *ep, int q)
{
    static const uint32_t one = 1;
    bool iwarp = qp_is_iwarp(ep->qps[q].qp);
    struct ibv_sge word = {
        .addr = (uintptr_t) &ep->credit_src[OPENIB_MAILBOX_CLOSED(q)],
        .length = sizeof(uint32_t),
        .lkey = ep->mailbox_lkey,
    };

    /* the WQE held back for credit writes is free for this: no more credits */
    if (ep->qps[q].sd_wqe <= 0) {
        return; /* no WQE: skip the courtesy, keep the flush */
    }
    if (ep->module->max_inline >= sizeof(one)) {
        post_goodbye_wr(ep, q, IBV_WR_RDMA_WRITE,
                        (struct ibv_sge) { .addr = (uintptr_t) &one, .length = sizeof(one) },
                        IBV_SEND_INLINE);
    } else {
        /* No inline room (btl_openib_max_inline_data 0): the 1 goes from
         * the registered word the iWARP read lands in. The read can only
         * bring back the 1 this write put there, and the word is left alone
         * until the endpoint's QPs are gone; without the goodbye an iWARP
         * peer would take the flush's reset for a lost connection. */
        ep->credit_src[OPENIB_MAILBOX_CLOSED(q)] = 1;
        post_goodbye_wr(ep, q, IBV_WR_RDMA_WRITE, word, 0);
    }
    if (iwarp && ep->qps[q].sd_wqe > 1) {
        post_goodbye_wr(ep, q, IBV_WR_RDMA_READ, word, 0);
    }
}

/* Step 2 on queue q: error state, then a send marker behind everything.
 * (Receive queues are not waited for: not every device flushes them, and a
 * receive completion that comes after the endpoint is gone finds no
 * endpoint for its QP number and only returns its buffer.)
 * iWARP devices (siw) never complete a WR posted after the QP went to ERR
 * (a user-space send queue is only started in RTS): there the marker goes
 * in first, as a zero-length RDMA write into the peer's mailbox (no byte
 * changes, no receive is spent), and the ERR transition flushes it if it
 * has not completed by then. A QP the iWARP CM already put in error (the
 * peer closed its side first) starts nothing new either: it gets no
 * marker, and its flushed work, completed when it entered the error
 * state, is polled from the CQ here. */
static void flush(mca_btl_openib_endpoint_t *ep, int q)
{
    struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
    struct ibv_qp *qp = ep->qps[q].qp;
    bool iwarp = qp_is_iwarp(qp);
    openib_frag_t *f;

    if (iwarp) {
        struct ibv_qp_attr cur;
        struct ibv_qp_init_attr init;

        if (0 == ibv_query_qp(qp, &cur, IBV_QP_STATE, &init) && IBV_QPS_RTS != cur.qp_state) {
            (void) ibv_modify_qp(qp, &a, IBV_QP_STATE);
            openib_progress_cq_drain(ep->module);
            return;
        }
    }
    if (iwarp && ep->peer_mailbox_rkey && NULL != (f = marker(ep, q))) {
        f->swr = (struct ibv_send_wr) {
            .wr_id = (uintptr_t) f,
            .opcode = IBV_WR_RDMA_WRITE,
            .send_flags = IBV_SEND_SIGNALED,
            .wr.rdma = {
                .remote_addr = ep->peer_mailbox_addr + OPENIB_MAILBOX_CLOSED(q) * sizeof(uint32_t),
                .rkey = ep->peer_mailbox_rkey,
            },
        };
        if (openib_post_send_one(qp, &f->swr)) {
            openib_teardown_marker_done(f, OPENIB_MARKER_NOT_QUEUED);
        }
    }
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE)) {
        OPENIB_VERBOSE(1, "moving a QP of %s to the error state failed: %s", ep->desc,
                       strerror(errno));
        return;
    }
    if (!iwarp && NULL != (f = marker(ep, q))) {
        f->swr = (struct ibv_send_wr) {
            .wr_id = (uintptr_t) f,
            .opcode = IBV_WR_SEND,
            .send_flags = IBV_SEND_SIGNALED,
        };
        if (openib_post_send_one(qp, &f->swr)) {
            openib_teardown_marker_done(f, OPENIB_MARKER_NOT_QUEUED);
        }
    }
}

/* Where a wait gave up: the state of each QP of ep (the device's word on
 * why nothing completes), at verbose 1 like the wait's own message. */
static void log_qp_states(const mca_btl_openib_endpoint_t *ep)
{
    static const char *const names[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" };
    char buf[160];
    size_t off = 0;
    int q;

    buf[0] = '\0';
    for (q = 0; q < ep->num_qps && off < sizeof(buf); ++q) {
        struct ibv_qp_attr a;
        struct ibv_qp_init_attr ia;
        const char *st = "?";

        if (NULL != ep->qps[q].qp && 0 == ibv_query_qp(ep->qps[q].qp, &a, IBV_QP_STATE, &ia) &&
            (unsigned) a.qp_state < sizeof(names) / sizeof(names[0])) {
            st = names[a.qp_state];
        }
        off += (size_t) snprintf(buf + off, sizeof(buf) - off, "%s%s", q ? " " : "", st);
    }
    OPENIB_VERBOSE(1, "%s: %d of its work requests outstanding; its QPs' states: %s", ep->desc,
                   ep->markers, buf);
}

/* Step 3: progress until the endpoints' markers are all back, or the budget
 * is out (one budget for the whole batch). For goodbyes, a peer that said
 * its own goodbye meanwhile needs ours no more: it is closing too, and its
 * QP may already be gone, so ours would only end in a retry timeout; the
 * flush collects it. An endpoint whose iWARP QP reported an error while
 * closing is not waited for either: its connection is gone, and siw
 * completes what is still posted on it only when the QP is destroyed
 * (release_connection drains those completions then). Both sides of a
 * siw connection closing at once left one side waiting out the whole
 * budget twice for that. Nor is an endpoint quiesced before (its
 * batch's wait is over; openib_endpoint_destroy quiesces it again). */
static int markers_awaited(const mca_btl_openib_endpoint_t *ep, bool goodbyes)
{
    if (NULL == ep || ep->iwarp_broken || ep->quiesced ||
        (goodbyes && openib_endpoint_peer_closed(ep))) {
        return 0;
    }
    return ep->markers;
}

static void wait_markers(mca_btl_openib_endpoint_t **eps, int n, bool goodbyes, const char *what)
{
    long deadline = openib_now_ms() + wait_budget_ms();
    int i, left;

    for (;;) {
        for (i = 0, left = 0; i < n; ++i) {
            left += markers_awaited(eps[i], goodbyes);
        }
        if (0 == left) {
            return;
        }
        for (i = 0; i < n; ++i) {
            /* each module once is enough; a module polled twice costs nothing */
            if (markers_awaited(eps[i], goodbyes)) {
                (void) openib_progress_cq(eps[i]->module);
            }
        }
        if (openib_now_ms() > deadline) {
            OPENIB_VERBOSE(1, "closing %d endpoint(s): %d %s did not complete within %ld ms; going on",
                           n, left, what, wait_budget_ms());
            for (i = 0; i < n; ++i) {
                if (markers_awaited(eps[i], goodbyes)) {
                    log_qp_states(eps[i]);
                }
            }
            return;
        }
    }
}

/* Whether ep's connection is still being made while its peer may count it
 * made: its QPs exist (the peer may have connected them) and it is not
 * connected, failed or closing yet (a responder stays CLOSED until it is
 * connected; only an initiator is CONNECTING). An rdma_cm initiator on
 * iWARP is connected once its CM says so and it has sent its first
 * messages; here data completions are polled more often than the CM's
 * events, so the program may have received those messages and be closing
 * before this side is connected. Closed then, its QPs would go without a
 * goodbye (only a connected endpoint may send one), and the peer would see
 * a lost connection. */
static bool settle_waits(const mca_btl_openib_endpoint_t *ep)
{
    return ep && !ep->closing && !ep->is_self && ep->qps_created &&
           (ep->conn.state == OPENIB_CONN_CONNECTING || ep->conn.state == OPENIB_CONN_CLOSED);
}

void openib_endpoints_settle(mca_btl_openib_endpoint_t **eps, int n)
{
    long t0 = openib_now_ms(), deadline = t0 + wait_budget_ms();
    int i, left, first = -1;

    for (;;) {
        for (i = 0, left = 0; i < n; ++i) {
            if (settle_waits(eps[i])) {
                left++;
                (void) openib_progress_cq(eps[i]->module); /* the first messages */
            }
        }
        if (first < 0) {
            first = left;
        }
        if (0 == left) {
            if (first > 0) {
                OPENIB_VERBOSE(10, "closing: finishing %d connection(s) still being made took "
                               "%ld ms", first, openib_now_ms() - t0);
            }
            return;
        }
        if (openib_now_ms() > deadline) {
            OPENIB_VERBOSE(1, "closing: %d connection(s) still being made after %ld ms; "
                           "closing them unfinished", left, wait_budget_ms());
            return;
        }
        (void) openib_connect_progress(false); /* the CPCs' events and timers */
    }
}

/* Whether this endpoint has QPs of its own to close (XRC endpoints share
 * their node's send QP, btl_openib_xrc.c). */
static bool owns_qps(const mca_btl_openib_endpoint_t *ep)
{
    return ep && ep->qps_created && !ep->xrc && !ep->quiesced;
}

void openib_endpoints_quiesce(mca_btl_openib_endpoint_t **eps, int n)
{
    bool any = false;
    int i, q;

    for (i = 0; i < n; ++i) {
        mca_btl_openib_endpoint_t *ep = eps[i];

        if (NULL == ep) {
            continue;
        }
        ep->closing = true;
        /* CLOSING: an idle close both sides agreed on (btl_openib_peer_limit.c) */
        if (owns_qps(ep) && !ep->is_self &&
            (ep->conn.state == OPENIB_CONN_CONNECTED || ep->conn.state == OPENIB_CONN_CLOSING) &&
            ep->peer_mailbox_rkey && !openib_endpoint_peer_closed(ep)) {
            for (q = 0; q < ep->num_qps; ++q) {
                say_goodbye(ep, q);
            }
            any = true;
        }
    }
    if (any) {
        wait_markers(eps, n, true, "goodbyes");
    }
    for (i = 0; i < n; ++i) {
        if (!owns_qps(eps[i])) {
            continue;
        }
        for (q = 0; q < eps[i]->num_qps; ++q) {
            if (eps[i]->qps[q].qp) {
                flush(eps[i], q);
            }
        }
    }
    wait_markers(eps, n, false, "flush markers");
    for (i = 0; i < n; ++i) {
        if (eps[i]) {
            eps[i]->quiesced = true;
        }
    }
}

bool openib_endpoint_peer_closed(const mca_btl_openib_endpoint_t *ep)
{
    int q;

    for (q = 0; NULL != ep->mailbox && q < ep->num_qps; ++q) {
        if (0 != ep->mailbox[OPENIB_MAILBOX_CLOSED(q)]) {
            return true;
        }
    }
    return false;
}

bool openib_endpoint_peer_closed_all(const mca_btl_openib_endpoint_t *ep)
{
    int q;

    for (q = 0; q < ep->num_qps; ++q) {
        if (NULL == ep->mailbox || 0 == ep->mailbox[OPENIB_MAILBOX_CLOSED(q)]) {
            return false;
        }
    }
    return true;
}

/*
 * cpc_rdma_cm_events.c - the rdma_cm handshake's event loop: the progress
 * hook (openib_cpc_rdma_cm_progress: looks only every RCM_IDLE_EVERY or
 * RCM_BUSY_EVERY calls), each event copied, acknowledged and dispatched to
 * the side its cm_id belongs to, the requests the listener thread queued,
 * and the timers (silence bound, steps, retries). The protocol is
 * described at the top of cpc_rdma_cm_conn.c.
 */
#include "opal_config.h"

#include <poll.h>
#include <rdma/rdma_cma.h>
#include <string.h>

#include "opal/constants.h"
#include "opal/prefetch.h"

#include "connect/cpc_active.h"
#include "connect/cpc_rdma_cm_conn.h"
#include "connect/openib_connect.h"

#define RCM_IDLE_EVERY 256      /* progress calls between looks, nothing under way */
#define RCM_BUSY_EVERY 4        /* ... while one of our handshakes is under way */
#define RCM_EVENTS_PER_CALL 64  /* bound the work one progress call does */

static void dispatch(const struct rcm_event *ev)
{
    const uint32_t *tag = ev->id->context;
    struct rcm_ep *e;

    /* Address changes and device removal (listeners get those too) need
     * nothing from us: the BTL hears of device loss through async events. */
    if (NULL == tag || RCM_TAG_EP != *tag) {
        return;
    }
    e = (struct rcm_ep *) tag;
    if (ev->id == e->act_id) {
        rcm_on_active_event(e, ev);
    } else if (ev->id == e->pas_id) {
        rcm_on_passive_event(e, ev);
    } else {
        int q;

        for (q = 0; q < OPENIB_CPC_MAX_QPS; ++q) {
            if (ev->id == e->qid[q]) {
                rcm_on_qp_event(e, q, ev);
                break;
            }
        }
    }
}

static int drain_events(void)
{
    struct pollfd pfd = { .fd = rcm.ch->fd, .events = POLLIN };
    struct rcm_event ev;
    int n = 0;

    if (poll(&pfd, 1, 0) <= 0) {
        return 0;
    }
    while (n < RCM_EVENTS_PER_CALL && NULL != rcm.ch) {
        struct rdma_cm_event *raw;
        const struct rdma_conn_param *c;

        if (0 != rdma_get_cm_event(rcm.ch, &raw)) {
            break; /* EAGAIN: drained */
        }
        c = &raw->param.conn;
        ev.type = raw->event;
        ev.status = raw->status;
        ev.id = raw->id;
        ev.listen_id = raw->listen_id;
        ev.qp_num = c->qp_num;
        ev.responder_resources = c->responder_resources;
        ev.initiator_depth = c->initiator_depth;
        ev.priv_len = 0;
        if (NULL != c->private_data && c->private_data_len > 0) {
            ev.priv_len = c->private_data_len; /* uint8_t: fits ev.priv */
            memcpy(ev.priv, c->private_data, ev.priv_len);
        }
        /* Before handling: a handler may destroy the id, which waits for
         * its events to be acknowledged. */
        rdma_ack_cm_event(raw);
        dispatch(&ev);
        n++;
    }
    return n;
}

/* One handshake's timers (openib_cpc_active_scan). */
static void check_timer(void *p, long t)
{
    struct rcm_ep *e = p;

    openib_cpc_discount_absence(&e->deadline_ms, &e->looked_ms, t);
    if (t > e->deadline_ms) {
        rcm_fail(e, OPAL_ERR_TIMEOUT, "no answer at all within %d s (btl_openib_connect_"
                 "rdma_cm_timeout), not even 'busy' from the peer's listener; %d attempt(s) "
                 "of ours, the handshake was at: %s", rcm_timeout_s(), e->attempts,
                 rcm_state_names[e->st]);
        return;
    }
    switch (e->st) {
    case RS_RETRY:
        if (t >= e->retry_ms) {
            rcm_start_attempt(e);
        }
        break;
    case RS_ADDR:
    case RS_ROUTE:
    case RS_REQ_SENT:
        if (t > e->step_ms) {
            rcm_retry(e, "no answer within %ld ms while %s", rcm_step_timeout_ms(),
                      rcm_state_names[e->st]);
        }
        break;
    case RS_WAIT_PEER:
        /* Still nothing from the side that won the crossing: ask again
         * (it refuses again while its own attempt runs). */
        if (!e->qps_rtr && t > e->step_ms) {
            rcm_start_attempt(e);
        }
        break;
    default:
        break;
    }
}

/* Connection requests the listener thread queued for us. */
static int take_requests(void)
{
    struct rcm_event ev;
    int n = 0;

    while (n < RCM_EVENTS_PER_CALL && rcm_listen_take(&ev)) {
        rcm_on_request(ev.mod, &ev);
        n++;
    }
    return n;
}

int openib_cpc_rdma_cm_progress(bool now)
{
    unsigned every;
    int n;

    if (OPAL_LIKELY(NULL == rcm.ch)) {
        return 0;
    }
    every = rcm.active.n > 0 ? RCM_BUSY_EVERY : RCM_IDLE_EVERY; /* powers of two */
    if (OPAL_LIKELY(0 != (++rcm.tick & (every - 1))) && !now) {
        return 0;
    }
    n = drain_events();
    n += take_requests();
    if (rcm.active.n > 0) {
        openib_cpc_active_scan(&rcm.active, check_timer);
    }
    return n;
}

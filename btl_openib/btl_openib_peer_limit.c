/*
 * btl_openib_peer_limit.c - closing idle connections beyond
 * btl_openib_max_peers, and reopening them on demand.
 *
 * A connection is closed only when both sides agree it is idle, so that
 * nothing in flight is lost:
 *  1. The closer, over its limit, picks its least recently used connection
 *     that is idle on its side (nothing queued, waiting or unacknowledged
 *     of its own RDMA), sends CLOSE_REQ and from then on queues new sends
 *     (the lazy connection is CLOSING).
 *  2. The peer takes the request in order, after every message sent
 *     before it. Idle on its side too, it answers CLOSE_ACK and queues its
 *     own new sends; otherwise CLOSE_NACK, and the closer resumes.
 *  3. The ACK, also in order, tells the closer it has everything the peer
 *     sent. It quiesces the endpoint (a goodbye RDMA write over each QP,
 *     btl_openib_teardown.c), destroys the connection and starts over:
 *     queued sends reconnect at once.
 *  4. The responder sees the goodbye over every QP (the closer is done
 *     with them) and does the same; it gives up waiting after the
 *     transport's own retry time. Until then a reconnect request finds it
 *     busy and is retried by the CPC.
 * Two requests that cross are settled by process name: the lower one's
 * request stands. Quiescing polls the CQ, so steps 3 and 4 run from
 * progress, never inside completion handling.
 */
#include "opal_config.h"

#include <stddef.h>

#include "opal/constants.h"
#include "opal/util/proc.h"

#include "common/openib_clock.h"
#include "btl_openib/btl_openib_frag.h"
#include "btl_openib/btl_openib_peer_limit.h"
#include "btl_openib/btl_openib_send.h"
#include "btl_openib/btl_openib_teardown.h"
#include "mca/btl_openib_params.h"
#include "wire/data_hdr.h"

#define LOOK_AGAIN_USEC 10000


/* Nothing of ours on this connection is queued, waiting or unfinished. */
static bool idle(mca_btl_openib_endpoint_t *ep)
{
    return ep->conn.state == OPENIB_CONN_CONNECTED && OPENIB_PARK_NONE == ep->park &&
           !ep->is_self && !ep->xrc && !ep->closing && !ep->stalled && 0 == ep->cts_wait &&
           0 == ep->rdma_outstanding && 0 == ep->markers && !ep->eager.busy &&
           opal_list_is_empty(&ep->pending) && opal_list_is_empty(&ep->conn.queued) &&
           opal_list_is_empty(&ep->held);
}

void openib_lru_unlink(mca_btl_openib_endpoint_t *ep)
{
    if (ep->lru_linked) {
        opal_list_remove_item(&ep->module->lru, &ep->lru_item);
        ep->lru_linked = false;
    }
}

void openib_lru_link_newest(mca_btl_openib_endpoint_t *ep)
{
    if (ep->lru_linked || openib_params.max_peers <= 0 || ep->is_self) {
        return;
    }
    opal_list_append(&ep->module->lru, &ep->lru_item);
    ep->lru_linked = true;
}

static mca_btl_openib_endpoint_t *ep_of_lru_item(opal_list_item_t *item)
{
    return (mca_btl_openib_endpoint_t *) ((char *) item -
                                          offsetof(mca_btl_openib_endpoint_t, lru_item));
}

static int connected_peers(mca_btl_openib_module_t *m)
{
    return (int) opal_list_get_size(&m->lru);
}

static void park(mca_btl_openib_endpoint_t *ep, enum openib_park role)
{
    mca_btl_openib_module_t *m = ep->module;

    openib_lru_unlink(ep);
    ep->park = (uint8_t) role;
    /* a responder waits for the closer's goodbye this long at most */
    ep->park_deadline_ms = openib_now_ms() + openib_transport_giveup_ms();
    m->parking[m->num_parking++] = ep;
}

/* Connections busy right now (something in flight) are passed over, but
 * only so many: while the oldest ones are all busy, progress looks again
 * in a few ms rather than walking every peer. */
#define VICTIM_LOOKS 32

static mca_btl_openib_endpoint_t *least_recently_used_idle(mca_btl_openib_module_t *m)
{
    opal_list_item_t *item = opal_list_get_first(&m->lru);
    int looks;

    for (looks = 0; item != opal_list_get_end(&m->lru) && looks < VICTIM_LOOKS;
         ++looks, item = opal_list_get_next(item)) {
        if (idle(ep_of_lru_item(item))) {
            return ep_of_lru_item(item);
        }
    }
    return NULL;
}

void openib_peer_limit_connected(mca_btl_openib_endpoint_t *ep)
{
    openib_lru_link_newest(ep);
    openib_peer_limit_check(ep->module);
}

void openib_peer_limit_check(mca_btl_openib_module_t *m)
{
    int asked = 0;

    if (openib_params.max_peers <= 0) {
        return;
    }
    while (connected_peers(m) > openib_params.max_peers &&
           m->num_parking + asked < OPENIB_MAX_PARKING) {
        mca_btl_openib_endpoint_t *ep = least_recently_used_idle(m);

        if (NULL == ep ||
            OPAL_SUCCESS != openib_send_ctl(ep, OPENIB_TAG_CLOSE_REQ, NULL, 0, true)) {
            break;
        }
        openib_lru_unlink(ep); /* not counted while the close is asked */
        ep->park = OPENIB_PARK_ASKED;
        ep->conn.state = OPENIB_CONN_CLOSING;
        OPENIB_VERBOSE(100, "%s: asked to close this idle connection (%d connected peers, "
                       "btl_openib_max_peers %d)", ep->desc, connected_peers(m) + 1,
                       openib_params.max_peers);
        asked++;
    }
    /* none idle now, or too many closes under way: progress looks again */
    m->over_limit = connected_peers(m) > openib_params.max_peers;
}

/* The close we asked for is off: connected again, and what queued
 * meanwhile goes now. */
static void unpark(mca_btl_openib_endpoint_t *ep)
{
    ep->park = OPENIB_PARK_NONE;
    (void) openib_lazy_connected(&ep->conn); /* CONNECTED, queued sends go */
    openib_lru_link_newest(ep);
}

void openib_peer_limit_on_msg(mca_btl_openib_endpoint_t *ep, uint8_t tag)
{
    mca_btl_openib_module_t *m = ep->module;

    switch (tag) {
    case OPENIB_TAG_CLOSE_REQ:
        if (OPENIB_PARK_ASKED == ep->park) {
            /* crossing requests: the lower name's stands */
            if (opal_compare_proc(opal_proc_local_get()->proc_name, ep->name) < 0) {
                return; /* ours: the peer answers it */
            }
            /* theirs: answer as if we had not asked (what queued meanwhile
             * goes now, and then we are not idle: not now) */
            unpark(ep);
        }
        if (idle(ep) && m->num_parking < OPENIB_MAX_PARKING &&
            OPAL_SUCCESS == openib_send_ctl(ep, OPENIB_TAG_CLOSE_ACK, NULL, 0, true)) {
            ep->conn.state = OPENIB_CONN_CLOSING;
            park(ep, OPENIB_PARK_RESPONDER);
        } else if (OPENIB_PARK_NONE == ep->park) {
            (void) openib_send_ctl(ep, OPENIB_TAG_CLOSE_NACK, NULL, 0, true);
        }
        break;
    case OPENIB_TAG_CLOSE_ACK:
    case OPENIB_TAG_CLOSE_NACK:
        if (OPENIB_PARK_ASKED != ep->park) {
            break; /* no request of ours is waiting for this answer */
        }
        if (OPENIB_TAG_CLOSE_ACK == tag) {
            park(ep, OPENIB_PARK_CLOSER);
        } else {
            OPENIB_VERBOSE(100, "%s: the peer is busy; the connection stays", ep->desc);
            unpark(ep);
            m->over_limit = true; /* try another one later */
        }
        break;
    default:
        break;
    }
}

static void close_now(mca_btl_openib_endpoint_t *ep, const char *how)
{
    mca_btl_openib_module_t *m = ep->module;

    openib_endpoints_quiesce(&ep, 1);
    m->stats.conn_closed_idle++;
    OPENIB_VERBOSE(10, "%s: closed the idle connection (%s; btl_openib_max_peers %d)%s",
                   ep->desc, how, openib_params.max_peers,
                   opal_list_is_empty(&ep->conn.queued) ? "" : "; reopening it for waiting sends");
    (void) openib_endpoint_reset(ep);
}

void openib_peer_limit_forget(mca_btl_openib_endpoint_t *ep)
{
    mca_btl_openib_module_t *m = ep->module;
    int i;

    for (i = 0; i < m->num_parking; ++i) {
        if (m->parking[i] == ep) {
            m->parking[i] = m->parking[--m->num_parking];
            break;
        }
    }
    ep->park = OPENIB_PARK_NONE;
    openib_lru_unlink(ep);
}

int openib_peer_limit_progress(mca_btl_openib_module_t *m)
{
    int i, n = 0;

    for (i = 0; i < m->num_parking;) {
        mca_btl_openib_endpoint_t *ep = m->parking[i];
        bool closer = OPENIB_PARK_CLOSER == ep->park;

        if (!closer && !openib_endpoint_peer_closed_all(ep) &&
            openib_now_ms() < ep->park_deadline_ms) {
            ++i;
            continue;
        }
        /* off the list first: closing progresses the CQ, which may park more */
        m->parking[i] = m->parking[--m->num_parking];
        close_now(ep, closer                                ? "we asked, the peer agreed"
                      : openib_endpoint_peer_closed_all(ep) ? "the peer asked and closed"
                                                            : "the peer asked, then went silent");
        n++;
    }
    /* over the limit with nothing idle: look again every few ms, not on
     * every progress call */
    if (m->over_limit && openib_now_usec() >= m->limit_next_usec) {
        m->limit_next_usec = openib_now_usec() + LOOK_AGAIN_USEC;
        openib_peer_limit_check(m);
    }
    return n;
}

/*
 * btl_openib_async.c - handling asynchronous device events (read by the
 * watcher thread, btl_openib_async_thread.c) in the MPI thread.
 */
#include "opal_config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "opal/constants.h"

#include "btl_openib/btl_openib_async.h"
#include "btl_openib/btl_openib_frag.h"
#include "btl_openib/btl_openib_cq.h"
#include "btl_openib/btl_openib_peer_limit.h"
#include "btl_openib/btl_openib_send.h"
#include "mca/btl_openib_params.h"

int openib_async_init(struct openib_device *dev)
{
    int flags = fcntl(dev->ctx->async_fd, F_GETFL);

    if (flags < 0 || fcntl(dev->ctx->async_fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        OPENIB_VERBOSE(1, "%s: cannot make the async event fd non-blocking: %s", dev->name,
                       strerror(errno));
        return OPAL_ERROR;
    }
    return OPAL_SUCCESS;
}

void openib_endpoint_fail(mca_btl_openib_endpoint_t *ep, int rc, const char *why)
{
    if (ep->conn.state == OPENIB_CONN_FAILED) {
        return;
    }
    OPENIB_VERBOSE(1, "endpoint %s failed: %s", ep->desc, why);
    openib_cpc_btl_ops.connect_failed(ep, rc, why);
    openib_ep_fail_pending(ep, rc);
}

/* By number, not by the event's pointer: the event was acknowledged when
 * it was read, so the QP may be gone (then it is no longer in qp_map). */
void openib_endpoint_close_quietly(mca_btl_openib_endpoint_t *ep)
{
    if (ep->conn.state == OPENIB_CONN_FAILED) {
        return;
    }
    openib_lru_unlink(ep);
    openib_lazy_failed(&ep->conn, OPAL_ERR_UNREACH, "the peer closed the connection");
    openib_ep_fail_pending(ep, OPAL_ERR_UNREACH);
}

static mca_btl_openib_endpoint_t *ep_of_qp_num(uint32_t qp_num)
{
    int i;

    for (i = 0; i < mca_btl_openib_component.num_modules; ++i) {
        void *ep = NULL;
        if (OPAL_SUCCESS == opal_hash_table_get_value_uint32(
                                &mca_btl_openib_component.modules[i]->qp_map, qp_num, &ep)) {
            return ep;
        }
    }
    return NULL;
}

/* Fail the endpoints of dev's port `port`, or of all its ports (0). */
static void fail_ports(struct openib_device *dev, int port, const char *why)
{
    int i, j;

    for (i = 0; i < mca_btl_openib_component.num_modules; ++i) {
        mca_btl_openib_module_t *m = mca_btl_openib_component.modules[i];
        if (m->dev != dev || (port && m->port_num != port)) {
            continue;
        }
        for (j = 0; j < opal_pointer_array_get_size(&m->endpoints); ++j) {
            mca_btl_openib_endpoint_t *ep = opal_pointer_array_get_item(&m->endpoints, j);
            if (ep) {
                openib_endpoint_fail(ep, OPAL_ERR_UNREACH, why);
            }
        }
    }
}

/* A shared receive queue ran low (its limit event): the receiver consumes
 * buffers faster than it reposts them, and every further message would
 * wait for RNR retries. Double the queue, within the device's limit and
 * OPENIB_SRQ_GROWTH times what was asked for (so a slow receiver cannot
 * pin unbounded memory; beyond that RNR retry absorbs the overload), and
 * arm the one-shot limit event again. */
static void grow_srq(mca_btl_openib_module_t *m, int q)
{
    m->stats.srq_low++;
    const struct openib_rq *rq = &mca_btl_openib_component.rq.q[q];
    uint32_t have = m->srq_wr[q], want = have * 2, cap = rq->count * OPENIB_SRQ_GROWTH, i;
    struct ibv_srq_attr sa;

    if (want > cap) {
        want = cap;
    }
    if (want > (uint32_t) m->dev->attr.max_srq_wr) {
        want = (uint32_t) m->dev->attr.max_srq_wr;
    }
    if (want > have) { /* the CQ has room for the largest size (btl_openib_cq.c) */
        sa = (struct ibv_srq_attr) { .max_wr = want };
        if (ibv_modify_srq(m->srq[q], &sa, IBV_SRQ_MAX_WR)) {
            OPENIB_VERBOSE(10, "%s:%d: resizing shared receive queue %d to %u failed: %s",
                           m->dev->name, m->port_num, q, want, strerror(errno));
            want = have;
        }
        for (i = have; i < want; ++i) {
            openib_frag_t *f = (openib_frag_t *) opal_free_list_get(&m->recv_frags[q]);
            if (NULL == f || OPAL_SUCCESS != openib_post_recv(m, NULL, f)) {
                if (f) {
                    openib_frag_return(f);
                }
                break;
            }
        }
        m->srq_wr[q] = i;
        OPENIB_VERBOSE(10, "%s:%d: shared receive queue %d ran low; grew it from %u to %u buffers",
                       m->dev->name, m->port_num, q, have, i);
    }
    if (rq->low) {
        sa = (struct ibv_srq_attr) { .srq_limit = (uint32_t) ((uint64_t) rq->low * m->srq_wr[q] / rq->count) };
        (void) ibv_modify_srq(m->srq[q], &sa, IBV_SRQ_LIMIT);
    }
}

static void srq_low(struct openib_device *dev, const struct ibv_srq *srq)
{
    int i, q;

    for (i = 0; i < mca_btl_openib_component.num_modules; ++i) {
        mca_btl_openib_module_t *m = mca_btl_openib_component.modules[i];
        for (q = 0; m->dev == dev && q < OPENIB_MAX_QUEUES; ++q) {
            if (m->srq[q] && m->srq[q] == srq) {
                grow_srq(m, q);
                return;
            }
        }
    }
}

static void handle(const struct openib_async_event *ev)
{
    mca_btl_openib_endpoint_t *ep;
    char why[128];

    snprintf(why, sizeof(why), "%s on %s", ibv_event_type_str(ev->type), ev->dev->name);
    switch (ev->type) {
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
        ep = ep_of_qp_num(ev->qp_num);
        if (ep) {
            openib_endpoint_fail(ep, OPAL_ERROR, why);
        }
        break;
    case IBV_EVENT_PORT_ERR:
        fail_ports(ev->dev, ev->port, why);
        break;
    case IBV_EVENT_CQ_ERR:
    case IBV_EVENT_DEVICE_FATAL:
        /* the whole device is gone: every one of its ports */
        openib_show_help("device-fatal", true, opal_process_info.nodename, ev->dev->name, why);
        fail_ports(ev->dev, 0, why);
        break;
    case IBV_EVENT_SRQ_LIMIT_REACHED:
        srq_low(ev->dev, ev->srq);
        break;
    default:
        OPENIB_VERBOSE(10, "async event: %s", why);
        break;
    }
}

int openib_async_progress(void)
{
    opal_list_t events;
    opal_list_item_t *it;
    int n = 0;

    OBJ_CONSTRUCT(&events, opal_list_t);
    openib_async_take(&events);
    while (NULL != (it = opal_list_remove_first(&events))) {
        handle((struct openib_async_event *) it);
        OBJ_RELEASE(it);
        n++;
    }
    OBJ_DESTRUCT(&events);
    return n;
}

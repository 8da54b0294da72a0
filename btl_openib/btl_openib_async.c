/*
 * btl_openib_async.c - asynchronous device events.
 */
#include "opal_config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>

#include "opal/constants.h"

#include "btl_openib/btl_openib_async.h"
#include "btl_openib/btl_openib_send.h"
#include "mca/btl_openib_params.h"

/* Poll the async fds once every this many calls (themselves one in 16
 * progress calls): events are rare and a read() per call would cost latency. */
#define ASYNC_POLL_INTERVAL 64

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
    int q;

    if (ep->conn.state == OPENIB_CONN_FAILED) {
        return;
    }
    OPENIB_VERBOSE(1, "endpoint %s failed: %s", ep->desc, why);
    openib_cpc_btl_ops.connect_failed(ep, rc, why);
    for (q = 0; q < ep->num_qps; ++q) {
        opal_list_item_t *it;
        while (NULL != (it = opal_list_remove_first(&ep->qps[q].pending))) {
            openib_frag_fail(ep, (openib_frag_t *) it, rc);
        }
    }
}

static mca_btl_openib_endpoint_t *ep_of_qp(struct ibv_qp *qp)
{
    int i;

    for (i = 0; qp && i < mca_btl_openib_component.num_modules; ++i) {
        void *ep = NULL;
        if (OPAL_SUCCESS == opal_hash_table_get_value_uint32(
                                &mca_btl_openib_component.modules[i]->qp_map, qp->qp_num, &ep)) {
            return ep;
        }
    }
    return NULL;
}

static void fail_port(struct openib_device *dev, int port, const char *why)
{
    int i, j;

    for (i = 0; i < mca_btl_openib_component.num_modules; ++i) {
        mca_btl_openib_module_t *m = mca_btl_openib_component.modules[i];
        if (m->dev != dev || m->port_num != port) {
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

static int handle_device(struct openib_device *dev)
{
    struct ibv_async_event ev;
    mca_btl_openib_endpoint_t *ep;
    char why[128];

    if (ibv_get_async_event(dev->ctx, &ev)) {
        return 0; /* EAGAIN: nothing pending */
    }
    snprintf(why, sizeof(why), "%s on %s", ibv_event_type_str(ev.event_type), dev->name);
    switch (ev.event_type) {
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
        ep = ep_of_qp(ev.element.qp);
        if (ep) {
            openib_endpoint_fail(ep, OPAL_ERROR, why);
        }
        break;
    case IBV_EVENT_PORT_ERR:
        fail_port(dev, ev.element.port_num, why);
        break;
    case IBV_EVENT_CQ_ERR:
    case IBV_EVENT_DEVICE_FATAL:
        openib_show_help("device-fatal", true, opal_process_info.nodename, dev->name, why);
        fail_port(dev, 1, why);
        break;
    case IBV_EVENT_SRQ_LIMIT_REACHED:
        /* Receivers repost every buffer as soon as it is consumed; reaching
         * the low watermark means the receiver is slow, which RNR retry
         * absorbs. Report it so users can size the SRQ. */
        OPENIB_VERBOSE(10, "%s", why);
        break;
    default:
        OPENIB_VERBOSE(10, "async event: %s", why);
        break;
    }
    ibv_ack_async_event(&ev);
    return 1;
}

int openib_async_progress(void)
{
    static unsigned tick;
    int i, n = 0;

    if (OPAL_LIKELY(++tick % ASYNC_POLL_INTERVAL)) {
        return 0;
    }
    for (i = 0; i < mca_btl_openib_component.num_devices; ++i) {
        struct openib_device *dev = mca_btl_openib_component.devices[i];
        while (dev && handle_device(dev)) {
            n++;
        }
    }
    return n;
}

/*
 * btl_openib_cq.c - sizing the port's CQ and its receive reservations
 * (btl_openib_cq.h says what the CQ must hold).
 */
#include "opal_config.h"

#include <errno.h>
#include <string.h>

#include "opal/constants.h"

#include "btl_openib/btl_openib_async.h"
#include "btl_openib/btl_openib_cq.h"
#include "mca/btl_openib_params.h"

/* The shared queues at their largest: what was asked for, grown up to
 * OPENIB_SRQ_GROWTH times on their limit events, within the device's limit. */
static int srq_entries(const mca_btl_openib_module_t *m)
{
    const struct openib_rq_spec *rq = &mca_btl_openib_component.rq;
    uint64_t n = 0, max = (uint64_t) m->dev->attr.max_srq_wr, one;
    int q;

    for (q = 0; q < rq->num; ++q) {
        if (rq->q[q].type != OPENIB_RQ_PP) {
            one = (uint64_t) rq->q[q].count * OPENIB_SRQ_GROWTH;
            n += one > max ? max : one;
        }
    }
    return n > (uint64_t) INT32_MAX ? INT32_MAX : (int) n;
}

/* The smallest send budget a port works with: two QPs' worth of sends
 * and the control reserve. */
static int64_t least_budget(void)
{
    return 2 * (int64_t) openib_params.max_send_wr + OPENIB_BUDGET_CONTROL;
}

int openib_cq_create(mca_btl_openib_module_t *m, int cq_size)
{
    int64_t recv = srq_entries(m), least = least_budget();
    int64_t cqe = cq_size, max = m->dev->attr.max_cqe;

    if (cqe - recv < least) {
        cqe = recv + least;
        OPENIB_VERBOSE(10, "%s:%d: CQ of %lld entries instead of btl_openib_cq_size %d: the shared "
                       "queues may post %lld receives, and sends need room for two QPs' worth",
                       m->dev->name, m->port_num, (long long) cqe, cq_size, (long long) recv);
    }
    if (cqe > max) {
        OPENIB_VERBOSE(1, "%s:%d: the CQ would need %lld entries (%lld for the shared receive "
                       "queues at their largest, %lld for sends), more than max_cqe %lld: lower "
                       "the counts in btl_openib_receive_queues or btl_openib_max_send_wr",
                       m->dev->name, m->port_num, (long long) cqe, (long long) recv,
                       (long long) least, (long long) max);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    m->cq = ibv_create_cq(m->dev->ctx, (int) cqe, NULL, NULL, 0);
    if (NULL == m->cq) {
        OPENIB_VERBOSE(1, "%s:%d: ibv_create_cq(%lld) failed: %s", m->dev->name, m->port_num,
                       (long long) cqe, strerror(errno));
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    m->cq_recv = (int) recv;
    /* what was asked for, even where the device rounds the CQ up (rxe: to
     * a power of two): the setting means the same on every device */
    m->send_budget_total = (int32_t) (cqe - recv);
    m->send_budget = m->send_budget_total;
    OPENIB_VERBOSE(10, "%s:%d: CQ of %d entries: %d for the shared queues' receives, a send budget "
                   "of %d work requests for the port", m->dev->name, m->port_num, m->cq->cqe,
                   m->cq_recv, m->send_budget_total);
    return OPAL_SUCCESS;
}

int openib_cq_reserve_recv(mca_btl_openib_module_t *m, int wqes)
{
    int64_t need = (int64_t) m->cq_recv + wqes + m->send_budget_total;
    int64_t cqe = m->cq->cqe, want = cqe;
    int64_t least = least_budget(), lend;

    if (need > cqe) {
        while (want < need) {
            want *= 2;
        }
        if (want > m->dev->attr.max_cqe) {
            want = m->dev->attr.max_cqe;
        }
        /* not every device resizes a CQ (siw does not) */
        if (want > cqe && 0 == ibv_resize_cq(m->cq, (int) want)) {
            cqe = m->cq->cqe;
        }
    }
    /* What the CQ still lacks is lent by the send budget, down to two
     * QPs' worth of sends. */
    lend = need > cqe ? need - cqe : 0;
    if (m->send_budget_total - lend < least) {
        OPENIB_VERBOSE(1, "%s:%d: no room in the CQ (%lld entries) for another peer's per-peer "
                       "receive buffers; lower the P counts in btl_openib_receive_queues or "
                       "raise btl_openib_cq_size", m->dev->name, m->port_num, (long long) cqe);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    m->send_budget_total -= (int32_t) lend;
    m->send_budget -= (int32_t) lend;
    m->cq_recv += wqes;
    return OPAL_SUCCESS;
}

void openib_cq_release_recv(mca_btl_openib_module_t *m, int wqes)
{
    m->cq_recv -= wqes;
}

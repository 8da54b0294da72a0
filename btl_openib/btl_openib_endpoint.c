/*
 * btl_openib_endpoint.c - endpoints: made, reset after an idle close and
 * destroyed; what their connection holds (QPs in INIT, the credit mailbox,
 * CQ room) and the lazy-connect glue. What a CPC calls back into is in
 * btl_openib_endpoint_cpc.c.
 */
#include "opal_config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "opal/constants.h"
#include "opal/util/proc.h"

#include "btl_openib/btl_openib.h"
#include "common/openib_clock.h"
#include "btl_openib/btl_openib_cq.h"
#include "btl_openib/btl_openib_eager_rdma.h"
#include "btl_openib/btl_openib_frag.h"
#include "btl_openib/btl_openib_qp_map.h"
#include "btl_openib/btl_openib_qp_state.h"
#include "btl_openib/btl_openib_order.h"
#include "btl_openib/btl_openib_peer_cost.h"
#include "btl_openib/btl_openib_peer_limit.h"
#include "btl_openib/btl_openib_send.h"
#include "btl_openib/btl_openib_teardown.h"
#include "mca/btl_openib_params.h"

/* Why a verbs resource for ep could not be made, for the user: the call,
 * errno, and when pinning memory failed, the locked-memory limit. */
static void resource_failed(mca_btl_openib_endpoint_t *ep, const char *what, int err)
{
    struct rlimit rl;
    char limit[96] = "";

    if ((ENOMEM == err || EPERM == err || EAGAIN == err) && 0 == getrlimit(RLIMIT_MEMLOCK, &rl) &&
        RLIM_INFINITY != rl.rlim_cur) {
        snprintf(limit, sizeof(limit), " (locked-memory limit, ulimit -l: %llu KiB; raise it)",
                 (unsigned long long) rl.rlim_cur / 1024);
    }
    snprintf(ep->conn.why, sizeof(ep->conn.why), "%s failed: %s%s", what, strerror(err), limit);
    OPENIB_VERBOSE(1, "%s: %s", ep->desc, ep->conn.why);
}

/* The mailbox the peer RDMA-writes credits into and the words we write
 * from, one item of the module's registered list. An item goes back to
 * the list only after the endpoint's QPs are destroyed, so no late write
 * of the old peer can reach the next endpoint that gets it. */
static int create_mailbox(mca_btl_openib_endpoint_t *ep)
{
    opal_free_list_item_t *it = opal_free_list_get(&ep->module->mailboxes);
    struct openib_reg *reg;

    if (NULL == it) {
        resource_failed(ep, "registering credit mailboxes", errno ? errno : ENOMEM);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    memset(it->ptr, 0, OPENIB_MAILBOX_BYTES);
    reg = (struct openib_reg *) it->registration;
    ep->mailbox_item = it;
    ep->mailbox = it->ptr;
    ep->credit_src = (uint32_t *) it->ptr + OPENIB_MAILBOX_ENTRIES;
    ep->mailbox_lkey = reg->mr->lkey;
    ep->mailbox_rkey = reg->mr->rkey;
    return OPAL_SUCCESS;
}

void openib_endpoint_note_started(mca_btl_openib_endpoint_t *ep)
{
    if (0 == ep->conn_t0_usec) {
        ep->conn_t0_usec = openib_now_usec();
    }
}

/* CQ entries this endpoint's per-peer receive buffers may complete (its
 * sends come out of the port's send budget, btl_openib_cq.h). */
static int pp_receives(const struct openib_rq_spec *rq)
{
    int q, need = 0;

    for (q = 0; q < rq->num; ++q) {
        if (rq->q[q].type == OPENIB_RQ_PP) {
            need += (int) rq->q[q].count;
        }
    }
    return need;
}

/* Create this endpoint's QPs (one per receive queue) in INIT. */
int openib_endpoint_create_qps(mca_btl_openib_endpoint_t *ep)
{
    mca_btl_openib_module_t *m = ep->module;
    const struct openib_rq_spec *rq = &mca_btl_openib_component.rq;
    int q, rc;

    if (ep->qps_created) {
        return OPAL_SUCCESS;
    }
    /* XRC: xoob attaches the endpoint to a shared send QP instead
     * (btl_openib_xrc.c); only the loopback endpoint gets here, and it has
     * no RC QP that an XRC SRQ could serve. */
    if (rq->num > 0 && rq->q[0].type == OPENIB_RQ_XRC) {
        snprintf(ep->conn.why, sizeof(ep->conn.why),
                 "loopback over XRC receive queues is not supported (use btl self)");
        return OPAL_ERR_NOT_SUPPORTED;
    }
    rc = create_mailbox(ep);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    rc = openib_cq_reserve_recv(m, pp_receives(rq));
    if (OPAL_SUCCESS != rc) {
        snprintf(ep->conn.why, sizeof(ep->conn.why), "the completion queue of %s:%d cannot "
                 "grow for another peer's per-peer receive buffers (lower the P counts in "
                 "btl_openib_receive_queues)", m->dev->name, m->port_num);
        return rc;
    }
    ep->cq_reserved = true;
    for (q = 0; q < rq->num; ++q) {
        struct ibv_qp_init_attr ia = {
            .send_cq = m->cq,
            .recv_cq = m->cq,
            .srq = rq->q[q].type == OPENIB_RQ_PP ? NULL : m->srq[q],
            .cap = {
                .max_send_wr = openib_params.max_send_wr,
                .max_recv_wr = rq->q[q].type == OPENIB_RQ_PP ? rq->q[q].count : 0,
                .max_send_sge = OPENIB_SEND_MAX_SGE,
                .max_recv_sge = 1,
                .max_inline_data = m->max_inline,
            },
            .qp_type = IBV_QPT_RC,
            .sq_sig_all = 0,
        };
        struct openib_ep_qp *qp = &ep->qps[q];

        qp->qp = ibv_create_qp(m->dev->pd, &ia);
        if (NULL == qp->qp) {
            resource_failed(ep, "creating a queue pair", errno);
            return OPAL_ERR_OUT_OF_RESOURCE;
        }
        if ((rc = openib_qp_to_init(m, qp->qp))) {
            resource_failed(ep, "moving a queue pair to INIT", errno); /* rc is OPAL */
            return OPAL_ERROR;
        }
        qp->psn = (uint32_t) (random() & 0xffffff);
        qp->reclaim_size = ia.cap.max_send_wr + 1;
        qp->reclaim = calloc(qp->reclaim_size, sizeof(*qp->reclaim));
        if (NULL == qp->reclaim) {
            return OPAL_ERR_OUT_OF_RESOURCE;
        }
        qp->sd_wqe = (int32_t) ia.cap.max_send_wr; /* see openib_qp_data_room */
        qp->sq_bytes = (uint32_t) openib_send_queue_bytes(&ia.cap, m->dev->defaults.sq_slot_header);
        openib_qp_map_add(m, qp->qp->qp_num, ep);
    }
    ep->num_qps = rq->num;
    /* The initiator sends first (btl_openib_cts.h): count arrivals from
     * now, they may come before our CM reports the connection. */
    if (ep->cpc && ep->cpc->uses_cts) {
        ep->cts_wait = (1u << rq->num) - 1;
    }
    ep->qps_created = true;
    return OPAL_SUCCESS;
}

/* ---- lazy connection glue ---- */

static int lazy_start(void *ctx)
{
    mca_btl_openib_endpoint_t *ep = ctx;

    openib_endpoint_note_started(ep);
    if (ep->is_self) {
        return openib_endpoint_self_connect(ep);
    }
    return openib_connect_start_connect(ep->cpc, &ep->cpc_ep);
}

static int lazy_send(void *ctx, opal_list_item_t *item)
{
    return openib_post_frag(ctx, (openib_frag_t *) item);
}

static void lazy_fail(void *ctx, opal_list_item_t *item, int rc)
{
    openib_frag_fail(ctx, (openib_frag_t *) item, rc);
}

static const struct openib_lazy_ops lazy_ops = {
    .start = lazy_start,
    .send = lazy_send,
    .fail = lazy_fail,
};

/* What a quiesced endpoint's connection holds: its QPs, their CQ room, its
 * ring and its mailbox (the CPC's part is the caller's). */
static void release_connection(mca_btl_openib_endpoint_t *ep)
{
    mca_btl_openib_module_t *m = ep->module;
    uint32_t qpn[OPENIB_MAX_QUEUES];
    bool had[OPENIB_MAX_QUEUES] = { false }, any = false;
    int q;

    openib_lru_unlink(ep);
    for (q = 0; q < OPENIB_MAX_QUEUES; ++q) {
        struct ibv_qp *qp = ep->qps[q].qp;

        if (qp) {
            qpn[q] = qp->qp_num;
            had[q] = any = true;
            ep->qps[q].qp = NULL;
            if (ibv_destroy_qp(qp)) {
                OPENIB_VERBOSE(1, "destroying a QP of %s failed: %s", ep->desc, strerror(errno));
            }
        }
    }
    /* A QP's work may still complete after quiesce's flush, up to its
     * destruction: siw puts work queued behind a doorbell that failed on a
     * closing QP into the CQ only when its TCP connection is closed, in the
     * kernel's own time. Those completions name ep (their wr_ids, their QP
     * numbers): they are taken now, while ep and its map entries still
     * exist, so none is left for progress to find after ep is gone. */
    if (any) {
        openib_progress_cq_drain(m);
    }
    openib_teardown_markers_release(ep);
    for (q = 0; q < OPENIB_MAX_QUEUES; ++q) {
        if (had[q]) {
            openib_qp_map_remove(m, qpn[q]);
        }
        free(ep->qps[q].reclaim);
    }
    memset(ep->qps, 0, sizeof(ep->qps));
    ep->num_qps = 0;
    ep->qps_created = false;
    if (ep->cq_reserved) {
        openib_cq_release_recv(m, pp_receives(&mca_btl_openib_component.rq));
        ep->cq_reserved = false;
    }
    openib_eager_rdma_fini(ep); /* the QPs are gone: nothing writes the ring now */
    if (ep->mailbox_item) {
        opal_free_list_return(&m->mailboxes, ep->mailbox_item);
        ep->mailbox_item = NULL;
    }
    ep->mailbox = NULL;
    ep->credit_src = NULL;
}

/* The CPC's side of the endpoint, fresh: at creation, and again for each
 * connection after an idle close. */
static int cpc_endpoint_setup(mca_btl_openib_endpoint_t *ep)
{
    openib_cpc_endpoint_init(&ep->cpc_ep);
    ep->cpc_ep.btl_ep = ep;
    ep->cpc_ep.btl_ops = &openib_cpc_btl_ops;
    ep->cpc_ep.peer_desc = ep->desc;
    ep->cpc_ep.local_id = &opal_proc_local_get()->proc_name;
    ep->cpc_ep.peer_id = &ep->name;
    ep->cpc_ep.id_len = sizeof(opal_process_name_t);
    ep->cpc_ep.peer_blob = ep->remote_cpc.blob;
    ep->cpc_ep.peer_blob_len = ep->remote_cpc.blob_len;
    ep->cpc_ep.peer_port = &ep->peer_cpc_port;
    return openib_connect_endpoint_init(ep->cpc, &ep->cpc_ep);
}

/* After an idle close (btl_openib_peer_limit.c) both sides have
 * delivered everything and quiesced: the endpoint starts over as if new,
 * keeping the sends that wait for the next connection. */
int openib_endpoint_reset(mca_btl_openib_endpoint_t *ep)
{
    int rc;

    if (ep->cpc) {
        openib_connect_endpoint_finalize(ep->cpc, &ep->cpc_ep);
    }
    release_connection(ep);
    ep->send_seq = ep->recv_seq = 0;
    ep->cts_wait = 0;
    ep->cts_established = false;
    ep->closing = ep->quiesced = ep->iwarp_broken = false;
    ep->markers = 0;
    ep->peer_mailbox_addr = 0;
    ep->peer_mailbox_rkey = 0;
    ep->conn_t0_usec = 0;
    ep->park = OPENIB_PARK_NONE;
    rc = cpc_endpoint_setup(ep);
    if (OPAL_SUCCESS != rc) {
        openib_lazy_failed(&ep->conn, rc, "the CPC could not set up the endpoint again");
        return rc;
    }
    return openib_lazy_reopen(&ep->conn);
}

mca_btl_openib_endpoint_t *openib_endpoint_create(mca_btl_openib_module_t *m, opal_proc_t *proc,
                                                  const struct openib_modex_port *peer)
{
    mca_btl_openib_endpoint_t *ep;
    struct openib_cpc_module *local = NULL;
    const struct openib_modex_cpc *remote = NULL;
    int rc;

    rc = openib_connect_match(m->cpcs, m->num_cpcs, peer, &local, &remote);
    if (OPAL_SUCCESS != rc) {
        OPENIB_VERBOSE(10, "%s:%d shares no CPC with rank %u's port %s:%d; not reachable this way",
                       m->dev->name, m->port_num, proc->proc_name.vpid, peer->dev_name,
                       peer->port_num);
        return NULL;
    }
    ep = calloc(1, sizeof(*ep));
    if (NULL == ep) {
        return NULL;
    }
    OBJ_CONSTRUCT(&ep->super, opal_list_item_t);
    OBJ_CONSTRUCT(&ep->lru_item, opal_list_item_t);
    ep->module = m;
    ep->proc = proc;
    ep->name = proc->proc_name;
    ep->is_self = proc == opal_proc_local_get();
    ep->cpc = local;
    ep->remote_cpc = *remote;
    snprintf(ep->desc, sizeof(ep->desc), "rank %u (%s) port %s:%d", proc->proc_name.vpid,
             proc->proc_hostname ? proc->proc_hostname : "?", peer->dev_name, peer->port_num);
    OBJ_CONSTRUCT(&ep->pending, opal_list_t);
    OBJ_CONSTRUCT(&ep->held, opal_list_t);
    OBJ_CONSTRUCT(&ep->marker_frags, opal_list_t);
    openib_lazy_init(&ep->conn, &lazy_ops, ep);

    openib_connect_modex_peer_port(peer, &ep->peer_cpc_port);
    snprintf(ep->peer_dev_name, sizeof(ep->peer_dev_name), "%s", peer->dev_name);
    ep->peer_cpc_port.dev_name = ep->peer_dev_name;

    if (OPAL_SUCCESS != cpc_endpoint_setup(ep)) {
        OPENIB_VERBOSE(1, "CPC %s could not set up an endpoint for %s", local->component->name,
                       ep->desc);
        openib_lazy_fini(&ep->conn);
        free(ep);
        return NULL;
    }
    ep->index = opal_pointer_array_add(&m->endpoints, ep);
    opal_proc_table_set_value(&m->peers, ep->name, ep);
    return ep;
}

void openib_endpoint_destroy(mca_btl_openib_endpoint_t *ep)
{
    mca_btl_openib_module_t *m;

    if (NULL == ep) {
        return;
    }
    OPENIB_VERBOSE(100, "destroying endpoint %s (%s)", ep->desc, openib_lazy_state_name(ep->conn.state));
    m = ep->module;
    openib_peer_limit_forget(ep); /* progress must not close it later */
    openib_endpoints_quiesce(&ep, 1); /* nothing in a CQ may refer to ep after this */
    if (ep->cpc) {
        openib_connect_endpoint_finalize(ep->cpc, &ep->cpc_ep);
    }
    openib_lazy_fini(&ep->conn);
    openib_ep_fail_pending(ep, OPAL_ERR_UNREACH);
    OBJ_DESTRUCT(&ep->pending);
    openib_order_drop(ep);
    OBJ_DESTRUCT(&ep->held);
    if (ep->stalled) {
        opal_list_remove_item(&m->stalled, &ep->super);
    }
    release_connection(ep);
    OBJ_DESTRUCT(&ep->marker_frags);
    opal_pointer_array_set_item(&m->endpoints, ep->index, NULL);
    opal_proc_table_remove_value(&m->peers, ep->name);
    OBJ_DESTRUCT(&ep->lru_item);
    OBJ_DESTRUCT(&ep->super);
    free(ep);
}

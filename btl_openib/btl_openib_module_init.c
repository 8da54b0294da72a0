/*
 * btl_openib_module_init.c - per-port resources: CQ (btl_openib_cq.c),
 * shared receive queues, fragment lists and the CPC modules usable on the
 * port.
 */
#include "opal_config.h"

#include <errno.h>
#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "opal/constants.h"

#include "btl_openib/btl_openib.h"
#include "btl_openib/btl_openib_async.h"
#include "btl_openib/btl_openib_cq.h"
#include "btl_openib/btl_openib_frag.h"
#include "btl_openib/btl_openib_limits.h"
#include "btl_openib/btl_openib_pack.h"
#include "btl_openib/btl_openib_port_speed.h"
#include "btl_openib/btl_openib_qp_state.h"
#include "btl_openib/btl_openib_send.h"
#include "btl_openib/btl_openib_teardown.h"
#include "btl_openib/btl_openib_xrc.h"
#include "mca/btl_openib_params.h"

static int create_srqs(mca_btl_openib_module_t *m)
{
    const struct openib_rq_spec *rq = &mca_btl_openib_component.rq;
    int q;
    uint32_t i;

    for (q = 0; q < rq->num; ++q) {
        struct ibv_srq_init_attr ia = {
            .attr = { .max_wr = rq->q[q].count, .max_sge = 1, .srq_limit = 0 },
        };

        if (rq->q[q].type == OPENIB_RQ_PP) {
            continue;
        }
        if (rq->q[q].type == OPENIB_RQ_XRC && !m->dev->xrc) {
            openib_show_help("xrc-queues-unsupported", true, opal_process_info.nodename,
                             openib_params.receive_queues, m->dev->name);
            return OPAL_ERR_NOT_SUPPORTED;
        }
        /* The XRC domain file may be refused (openib_xrc_dev_open has
         * said why): then this port cannot have X queues. */
        if (rq->q[q].type == OPENIB_RQ_XRC && OPAL_SUCCESS != openib_xrc_dev_open(m->dev)) {
            return OPAL_ERR_NOT_AVAILABLE;
        }
        if (ia.attr.max_wr > (uint32_t) m->dev->attr.max_srq_wr) {
            ia.attr.max_wr = m->dev->attr.max_srq_wr;
        }
        /* X queues: an XRC SRQ, filled and used exactly like an S queue's. */
        m->srq[q] = rq->q[q].type == OPENIB_RQ_XRC ? openib_xrc_srq_create(m, ia.attr.max_wr)
                                                    : ibv_create_srq(m->dev->pd, &ia);
        if (NULL == m->srq[q]) {
            OPENIB_VERBOSE(1, "%s:%d: ibv_create_srq(%u) failed: %s", m->dev->name, m->port_num,
                           ia.attr.max_wr, strerror(errno));
            return OPAL_ERR_OUT_OF_RESOURCE;
        }
        for (i = 0; i < ia.attr.max_wr; ++i) {
            openib_frag_t *f = (openib_frag_t *) opal_free_list_get(&m->recv_frags[q]);
            if (NULL == f || OPAL_SUCCESS != openib_post_recv(m, NULL, f)) {
                return OPAL_ERR_OUT_OF_RESOURCE;
            }
        }
        m->srq_wr[q] = ia.attr.max_wr;
        if (rq->q[q].low) {
            struct ibv_srq_attr sa = { .srq_limit = rq->q[q].low };
            /* Not every device arms the limit event; it is only a hint. */
            (void) ibv_modify_srq(m->srq[q], &sa, IBV_SRQ_LIMIT);
        }
    }
    return OPAL_SUCCESS;
}

static int query_cpcs(mca_btl_openib_module_t *m)
{
    struct openib_cpc_port *p = &m->cpc_port;

    openib_cpc_port_init(p);
    /* XRC only counts when the receive queues ask for it (X,...). */
    p->caps = (m->dev->xrc && mca_btl_openib_component.rq.q[0].type == OPENIB_RQ_XRC
                   ? OPENIB_PORT_CAP_XRC : 0) |
              (m->dev->attr.max_srq ? OPENIB_PORT_CAP_SRQ : 0) |
              (IBV_TRANSPORT_IWARP == m->dev->ctx->device->transport_type
                   ? OPENIB_PORT_CAP_IWARP : 0);
    p->dev_name = m->dev->name;
    p->port_num = m->port_num;
    p->link_layer = m->port_attr.link_layer;
    p->lid = m->port_attr.lid;
    p->mtu = 128u << m->port_attr.active_mtu;
    memcpy(p->gid, m->gid.raw, 16);
    p->subnet_prefix = be64toh(m->gid.global.subnet_prefix);
    p->gid_index = m->gid_index;
    p->ctx = m->dev->ctx;
    p->pd = m->dev->pd;
    p->btl = m;
    p->ipv4 = m->ipv4;
    p->traffic_class = (uint8_t) openib_params.traffic_class;
    p->service_level = (uint8_t) openib_params.ib_service_level;
    p->xrc = (p->caps & OPENIB_PORT_CAP_XRC) ? &openib_xrc_cpc_ops : NULL;
    return openib_connect_query_port(p, m->cpcs, OPENIB_MAX_CPCS, &m->num_cpcs);
}

/* Inline bytes when max_inline_data is -1. Every send WQE of every QP is
 * sized for it, so it is paid per peer: 128 covers ob1's match header with
 * a small payload (the latency-bound case); larger messages are copied from
 * a registered fragment by the NIC's DMA at little extra cost. */
#define OPENIB_DEFAULT_INLINE 128

/* The largest inline size the device accepts for `want` (or, when
 * max_inline_data is -1, for the device table's size or
 * OPENIB_DEFAULT_INLINE), found with probe QPs
 * since verbs has no query for it: halving until one is created, then a
 * binary search between the last size refused and the first accepted, so an
 * error can name the limit. (Not opal_common_verbs_find_max_inline: its
 * probe QPs have no send WRs, which siw refuses, and it tries powers of two
 * only.) */
static uint32_t probe_max_inline(mca_btl_openib_module_t *m)
{
    const struct openib_device_choice *c = &m->dev->defaults;
    uint32_t want = (uint32_t) openib_params.max_inline_data, refused = 0, got = 0, lo, hi;

    if (openib_params.max_inline_data < 0) {
        want = OPENIB_DEFAULT_INLINE;
        if (c->max_inline_data >= 0) {
            want = (uint32_t) c->max_inline_data;
            OPENIB_VERBOSE(10, "%s:%d: %s: %u inline bytes from the device table (%s); setting "
                           "btl_openib_max_inline_data overrides it", m->dev->name, m->port_num,
                           c->inline_from->kind, want, c->inline_from->why);
        }
    }

    for (;;) {
        struct ibv_qp_init_attr ia = {
            .send_cq = m->cq, .recv_cq = m->cq, .qp_type = IBV_QPT_RC,
            .cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1,
                     .max_inline_data = want },
        };
        struct ibv_qp *qp = want ? ibv_create_qp(m->dev->pd, &ia) : NULL;

        if (qp) {
            got = ia.cap.max_inline_data;
            ibv_destroy_qp(qp);
            break;
        }
        if (0 == want) {
            return 0;
        }
        refused = want;
        want /= 2;
    }
    if (0 == refused || openib_params.max_inline_data < 0) {
        return got;
    }
    for (lo = want, hi = refused; hi - lo > 1;) {
        uint32_t mid = lo + (hi - lo) / 2;
        struct ibv_qp_init_attr ia = {
            .send_cq = m->cq, .recv_cq = m->cq, .qp_type = IBV_QPT_RC,
            .cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1,
                     .max_inline_data = mid },
        };
        struct ibv_qp *qp = ibv_create_qp(m->dev->pd, &ia);

        if (qp) {
            lo = mid;
            ibv_destroy_qp(qp);
        } else {
            hi = mid;
        }
    }
    return lo > got ? lo : got;
}

/* What the device table (btl_openib_device_defaults.c) says for this
 * port's device, where the user did not set the parameter: the CQ size
 * (raised, never lowered) and how many peers get an eager-RDMA ring. */
static int apply_device_table(mca_btl_openib_module_t *m, int cqe)
{
    const struct ibv_device_attr *da = &m->dev->attr;
    const struct openib_device_choice c = m->dev->defaults; /* looked up at device open */

    m->eager_rdma_num = openib_params.eager_rdma_num;
    if (c.cq_size > cqe && !openib_params_user_set("cq_size")) {
        cqe = c.cq_size > da->max_cqe ? da->max_cqe : c.cq_size;
        OPENIB_VERBOSE(10, "%s:%d: %s: btl_openib_cq_size %d from the device table (%s); "
                       "setting btl_openib_cq_size overrides it", m->dev->name, m->port_num,
                       c.cq_from->kind, cqe, c.cq_from->why);
    }
    if (c.eager_rdma_num >= 0 && c.eager_rdma_num != m->eager_rdma_num &&
        !openib_params_user_set("eager_rdma_num")) {
        m->eager_rdma_num = c.eager_rdma_num;
        OPENIB_VERBOSE(10, "%s:%d: %s: btl_openib_eager_rdma_num %d from the device table (%s); "
                       "setting btl_openib_eager_rdma_num overrides it", m->dev->name,
                       m->port_num, c.eager_from->kind, m->eager_rdma_num, c.eager_from->why);
    }
    return cqe;
}

/* One figure ob1 weighs the rail by: the port's value, unless the user set
 * the parameter or the port does not tell (the template's value stays). */
struct rail_figure {
    const char *param; /* btl_openib_<param> */
    uint32_t *value;   /* the module's field */
    uint32_t port;     /* from the port; 0: unknown */
    const char *unit;
    const char *from;  /* what the port's value came from */
    const char *use;   /* what ob1 does with it */
};

static void set_rail_figure(const mca_btl_openib_module_t *m, const struct rail_figure *f)
{
    if (openib_params_user_set(f->param)) {
        OPENIB_VERBOSE(10, "%s:%d: btl_openib_%s %u %s as set (the port: %u %s)", m->dev->name,
                       m->port_num, f->param, *f->value, f->unit, f->port, f->unit);
        return;
    }
    if (0 == f->port) {
        OPENIB_VERBOSE(10, "%s:%d: %s: unknown; btl_openib_%s stays %u %s", m->dev->name,
                       m->port_num, f->from, f->param, *f->value, f->unit);
        return;
    }
    *f->value = f->port;
    OPENIB_VERBOSE(10, "%s:%d: btl_openib_%s %u %s from the port (%s), %s; setting "
                   "btl_openib_%s overrides it", m->dev->name, m->port_num, f->param, f->port,
                   f->unit, f->from, f->use, f->param);
}

/* ob1 splits a large message across rails in proportion to btl_bandwidth,
 * and sends first fragments only on the rails of the lowest btl_latency. */
static void set_rail_figures(mca_btl_openib_module_t *m)
{
    const struct ibv_port_attr *pa = &m->port_attr;
    char rate[48], link[48];
    const struct rail_figure f[2] = {
        { "bandwidth", &m->super.btl_bandwidth, openib_port_bandwidth(pa), "Mb/s", rate,
          "ob1's weight for this rail" },
        { "latency", &m->super.btl_latency,
          openib_port_latency(m->dev->ctx->device->transport_type, pa->link_layer), "us", link,
          "ob1's rank for first fragments" },
    };

    snprintf(rate, sizeof(rate), "speed %u, width %u", pa->active_speed, pa->active_width);
    snprintf(link, sizeof(link), "transport %d, link layer %u",
             (int) m->dev->ctx->device->transport_type, pa->link_layer);
    set_rail_figure(m, &f[0]);
    set_rail_figure(m, &f[1]);
}

int openib_module_init(mca_btl_openib_module_t *m)
{
    int cqe = openib_params.cq_size, rc;

    OBJ_CONSTRUCT(&m->endpoints, opal_pointer_array_t);
    opal_pointer_array_init(&m->endpoints, 16, INT_MAX, 16);
    OBJ_CONSTRUCT(&m->qp_map, opal_hash_table_t);
    opal_hash_table_init(&m->qp_map, 256);
    OBJ_CONSTRUCT(&m->peers, opal_proc_table_t);
    opal_proc_table_init(&m->peers, 16, 256);
    OBJ_CONSTRUCT(&m->stalled, opal_list_t);
    OBJ_CONSTRUCT(&m->lru, opal_list_t);

    set_rail_figures(m);
    /* openib_limits_check_port() fitted cq_size to the device */
    cqe = apply_device_table(m, cqe);
    rc = openib_cq_create(m, cqe);
    if (OPAL_SUCCESS != rc) {
        goto err;
    }
    m->max_inline = probe_max_inline(m);
    OPENIB_VERBOSE(10, "%s:%d: up to %u bytes inline in a work request", m->dev->name, m->port_num,
                   m->max_inline);
    rc = openib_limits_check_inline(m, m->max_inline);
    if (OPAL_SUCCESS != rc) {
        goto err;
    }
    rc = openib_frag_lists_init(m);
    m->frags_ready = true; /* even partly: fini destructs what was built */
    if (OPAL_SUCCESS != rc) {
        goto err;
    }
    rc = create_srqs(m);
    if (OPAL_SUCCESS != rc) {
        goto err;
    }
    rc = openib_async_init(m->dev);
    if (OPAL_SUCCESS != rc) {
        goto err;
    }
    rc = query_cpcs(m);
    if (OPAL_SUCCESS != rc) {
        /* the framework already told the user which CPCs declined */
        mca_btl_openib_component.told_user = true;
        goto err;
    }
    /* btl_max_send_size and btl_eager_limit came from the template, fitted
     * to the receive queues by the start-up check. */
    if (m->dev->attr.atomic_cap == IBV_ATOMIC_NONE) {
        m->super.btl_flags &= ~(MCA_BTL_FLAGS_ATOMIC_FOPS | MCA_BTL_FLAGS_ATOMIC_OPS);
        m->super.btl_atomic_flags = 0;
    }
    return OPAL_SUCCESS;

err:
    openib_module_fini(m);
    return rc;
}

/* openib_endpoints_settle over a copy of the endpoint array: the CPCs'
 * progress it runs may add an endpoint (a peer contacting us), which can
 * move the array. */
static void settle_all(mca_btl_openib_module_t *m)
{
    int n = opal_pointer_array_get_size(&m->endpoints);
    mca_btl_openib_endpoint_t **eps;

    if (n <= 0 || NULL == (eps = malloc((size_t) n * sizeof(*eps)))) {
        return; /* nothing to settle, or no memory: closed unsettled */
    }
    memcpy(eps, m->endpoints.addr, (size_t) n * sizeof(*eps));
    openib_endpoints_settle(eps, n);
    free(eps);
}

int openib_module_fini(mca_btl_openib_module_t *m)
{
    int i;

    if (m->finalized) {
        return OPAL_SUCCESS; /* ob1's btl_finalize, then our component close */
    }
    m->finalized = true;
    m->num_parking = 0; /* every endpoint closes now */
    m->over_limit = false;
    settle_all(m);
    openib_endpoints_quiesce((mca_btl_openib_endpoint_t **) m->endpoints.addr,
                             opal_pointer_array_get_size(&m->endpoints));
    for (i = 0; i < opal_pointer_array_get_size(&m->endpoints); ++i) {
        openib_endpoint_destroy(opal_pointer_array_get_item(&m->endpoints, i));
    }
    openib_connect_release_modules(m->cpcs, m->num_cpcs);
    m->num_cpcs = 0;
    openib_xrc_port_fini(m); /* target QPs, before the XRC SRQs */
    for (i = 0; i < OPENIB_MAX_QUEUES; ++i) {
        if (m->srq[i]) {
            ibv_destroy_srq(m->srq[i]);
            m->srq[i] = NULL;
        }
    }
    if (m->cq) {
        ibv_destroy_cq(m->cq);
        m->cq = NULL;
    }
    if (m->frags_ready) {
        openib_frag_lists_fini(m);
        m->frags_ready = false;
    }
    OBJ_DESTRUCT(&m->endpoints);
    OBJ_DESTRUCT(&m->qp_map);
    OBJ_DESTRUCT(&m->peers);
    OBJ_DESTRUCT(&m->stalled);
    OBJ_DESTRUCT(&m->lru);
    free(m->eager_eps); /* empty: every endpoint released its ring */
    m->eager_eps = NULL;
    openib_pack_cache_free(&m->pack_cache);
    if (m->stats.sends + m->stats.recvs) {
        OPENIB_VERBOSE(10, "%s:%d statistics: sends %llu (%llu bytes, %llu inline, %llu in place), receives %llu "
                       "(%llu bytes), puts %llu, gets %llu, bounced %llu, atomics %llu, credit writes %llu, "
                       "waits for credits %llu, eager_rdma_sent %llu, eager_rdma_from_frags %llu, eager_rdma_received %llu, "
                       "eager_rdma_rings %llu, packed_bytes %llu, closed_idle %llu",
                       m->dev->name, m->port_num, (unsigned long long) m->stats.sends,
                       (unsigned long long) m->stats.send_bytes,
                       (unsigned long long) m->stats.inline_sends,
                       (unsigned long long) m->stats.inplace_sends,
                       (unsigned long long) m->stats.recvs,
                       (unsigned long long) m->stats.recv_bytes,
                       (unsigned long long) m->stats.puts, (unsigned long long) m->stats.gets,
                       (unsigned long long) m->stats.bounced,
                       (unsigned long long) m->stats.atomics,
                       (unsigned long long) m->stats.credit_writes,
                       (unsigned long long) m->stats.queued_for_credits,
                       (unsigned long long) m->stats.eager_rdma_sends,
                       (unsigned long long) m->stats.eager_rdma_frag_sends,
                       (unsigned long long) m->stats.eager_rdma_recvs,
                       (unsigned long long) m->stats.eager_rdma_rings,
                       (unsigned long long) m->stats.packed_bytes,
                       (unsigned long long) m->stats.conn_closed_idle);
    }
    return OPAL_SUCCESS;
}

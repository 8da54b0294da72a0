/*
 * btl_openib_xrc.c - XRC verbs objects for an XRC CPC (xoob), which reaches
 * them through openib_cpc_port.xrc (struct openib_cpc_xrc_ops).
 *
 *   XRC domain  one per device, opened on a per-node file so every local
 *               process of the job shares it (a target QP made by one of
 *               them delivers into the others' SRQs)
 *   XRC SRQ     one per X receive queue per port, on the module's CQ
 *   send QP     one per remote node (IBV_QPT_XRC_SEND), shared by the
 *               endpoints to that node's processes (connect/cpc_xoob.c keeps
 *               the node table)
 *   target QP   IBV_QPT_XRC_RECV, one per remote send QP that asked us
 */
#include "opal_config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opal/constants.h"
#include "opal/util/proc.h"

#include "btl_openib/btl_openib_qp_state.h"
#include "btl_openib/btl_openib_xrc.h"
#include "btl_openib/btl_openib_xrc_file.h"
#include "btl_openib/btl_openib_send.h"
#include "mca/btl_openib_params.h"

#if OPENIB_HAVE_XRC

/* A target QP this process made, found again when the same send QP asks
 * twice (its first reply was lost and it retried). */
struct openib_xrc_tgt {
    struct ibv_qp *qp;
    uint32_t peer_qpn;
    uint8_t peer_gid[16];
    struct openib_xrc_tgt *next;
};

/* The domain file lives in the job's session directory only (see
 * btl_openib_xrc_file.h); there is no fallback location. */
static int xrcd_name(const struct openib_device *dev, char *buf, size_t len)
{
    return openib_xrc_file_name(buf, len, (uint32_t) OPAL_PROC_MY_NAME.jobid, dev->name);
}

int openib_xrc_dev_open(struct openib_device *dev)
{
    struct ibv_xrcd_init_attr a = {
        .comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
        .oflags = O_CREAT,
    };
    const char *dir = opal_process_info.job_session_dir;
    static bool told;
    char name[128], why[PATH_MAX + 256];

    if (dev->xrcd) {
        return OPAL_SUCCESS;
    }
    if (OPAL_SUCCESS != xrcd_name(dev, name, sizeof(name))) {
        snprintf(why, sizeof(why), "the device name '%s' cannot be part of a file name",
                 dev->name);
        dev->xrcd_fd = -1;
    } else {
        dev->xrcd_fd = openib_xrc_file_open(dir, name, why, sizeof(why));
    }
    if (dev->xrcd_fd < 0) {
        /* Once per process: every port of every device would say the same. */
        if (!told) {
            openib_show_help("xrc-domain-file-refused", true, opal_process_info.nodename,
                             dev->name, dir ? dir : "(none)", why);
            told = true;
        }
        OPENIB_VERBOSE(1, "%s: XRC not used: %s", dev->name, why);
        return OPAL_ERR_NOT_AVAILABLE;
    }
    a.fd = dev->xrcd_fd;
    dev->xrcd = ibv_open_xrcd(dev->ctx, &a);
    if (NULL == dev->xrcd) {
        OPENIB_VERBOSE(1, "%s: ibv_open_xrcd(%s/%s) failed: %s", dev->name, dir, name,
                       strerror(errno));
        close(dev->xrcd_fd);
        dev->xrcd_fd = -1;
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    return OPAL_SUCCESS;
}

void openib_xrc_dev_close(struct openib_device *dev)
{
    char name[128], path[PATH_MAX + 160];

    if (NULL == dev->xrcd) {
        return;
    }
    if (ibv_close_xrcd(dev->xrcd)) {
        OPENIB_VERBOSE(1, "%s: ibv_close_xrcd failed: %s", dev->name, strerror(errno));
    }
    dev->xrcd = NULL;
    close(dev->xrcd_fd);
    dev->xrcd_fd = -1;
    /* Every local process opened the domain at init, long before anyone
     * finalizes, so whoever comes first may remove the name; the others
     * find it gone (ENOENT), which is fine. */
    if (NULL == opal_process_info.job_session_dir ||
        OPAL_SUCCESS != xrcd_name(dev, name, sizeof(name))) {
        return;
    }
    snprintf(path, sizeof(path), "%s/%s", opal_process_info.job_session_dir, name);
    if (unlink(path) && ENOENT != errno) {
        OPENIB_VERBOSE(10, "%s: cannot remove %s: %s", dev->name, path, strerror(errno));
    }
}

struct ibv_srq *openib_xrc_srq_create(mca_btl_openib_module_t *m, uint32_t max_wr)
{
    struct ibv_srq_init_attr_ex a = {
        .attr = { .max_wr = max_wr, .max_sge = 1 },
        .comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD |
                     IBV_SRQ_INIT_ATTR_CQ,
        .srq_type = IBV_SRQT_XRC,
        .pd = m->dev->pd,
        .cq = m->cq,
    };
    struct ibv_srq *srq;

    if (OPAL_SUCCESS != openib_xrc_dev_open(m->dev)) {
        return NULL;
    }
    a.xrcd = m->dev->xrcd;
    srq = ibv_create_srq_ex(m->dev->ctx, &a);
    if (NULL == srq) {
        OPENIB_VERBOSE(1, "%s:%d: creating an XRC SRQ (%u entries) failed: %s", m->dev->name,
                       m->port_num, max_wr, strerror(errno));
    }
    return srq;
}

void openib_xrc_port_fini(mca_btl_openib_module_t *m)
{
    while (m->xrc_tgts) {
        struct openib_xrc_tgt *t = m->xrc_tgts;
        m->xrc_tgts = t->next;
        if (ibv_destroy_qp(t->qp)) {
            OPENIB_VERBOSE(1, "%s:%d: destroying an XRC target QP failed: %s", m->dev->name,
                           m->port_num, strerror(errno));
        }
        free(t);
    }
}

/* ---- the operations xoob calls ---- */

static int port_srqs(void *btl, uint32_t *srqn, int max, int *n, uint32_t *rq_layout)
{
    mca_btl_openib_module_t *m = btl;
    const struct openib_rq_spec *rq = &mca_btl_openib_component.rq;
    int q;

    if (rq_layout) {
        *rq_layout = openib_rq_spec_hash(rq);
    }
    if (NULL == n) {
        return OPAL_SUCCESS;
    }
    if (rq->num > max) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    for (q = 0; q < rq->num; ++q) {
        if (rq->q[q].type != OPENIB_RQ_XRC || NULL == m->srq[q] ||
            ibv_get_srq_num(m->srq[q], &srqn[q])) {
            return OPAL_ERR_NOT_SUPPORTED;
        }
    }
    *n = rq->num;
    return OPAL_SUCCESS;
}

static int send_qp_create(void *btl, int sharers, void **qp_out, uint32_t *qpn, uint32_t *psn,
                          uint32_t *wqe_cap)
{
    mca_btl_openib_module_t *m = btl;
    uint64_t want = (uint64_t) openib_params.max_send_wr * mca_btl_openib_component.rq.num *
                    (uint64_t) (sharers > 0 ? sharers : 1);
    struct ibv_qp_init_attr_ex ia = {
        .qp_type = IBV_QPT_XRC_SEND,
        .send_cq = m->cq,
        .recv_cq = m->cq,
        .comp_mask = IBV_QP_INIT_ATTR_PD,
        .pd = m->dev->pd,
        .cap = { .max_send_sge = OPENIB_SEND_MAX_SGE, .max_inline_data = m->max_inline },
    };
    struct ibv_qp *qp;

    /* Room for every endpoint that shares it, as far as the device allows. */
    ia.cap.max_send_wr = (uint32_t) (want > (uint64_t) m->dev->attr.max_qp_wr
                                         ? (uint64_t) m->dev->attr.max_qp_wr : want);
    /* its sends' completions come out of the port's send budget (btl_openib_cq.h) */
    qp = ibv_create_qp_ex(m->dev->ctx, &ia);
    if (NULL == qp) {
        OPENIB_VERBOSE(1, "%s:%d: creating an XRC send QP (%u WQEs) failed: %s", m->dev->name,
                       m->port_num, ia.cap.max_send_wr, strerror(errno));
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    if (openib_qp_to_init(m, qp)) {
        OPENIB_VERBOSE(1, "%s:%d: XRC send QP to INIT failed: %s", m->dev->name, m->port_num,
                       strerror(errno));
        ibv_destroy_qp(qp);
        return OPAL_ERROR;
    }
    *qp_out = qp;
    *qpn = qp->qp_num;
    *psn = (uint32_t) (random() & 0xffffff);
    *wqe_cap = ia.cap.max_send_wr;
    return OPAL_SUCCESS;
}

/* The CPC's view of the peer, as the shared QP state code wants it. */
static struct openib_qp_peer qp_peer(const struct openib_cpc_xrc_peer *p)
{
    return (struct openib_qp_peer) {
        .qpn = p->qpn, .psn = p->psn, .mtu = p->mtu, .lid = p->lid, .gid = p->gid,
    };
}

static int send_qp_connect(void *btl, void *qpv, uint32_t psn,
                           const struct openib_cpc_xrc_peer *tgt, char *why, size_t why_len)
{
    mca_btl_openib_module_t *m = btl;
    struct openib_qp_peer p = qp_peer(tgt);

    p.psn = 0; /* a send QP receives nothing */
    if (openib_qp_to_rtr(m, qpv, &p, false)) {
        snprintf(why, why_len, "XRC send QP to RTR failed: %s", strerror(errno));
        return OPAL_ERROR;
    }
    if (openib_qp_to_rts(m, qpv, psn)) {
        snprintf(why, why_len, "XRC send QP to RTS failed: %s", strerror(errno));
        return OPAL_ERROR;
    }
    return OPAL_SUCCESS;
}

static void send_qp_destroy(void *btl, void *qp)
{
    mca_btl_openib_module_t *m = btl;

    if (ibv_destroy_qp(qp)) {
        OPENIB_VERBOSE(1, "%s:%d: destroying an XRC send QP failed: %s", m->dev->name,
                       m->port_num, strerror(errno));
    }
}

static int tgt_qp_get(void *btl, const struct openib_cpc_xrc_peer *ini, uint32_t *tgt_qpn,
                      char *why, size_t why_len)
{
    mca_btl_openib_module_t *m = btl;
    struct ibv_qp_init_attr_ex ia = {
        .qp_type = IBV_QPT_XRC_RECV,
        .comp_mask = IBV_QP_INIT_ATTR_XRCD,
        .xrcd = m->dev->xrcd,
    };
    struct openib_xrc_tgt *t;
    struct openib_qp_peer peer;

    for (t = m->xrc_tgts; t; t = t->next) {
        if (t->peer_qpn == ini->qpn && 0 == memcmp(t->peer_gid, ini->gid, 16)) {
            *tgt_qpn = t->qp->qp_num;
            return OPAL_SUCCESS;
        }
    }
    t = calloc(1, sizeof(*t));
    if (NULL == t) {
        snprintf(why, why_len, "out of memory");
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    t->qp = ibv_create_qp_ex(m->dev->ctx, &ia);
    if (NULL == t->qp) {
        snprintf(why, why_len, "creating an XRC target QP failed: %s", strerror(errno));
        goto err_free;
    }
    if (openib_qp_to_init(m, t->qp)) {
        snprintf(why, why_len, "XRC target QP to INIT failed: %s", strerror(errno));
        goto err_qp;
    }
    peer = qp_peer(ini);
    if (openib_qp_to_rtr(m, t->qp, &peer, true)) {
        snprintf(why, why_len, "XRC target QP to RTR failed: %s", strerror(errno));
        goto err_qp;
    }
    t->peer_qpn = ini->qpn;
    memcpy(t->peer_gid, ini->gid, 16);
    t->next = m->xrc_tgts;
    m->xrc_tgts = t;
    *tgt_qpn = t->qp->qp_num;
    return OPAL_SUCCESS;

err_qp:
    ibv_destroy_qp(t->qp);
err_free:
    free(t);
    return OPAL_ERROR;
}

static int ep_attach(void *btl_ep, void *send_qp, const uint32_t *srqn, int nsrq,
                     uint32_t *per_q, char *why, size_t why_len)
{
    mca_btl_openib_endpoint_t *ep = btl_ep;
    const struct openib_rq_spec *rq = &mca_btl_openib_component.rq;
    int q;

    if (nsrq != rq->num) {
        snprintf(why, why_len, "btl_openib_receive_queues differs between the two processes "
                 "(%d vs %d XRC queues)", rq->num, nsrq);
        return OPAL_ERR_BAD_PARAM;
    }
    if (*per_q > (uint32_t) openib_params.max_send_wr) {
        *per_q = (uint32_t) openib_params.max_send_wr;
    }
    for (q = 0; q < rq->num; ++q) {
        struct openib_ep_qp *qp = &ep->qps[q];

        qp->reclaim_size = *per_q + 1;
        qp->reclaim = calloc(qp->reclaim_size, sizeof(*qp->reclaim));
        if (NULL == qp->reclaim) {
            while (q-- > 0) {
                ep->qps[q].qp = NULL; /* teardown must not destroy the shared QP */
            }
            snprintf(why, why_len, "out of memory");
            return OPAL_ERR_OUT_OF_RESOURCE;
        }
        qp->qp = send_qp;
        qp->sd_wqe = (int32_t) *per_q;
        ep->xrc_srqn[q] = srqn[q];
    }
    ep->num_qps = rq->num;
    ep->qps_created = true;
    ep->xrc = true;
    return OPAL_SUCCESS;
}

static void ep_detach(void *btl_ep)
{
    mca_btl_openib_endpoint_t *ep = btl_ep;
    int q;

    /* The shared QP is the CPC's: endpoint teardown must not destroy it. */
    for (q = 0; q < ep->num_qps; ++q) {
        ep->qps[q].qp = NULL;
    }
}

const struct openib_cpc_xrc_ops openib_xrc_cpc_ops = {
    .size = sizeof(struct openib_cpc_xrc_ops),
    .port_srqs = port_srqs,
    .send_qp_create = send_qp_create,
    .send_qp_connect = send_qp_connect,
    .send_qp_destroy = send_qp_destroy,
    .tgt_qp_get = tgt_qp_get,
    .ep_attach = ep_attach,
    .ep_detach = ep_detach,
};

#else /* !OPENIB_HAVE_XRC: no XRC verbs in this build */

int openib_xrc_dev_open(struct openib_device *dev)
{
    (void) dev;
    return OPAL_ERR_NOT_SUPPORTED;
}

void openib_xrc_dev_close(struct openib_device *dev)
{
    (void) dev;
}

struct ibv_srq *openib_xrc_srq_create(mca_btl_openib_module_t *m, uint32_t max_wr)
{
    (void) m;
    (void) max_wr;
    return NULL;
}

void openib_xrc_port_fini(mca_btl_openib_module_t *m)
{
    (void) m;
}

static int port_srqs(void *btl, uint32_t *srqn, int max, int *n, uint32_t *rq_layout)
{
    (void) btl;
    (void) srqn;
    (void) max;
    (void) n;
    (void) rq_layout;
    return OPAL_ERR_NOT_SUPPORTED;
}

/* Only port_srqs is ever reached: it makes an XRC CPC decline the port. */
const struct openib_cpc_xrc_ops openib_xrc_cpc_ops = {
    .size = sizeof(struct openib_cpc_xrc_ops),
    .port_srqs = port_srqs,
};

#endif /* OPENIB_HAVE_XRC */

void openib_xrc_recv_orphan(mca_btl_openib_module_t *m, openib_frag_t *f, uint32_t length)
{
    struct openib_hdr *hdr = f->hdr;

    /* No endpoint: no credits to learn (X queues have none) and no ring
     * offers (xoob endpoints have no credit mailbox, so none are made). */
    /* handle_recv dropped anything shorter than the header */
    openib_deliver(m, NULL, hdr->tag, hdr + 1, (size_t) openib_recv_payload_len(length));
    f->ep = NULL;
    if (OPAL_SUCCESS != openib_post_recv(m, NULL, f)) {
        openib_frag_return(f);
    }
}

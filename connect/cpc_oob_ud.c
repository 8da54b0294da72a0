/*
 * cpc_oob_ud.c - the verbs datagram port that the side channel's UD
 * sessions run on (one per oob module, i.e. per port): a UD QP on the
 * BTL's PD, a receive CQ with a completion channel (its descriptor wakes
 * the side channel's thread), a send CQ polled to reuse send buffers, one
 * registered buffer for both, and the address handles of the peers'
 * ports, made once per port (by GID or LID) and found by hash.
 *
 * Called by the side channel's thread only (struct oob_dgram_ops); the
 * creation and destruction by the oob module.
 */
#include "opal_config.h"

#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal/class/opal_hash_table.h"
#include "opal/constants.h"

#include "common/openib_errno.h"
#include "common/openib_post.h"
#include "connect/cpc_oob_ud.h"
#include "wire/oob_wire.h"

/* Receive buffers: a burst of every peer of a large node opening sessions
 * at once is absorbed here; beyond it datagrams are dropped and sent
 * again. 256 x 320 bytes = 80 KiB per port and process. */
#define UD_RECVS 256
#define UD_SENDS 64
#define UD_GRH 40                        /* what the device writes before a datagram */
#define UD_SLOT 320                      /* a frame (184) and its GRH, rounded up */
/* The Q_Key of every openib side channel: a constant (not a secret: the
 * frames carry their own MACs), with the high bit clear (a controlled
 * Q_Key would need privileges). */
#define UD_QKEY 0x4f494255u

_Static_assert(UD_GRH + OOB_UD_FRAME_MAX <= UD_SLOT, "a frame must fit a buffer");

struct ah_key {
    uint8_t gid[16];
    uint16_t lid;
    uint8_t global;
    uint8_t pad;
};

struct oob_ud_port {
    struct ibv_context *ctx;
    struct ibv_comp_channel *chan;
    struct ibv_cq *rcq, *scq;
    struct ibv_qp *qp;
    struct ibv_mr *mr;
    uint8_t *buf;                        /* UD_RECVS receive slots, then UD_SENDS send slots */
    int free_send[UD_SENDS], nfree;
    unsigned unacked_events;             /* CQ events taken, not yet acknowledged */
    uint8_t port_num;
    int gid_index;
    uint8_t traffic_class, service_level; /* as the BTL's own packets */
    opal_hash_table_t ahs;               /* struct ah_key -> struct ibv_ah * */
    bool ahs_ready;
};

static uint8_t *slot(struct oob_ud_port *p, int i)
{
    return p->buf + (size_t) i * UD_SLOT;
}

/* post_recv and to_rts answer an OPAL code; *err gets the verbs' errno
 * value for the set-up failure's message. */
static int post_recv(struct oob_ud_port *p, int i, int *err)
{
    struct ibv_sge sge = { .addr = (uintptr_t) slot(p, i), .length = UD_SLOT,
                           .lkey = p->mr->lkey };
    struct ibv_recv_wr wr = { .wr_id = (uint64_t) i, .sg_list = &sge, .num_sge = 1 }, *bad;

    *err = ibv_post_recv(p->qp, &wr, &bad);
    return openib_err_from_errno(*err);
}

static int to_rts(struct oob_ud_port *p, int *err)
{
    struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0,
                             .port_num = p->port_num, .qkey = UD_QKEY };

    if (ibv_modify_qp(p->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY)) {
        goto fail;
    }
    a = (struct ibv_qp_attr) { .qp_state = IBV_QPS_RTR };
    if (ibv_modify_qp(p->qp, &a, IBV_QP_STATE)) {
        goto fail;
    }
    a = (struct ibv_qp_attr) { .qp_state = IBV_QPS_RTS, .sq_psn = 0 };
    if (ibv_modify_qp(p->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN)) {
        goto fail;
    }
    return OPAL_SUCCESS;

fail:
    *err = errno;
    return openib_err_from_errno(*err);
}

static void ud_destroy(void *vp)
{
    struct oob_ud_port *p = vp;
    void *key, *value, *node = NULL;
    size_t key_len;

    if (NULL == p) {
        return;
    }
    if (p->ahs_ready) {
        int rc = opal_hash_table_get_first_key_ptr(&p->ahs, &key, &key_len, &value, &node);
        while (OPAL_SUCCESS == rc) {
            (void) ibv_destroy_ah(value);
            rc = opal_hash_table_get_next_key_ptr(&p->ahs, &key, &key_len, &value, node, &node);
        }
        OBJ_DESTRUCT(&p->ahs);
    }
    if (p->qp) {
        (void) ibv_destroy_qp(p->qp);
    }
    if (p->mr) {
        (void) ibv_dereg_mr(p->mr);
    }
    if (p->rcq) {
        ibv_ack_cq_events(p->rcq, p->unacked_events);
        (void) ibv_destroy_cq(p->rcq);
    }
    if (p->scq) {
        (void) ibv_destroy_cq(p->scq);
    }
    if (p->chan) {
        (void) ibv_destroy_comp_channel(p->chan);
    }
    free(p->buf);
    free(p);
}

int oob_ud_port_create(const struct openib_cpc_port *port, struct oob_ud_port **out,
                       uint32_t *qpn, char *why, size_t why_len)
{
    struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_UD,
                                   .cap = { .max_send_wr = UD_SENDS, .max_recv_wr = UD_RECVS,
                                            .max_send_sge = 1, .max_recv_sge = 1 } };
    struct oob_ud_port *p = calloc(1, sizeof(*p));
    const char *what = "out of memory";
    int i, err = ENOMEM; /* an errno value, for the message only */

    if (NULL == p) {
        goto fail;
    }
    if (NULL == port->ctx || NULL == port->pd) {
        what = "the port's verbs context";
        err = ENODEV; /* a port without a device (unit tests) */
        goto fail;
    }
    p->ctx = port->ctx;
    p->port_num = port->port_num;
    p->gid_index = port->gid_index;
    if (OPENIB_HAS_FIELD(port, struct openib_cpc_port, service_level)) {
        p->traffic_class = port->traffic_class;
        p->service_level = port->service_level;
    }
    p->buf = calloc(UD_RECVS + UD_SENDS, UD_SLOT);
    if (NULL == p->buf) {
        goto fail;
    }
    what = "ibv_create_comp_channel";
    p->chan = ibv_create_comp_channel(port->ctx);
    if (NULL == p->chan || fcntl(p->chan->fd, F_SETFL,
                                 fcntl(p->chan->fd, F_GETFL) | O_NONBLOCK) < 0) {
        goto fail_errno;
    }
    what = "ibv_create_cq";
    p->rcq = ibv_create_cq(port->ctx, UD_RECVS, NULL, p->chan, 0);
    if (NULL == p->rcq) {
        goto fail_errno; /* before another call overwrites errno */
    }
    p->scq = ibv_create_cq(port->ctx, UD_SENDS, NULL, NULL, 0);
    if (NULL == p->scq) {
        goto fail_errno;
    }
    what = "ibv_reg_mr";
    p->mr = ibv_reg_mr(port->pd, p->buf, (size_t) (UD_RECVS + UD_SENDS) * UD_SLOT,
                       IBV_ACCESS_LOCAL_WRITE);
    if (NULL == p->mr) {
        goto fail_errno;
    }
    what = "ibv_create_qp (UD)";
    qa.send_cq = p->scq;
    qa.recv_cq = p->rcq;
    p->qp = ibv_create_qp(port->pd, &qa);
    if (NULL == p->qp) {
        goto fail_errno;
    }
    what = "ibv_modify_qp (UD to RTS)";
    if (OPAL_SUCCESS != to_rts(p, &err)) {
        goto fail;
    }
    what = "ibv_post_recv";
    for (i = 0; i < UD_RECVS; ++i) {
        if (OPAL_SUCCESS != post_recv(p, i, &err)) {
            goto fail;
        }
    }
    for (i = 0; i < UD_SENDS; ++i) {
        p->free_send[i] = UD_RECVS + i;
    }
    p->nfree = UD_SENDS;
    what = "ibv_req_notify_cq";
    if (ibv_req_notify_cq(p->rcq, 0)) {
        goto fail_errno;
    }
    OBJ_CONSTRUCT(&p->ahs, opal_hash_table_t);
    if (OPAL_SUCCESS != opal_hash_table_init(&p->ahs, 64)) {
        OBJ_DESTRUCT(&p->ahs);
        what = "opal_hash_table_init";
        err = ENOMEM;
        goto fail;
    }
    p->ahs_ready = true;
    *qpn = p->qp->qp_num;
    *out = p;
    return OPAL_SUCCESS;

fail_errno:
    err = errno ? errno : EIO;
fail:
    snprintf(why, why_len, "no UD side channel on %s:%u: %s failed (%s)", port->dev_name,
             (unsigned) port->port_num, what, strerror(err));
    ud_destroy(p);
    return OPAL_ERR_NOT_SUPPORTED;
}

/* The address handle for a peer port, made the first time it is needed. */
static struct ibv_ah *ah_for(struct oob_ud_port *p, const struct oob_ud_addr *to)
{
    struct ah_key k;
    struct ibv_ah_attr a = { .dlid = to->lid, .sl = p->service_level, .port_num = p->port_num };
    void *ah = NULL;

    memset(&k, 0, sizeof(k));
    k.global = to->global;
    k.lid = to->global ? 0 : to->lid;
    if (to->global) {
        memcpy(k.gid, to->gid, 16);
    }
    if (OPAL_SUCCESS == opal_hash_table_get_value_ptr(&p->ahs, &k, sizeof(k), &ah)) {
        return ah;
    }
    if (to->global) {
        a.is_global = 1;
        memcpy(a.grh.dgid.raw, to->gid, 16);
        a.grh.sgid_index = (uint8_t) p->gid_index;
        a.grh.hop_limit = 64;
        a.grh.traffic_class = p->traffic_class;
    }
    ah = ibv_create_ah(p->qp->pd, &a);
    if (ah && OPAL_SUCCESS != opal_hash_table_set_value_ptr(&p->ahs, &k, sizeof(k), ah)) {
        (void) ibv_destroy_ah(ah);
        ah = NULL;
    }
    return ah;
}

static void reap_sends(struct oob_ud_port *p)
{
    struct ibv_wc wc[16];
    int n, i;

    while ((n = ibv_poll_cq(p->scq, 16, wc)) > 0) {
        for (i = 0; i < n; ++i) {
            p->free_send[p->nfree++] = (int) wc[i].wr_id;
        }
    }
}

static int ud_send(void *vp, const struct oob_ud_addr *to, const uint8_t *buf, size_t len)
{
    struct oob_ud_port *p = vp;
    struct ibv_send_wr wr = { .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
                              .num_sge = 1 };
    struct ibv_sge sge;
    struct ibv_ah *ah;
    int i;

    if (len > UD_SLOT) {
        return OPAL_ERR_BAD_PARAM;
    }
    if (0 == p->nfree) {
        reap_sends(p);
        if (0 == p->nfree) {
            return OPAL_ERR_OUT_OF_RESOURCE;
        }
    }
    ah = ah_for(p, to);
    if (NULL == ah) {
        return OPAL_ERR_UNREACH;
    }
    i = p->free_send[--p->nfree];
    memcpy(slot(p, i), buf, len);
    sge = (struct ibv_sge) { .addr = (uintptr_t) slot(p, i), .length = (uint32_t) len,
                             .lkey = p->mr->lkey };
    wr.wr_id = (uint64_t) i;
    wr.sg_list = &sge;
    wr.wr.ud.ah = ah;
    wr.wr.ud.remote_qpn = to->qpn;
    wr.wr.ud.remote_qkey = UD_QKEY;
    if (openib_post_send_one(p->qp, &wr)) { /* not queued: the slot is free again */
        p->free_send[p->nfree++] = i;
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    return OPAL_SUCCESS;
}

/* Where a datagram came from: the port (GID from its GRH, or LID) and QP. */
static void source_of(struct oob_ud_port *p, const struct ibv_wc *wc, const uint8_t *grh,
                      struct oob_ud_addr *from)
{
    struct ibv_ah_attr a;

    memset(from, 0, sizeof(*from));
    from->qpn = wc->src_qp;
    from->lid = wc->slid;
    if (!(wc->wc_flags & IBV_WC_GRH)) {
        return;
    }
    from->global = true;
    /* RoCE v2 puts an IPv4 header where the GRH was: the library knows
     * which from the GID table and gives the sender's GID either way */
    if (0 == ibv_init_ah_from_wc(p->ctx, p->port_num, (struct ibv_wc *) wc,
                                 (struct ibv_grh *) grh, &a) && a.is_global) {
        memcpy(from->gid, a.grh.dgid.raw, 16);
    } else {
        memcpy(from->gid, ((const struct ibv_grh *) grh)->sgid.raw, 16);
    }
}

static bool ud_recv(void *vp, struct oob_ud_addr *from, uint8_t *buf, size_t cap, size_t *len)
{
    struct oob_ud_port *p = vp;
    struct ibv_wc wc;

    while (1 == ibv_poll_cq(p->rcq, 1, &wc)) {
        int i = (int) wc.wr_id;
        bool ok = IBV_WC_SUCCESS == wc.status && wc.byte_len >= UD_GRH;

        if (ok) {
            size_t n = wc.byte_len - UD_GRH;
            source_of(p, &wc, slot(p, i), from);
            *len = n;
            memcpy(buf, slot(p, i) + UD_GRH, n < cap ? n : cap);
        }
        if (IBV_WC_WR_FLUSH_ERR != wc.status) {
            int err;
            (void) post_recv(p, i, &err);
        }
        if (ok) {
            return true;
        }
    }
    return false;
}

static int ud_fd(void *vp)
{
    return ((struct oob_ud_port *) vp)->chan->fd;
}

/* Take the channel's notice, ask for the next; events are acknowledged in
 * batches (each acknowledgement takes a lock in the library). */
static void ud_rearm(void *vp)
{
    struct oob_ud_port *p = vp;
    struct ibv_cq *cq;
    void *ctx;

    while (0 == ibv_get_cq_event(p->chan, &cq, &ctx)) {
        if (++p->unacked_events >= 64) {
            ibv_ack_cq_events(p->rcq, p->unacked_events);
            p->unacked_events = 0;
        }
    }
    (void) ibv_req_notify_cq(p->rcq, 0);
}

const struct oob_dgram_ops oob_ud_verbs_ops = {
    .send = ud_send,
    .recv = ud_recv,
    .fd = ud_fd,
    .rearm = ud_rearm,
    .destroy = ud_destroy,
};

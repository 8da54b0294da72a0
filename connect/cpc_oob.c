/*
 * cpc_oob.c - the "oob" CPC: QP data exchanged over a TCP side channel.
 *
 * Each port's module listens on a TCP port and publishes {addresses, port}
 * as its modex blob. A connection is a three-message handshake on one TCP
 * session, all handled from progress without blocking:
 *
 *   initiator                          responder
 *   REQ (its QP data)  ------------->  QPs to RTR, post receives
 *                      <-------------  REP (its QP data)
 *   QPs to RTR+RTS, post receives
 *   RTU                ------------->  QPs to RTS
 *   complete                           complete
 *
 * Crossing connects (both sides send REQ): the side whose process name
 * compares lower keeps initiating and answers the other's REQ with
 * REJ(CROSS); the other abandons its REQ and responds. Both sides decide
 * from the same two names, so exactly one handshake completes.
 *
 * Default priority 50: above rdma_cm (40) so that oob is the default today,
 * below xoob (60) so that XRC wins where a port offers it. Overridable with
 * btl_openib_connect_oob_priority.
 */
#include "opal_config.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opal/constants.h"
#include "opal/mca/base/mca_base_var.h"

#include "connect/cpc_oob.h"
#include "connect/cpc_oob_channel.h"
#include "connect/cpc_internal.h"
#include "connect/cpc_xoob.h"
#include "connect/cpc_active.h"
#include "connect/openib_connect.h"

#define OOB_MAGIC 0x4f49424fu /* "OIBO" */
#define OOB_VERSION 1
#define OOB_ID_LEN 8

enum oob_type { OOB_REQ = 1, OOB_REP = 2, OOB_RTU = 3, OOB_REJ = 4 };
enum oob_reject { REJ_CROSS = 1, REJ_NO_ENDPOINT = 2, REJ_BAD = 3 };

enum oob_state {
    ST_IDLE = 0,
    ST_REQ_SENT,     /* we initiated, waiting for REP */
    ST_WAIT_PEER,    /* lost a crossing: waiting for the peer's REQ */
    ST_RETRY,        /* will send REQ again at retry_ms */
    ST_RESPONDING,   /* REP sent, waiting for RTU */
    ST_DONE,
    ST_FAILED,
};

struct oob_module {
    struct openib_cpc_module base;   /* first: the framework sees this */
    int listen_id;
    const struct openib_cpc_btl_ops *btl_ops; /* learned at endpoint_init */
    void *btl;
};

struct oob_ep {
    enum oob_state st;
    struct openib_cpc_endpoint *cep;
    struct oob_module *mod;
    int sid;              /* our outgoing session, -1 if none */
    int resp_sid;         /* the session we answer on, -1 if none */
    long deadline_ms;     /* whole handshake */
    long retry_ms;
    int attempts;
    int active_index;
};

static int oob_timeout_s = 30;
static int oob_retries = 50;

/* endpoints with a handshake in progress (for timers) */
static struct openib_cpc_active active = OPENIB_CPC_ACTIVE_INIT(struct oob_ep, active_index);

/* ---- wire format: big-endian, fixed OOB_MSG_SIZE ---- */

static uint8_t *put32(uint8_t *p, uint32_t v)
{
    v = htonl(v);
    memcpy(p, &v, 4);
    return p + 4;
}

static const uint8_t *get32(const uint8_t *p, uint32_t *v)
{
    memcpy(v, p, 4);
    *v = ntohl(*v);
    return p + 4;
}

static void encode(uint8_t *m, enum oob_type type, uint16_t reason, const void *src,
                   const void *dst, const struct openib_cpc_qp_info *q)
{
    uint8_t *p = m;
    int i;

    memset(m, 0, OOB_MSG_SIZE);
    p = put32(p, OOB_MAGIC);
    *p++ = OOB_VERSION;
    *p++ = (uint8_t) type;
    *p++ = reason >> 8;
    *p++ = reason & 0xff;
    memcpy(p, src, OOB_ID_LEN);
    memcpy(p + OOB_ID_LEN, dst, OOB_ID_LEN);
    p += 2 * OOB_ID_LEN;
    if (NULL == q) {
        return;
    }
    p = put32(p, q->mtu);
    memcpy(p, q->gid, 16);
    p += 16;
    *p++ = q->lid >> 8;
    *p++ = q->lid & 0xff;
    *p++ = q->num_qps;
    *p++ = 0;
    for (i = 0; i < OPENIB_CPC_MAX_QPS; ++i) {
        p = put32(p, q->qpn[i]);
    }
    for (i = 0; i < OPENIB_CPC_MAX_QPS; ++i) {
        p = put32(p, q->psn[i]);
    }
    p = put32(p, q->rq_layout);
    p = put32(p, q->mailbox_rkey);
    p = put32(p, (uint32_t) (q->mailbox_addr >> 32));
    put32(p, (uint32_t) q->mailbox_addr);
}

struct oob_msg {
    enum oob_type type;
    uint16_t reason;
    uint8_t src[OOB_ID_LEN], dst[OOB_ID_LEN];
    struct openib_cpc_qp_info q;
};

static int decode(const uint8_t *m, struct oob_msg *out)
{
    const uint8_t *p = m;
    uint32_t v, hi, lo;
    int i;

    p = get32(p, &v);
    if (v != OOB_MAGIC || p[0] != OOB_VERSION || p[1] < OOB_REQ || p[1] > OOB_REJ) {
        return OPAL_ERR_BAD_PARAM;
    }
    out->type = p[1];
    out->reason = (uint16_t) (p[2] << 8 | p[3]);
    p += 4;
    memcpy(out->src, p, OOB_ID_LEN);
    memcpy(out->dst, p + OOB_ID_LEN, OOB_ID_LEN);
    p += 2 * OOB_ID_LEN;
    openib_cpc_qp_info_init(&out->q);
    p = get32(p, &out->q.mtu);
    memcpy(out->q.gid, p, 16);
    p += 16;
    out->q.lid = (uint16_t) (p[0] << 8 | p[1]);
    out->q.num_qps = p[2];
    p += 4;
    if (out->q.num_qps > OPENIB_CPC_MAX_QPS) {
        return OPAL_ERR_BAD_PARAM;
    }
    for (i = 0; i < OPENIB_CPC_MAX_QPS; ++i) {
        p = get32(p, &out->q.qpn[i]);
    }
    for (i = 0; i < OPENIB_CPC_MAX_QPS; ++i) {
        p = get32(p, &out->q.psn[i]);
    }
    p = get32(p, &out->q.rq_layout);
    p = get32(p, &out->q.mailbox_rkey);
    p = get32(p, &hi);
    get32(p, &lo);
    out->q.mailbox_addr = (uint64_t) hi << 32 | lo;
    return OPAL_SUCCESS;
}

/* ---- blob: version, naddr, port, addrs ---- */

static int blob_decode(const uint8_t *b, uint8_t len, uint32_t *addrs, int *naddr,
                       uint16_t *port)
{
    int i;

    if (len < 4 || b[0] != OOB_VERSION || b[1] == 0 || b[1] > OOB_MAX_ADDRS ||
        len < 4 + 4 * b[1]) {
        return OPAL_ERR_BAD_PARAM;
    }
    *naddr = b[1];
    *port = (uint16_t) (b[2] << 8 | b[3]);
    for (i = 0; i < *naddr; ++i) {
        memcpy(&addrs[i], b + 4 + 4 * i, 4);
    }
    return OPAL_SUCCESS;
}

/* ---- handshake ---- */

#define OOB_LOG(e, fmt, ...) \
    openib_cpc_log(100, "openib: oob %s: " fmt, (e)->cep->peer_desc, ##__VA_ARGS__)

static void fail(struct oob_ep *e, int rc, const char *why)
{
    char buf[160];

    if (e->st == ST_FAILED || e->st == ST_DONE) {
        return;
    }
    e->st = ST_FAILED;
    (void) openib_cpc_active_set(&active, e, false);
    if (e->sid >= 0) {
        oob_chan_close(e->sid);
        e->sid = -1;
    }
    if (e->resp_sid >= 0) {
        oob_chan_close(e->resp_sid);
        e->resp_sid = -1;
    }
    snprintf(buf, sizeof(buf), "oob: %s", why);
    e->cep->btl_ops->connect_failed(e->cep->btl_ep, rc, buf);
}

static void done(struct oob_ep *e)
{
    e->st = ST_DONE;
    (void) openib_cpc_active_set(&active, e, false);
    e->cep->btl_ops->connect_complete(e->cep->btl_ep);
}

static int send_req(struct oob_ep *e)
{
    struct openib_cpc_endpoint *c = e->cep;
    struct openib_cpc_qp_info q;
    uint8_t msg[OOB_MSG_SIZE];
    uint32_t addrs[OOB_MAX_ADDRS];
    uint16_t port;
    int naddr, rc;

    rc = blob_decode(c->peer_blob, c->peer_blob_len, addrs, &naddr, &port);
    if (OPAL_SUCCESS != rc) {
        fail(e, OPAL_ERR_UNREACH, "the peer's side-channel address in the modex is corrupt");
        return rc;
    }
    rc = c->btl_ops->local_qp_info(c->btl_ep, &q);
    if (OPAL_SUCCESS != rc) {
        fail(e, rc, "creating the queue pairs failed");
        return rc;
    }
    encode(msg, OOB_REQ, 0, c->local_id, c->peer_id, &q);
    rc = oob_chan_connect(addrs, naddr, port, msg, e, &e->sid);
    if (OPAL_SUCCESS != rc) {
        fail(e, rc, "cannot open a side-channel connection");
        return rc;
    }
    e->st = ST_REQ_SENT;
    e->attempts++;
    OOB_LOG(e, "REQ sent (attempt %d, session %d)", e->attempts, e->sid);
    (void) openib_cpc_active_set(&active, e, true);
    return OPAL_SUCCESS;
}

static int oob_start_connect(struct openib_cpc_module *m, struct openib_cpc_endpoint *cep)
{
    struct oob_ep *e = cep->cpc_private;

    switch (e->st) {
    case ST_IDLE:
        e->deadline_ms = openib_cpc_now_ms() + 1000L * oob_timeout_s;
        return send_req(e);
    case ST_FAILED:
        return OPAL_ERR_UNREACH;
    default:
        return OPAL_SUCCESS; /* already under way (e.g. the peer initiated) */
    }
}

static void reply_reject(int sid, const struct oob_msg *in, uint16_t reason)
{
    uint8_t msg[OOB_MSG_SIZE];

    encode(msg, OOB_REJ, reason, in->dst, in->src, NULL);
    oob_chan_send(sid, msg);
    oob_chan_close(sid);
}

static void on_req(struct oob_module *mod, int sid, const struct oob_msg *in)
{
    struct openib_cpc_endpoint *cep;
    struct openib_cpc_qp_info q;
    struct oob_ep *e;
    uint8_t msg[OOB_MSG_SIZE];
    char why[128] = "";
    int rc;

    cep = mod->btl_ops ? mod->btl_ops->endpoint_for_peer(mod->btl, in->src, OOB_ID_LEN, why,
                                                          sizeof(why))
                       : NULL;
    if (NULL == cep || NULL == cep->cpc_private) {
        reply_reject(sid, in, REJ_NO_ENDPOINT); /* the peer retries */
        return;
    }
    e = cep->cpc_private;
    OOB_LOG(e, "REQ received on session %d in state %d", sid, e->st);
    if (e->st == ST_REQ_SENT || e->st == ST_RETRY) {
        if (memcmp(cep->local_id, cep->peer_id, OOB_ID_LEN) < 0) {
            reply_reject(sid, in, REJ_CROSS); /* we keep initiating */
            return;
        }
        if (e->sid >= 0) {
            oob_chan_close(e->sid); /* we lose the crossing: answer theirs */
            e->sid = -1;
        }
    } else if (e->st == ST_DONE || e->st == ST_FAILED || e->st == ST_RESPONDING) {
        reply_reject(sid, in, REJ_BAD);
        return;
    }
    if (e->deadline_ms == 0 || e->st == ST_IDLE) {
        e->deadline_ms = openib_cpc_now_ms() + 1000L * oob_timeout_s;
    }
    rc = cep->btl_ops->connect_qps(cep->btl_ep, &in->q, false);
    if (OPAL_SUCCESS == rc) {
        rc = cep->btl_ops->post_recvs(cep->btl_ep);
    }
    if (OPAL_SUCCESS == rc) {
        rc = cep->btl_ops->local_qp_info(cep->btl_ep, &q);
    }
    if (OPAL_SUCCESS != rc) {
        reply_reject(sid, in, REJ_BAD);
        fail(e, rc, "setting up the queue pairs for the peer's request failed");
        return;
    }
    encode(msg, OOB_REP, 0, cep->local_id, cep->peer_id, &q);
    if (OPAL_SUCCESS != oob_chan_send(sid, msg)) {
        fail(e, OPAL_ERR_UNREACH, "the side channel closed before the reply");
        return;
    }
    e->resp_sid = sid;
    e->st = ST_RESPONDING;
    (void) openib_cpc_active_set(&active, e, true);
}

static void on_rtu(struct oob_module *mod, int sid, const struct oob_msg *in)
{
    struct openib_cpc_endpoint *cep;
    struct oob_ep *e;
    char why[128];

    cep = mod->btl_ops ? mod->btl_ops->endpoint_for_peer(mod->btl, in->src, OOB_ID_LEN, why,
                                                          sizeof(why))
                       : NULL;
    oob_chan_close(sid);
    if (NULL == cep || NULL == (e = cep->cpc_private) || e->st != ST_RESPONDING ||
        e->resp_sid != sid) {
        return;
    }
    e->resp_sid = -1;
    if (OPAL_SUCCESS != cep->btl_ops->qps_to_rts(cep->btl_ep)) {
        fail(e, OPAL_ERROR, "moving the queue pairs to RTS failed");
        return;
    }
    done(e);
}

static void on_initiator_msg(struct oob_ep *e, int sid, const struct oob_msg *in)
{
    struct openib_cpc_endpoint *cep = e->cep;
    uint8_t msg[OOB_MSG_SIZE];
    int rc;

    if (sid != e->sid) {
        return; /* an abandoned session */
    }
    OOB_LOG(e, "%s received (reason %u) in state %d", in->type == OOB_REJ ? "REJ" : "REP",
            in->reason, e->st);
    if (in->type == OOB_REJ) {
        oob_chan_close(sid);
        e->sid = -1;
        if (e->st != ST_REQ_SENT) {
            return;
        }
        if (in->reason == REJ_CROSS) {
            e->st = ST_WAIT_PEER; /* their REQ comes (or came) on our listener */
        } else if (in->reason == REJ_NO_ENDPOINT && e->attempts < oob_retries) {
            e->st = ST_RETRY;
            e->retry_ms = openib_cpc_now_ms() + 100L * e->attempts;
        } else {
            fail(e, OPAL_ERR_UNREACH, "the peer rejected the connection request");
        }
        return;
    }
    if (in->type != OOB_REP || e->st != ST_REQ_SENT) {
        return;
    }
    rc = cep->btl_ops->connect_qps(cep->btl_ep, &in->q, true);
    if (OPAL_SUCCESS == rc) {
        rc = cep->btl_ops->post_recvs(cep->btl_ep);
    }
    if (OPAL_SUCCESS != rc) {
        fail(e, rc, "connecting the queue pairs with the peer's reply failed");
        return;
    }
    encode(msg, OOB_RTU, 0, cep->local_id, cep->peer_id, NULL);
    oob_chan_send(sid, msg);
    oob_chan_close(sid); /* after the RTU is flushed */
    e->sid = -1;
    done(e);
}

static void on_error(const struct oob_event *ev)
{
    struct oob_ep *e = ev->owner;

    if (NULL == e || ev->sid != e->sid) {
        return; /* an accepted session or an abandoned one */
    }
    e->sid = -1;
    OOB_LOG(e, "side channel error in state %d: %s", e->st, ev->why);
    if (e->st == ST_REQ_SENT && e->attempts < oob_retries) {
        e->st = ST_RETRY;
        e->retry_ms = openib_cpc_now_ms() + 100L * e->attempts;
    } else if (e->st == ST_REQ_SENT) {
        fail(e, OPAL_ERR_UNREACH, ev->why);
    }
}

static void check_timers(void)
{
    long t = openib_cpc_now_ms();
    int i;

    for (i = active.n - 1; i >= 0; --i) {
        struct oob_ep *e = active.v[i];
        if (t > e->deadline_ms) {
            char why[96];
            snprintf(why, sizeof(why), "no answer within %d s (btl_openib_connect_oob_timeout)",
                     oob_timeout_s);
            fail(e, OPAL_ERR_TIMEOUT, why);
        } else if (e->st == ST_RETRY && t >= e->retry_ms) {
            send_req(e);
        }
    }
}

int openib_cpc_oob_progress(void)
{
    static unsigned tick;
    struct oob_event ev;
    int n = 0;

    while (oob_chan_poll(&ev)) {
        struct oob_msg in;

        n++;
        if (openib_cpc_xoob_dispatch(&ev)) {
            continue; /* xoob shares the side channel */
        }
        if (ev.type == OOB_EV_ERROR) {
            on_error(&ev);
            continue;
        }
        if (OPAL_SUCCESS != decode(ev.msg, &in)) {
            oob_chan_close(ev.sid);
            continue;
        }
        if (ev.owner) {
            on_initiator_msg(ev.owner, ev.sid, &in);
        } else if (ev.listen_owner && in.type == OOB_REQ) {
            on_req(ev.listen_owner, ev.sid, &in);
        } else if (ev.listen_owner && in.type == OOB_RTU) {
            on_rtu(ev.listen_owner, ev.sid, &in);
        }
    }
    if (0 == (++tick & 63)) {
        if (OPAL_UNLIKELY(active.n > 0)) {
            check_timers();
        }
        openib_cpc_xoob_check_timers();
    }
    return n;
}

/* ---- module and component ---- */

static int oob_endpoint_init(struct openib_cpc_module *m, struct openib_cpc_endpoint *cep)
{
    struct oob_module *mod = (struct oob_module *) m;
    struct oob_ep *e = calloc(1, sizeof(*e));

    if (NULL == e) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    if (cep->id_len != OOB_ID_LEN) {
        free(e);
        return OPAL_ERR_NOT_SUPPORTED;
    }
    e->cep = cep;
    e->mod = mod;
    e->sid = e->resp_sid = -1;
    e->active_index = -1;
    cep->cpc_private = e;
    mod->btl_ops = cep->btl_ops;
    return OPAL_SUCCESS;
}

static int oob_endpoint_finalize(struct openib_cpc_module *m, struct openib_cpc_endpoint *cep)
{
    struct oob_ep *e = cep->cpc_private;

    if (e) {
        (void) openib_cpc_active_set(&active, e, false);
        if (e->sid >= 0) {
            oob_chan_close(e->sid);
        }
        if (e->resp_sid >= 0) {
            oob_chan_close(e->resp_sid);
        }
        free(e);
        cep->cpc_private = NULL;
    }
    return OPAL_SUCCESS;
}

static int oob_module_finalize(struct openib_cpc_module *m)
{
    struct oob_module *mod = (struct oob_module *) m;

    oob_chan_unlisten(mod->listen_id);
    oob_chan_stop();
    openib_cpc_module_destroy(&mod->base);
    free(mod);
    return OPAL_SUCCESS;
}

static int oob_describe(const struct openib_cpc_module *m, char *buf, size_t len)
{
    snprintf(buf, len, "TCP side channel on port %u, %u address(es)",
             (unsigned) (m->blob[2] << 8 | m->blob[3]), (unsigned) m->blob[1]);
    return OPAL_SUCCESS;
}

static int oob_query(const struct openib_cpc_port *port, int priority,
                     struct openib_cpc_module **out, char *why, size_t why_len)
{
    struct oob_module *mod;
    uint32_t addrs[OOB_MAX_ADDRS];
    uint16_t tcp_port;
    int naddr, rc;

    naddr = oob_local_addrs(addrs, OOB_MAX_ADDRS);
    if (naddr == 0) {
        snprintf(why, why_len, "this host has no IPv4 address for the side channel");
        return OPAL_ERR_NOT_SUPPORTED;
    }
    mod = calloc(1, sizeof(*mod));
    if (NULL == mod) {
        snprintf(why, why_len, "out of memory");
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    rc = oob_chan_start();
    if (OPAL_SUCCESS != rc) {
        snprintf(why, why_len, "cannot start the side-channel thread");
        free(mod);
        return rc;
    }
    rc = oob_chan_listen(mod, &tcp_port, &mod->listen_id);
    if (OPAL_SUCCESS != rc) {
        snprintf(why, why_len, "cannot listen on a TCP port for the side channel");
        oob_chan_stop();
        free(mod);
        return OPAL_ERR_NOT_SUPPORTED;
    }
    openib_cpc_module_init(&mod->base);
    mod->base.component = &openib_cpc_oob_component;
    mod->base.priority = (uint8_t) priority;
    mod->base.blob[0] = OOB_VERSION;
    mod->base.blob[1] = (uint8_t) naddr;
    mod->base.blob[2] = tcp_port >> 8;
    mod->base.blob[3] = tcp_port & 0xff;
    memcpy(mod->base.blob + 4, addrs, 4 * naddr);
    mod->base.blob_len = (uint8_t) (4 + 4 * naddr);
    mod->base.endpoint_init = oob_endpoint_init;
    mod->base.start_connect = oob_start_connect;
    mod->base.endpoint_finalize = oob_endpoint_finalize;
    mod->base.finalize = oob_module_finalize;
    mod->base.uses_cts = false;
    mod->base.describe = oob_describe;
    mod->btl = port->btl;
    *out = &mod->base;
    return OPAL_SUCCESS;
}

static void oob_register(const struct openib_cpc_component *self)
{
    (void) self;
    (void) mca_base_var_register("opal", "btl", "openib", "connect_oob_timeout",
                                 "Seconds the oob CPC waits for a connection handshake",
                                 MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
                                 MCA_BASE_VAR_SCOPE_READONLY, &oob_timeout_s);
    (void) mca_base_var_register("opal", "btl", "openib", "connect_oob_retries",
                                 "Times the oob CPC retries a refused or failed handshake",
                                 MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
                                 MCA_BASE_VAR_SCOPE_READONLY, &oob_retries);
}

static int oob_finalize(void)
{
    openib_cpc_active_fini(&active);
    return OPAL_SUCCESS;
}

const struct openib_cpc_component openib_cpc_oob_component = {
    .size = sizeof(struct openib_cpc_component),
    .abi_version = OPENIB_CPC_ABI_VERSION,
    .name = "oob",
    .id = OPENIB_CPC_ID_OOB,
    .default_priority = 50,
    .register_params = oob_register,
    .query = oob_query,
    .finalize = oob_finalize,
};

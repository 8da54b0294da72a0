/*
 * cpc_xoob_responder.c - xoob's responder: a REQ is checked (cpc_xoob.c has
 * the order), then answered with a target QP for the initiator's send QP,
 * made or found by the BTL within caps, or refused with a REJ.
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connect/cpc_auth.h"
#include "connect/cpc_oob.h"
#include "connect/cpc_oob_channel.h"
#include "connect/cpc_xoob_int.h"

/* A target QP made for (a remote process, its send QP). */
struct xoob_tgt {
    uint8_t src[XOOB_ID_LEN];
    uint32_t qpn;
};

/* Caps on target QPs, per listening port, so that no member can make this
 * process create QPs without bound. A process sends to this node on one
 * send QP per port of its own that reaches us, so a few per process cover
 * multi-rail senders; more is a member misbehaving. The total is that share
 * for every process of the job, plus headroom for processes of jobs
 * connected later (MPI_Comm_spawn), whose names the job size does not
 * cover. Unknown job size: a fixed bound. */
#define XOOB_TGT_PER_PROCESS 4
#define XOOB_TGT_SPAWN_HEADROOM 256
#define XOOB_TGT_UNKNOWN_JOB 4096

/* ---- responder: the port's XRC domain, and the sender's endpoint for its
 * published addresses and token ---- */

/* Our endpoint state for a peer, if the BTL chose xoob for it. */
static struct xoob_ep *own_ep(struct openib_cpc_endpoint *cep)
{
    struct xoob_ep *e = cep ? cep->cpc_private : NULL;

    return e && XOOB_EP_MAGIC == e->magic ? e : NULL;
}

static void refuse(const struct oob_event *ev, enum openib_refusal r, const char *detail)
{
    char from[INET_ADDRSTRLEN];

    openib_cpc_oob_refused("xoob", REFUSAL_MALFORMED == r ? "frame" : "request",
                           openib_cpc_oob_addr(ev->peer_addr, from, sizeof(from)), r, detail);
    oob_chan_close(ev->sid); /* a stranger gets no answer */
}

/* An answer to a verified request, sealed with the initiator's token. */
static void reply(int sid, const struct xoob_msg *in, const struct xoob_module *mod,
                  const uint8_t *key, uint8_t type, uint16_t reason, uint32_t qpn,
                  const char *why)
{
    struct xoob_msg m = { .env.type = type, .env.reason = reason, .qpn = qpn, .mtu = mod->mtu,
                          .lid = mod->lid, .node_id = mod->node_id };
    uint8_t buf[OOB_MSG_SIZE];

    memcpy(m.env.src, in->env.dst, XOOB_ID_LEN);
    memcpy(m.env.dst, in->env.src, XOOB_ID_LEN);
    memcpy(m.gid, mod->gid, 16);
    memcpy(m.env.echo, in->env.nonce, OPENIB_AUTH_NONCE_LEN);
    snprintf(m.why, sizeof(m.why), "%s", why ? why : "");
    if (OPAL_SUCCESS == openib_auth_nonce(m.env.nonce) &&
        OPAL_SUCCESS == xoob_msg_encode(&m, buf, sizeof(buf), key)) {
        oob_chan_send(sid, buf);
    }
    oob_chan_close(sid); /* after the reply is flushed */
}

static int tgt_find(const struct xoob_module *mod, const uint8_t *src, uint32_t qpn, int *mine)
{
    int i, found = -1;

    *mine = 0;
    for (i = 0; i < mod->ntgt; ++i) {
        if (0 == memcmp(mod->tgts[i].src, src, XOOB_ID_LEN)) {
            ++*mine;
            if (mod->tgts[i].qpn == qpn) {
                found = i;
            }
        }
    }
    return found;
}

static int tgt_cap(const struct xoob_module *mod)
{
    uint32_t n = openib_cpc_oob_job_size(mod->self);

    return 0 == n ? XOOB_TGT_UNKNOWN_JOB
                  : (int) (n < 65536 ? n : 65536) * XOOB_TGT_PER_PROCESS + XOOB_TGT_SPAWN_HEADROOM;
}

/* May this sender get a (new) target QP for this send QP? A repeated
 * request (same send QP) always may: the BTL finds the same one again. */
static bool tgt_allowed(const struct xoob_module *mod, const struct xoob_msg *in, char *why,
                        size_t len)
{
    int mine;

    if (tgt_find(mod, in->env.src, in->qpn, &mine) >= 0) {
        return true;
    }
    if (mine >= XOOB_TGT_PER_PROCESS) {
        snprintf(why, len, "%d XRC target QPs for this process already (at most %d)", mine,
                 XOOB_TGT_PER_PROCESS);
        return false;
    }
    if (mod->ntgt >= tgt_cap(mod)) {
        snprintf(why, len, "%d XRC target QPs on this port already (at most %d for this job)",
                 mod->ntgt, tgt_cap(mod));
        return false;
    }
    return true;
}

static void tgt_remember(struct xoob_module *mod, const struct xoob_msg *in)
{
    int mine;

    if (tgt_find(mod, in->env.src, in->qpn, &mine) >= 0) {
        return;
    }
    if (mod->ntgt == mod->tgt_room) {
        int room = mod->tgt_room ? 2 * mod->tgt_room : 16;
        struct xoob_tgt *t = realloc(mod->tgts, sizeof(*t) * (size_t) room);
        if (NULL == t) {
            return; /* the cap only loosens: the QP itself exists */
        }
        mod->tgts = t;
        mod->tgt_room = room;
    }
    memcpy(mod->tgts[mod->ntgt].src, in->env.src, XOOB_ID_LEN);
    mod->tgts[mod->ntgt].qpn = in->qpn;
    mod->ntgt++;
}

void xoob_on_req(struct xoob_module *mod, const struct oob_event *ev)
{
    struct openib_cpc_xrc_peer ini = OPENIB_CPC_XRC_PEER_INITIALIZER;
    struct openib_cpc_endpoint *cep;
    struct xoob_msg in;
    struct xoob_ep *e;
    enum openib_refusal r;
    char why[128] = "";
    uint32_t tgt = 0;
    int sid = ev->sid;
    int rc;

    if (!mod->have_self || NULL == mod->btl_ops) {
        /* no endpoint set up yet, so we do not know our name yet: closed
         * without an answer, an honest initiator retries */
        openib_cpc_log(100, "openib: xoob: a request before any endpoint: closing its session");
        oob_chan_close(sid);
        return;
    }
    r = oob_check_request_frame(xoob_msg_view(ev->msg, OOB_MSG_SIZE, XOOB_REQ, XOOB_REQ, &in),
                                mod->self, openib_cpc_oob_job_size(mod->self),
                                openib_auth_local_token(), openib_cpc_oob_replay());
    if (REFUSAL_OK != r) {
        refuse(ev, r, REFUSAL_MALFORMED == r ? "not an xoob frame of this version"
                      : REFUSAL_WRONG_DST == r ? "meant for another process: a duplicate or "
                                                 "loopback address?"
                      : REFUSAL_NOT_MEMBER == r ? "the claimed sender is not a process of this job"
                      : REFUSAL_BAD_MAC == r ? "not keyed with our token: not a job member, or "
                                               "forged"
                                             : "a nonce seen before");
        return;
    }
    cep = mod->btl_ops->endpoint_for_peer(mod->btl, in.env.src, XOOB_ID_LEN, why, sizeof(why));
    e = own_ep(cep);
    if (NULL == e) {
        openib_cpc_oob_no_endpoint("xoob", sid, why);
        return;
    }
    r = oob_check_source(e->peer.addrs, e->peer.naddr, ev->peer_addr);
    if (REFUSAL_OK != r) {
        refuse(ev, r, cep->peer_desc);
        return;
    }
    oob_chan_trust(sid);
    if (in.rq_layout != mod->rq_layout) {
        reply(sid, &in, mod, e->peer.token, XOOB_REJ, XOOB_REJ_LAYOUT, 0,
              "btl_openib_receive_queues differs between the two processes");
        return;
    }
    if (!tgt_allowed(mod, &in, why, sizeof(why))) {
        char from[INET_ADDRSTRLEN];
        openib_cpc_oob_refused("xoob", "request", openib_cpc_oob_addr(ev->peer_addr, from,
                                                                      sizeof(from)),
                               REFUSAL_CAP, why);
        reply(sid, &in, mod, e->peer.token, XOOB_REJ, XOOB_REJ_RESOURCE, 0,
              "too many XRC target QPs (cap)");
        return;
    }
    ini.qpn = in.qpn;
    ini.psn = in.psn;
    ini.mtu = in.mtu;
    ini.lid = in.lid;
    memcpy(ini.gid, in.gid, 16);
    rc = mod->xrc->tgt_qp_get(mod->btl, &ini, &tgt, why, sizeof(why));
    if (OPAL_SUCCESS != rc) {
        reply(sid, &in, mod, e->peer.token, XOOB_REJ, XOOB_REJ_RESOURCE, 0, why);
        return;
    }
    tgt_remember(mod, &in);
    openib_cpc_log(100, "openib: xoob: target QP %u for send QP %u of %s", tgt, in.qpn,
                   cep->peer_desc);
    reply(sid, &in, mod, e->peer.token, XOOB_REP, 0, tgt, NULL);
}

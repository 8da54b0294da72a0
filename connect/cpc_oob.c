/*
 * cpc_oob.c - the "oob" CPC: QP data exchanged over a side channel. This
 * file is the component and the module: parameters, query (the port's side
 * channels and modex blob), endpoints and the progress hook. A connection's
 * handshake is in cpc_oob_conn.c, the handlers of its frames in
 * cpc_oob_events.c (cpc_oob_int.h), the frames in wire/oob_wire.c.
 *
 * Each port's module has a UD side channel (one UD QP for every peer) and
 * a TCP listener, as btl_openib_oob_side_channel says, and publishes both
 * as its modex blob. A handshake runs on a UD session where both ports
 * have UD, else on a TCP connection (cpc_oob_channel.h: the same session
 * semantics either way); a peer whose UD side channel never answers while
 * its TCP listener does is tried over TCP from then on. A connection is a
 * three-message handshake on one session, all handled from progress
 * without blocking:
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
 * A busy peer is not a dead one. The REQ waits in the peer's side-channel
 * queue for as long as its process computes outside MPI; meanwhile the two
 * side-channel threads keep the session alive (PING/PONG, see
 * cpc_oob_channel.h), without touching any endpoint, so the waiting side
 * knows the peer is there and waits without a deadline (over UD the
 * peer's thread acknowledges every frame, keepalives included).
 * btl_openib_connect_oob_timeout bounds silence only: no frame at all on
 * the session (not even a PONG) for that long, counted while this process
 * looks (cpc_active.h). A peer that is really gone ends the handshake
 * sooner: its closed listener refuses the connection (over UD: a TCP
 * connect probes it when the UD QP stays silent), or its side of the
 * session closes. Failed attempts (side channel lost, no endpoint for us
 * yet) are retried with a back-off up to btl_openib_connect_oob_retries
 * times.
 *
 * Authentication (cpc_auth.h; layouts in wire/oob_wire.c): the blob carries
 * the process token; REQ and RTU are sealed with the responder's token, REP
 * and REJ with the initiator's, each echoing the nonce it answers. A
 * responder checks a frame on an accepted session in a fixed order: layout,
 * dst is us, src is of the job, MAC, freshness (oob_msg_view and
 * oob_check_request_frame), then the session's source among the sender's
 * published ones (its IPv4 addresses, or its UD QP and port GID or LID); only
 * then is the session trusted (oob_chan_trust) and anything touched. A
 * refused frame gets no answer (its session is closed) and changes nothing;
 * it is logged at verbose 1 with its reason token. The initiator checks
 * answers the same way (oob_check_answer_frame) before it uses them.
 *
 * Default priority 50: above rdma_cm (40) so that oob is the default today,
 * below xoob (60) so that XRC wins where a port offers it. Overridable with
 * btl_openib_connect_oob_priority.
 */
#include "opal_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "opal/constants.h"

#include "connect/cpc_oob.h"
#include "connect/cpc_oob_int.h"
#include "connect/cpc_oob_params.h"
#include "connect/cpc_oob_ud.h"
#include "connect/openib_connect.h"

/* btl_openib_connect_oob_timeout and _retries (oob_register) */
int oob_cpc_timeout_s = 30;
int oob_cpc_retries = 50;

/* ---- module and component ---- */

static int oob_endpoint_init(struct openib_cpc_module *m, struct openib_cpc_endpoint *cep)
{
    struct oob_module *mod = (struct oob_module *) m;
    struct oob_ep *e = openib_cpc_ep_alloc(sizeof(*e), OOB_EP_MAGIC);

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
    openib_cpc_ep_attach(cep, e, &mod->btl_ops, mod->self, &mod->have_self);
    return OPAL_SUCCESS;
}

static int oob_endpoint_finalize(struct openib_cpc_module *m, struct openib_cpc_endpoint *cep)
{
    struct oob_ep *e = cep->cpc_private;

    if (e) {
        (void) openib_cpc_active_set(&oob_cpc_active, e, false);
        if (e->sid >= 0) {
            oob_chan_close(e->sid);
        }
        if (e->resp_sid >= 0) {
            oob_chan_close(e->resp_sid);
        }
        return openib_cpc_ep_free(cep, e);
    }
    return OPAL_SUCCESS;
}

static int oob_module_finalize(struct openib_cpc_module *m)
{
    struct oob_module *mod = (struct oob_module *) m;

    if (mod->listen_id >= 0) {
        oob_chan_unlisten(mod->listen_id);
    }
    if (mod->ud_id >= 0) {
        oob_chan_unlisten_ud(mod->ud_id); /* its QP is on the BTL's PD: gone now */
    }
    oob_chan_stop();
    openib_cpc_module_destroy(&mod->base);
    free(mod);
    return OPAL_SUCCESS;
}

static int oob_describe(const struct openib_cpc_module *m, char *buf, size_t len)
{
    struct oob_blob b = { .naddr = 0 };

    (void) oob_blob_decode(m->blob, m->blob_len, &b, NULL);
    buf[0] = '\0';
    if (b.ud_qpn) {
        openib_cpc_strcatf(buf, len, "UD side channel on QP 0x%x", (unsigned) b.ud_qpn);
    }
    if (b.naddr) {
        openib_cpc_strcatf(buf, len, "%sTCP side channel on port %u, %d address(es)",
                           b.ud_qpn ? "; " : "", (unsigned) b.port, b.naddr);
    }
    return OPAL_SUCCESS;
}

/* The port's side channels as btl_openib_oob_side_channel asks: a UD QP
 * (auto, ud) and TCP addresses (auto, tcp). Either may be missing in auto;
 * NOT_SUPPORTED with why when none is left. */
static int side_channels(const struct openib_cpc_port *port, int side, struct oob_blob *b,
                         struct oob_ud_port **udp, char *why, size_t why_len)
{
    char ud_why[OPENIB_CPC_WHY_MAX] = "";

    *udp = NULL;
    if (OOB_SIDE_TCP != side &&
        OPAL_SUCCESS != oob_ud_port_create(port, udp, &b->ud_qpn, ud_why, sizeof(ud_why))) {
        if (OOB_SIDE_UD == side) {
            snprintf(why, why_len, "%s (btl_openib_oob_side_channel ud)", ud_why);
            return OPAL_ERR_NOT_SUPPORTED;
        }
        openib_cpc_log(10, "openib: oob: %s: TCP only", ud_why);
    }
    if (OOB_SIDE_UD != side) {
        b->naddr = oob_local_addrs(b->addrs, OOB_MAX_ADDRS);
    }
    if (NULL == *udp && 0 == b->naddr) {
        snprintf(why, why_len, "this host has no IPv4 address for the side channel%s%s",
                 ud_why[0] ? ", and " : "", ud_why);
        return OPAL_ERR_NOT_SUPPORTED;
    }
    return OPAL_SUCCESS;
}

static int oob_query(const struct openib_cpc_port *port, int priority,
                     struct openib_cpc_module **out, char *why, size_t why_len)
{
    int side = oob_params_side_channel(), rc;
    struct oob_blob b = { .naddr = 0 };
    struct oob_ud_port *udp = NULL;
    struct oob_module *mod;
    size_t blob_len = 0;

    if (openib_cpc_decline_iwarp(port, "oob", why, why_len)) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    if (OOB_SIDE_BAD == side) {
        snprintf(why, why_len, "btl_openib_oob_side_channel is none of auto, ud, tcp");
        return OPAL_ERR_NOT_SUPPORTED;
    }
    if (NULL == openib_auth_local_token()) {
        snprintf(why, why_len, "no random bytes from the kernel for the handshake token");
        return OPAL_ERR_NOT_SUPPORTED;
    }
    rc = side_channels(port, side, &b, &udp, why, why_len);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    mod = calloc(1, sizeof(*mod));
    if (NULL == mod) {
        snprintf(why, why_len, "out of memory");
        rc = OPAL_ERR_OUT_OF_RESOURCE;
        goto fail_udp;
    }
    mod->listen_id = mod->ud_id = -1;
    rc = oob_chan_start();
    if (OPAL_SUCCESS != rc) {
        snprintf(why, why_len, "cannot start the side-channel thread");
        goto fail_mod;
    }
    if (b.naddr > 0 && OPAL_SUCCESS != oob_chan_listen(mod, &b.port, &mod->listen_id)) {
        b.naddr = 0;
        if (NULL == udp) {
            snprintf(why, why_len, "cannot listen on a TCP port for the side channel");
            rc = OPAL_ERR_NOT_SUPPORTED;
            goto fail_chan;
        }
        openib_cpc_log(10, "openib: oob: cannot listen on a TCP port: UD side channel only");
    }
    if (udp) {
        rc = oob_chan_listen_ud(mod, &oob_ud_verbs_ops, udp, &mod->ud_id);
        if (OPAL_SUCCESS != rc) {
            snprintf(why, why_len, "too many UD side channels in this process");
            goto fail_listen;
        }
        udp = NULL; /* the channel's now */
        openib_cpc_log(5, "openib: oob UD side channel on %s:%u QP 0x%x", port->dev_name,
                       (unsigned) port->port_num, (unsigned) b.ud_qpn);
    }
    /* a PING after a quarter of the silence bound: three more chances */
    oob_chan_set_ping_ms((int) (oob_cpc_timeout_ms() / 4));
    openib_cpc_module_init(&mod->base);
    mod->base.component = &openib_cpc_oob_component;
    mod->base.priority = (uint8_t) priority;
    memcpy(b.token, openib_auth_local_token(), sizeof(b.token));
    (void) oob_blob_encode(mod->base.blob, sizeof(mod->base.blob), &b, &blob_len);
    mod->base.blob_len = (uint8_t) blob_len;
    mod->base.endpoint_init = oob_endpoint_init;
    mod->base.start_connect = oob_cpc_start_connect;
    mod->base.endpoint_finalize = oob_endpoint_finalize;
    mod->base.finalize = oob_module_finalize;
    mod->base.uses_cts = false;
    mod->base.describe = oob_describe;
    mod->btl = port->btl;
    mod->ethernet = IBV_LINK_LAYER_ETHERNET == port->link_layer;
    mod->subnet_prefix = port->subnet_prefix;
    *out = &mod->base;
    return OPAL_SUCCESS;

fail_listen:
    if (mod->listen_id >= 0) {
        oob_chan_unlisten(mod->listen_id);
    }
fail_chan:
    oob_chan_stop();
fail_mod:
    free(mod);
fail_udp:
    if (udp) {
        oob_ud_verbs_ops.destroy(udp);
    }
    return rc;
}

static void oob_register(const struct openib_cpc_component *self)
{
    (void) self;
    oob_params_register(); /* the side channel's, shared with xoob */
    openib_cpc_register_int("connect_oob_timeout",
                            "Seconds of silence after which the oob CPC gives up on a "
                            "handshake: no answer at all from the peer, not even from its "
                            "side-channel thread, which answers keepalives while the peer "
                            "computes outside MPI. A busy peer is waited for however long "
                            "it takes; a peer whose process exited fails at once "
                            "(connection refused)",
                            &oob_cpc_timeout_s);
    openib_cpc_register_int("connect_oob_retries",
                            "Times the oob CPC retries a handshake that failed (side "
                            "channel lost, the peer had no endpoint for us yet), with a "
                            "back-off of up to 2 s; waiting for a busy peer is no retry",
                            &oob_cpc_retries);
}

void openib_connect_side_channel_counts(unsigned long long *ud_sessions,
                                        unsigned long long *tcp_connections)
{
    struct oob_chan_counts c;

    oob_chan_counts(&c);
    *ud_sessions = c.ud_opened + c.ud_accepted;
    *tcp_connections = c.tcp_opened + c.tcp_accepted;
}

static int oob_finalize(void)
{
    struct oob_chan_counts c;

    oob_chan_counts(&c);
    if (c.ud_opened + c.ud_accepted + c.tcp_opened + c.tcp_accepted) {
        openib_cpc_log(10, "openib: oob side channel: %lu sessions over UD (%lu opened, %lu "
                       "accepted; %lu datagrams with a frame, %lu sent again, %lu TCP probes), "
                       "%lu TCP connections (%lu opened, %lu accepted)",
                       c.ud_opened + c.ud_accepted, c.ud_opened, c.ud_accepted, c.ud_frames,
                       c.ud_resent, c.probes, c.tcp_opened + c.tcp_accepted, c.tcp_opened,
                       c.tcp_accepted);
    }
    openib_cpc_active_fini(&oob_cpc_active);
    return OPAL_SUCCESS;
}

/* The component's progress hook: the side channel on every call (so
 * `urgent` changes nothing), the timers of the handshakes under way every
 * 64th (a scan of an empty set returns at once). */
static int oob_progress(bool urgent)
{
    static unsigned tick;

    (void) urgent;
    return openib_cpc_side_channel_progress_with(&tick, oob_cpc_check_timers);
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
    .progress = oob_progress,
};

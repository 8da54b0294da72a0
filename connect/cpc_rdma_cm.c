/*
 * cpc_rdma_cm.c - the "rdma_cm" CPC (also accepted as "rdmacm"): connection
 * setup through librdmacm. This file is the component and the module: its
 * parameters, the per-port listener and the modex blob. The handshake is in
 * cpc_rdma_cm_conn.c, its private-data format in wire/rdma_cm_wire.c.
 *
 * rdma_cm is used only for addressing and the IB CM handshake; the BTL owns
 * the QPs (QP-less rdma_cm: cm_id->qp stays NULL). Each port's module
 * listens on the port's IPv4 address and publishes {address, port, the
 * process token} (24 bytes, see cpc_rdma_cm.h): requests and replies are
 * authenticated with the receiver's token (wire/rdma_cm_wire.c). A port
 * without an IPv4 address and a port whose address rdma_cm cannot bind
 * decline with the reason. On iWARP the CM moves the QPs itself: the BTL's
 * QPs are handed to it by number, one connection each, after the
 * handshake (cpc_rdma_cm_iwarp.c); uses_cts keeps MPA's rule that the
 * initiator sends first.
 *
 * Default priority 40, below oob (50): oob stays the documented default.
 * rdma_cm works on every link layer oob does here and is chosen with
 * btl_openib_cpc_include=rdma_cm or btl_openib_connect_rdma_cm_priority; it
 * is not made the default because it costs every process one more verbs
 * context (librdmacm's own, held until exit), a kernel CM listener per
 * port and a listener thread (asleep while no request waits,
 * cpc_rdma_cm_listen.c) even when no connection uses it, and because oob
 * needs no kernel module beyond the verbs ones.
 */
#include "opal_config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal/constants.h"

#include "connect/cpc_internal.h"
#include "connect/cpc_rdma_cm.h"
#include "connect/openib_connect.h"

#define RCM_BACKLOG 1024
/* iWARP: the RDMA read depth a connection offers, at most: more buys
 * nothing on any device we know and costs responder resources (the BTL
 * caps its InfiniBand QPs the same way, btl_openib_qp_state.c). */
#define RCM_RD_ATOMIC_MAX 16

struct rcm_params rcm_params = {
    .port = 0,
    .timeout_s = 30,
    .retries = 50,
};

static int rcm_describe(const struct openib_cpc_module *m, char *buf, size_t len)
{
    const struct rcm_module *mod = (const struct rcm_module *) m;
    char ip[INET_ADDRSTRLEN] = "?";

    inet_ntop(AF_INET, &mod->ip, ip, sizeof(ip));
    snprintf(buf, len, "rdma_cm listener on %s:%u%s", ip, (unsigned) mod->tcp_port,
             mod->iwarp ? " (iWARP: the CM connects the QPs, one connection each)" : "");
    return OPAL_SUCCESS;
}

static int rcm_module_finalize(struct openib_cpc_module *m)
{
    struct rcm_module *mod = (struct rcm_module *) m;

    /* Every endpoint of this port is gone already (the BTL finalizes them
     * first), so only the listener holds the channel here. Requests to it
     * still queued for us point at this module: they go with it. */
    if (NULL != mod->listen_id) {
        rdma_destroy_id(mod->listen_id);
    }
    rcm_listen_forget(mod);
    rcm_channel_put();
    openib_cpc_module_destroy(&mod->base);
    free(mod);
    return OPAL_SUCCESS;
}

/* rdma_bind_addr picks the device owning the address: it must be this port. */
static bool bound_to_port(const struct rdma_cm_id *id, const struct openib_cpc_port *port,
                          char *why, size_t why_len, const char *ip)
{
    const char *dev = id->verbs ? ibv_get_device_name(id->verbs->device) : NULL;

    if (NULL != dev && NULL != port->dev_name && 0 == strcmp(dev, port->dev_name) &&
        id->port_num == port->port_num) {
        return true;
    }
    snprintf(why, why_len, "address %s belongs to %s:%u, not to this port", ip,
             dev ? dev : "no RDMA device", (unsigned) id->port_num);
    return false;
}

static int rcm_query(const struct openib_cpc_port *port, int priority,
                     struct openib_cpc_module **out, char *why, size_t why_len)
{
    struct sockaddr_in sin = { .sin_family = AF_INET };
    struct rdma_event_channel *ch;
    struct rcm_module *mod;
    char ip[INET_ADDRSTRLEN] = "?";
    const uint8_t *token = openib_auth_local_token();
    uint32_t addr;
    int rc, tries;

    if (NULL == token) {
        snprintf(why, why_len, "the kernel gave no random bytes for the token that "
                               "authenticates connection requests");
        return OPAL_ERR_NOT_SUPPORTED;
    }
    if (rcm_params.port < 0 || rcm_params.port > 65535) {
        snprintf(why, why_len, "btl_openib_connect_rdma_cm_port %d is not a port number",
                 rcm_params.port);
        return OPAL_ERR_NOT_SUPPORTED;
    }
    rc = rcm_port_ipv4(port, &addr, why, why_len);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    inet_ntop(AF_INET, &addr, ip, sizeof(ip));
    ch = rcm_channel_get(why, why_len);
    if (NULL == ch) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    mod = calloc(1, sizeof(*mod));
    if (NULL == mod) {
        snprintf(why, why_len, "out of memory");
        rc = OPAL_ERR_OUT_OF_RESOURCE;
        goto err_put;
    }
    rc = OPAL_ERR_NOT_SUPPORTED;
    mod->lctx.tag = RCM_TAG_LISTENER;
    mod->lctx.mod = mod;
    sin.sin_addr.s_addr = addr;
    sin.sin_port = htons((uint16_t) rcm_params.port);
    /* on the listeners' channel, which a thread answers while we are busy */
    for (tries = 1;; ++tries) {
        if (0 != rdma_create_id(rcm_listen_channel(), &mod->listen_id, &mod->lctx, RDMA_PS_TCP)) {
            snprintf(why, why_len, "rdma_create_id failed: %s", strerror(errno));
            goto err_free;
        }
        if (0 != rdma_bind_addr(mod->listen_id, (struct sockaddr *) &sin)) {
            if (EADDRINUSE == errno && 0 != rcm_params.port) {
                /* name the setting: a fixed port serves one process per
                 * address (why has OPENIB_CPC_WHY_MAX bytes) */
                snprintf(why, why_len, "btl_openib_connect_rdma_cm_port %d is taken on %s (%s); "
                         "use 0 (any free port) or a free port", rcm_params.port, ip,
                         strerror(errno));
            } else {
                snprintf(why, why_len, "rdma_bind_addr(%s:%d) failed: %s", ip, rcm_params.port,
                         strerror(errno));
            }
            goto err_id;
        }
        if (!bound_to_port(mod->listen_id, port, why, why_len, ip)) {
            goto err_id;
        }
        if (0 == rdma_listen(mod->listen_id, RCM_BACKLOG)) {
            break;
        }
        /* iWARP over the host's TCP (siw, or no iwpmd): the port the rdma_cm
         * picked may be the host TCP's (RCM_PORT_TRIES, cpc_rdma_cm.h); any
         * free port will do, so another is tried. */
        if (EADDRINUSE == errno && 0 == rcm_params.port && tries < RCM_PORT_TRIES) {
            openib_cpc_log(10, "openib: rdma_cm: listener port %u on %s is in use in the "
                           "host's TCP; trying another (try %d of %d)",
                           ntohs(rdma_get_src_port(mod->listen_id)), ip, tries + 1,
                           RCM_PORT_TRIES);
            rdma_destroy_id(mod->listen_id);
            continue;
        }
        snprintf(why, why_len, "rdma_listen on %s failed: %s", ip, strerror(errno));
        goto err_id;
    }
    mod->ip = addr;
    mod->tcp_port = ntohs(rdma_get_src_port(mod->listen_id));
    mod->btl = port->btl;
    if (port->caps & OPENIB_PORT_CAP_IWARP) {
        struct ibv_device_attr attr;

        /* The RDMA read depths each connection offers: what the device
         * allows (an iWARP CM refuses more, e.g. siw's ORD/IRD check). */
        if (NULL == port->ctx || 0 != ibv_query_device(port->ctx, &attr)) {
            snprintf(why, why_len, "iWARP: cannot query the device's RDMA read limits");
            goto err_id;
        }
        mod->iwarp = true;
        mod->max_rd_atom = (uint8_t) (attr.max_qp_rd_atom > RCM_RD_ATOMIC_MAX
                                          ? RCM_RD_ATOMIC_MAX : attr.max_qp_rd_atom);
        mod->max_init_rd_atom = (uint8_t) (attr.max_qp_init_rd_atom > RCM_RD_ATOMIC_MAX
                                               ? RCM_RD_ATOMIC_MAX : attr.max_qp_init_rd_atom);
    }

    openib_cpc_module_init(&mod->base);
    mod->base.component = &openib_cpc_rdma_cm_component;
    mod->base.priority = (uint8_t) priority;
    rcm_blob_encode(mod->base.blob, mod->tcp_port, addr, token);
    mod->base.blob_len = RCM_BLOB_LEN;
    mod->base.endpoint_init = rcm_endpoint_init;
    mod->base.start_connect = rcm_start_connect;
    mod->base.endpoint_finalize = rcm_endpoint_finalize;
    mod->base.finalize = rcm_module_finalize;
    /* iWARP (MPA): the side that initiated sends first (btl_ops
     * connect_established, openib_cpc.h) */
    mod->base.uses_cts = mod->iwarp;
    mod->base.describe = rcm_describe;
    *out = &mod->base;
    return OPAL_SUCCESS;

err_id:
    rdma_destroy_id(mod->listen_id);
err_free:
    free(mod);
err_put:
    rcm_channel_put();
    return rc;
}

static void rcm_register(const struct openib_cpc_component *self)
{
    (void) self;
    openib_cpc_register_int("connect_rdma_cm_port",
                            "TCP port (rdma_cm port space) each port's rdma_cm listener "
                            "binds; 0 = any free port. A fixed port serves one process "
                            "per address",
                            &rcm_params.port);
    openib_cpc_register_int("connect_rdma_cm_timeout",
                            "Seconds of silence after which the rdma_cm CPC gives up on a "
                            "connection: no answer at all from the peer, not even 'busy' "
                            "from its listener thread, which answers while the peer "
                            "computes outside MPI (a busy peer is waited for however long "
                            "it takes; a peer whose process exited fails at once). Each step "
                            "(address and route resolution, the reply to one request) is "
                            "bounded by a sixth of it (at least 1 s)",
                            &rcm_params.timeout_s);
    openib_cpc_register_int("connect_rdma_cm_retries",
                            "Times the rdma_cm CPC retries a refused, failed or timed-out "
                            "connection attempt, with a back-off of up to 2 s; asking a "
                            "busy peer again is no retry",
                            &rcm_params.retries);
}

static int rcm_component_finalize(void)
{
    rcm_conn_finalize();
    return OPAL_SUCCESS;
}

static const char *const rdma_cm_aliases[] = { "rdmacm", NULL };

const struct openib_cpc_component openib_cpc_rdma_cm_component = {
    .size = sizeof(struct openib_cpc_component),
    .abi_version = OPENIB_CPC_ABI_VERSION,
    .name = "rdma_cm",
    .id = OPENIB_CPC_ID_RDMA_CM,
    .default_priority = 40,
    .register_params = rcm_register,
    .query = rcm_query,
    .finalize = rcm_component_finalize,
    .aliases = rdma_cm_aliases,
    .progress = openib_cpc_rdma_cm_progress,
};

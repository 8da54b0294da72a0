/*
 * cpc_plugin_v1.c - a CPC plug-in built against ONLY the frozen v1 headers
 * (tests/abi/v1): it has never heard of `aliases`, `describe` or `ipv4`.
 * test_abi_v1 loads it into the current framework with
 * openib_connect_load_plugin() and drives it through every stage.
 *
 * Traps for a framework that ignores the size rules: the bytes right after
 * the v1 component table and after each v1 module hold poison where v2 keeps
 * `aliases` / `describe`, so reading either as a pointer crashes the test.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "openib/openib_cpc.h"

_Static_assert(OPENIB_CPC_ABI_VERSION == 1, "the plug-in must see only the v1 header");

#define POISON ((uintptr_t) 0xa5a5a5a5a5a5a5a5ull)

/* Counters the test reads with dlsym (it keeps its own dlopen reference). */
struct v1_plugin_stats {
    int init_calls, query_calls, finalize_calls, module_finalize_calls;
    int endpoint_init_calls, start_calls, endpoint_finalize_calls;
    int last_priority;
    uint32_t last_port_size;
    int last_port_check;
};
struct v1_plugin_stats v1_plugin_stats;

static int v1_init(char *why, size_t len)
{
    (void) why;
    (void) len;
    v1_plugin_stats.init_calls++;
    return OPENIB_CPC_SUCCESS;
}

static int v1_finalize(void)
{
    v1_plugin_stats.finalize_calls++;
    return OPENIB_CPC_SUCCESS;
}

static int v1_endpoint_init(struct openib_cpc_module *m, struct openib_cpc_endpoint *ep)
{
    (void) m;
    v1_plugin_stats.endpoint_init_calls++;
    if (openib_abi_check_size(ep, ep->size, sizeof(*ep), sizeof(*ep))) {
        return OPENIB_CPC_ERR_BAD_PARAM;
    }
    ep->cpc_private = &v1_plugin_stats;
    return OPENIB_CPC_SUCCESS;
}

/* What a real CPC does, minus the wire: our QP data, the peer's (here taken
 * from its modex blob), connect, done. */
static int v1_start_connect(struct openib_cpc_module *m, struct openib_cpc_endpoint *ep)
{
    struct openib_cpc_qp_info mine, peer;
    const struct openib_cpc_btl_ops *ops = ep->btl_ops;
    int rc;

    (void) m;
    v1_plugin_stats.start_calls++;
    if (NULL == ops || openib_abi_check_size(ops, ops->size, sizeof(*ops), sizeof(*ops))) {
        return OPENIB_CPC_ERR_BAD_PARAM;
    }
    openib_cpc_qp_info_init(&mine);
    rc = ops->local_qp_info(ep->btl_ep, &mine);
    if (OPENIB_CPC_SUCCESS != rc) {
        ops->connect_failed(ep->btl_ep, rc, "v1 plug-in: no local QP info");
        return rc;
    }
    openib_cpc_qp_info_init(&peer);
    peer.num_qps = 1;
    peer.qpn[0] = mine.qpn[0] + 1000;
    peer.mtu = ep->peer_port ? ep->peer_port->mtu : 0;
    peer.lid = ep->peer_blob_len; /* proves the peer blob reached us */
    rc = ops->connect_qps(ep->btl_ep, &peer, true);
    if (OPENIB_CPC_SUCCESS != rc) {
        return rc;
    }
    ops->connect_complete(ep->btl_ep);
    return OPENIB_CPC_SUCCESS;
}

static int v1_endpoint_finalize(struct openib_cpc_module *m, struct openib_cpc_endpoint *ep)
{
    (void) m;
    (void) ep;
    v1_plugin_stats.endpoint_finalize_calls++;
    return OPENIB_CPC_SUCCESS;
}

static int v1_module_finalize(struct openib_cpc_module *m)
{
    v1_plugin_stats.module_finalize_calls++;
    free(m);
    return OPENIB_CPC_SUCCESS;
}

static const struct openib_cpc_component *v1_self(void);

static int v1_query(const struct openib_cpc_port *port, int priority,
                    struct openib_cpc_module **out, char *why, size_t why_len)
{
    struct openib_cpc_module *m;
    size_t tail = 64;
    int rc;

    v1_plugin_stats.query_calls++;
    v1_plugin_stats.last_priority = priority;
    v1_plugin_stats.last_port_size = port->size;
    /* The port comes from a newer BTL: usable only if what we do not know
     * about is zero (openib_abi.h rule 3). */
    rc = openib_abi_check_size(port, port->size, OPENIB_CPC_PORT_V1_SIZE, sizeof(*port));
    v1_plugin_stats.last_port_check = rc;
    if (0 != rc) {
        snprintf(why, why_len, "port struct has fields this v1 CPC does not know (%d)", rc);
        return OPENIB_CPC_ERR_NOT_SUPPORTED;
    }
    m = malloc(sizeof(*m) + tail);
    if (NULL == m) {
        return OPENIB_CPC_ERR_OUT_OF_RESOURCE;
    }
    memset((char *) m + sizeof(*m), 0xa5, tail); /* where v2 keeps describe */
    openib_cpc_module_init(m);
    m->component = v1_self();
    m->priority = (uint8_t) priority;
    m->blob_len = (uint8_t) snprintf((char *) m->blob, sizeof(m->blob), "v1:%s",
                                     port->dev_name ? port->dev_name : "?");
    m->endpoint_init = v1_endpoint_init;
    m->start_connect = v1_start_connect;
    m->endpoint_finalize = v1_endpoint_finalize;
    m->finalize = v1_module_finalize;
    m->uses_cts = false;
    *out = m;
    return OPENIB_CPC_SUCCESS;
}

static const struct {
    struct openib_cpc_component c;
    uintptr_t poison[4]; /* where a v2 table has `aliases` */
} v1_table = {
    .c = {
        .size = sizeof(struct openib_cpc_component),
        .abi_version = OPENIB_CPC_ABI_VERSION,
        .name = "v1mock",
        .id = 100,
        .default_priority = 20,
        .init = v1_init,
        .query = v1_query,
        .finalize = v1_finalize,
    },
    .poison = { POISON, POISON, POISON, POISON },
};

static const struct openib_cpc_component *v1_self(void)
{
    return &v1_table.c;
}

const struct openib_cpc_component *openib_cpc_plugin_component(void)
{
    return &v1_table.c;
}

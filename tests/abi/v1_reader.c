/*
 * v1_reader.c - code that knows only ABI 1 (built with -I tests/abi/v1 and
 * nothing else of ours), reading structs a current (v2) writer hands it.
 */
#include <stddef.h>

#include "openib/openib_cpc.h"
#include "v1_reader.h"

_Static_assert(OPENIB_CPC_ABI_VERSION == 1, "v1_reader must see only the frozen v1 header");

int v1_read_port(const void *p, uint32_t *caps_out)
{
    const struct openib_cpc_port *port = p;
    int rc = openib_abi_check_size(p, port->size, OPENIB_CPC_PORT_V1_SIZE, sizeof(*port));

    if (0 == rc && caps_out) {
        *caps_out = port->caps;
    }
    return rc;
}

int v1_read_component(const void *p, const char **name_out)
{
    const struct openib_cpc_component *c = p;
    int rc = openib_abi_check_size(p, c->size, OPENIB_CPC_COMPONENT_V1_SIZE, sizeof(*c));

    if (0 == rc && name_out) {
        *name_out = c->name;
    }
    return rc;
}

int v1_read_module(const void *p, uint8_t *priority_out)
{
    const struct openib_cpc_module *m = p;
    int rc = openib_abi_check_size(p, m->size, OPENIB_CPC_MODULE_V1_SIZE, sizeof(*m));

    if (0 == rc && priority_out) {
        *priority_out = m->priority;
    }
    return rc;
}

#define OFF(t, f) offsetof(struct t, f)

void v1_get_layout(struct v1_layout *o)
{
    o->port_size = sizeof(struct openib_cpc_port);
    o->port_caps = OFF(openib_cpc_port, caps);
    o->port_dev_name = OFF(openib_cpc_port, dev_name);
    o->port_port_num = OFF(openib_cpc_port, port_num);
    o->port_gid = OFF(openib_cpc_port, gid);
    o->port_gid_index = OFF(openib_cpc_port, gid_index);
    o->port_ctx = OFF(openib_cpc_port, ctx);
    o->port_btl = OFF(openib_cpc_port, btl);
    o->comp_size = sizeof(struct openib_cpc_component);
    o->comp_name = OFF(openib_cpc_component, name);
    o->comp_id = OFF(openib_cpc_component, id);
    o->comp_default_priority = OFF(openib_cpc_component, default_priority);
    o->comp_register = OFF(openib_cpc_component, register_params);
    o->comp_init = OFF(openib_cpc_component, init);
    o->comp_query = OFF(openib_cpc_component, query);
    o->comp_finalize = OFF(openib_cpc_component, finalize);
    o->mod_size = sizeof(struct openib_cpc_module);
    o->mod_component = OFF(openib_cpc_module, component);
    o->mod_priority = OFF(openib_cpc_module, priority);
    o->mod_blob_len = OFF(openib_cpc_module, blob_len);
    o->mod_blob = OFF(openib_cpc_module, blob);
    o->mod_endpoint_init = OFF(openib_cpc_module, endpoint_init);
    o->mod_start_connect = OFF(openib_cpc_module, start_connect);
    o->mod_endpoint_finalize = OFF(openib_cpc_module, endpoint_finalize);
    o->mod_finalize = OFF(openib_cpc_module, finalize);
    o->mod_uses_cts = OFF(openib_cpc_module, uses_cts);
    o->ep_size = sizeof(struct openib_cpc_endpoint);
    o->ep_peer_blob = OFF(openib_cpc_endpoint, peer_blob);
    o->ep_peer_port = OFF(openib_cpc_endpoint, peer_port);
    o->ep_cpc_private = OFF(openib_cpc_endpoint, cpc_private);
    o->ops_size = sizeof(struct openib_cpc_btl_ops);
    o->ops_connect_complete = OFF(openib_cpc_btl_ops, connect_complete);
    o->ops_endpoint_for_peer = OFF(openib_cpc_btl_ops, endpoint_for_peer);
    o->qp_size = sizeof(struct openib_cpc_qp_info);
    o->qp_rq_layout = OFF(openib_cpc_qp_info, rq_layout);
    o->abi_version = OPENIB_CPC_ABI_VERSION;
}

/*
 * cpc_modex.c - what a port puts in the modex and what a peer's entry says:
 * a port and its CPC modules to a modex port entry, and back to a peer
 * port. The blob's format itself is wire/modex_wire.c.
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <string.h>

#include "connect/cpc_internal.h"

int openib_connect_modex_fill_port(struct openib_modex_port *mp,
                                   const struct openib_cpc_port *port,
                                   struct openib_cpc_module *const *mods, int nmods)
{
    int i;

    if (NULL == mp || NULL == port || nmods < 0 || nmods > OPENIB_MODEX_MAX_CPCS ||
        (nmods > 0 && NULL == mods)) {
        return OPAL_ERR_BAD_PARAM;
    }
    if (0 != openib_abi_check_size(port, port->size, OPENIB_CPC_PORT_V1_SIZE, sizeof(*port))) {
        return OPAL_ERR_BAD_PARAM;
    }
    memset(mp, 0, sizeof(*mp));
    memcpy(mp->gid, port->gid, sizeof(mp->gid));
    mp->subnet_prefix = port->subnet_prefix;
    mp->lid = port->lid;
    mp->mtu = port->mtu;
    mp->link_layer = port->link_layer;
    mp->transport = (port->caps & OPENIB_PORT_CAP_IWARP) ? OPENIB_MODEX_TRANSPORT_IWARP
                                                           : OPENIB_MODEX_TRANSPORT_IB;
    mp->port_num = port->port_num;
    if (NULL != port->dev_name) {
        strncpy(mp->dev_name, port->dev_name, sizeof(mp->dev_name) - 1);
    }
    for (i = 0; i < nmods; ++i) {
        const struct openib_cpc_module *m = mods[i];

        if (NULL == m || NULL == m->component) {
            return OPAL_ERR_BAD_PARAM;
        }
        mp->cpcs[i].id = m->component->id;
        mp->cpcs[i].priority = m->priority;
        mp->cpcs[i].blob_len = m->blob_len;
        memcpy(mp->cpcs[i].blob, m->blob, m->blob_len);
    }
    mp->num_cpcs = (uint8_t) nmods;
    return openib_connect_modex_cpcs_valid(mp) ? OPAL_SUCCESS : OPAL_ERR_BAD_PARAM;
}

int openib_connect_modex_peer_port(const struct openib_modex_port *mp,
                                   struct openib_cpc_port *out)
{
    if (NULL == mp || NULL == out) {
        return OPAL_ERR_BAD_PARAM;
    }
    openib_cpc_port_init(out);
    memcpy(out->gid, mp->gid, sizeof(out->gid));
    out->subnet_prefix = mp->subnet_prefix;
    out->lid = mp->lid;
    out->mtu = mp->mtu;
    out->link_layer = mp->link_layer;
    out->caps = OPENIB_MODEX_TRANSPORT_IWARP == mp->transport ? OPENIB_PORT_CAP_IWARP : 0;
    out->port_num = mp->port_num;
    out->dev_name = mp->dev_name;
    out->gid_index = -1; /* the peer's GID index is not in the modex */
    return OPAL_SUCCESS;
}

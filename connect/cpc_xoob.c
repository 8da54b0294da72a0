/*
 * cpc_xoob.c - the "xoob" CPC: XRC connections over a side channel. Only
 * meaningful where the port offers XRC (OPENIB_PORT_CAP_XRC); not
 * implemented yet, so it declines every port, saying which reason applies.
 *
 * Default priority 60: the highest, because where XRC is set up it is the
 * method that shares receive queues across peers; a port without XRC never
 * offers it, so it cannot shadow oob there. Overridable with
 * btl_openib_connect_xoob_priority.
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <infiniband/verbs.h>
#include <stdio.h>

#include "connect/openib_connect.h"

/* The BTL sets OPENIB_PORT_CAP_XRC only when the device has XRC *and* the
 * receive queues ask for it; ask the device so the reason names the right
 * one of the two. */
static bool device_has_xrc(const struct openib_cpc_port *port)
{
    struct ibv_device_attr attr;

    return NULL != port->ctx && 0 == ibv_query_device(port->ctx, &attr) &&
           (attr.device_cap_flags & IBV_DEVICE_XRC);
}

static int xoob_query(const struct openib_cpc_port *port, int priority,
                      struct openib_cpc_module **out, char *why, size_t why_len)
{
    const char *dev = port->dev_name ? port->dev_name : "(unknown)";

    (void) priority;
    (void) out;
    if (!(port->caps & OPENIB_PORT_CAP_XRC)) {
        if (device_has_xrc(port)) {
            snprintf(why, why_len, "XRC needs X receive queues in btl_openib_receive_queues "
                                   "(device %s has XRC)", dev);
        } else {
            snprintf(why, why_len, "device %s does not support XRC", dev);
        }
        return OPAL_ERR_NOT_SUPPORTED;
    }
    snprintf(why, why_len, "xoob not implemented yet");
    return OPAL_ERR_NOT_SUPPORTED;
}

const struct openib_cpc_component openib_cpc_xoob_component = {
    .size = sizeof(struct openib_cpc_component),
    .abi_version = OPENIB_CPC_ABI_VERSION,
    .name = "xoob",
    .id = OPENIB_CPC_ID_XOOB,
    .default_priority = 60,
    .query = xoob_query,
};

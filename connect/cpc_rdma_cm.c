/*
 * cpc_rdma_cm.c - the "rdma_cm" CPC (also accepted as "rdmacm"): connection
 * setup through librdmacm. Not implemented in this release: every port
 * declines with a reason the user sees in "no CPC" messages and verbose
 * output; a later issue brings it to life.
 *
 * Default priority 40: lowest of the three today, so nothing picks it by
 * accident. Once it works it is meant to become the default on RoCE/iWARP
 * (raise it here, or per port in query); btl_openib_connect_rdma_cm_priority
 * overrides it either way.
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <stdio.h>

#include "connect/openib_connect.h"

static int rdma_cm_query(const struct openib_cpc_port *port, int priority,
                         struct openib_cpc_module **out, char *why, size_t why_len)
{
    (void) port;
    (void) priority;
    (void) out;
    snprintf(why, why_len, "rdma_cm CPC is not implemented in this release");
    return OPAL_ERR_NOT_SUPPORTED;
}

static const char *const rdma_cm_aliases[] = { "rdmacm", NULL };

const struct openib_cpc_component openib_cpc_rdma_cm_component = {
    .size = sizeof(struct openib_cpc_component),
    .abi_version = OPENIB_CPC_ABI_VERSION,
    .name = "rdma_cm",
    .id = OPENIB_CPC_ID_RDMA_CM,
    .default_priority = 40,
    .query = rdma_cm_query,
    .aliases = rdma_cm_aliases,
};

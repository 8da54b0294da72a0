/*
 * cpc_progress.c - running the CPCs' own work (interface v5: each
 * component's progress hook) from the BTL's progress, and the wake function
 * their threads call when they queued some.
 */
#include "opal_config.h"
#include "opal/prefetch.h"

#include "connect/cpc_internal.h"

int openib_connect_progress(bool urgent)
{
    int i, n = 0;

    if (OPAL_UNLIKELY(!openib_cpc_reg.initialized)) {
        return 0;
    }
    for (i = 0; i < openib_cpc_reg.n; ++i) {
        const struct cpc_entry *e = &openib_cpc_reg.e[i];

        if (CPC_STATE_ACTIVE == e->state && NULL != e->progress) {
            n += e->progress(urgent);
        }
    }
    return n;
}

void openib_connect_request_progress(void)
{
    openib_connect_work_queued();
}

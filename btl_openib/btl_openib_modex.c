/*
 * btl_openib_modex.c - publishing our ports (identity + CPC list) and reading
 * a peer's. The encoding itself is the CPC framework's (connect/).
 */
#include "opal_config.h"

#include <string.h>

#include "opal/constants.h"
#include "opal/mca/pmix/pmix.h"

#include "btl_openib/btl_openib.h"
#include "mca/btl_openib_params.h"

int openib_modex_send(void)
{
    struct openib_modex_port *ports;
    uint8_t *buf;
    size_t len = 0, cap;
    int i, rc, n = mca_btl_openib_component.num_modules;

    cap = openib_connect_modex_max_size(n);
    ports = calloc(n, sizeof(*ports));
    buf = malloc(cap);
    if (!ports || !buf) {
        rc = OPAL_ERR_OUT_OF_RESOURCE;
        goto out;
    }
    for (i = 0; i < n; ++i) {
        mca_btl_openib_module_t *m = mca_btl_openib_component.modules[i];

        rc = openib_connect_modex_fill_port(&ports[i], &m->cpc_port, m->cpcs, m->num_cpcs);
        if (OPAL_SUCCESS != rc) {
            goto out;
        }
    }
    rc = openib_connect_modex_encode(ports, n, buf, cap, &len);
    if (OPAL_SUCCESS != rc) {
        goto out;
    }
    OPAL_MODEX_SEND(rc, OPAL_PMIX_GLOBAL, &mca_btl_openib_component.super.btl_version, buf, len);
out:
    free(ports);
    free(buf);
    return rc;
}

int openib_modex_recv(opal_proc_t *proc, struct openib_modex_port *ports, int max, int *n)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc;

    *n = 0;
    OPAL_MODEX_RECV(rc, &mca_btl_openib_component.super.btl_version, &proc->proc_name,
                    (void **) &buf, &len);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    rc = openib_connect_modex_decode(buf, len, ports, max, n);
    if (OPAL_SUCCESS != rc) {
        OPENIB_VERBOSE(1, "rank %u published a corrupt openib modex entry (%zu bytes)",
                       proc->proc_name.vpid, len);
    }
    free(buf);
    return rc;
}

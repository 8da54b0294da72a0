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

#define MODEX_CAP 8192

int openib_modex_send(void)
{
    struct openib_modex_port *ports;
    uint8_t *buf;
    size_t len = 0;
    int i, j, rc, n = mca_btl_openib_component.num_modules;

    ports = calloc(n, sizeof(*ports));
    buf = malloc(MODEX_CAP);
    if (!ports || !buf) {
        rc = OPAL_ERR_OUT_OF_RESOURCE;
        goto out;
    }
    for (i = 0; i < n; ++i) {
        mca_btl_openib_module_t *m = mca_btl_openib_component.modules[i];
        struct openib_modex_port *p = &ports[i];

        memcpy(p->gid, m->gid.raw, 16);
        memcpy(&p->subnet_prefix, m->gid.raw, 8);
        p->lid = m->port_attr.lid;
        p->mtu = 128u << m->port_attr.active_mtu;
        p->link_layer = m->port_attr.link_layer;
        p->port_num = m->port_num;
        snprintf(p->dev_name, sizeof(p->dev_name), "%.31s", m->dev->name);
        p->num_cpcs = (uint8_t) m->num_cpcs;
        for (j = 0; j < m->num_cpcs; ++j) {
            p->cpcs[j].id = m->cpcs[j]->component->id;
            p->cpcs[j].priority = m->cpcs[j]->priority;
            p->cpcs[j].blob_len = m->cpcs[j]->blob_len;
            memcpy(p->cpcs[j].blob, m->cpcs[j]->blob, m->cpcs[j]->blob_len);
        }
    }
    rc = openib_connect_modex_encode(ports, n, buf, MODEX_CAP, &len);
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

/*
 * btl_openib_proc.c - peers: finding a module's endpoint for a process,
 * creating it on demand, and choosing which of the peer's ports it uses.
 *
 * Open MPI 4.1 adds remote processes lazily (mpi_add_procs_cutoff is 0): a
 * process on another node gets an endpoint from add_procs only when this
 * process first sends to it. The peer may send first: its connect request
 * then reaches a module that has never heard of it, and the endpoint is
 * made right there from the peer's process name alone (its proc object
 * from Open MPI, its ports from the modex). A later add_procs finds it by
 * name and returns the same endpoint, so there is one per (module, peer)
 * whoever started.
 */
#include "opal_config.h"

#include <string.h>

#include "opal/constants.h"
#include "opal/mca/pmix/pmix.h"
#include "opal/util/proc.h"

#include "btl_openib/btl_openib.h"
#include "btl_openib/btl_openib_lock.h"
#include "btl_openib/btl_openib_port_pair.h"
#include "btl_openib/btl_openib_proc.h"
#include "mca/btl_openib_params.h"

#define OPENIB_PEER_MAX_PORTS 8

/* Whether our process name sorts before the peer's (who is "first" for
 * the pairing rule). */
static bool name_first(const opal_process_name_t *me, const opal_process_name_t *peer)
{
    return me->jobid != peer->jobid ? me->jobid < peer->jobid : me->vpid < peer->vpid;
}

int openib_peer_port(const mca_btl_openib_module_t *m, const opal_process_name_t *peer,
                     const struct openib_modex_port *ports, int nports)
{
    struct openib_port_key mine[OPENIB_PEER_MAX_PORTS], theirs[OPENIB_PEER_MAX_PORTS];
    int partner[OPENIB_PEER_MAX_PORTS];
    int i, nmine = mca_btl_openib_component.num_modules;

    if (nmine > OPENIB_PEER_MAX_PORTS) {
        nmine = OPENIB_PEER_MAX_PORTS;
    }
    if (nports > OPENIB_PEER_MAX_PORTS) {
        nports = OPENIB_PEER_MAX_PORTS;
    }
    if (m->index >= nmine) {
        return -1;
    }
    for (i = 0; i < nmine; ++i) {
        const struct openib_cpc_port *p = &mca_btl_openib_component.modules[i]->cpc_port;
        mine[i] = (struct openib_port_key) {
            .link_layer = p->link_layer,
            .transport = (p->caps & OPENIB_PORT_CAP_IWARP) ? OPENIB_MODEX_TRANSPORT_IWARP
                                                           : OPENIB_MODEX_TRANSPORT_IB,
            .subnet_prefix = p->subnet_prefix,
        };
    }
    for (i = 0; i < nports; ++i) {
        theirs[i] = (struct openib_port_key) { .link_layer = ports[i].link_layer,
                                               .transport = ports[i].transport,
                                               .subnet_prefix = ports[i].subnet_prefix };
    }
    openib_port_pair(mine, nmine, theirs, nports, name_first(&opal_proc_local_get()->proc_name, peer),
                     partner);
    return partner[m->index];
}

mca_btl_openib_endpoint_t *openib_peer_lookup(mca_btl_openib_module_t *m,
                                              const opal_process_name_t *name)
{
    void *ep = NULL;

    if (OPAL_SUCCESS != opal_proc_table_get_value(&m->peers, *name, &ep)) {
        return NULL;
    }
    return ep;
}

/* A proc made by Open MPI on our behalf may not know its host yet; the
 * name goes into every message about the peer. */
static void learn_hostname(opal_proc_t *proc)
{
    char *host = NULL;
    int rc;

    if (proc->proc_hostname) {
        return;
    }
    OPAL_MODEX_RECV_VALUE_OPTIONAL(rc, OPAL_PMIX_HOSTNAME, &proc->proc_name, &host, OPAL_STRING);
    if (OPAL_SUCCESS == rc && host) {
        proc->proc_hostname = host;
    }
}

mca_btl_openib_endpoint_t *openib_peer_endpoint(mca_btl_openib_module_t *m, opal_proc_t *proc,
                                                char *why, size_t why_len)
{
    struct openib_modex_port ports[OPENIB_PEER_MAX_PORTS];
    mca_btl_openib_endpoint_t *ep;
    int n = 0, pick, rc;

    ep = openib_peer_lookup(m, &proc->proc_name);
    if (ep) {
        return ep;
    }
    rc = openib_modex_recv(proc, ports, OPENIB_PEER_MAX_PORTS, &n);
    if (OPAL_SUCCESS != rc || 0 == n) {
        snprintf(why, why_len, "rank %u published no openib ports", proc->proc_name.vpid);
        return NULL;
    }
    pick = openib_peer_port(m, &proc->proc_name, ports, n);
    if (pick < 0) {
        snprintf(why, why_len, "none of rank %u's %d port(s) pairs with %s:%d (different link "
                 "layer, transport or InfiniBand subnet)", proc->proc_name.vpid, n,
                 m->dev->name, m->port_num);
        return NULL;
    }
    learn_hostname(proc);
    ep = openib_endpoint_create(m, proc, &ports[pick]);
    if (NULL == ep) {
        snprintf(why, why_len, "%s:%d shares no connection method with rank %u's port %s:%d",
                 m->dev->name, m->port_num, proc->proc_name.vpid, ports[pick].dev_name,
                 ports[pick].port_num);
    }
    return ep;
}

mca_btl_openib_endpoint_t *openib_peer_contacted_us(mca_btl_openib_module_t *m,
                                                    const opal_process_name_t *name, char *why,
                                                    size_t why_len)
{
    mca_btl_openib_endpoint_t *ep = openib_peer_lookup(m, name);
    opal_proc_t *proc;

    if (ep) {
        return ep;
    }
    /* Open MPI takes ompi_proc_lock to make the proc, and holds it when it
     * calls our add_procs: never with openib_lock held. */
    proc = NULL;
    if (opal_proc_for_name) {
        OPENIB_CALLOUT(proc = opal_proc_for_name(*name));
    }
    if (NULL == proc) {
        snprintf(why, why_len, "process %u.%u is not part of this job as far as Open MPI knows",
                 name->jobid, name->vpid);
        return NULL;
    }
    ep = openib_peer_endpoint(m, proc, why, why_len);
    if (ep) {
        OPENIB_VERBOSE(10, "%s contacted us first: endpoint made on demand on %s:%d", ep->desc,
                       m->dev->name, m->port_num);
    }
    return ep;
}

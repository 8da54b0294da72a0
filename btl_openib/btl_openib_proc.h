/*
 * btl_openib_proc.h - peers: a module's endpoint for a process, found by
 * name or made on demand (btl_openib_proc.c).
 */
#ifndef BTL_OPENIB_PROC_H
#define BTL_OPENIB_PROC_H

#include "btl_openib/btl_openib.h"

/* The module's endpoint for `name`, or NULL (O(1): m->peers). */
mca_btl_openib_endpoint_t *openib_peer_lookup(mca_btl_openib_module_t *m,
                                              const opal_process_name_t *name);

/* The module's endpoint for proc: the existing one, or a new one on the
 * peer port that pairs with this module (btl_openib_port_pair.h). NULL with
 * `why` when proc cannot be reached through this module. */
mca_btl_openib_endpoint_t *openib_peer_endpoint(mca_btl_openib_module_t *m, opal_proc_t *proc,
                                                char *why, size_t why_len);

/* The same for a peer known only by the name in its connect request (its
 * proc object comes from Open MPI). */
mca_btl_openib_endpoint_t *openib_peer_contacted_us(mca_btl_openib_module_t *m,
                                                    const opal_process_name_t *name, char *why,
                                                    size_t why_len);

/* The index of the peer port (in its modex order) that module m pairs
 * with, or -1. */
int openib_peer_port(const mca_btl_openib_module_t *m, const opal_process_name_t *peer,
                     const struct openib_modex_port *ports, int nports);

#endif

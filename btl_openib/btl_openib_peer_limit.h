/*
 * btl_openib_peer_limit.h - btl_openib_max_peers: a port keeps at most
 * that many connected peers; beyond it the least recently used idle
 * connection is closed cleanly, and reopened when a message needs it.
 */
#ifndef BTL_OPENIB_PEER_LIMIT_H
#define BTL_OPENIB_PEER_LIMIT_H

#include "btl_openib/btl_openib.h"

/* The module's connected peers in least-recently-used order, kept only
 * while btl_openib_max_peers is set: finding the oldest idle connection
 * and counting connected peers are then O(1), and a message costs one
 * branch when no limit is set. */
void openib_lru_unlink(mca_btl_openib_endpoint_t *ep);
void openib_lru_link_newest(mca_btl_openib_endpoint_t *ep);

/* A message went to or came from ep: it becomes the most recently used. */
static inline void openib_ep_touch(mca_btl_openib_endpoint_t *ep)
{
    if (OPAL_UNLIKELY(ep->lru_linked) &&
        opal_list_get_last(&ep->module->lru) != &ep->lru_item) {
        openib_lru_unlink(ep);
        openib_lru_link_newest(ep);
    }
}

/* ep's connection came up: it joins the LRU list, and idle ones are
 * closed while the port is over the limit. */
void openib_peer_limit_connected(mca_btl_openib_endpoint_t *ep);

/* Close idle connections while over the limit. */
void openib_peer_limit_check(mca_btl_openib_module_t *m);

/* CLOSE_REQ, CLOSE_ACK or CLOSE_NACK from ep's peer (delivered in order). */
void openib_peer_limit_on_msg(mca_btl_openib_endpoint_t *ep, uint8_t tag);

/* ep is being destroyed (del_procs), or its connection ended: no idle
 * close of it is pending, and it leaves the LRU list. */
void openib_peer_limit_forget(mca_btl_openib_endpoint_t *ep);

/* From progress, outside completion handling: finish agreed closes, and
 * look for idle connections again while over the limit. */
int openib_peer_limit_progress(mca_btl_openib_module_t *m);

#endif

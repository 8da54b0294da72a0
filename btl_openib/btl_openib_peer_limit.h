/*
 * btl_openib_peer_limit.h - btl_openib_max_peers: a port keeps at most
 * that many connected peers; beyond it the least recently used idle
 * connection is closed cleanly, and reopened when a message needs it.
 */
#ifndef BTL_OPENIB_PEER_LIMIT_H
#define BTL_OPENIB_PEER_LIMIT_H

#include "btl_openib/btl_openib.h"

/* A message went to or came from ep (the LRU clock). */
static inline void openib_ep_touch(mca_btl_openib_endpoint_t *ep)
{
    ep->last_used = ++ep->module->use_clock;
}

/* A connection came up on m: close idle ones while over the limit. */
void openib_peer_limit_check(mca_btl_openib_module_t *m);

/* CLOSE_REQ, CLOSE_ACK or CLOSE_NACK from ep's peer (delivered in order). */
void openib_peer_limit_on_msg(mca_btl_openib_endpoint_t *ep, uint8_t tag);

/* ep is being destroyed (del_procs): no idle close of it is pending. */
void openib_peer_limit_forget(mca_btl_openib_endpoint_t *ep);

/* From progress, outside completion handling: finish agreed closes, and
 * look for idle connections again while over the limit. */
int openib_peer_limit_progress(mca_btl_openib_module_t *m);

#endif

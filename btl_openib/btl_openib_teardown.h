/*
 * btl_openib_teardown.h - closing an endpoint with work in flight
 * (btl_openib_teardown.c).
 */
#ifndef BTL_OPENIB_TEARDOWN_H
#define BTL_OPENIB_TEARDOWN_H

#include <stdbool.h>

#include "btl_openib/btl_openib_frag.h"

/* Before a batch is quiesced (del_procs, finalize; never from inside a CPC
 * callback, since it runs the CPCs' progress): let the connections of the
 * n endpoints that are still being made finish, bounded like the rest, so
 * that each can say goodbye. */
void openib_endpoints_settle(mca_btl_openib_endpoint_t **eps, int n);

/* Say goodbye to the peers, flush every QP of the n endpoints (NULLs are
 * skipped) and poll until all their work requests have completed
 * (bounded). After it nothing in a CQ refers to them, their QPs may be
 * destroyed, and nothing new is posted on them. */
void openib_endpoints_quiesce(mca_btl_openib_endpoint_t **eps, int n);

/* How long the transport takes to give up on an unanswered request
 * (4.096 us * 2^ib_timeout per try, ib_retry_count + 1 tries), and a
 * second on top for the flushes. */
long openib_transport_giveup_ms(void);

/* A teardown marker's completion (progress calls it with the completion's
 * status), or its post refused (OPENIB_MARKER_NOT_QUEUED). */
#define OPENIB_MARKER_NOT_QUEUED (-1)
void openib_teardown_marker_done(openib_frag_t *f, int status);
/* ep's markers go back to their free list: only after its QPs were
 * destroyed and the CQ drained, when no completion can name them again. */
void openib_teardown_markers_release(mca_btl_openib_endpoint_t *ep);

static inline bool openib_frag_is_marker(const openib_frag_t *f)
{
    return OPENIB_FRAG_MARKER == f->kind || OPENIB_FRAG_MARKER_DONE == f->kind;
}

/* Whether the peer said goodbye: errors on ep are then the expected end. */
bool openib_endpoint_peer_closed(const mca_btl_openib_endpoint_t *ep);
/* Whether it said so over every QP: it has finished with all of them. */
bool openib_endpoint_peer_closed_all(const mca_btl_openib_endpoint_t *ep);

#endif

/*
 * btl_openib_cts.h - the rule that the side that initiated a connection
 * sends first, for CPCs with uses_cts (rdma_cm on iWARP: MPA, RFC 5044
 * 7.1.2, forbids the responder to send before the initiator's first
 * message has arrived, and each QP is an MPA stream of its own).
 *
 *   initiator: a CTS message (OPENIB_TAG_CREDIT, no payload) on every QP,
 *              ahead of anything else, then connected;
 *   responder: nothing at all on any QP (no data, no credit write, no
 *              RDMA) until a message arrived on every QP; then connected.
 *              What it is asked to send meanwhile waits in the endpoint's
 *              connection queue, as before any connection.
 */
#ifndef BTL_OPENIB_CTS_H
#define BTL_OPENIB_CTS_H

#include "btl_openib/btl_openib.h"

/* btl_ops->connect_established (openib_cpc.h). */
void openib_cts_established(mca_btl_openib_endpoint_t *ep, bool initiator);

/* A message arrived on queue q while cts_wait is set: from QP creation on
 * (the initiator's first messages may come before our CM reports the
 * connection) until the responder is connected. */
void openib_cts_arrived(mca_btl_openib_endpoint_t *ep, int q);

/* The connection is up (btl_openib_endpoint_cpc.c): sends what waited. */
void openib_endpoint_connected(mca_btl_openib_endpoint_t *ep);

#endif

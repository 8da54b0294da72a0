/*
 * btl_openib_lazy.h - lazy connection of an endpoint.
 *
 * An endpoint starts CLOSED. The first send starts the connection (CPC
 * start_connect) and is queued; further sends queue behind it in order. When
 * the CPC reports completion the queue drains in the order the sends were
 * made; when it reports failure every queued send fails and the endpoint
 * stays FAILED: later sends return OPAL_ERR_UNREACH. A connection being
 * closed while idle (btl_openib_peer_limit.c) is CLOSING: sends queue, and
 * openib_lazy_reopen makes it CLOSED again, connecting at once when sends
 * wait.
 * Device-free (opal lists only) so it is unit-tested without hardware.
 */
#ifndef BTL_OPENIB_LAZY_H
#define BTL_OPENIB_LAZY_H

#include "opal_config.h"

#include "opal/class/opal_list.h"

enum openib_conn_state {
    OPENIB_CONN_CLOSED = 0,
    OPENIB_CONN_CONNECTING,
    OPENIB_CONN_CONNECTED,
    OPENIB_CONN_FAILED,
    OPENIB_CONN_CLOSING,
};

struct openib_lazy_ops {
    /* Start connecting; an error marks the connection FAILED at once. */
    int (*start)(void *ctx);
    /* Send one queued item now that the connection is up. */
    int (*send)(void *ctx, opal_list_item_t *item);
    /* Complete one queued item with an error (connection failed). */
    void (*fail)(void *ctx, opal_list_item_t *item, int rc);
};

struct openib_lazy_conn {
    enum openib_conn_state state;
    opal_list_t queued;
    const struct openib_lazy_ops *ops;
    void *ctx;
    int error;                /* the OPAL_* code that failed it */
    char why[256];            /* why it failed, for the user */
};

void openib_lazy_init(struct openib_lazy_conn *c, const struct openib_lazy_ops *ops, void *ctx);
void openib_lazy_fini(struct openib_lazy_conn *c);

/* Submit a send. Returns OPAL_SUCCESS when sent or queued, 1 when the caller
 * must send it itself right now (connected and nothing queued ahead),
 * OPAL_ERR_UNREACH when the connection has failed. */
int openib_lazy_submit(struct openib_lazy_conn *c, opal_list_item_t *item);

/* Start the connection without a send (e.g. the peer contacted us). */
int openib_lazy_start(struct openib_lazy_conn *c);

/* The CPC finished: drain the queue in order. Returns the first send error. */
int openib_lazy_connected(struct openib_lazy_conn *c);

/* Closed cleanly (idle): CLOSED again, and connecting at once when
 * sends wait. Returns what openib_lazy_start does, or OPAL_SUCCESS. */
int openib_lazy_reopen(struct openib_lazy_conn *c);

/* The CPC failed: fail every queued send. */
void openib_lazy_failed(struct openib_lazy_conn *c, int rc, const char *why);

const char *openib_lazy_state_name(enum openib_conn_state s);

#endif

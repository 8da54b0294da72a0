/*
 * btl_openib_lazy.c - the CLOSED -> CONNECTING -> CONNECTED|FAILED machine,
 * and CONNECTED -> CLOSING -> CLOSED (or back to CONNECTED) for idle closes.
 */
#include "opal_config.h"

#include <stdio.h>

#include "opal/constants.h"

#include "btl_openib/btl_openib_lazy.h"

void openib_lazy_init(struct openib_lazy_conn *c, const struct openib_lazy_ops *ops, void *ctx)
{
    c->state = OPENIB_CONN_CLOSED;
    OBJ_CONSTRUCT(&c->queued, opal_list_t);
    c->ops = ops;
    c->ctx = ctx;
    c->error = OPAL_SUCCESS;
    c->why[0] = '\0';
}

void openib_lazy_fini(struct openib_lazy_conn *c)
{
    if (c->state != OPENIB_CONN_FAILED) {
        openib_lazy_failed(c, OPAL_ERR_UNREACH, "the endpoint was closed");
    }
    OBJ_DESTRUCT(&c->queued);
}

int openib_lazy_start(struct openib_lazy_conn *c)
{
    int rc;

    if (c->state != OPENIB_CONN_CLOSED) {
        return c->state == OPENIB_CONN_FAILED ? OPAL_ERR_UNREACH : OPAL_SUCCESS;
    }
    c->state = OPENIB_CONN_CONNECTING;
    rc = c->ops->start(c->ctx);
    if (rc != OPAL_SUCCESS && c->state == OPENIB_CONN_CONNECTING) {
        openib_lazy_failed(c, rc, c->why[0] ? c->why : "the connection could not be started");
    }
    return c->state == OPENIB_CONN_FAILED ? OPAL_ERR_UNREACH : OPAL_SUCCESS;
}

int openib_lazy_submit(struct openib_lazy_conn *c, opal_list_item_t *item)
{
    switch (c->state) {
    case OPENIB_CONN_CONNECTED:
        if (opal_list_is_empty(&c->queued)) {
            return 1;
        }
        opal_list_append(&c->queued, item);
        return OPAL_SUCCESS;
    case OPENIB_CONN_CONNECTING:
    case OPENIB_CONN_CLOSING:
        opal_list_append(&c->queued, item);
        return OPAL_SUCCESS;
    case OPENIB_CONN_CLOSED:
        opal_list_append(&c->queued, item);
        /* start() may complete synchronously and drain the queue, item included */
        return openib_lazy_start(c) == OPAL_SUCCESS ? OPAL_SUCCESS : OPAL_ERR_UNREACH;
    case OPENIB_CONN_FAILED:
    default:
        return OPAL_ERR_UNREACH;
    }
}

int openib_lazy_connected(struct openib_lazy_conn *c)
{
    opal_list_item_t *item;
    int rc, first = OPAL_SUCCESS;

    if (c->state == OPENIB_CONN_FAILED) {
        return OPAL_ERR_UNREACH;
    }
    c->state = OPENIB_CONN_CONNECTED;
    while (NULL != (item = opal_list_remove_first(&c->queued))) {
        rc = c->ops->send(c->ctx, item);
        if (rc != OPAL_SUCCESS && first == OPAL_SUCCESS) {
            first = rc;
        }
    }
    return first;
}

int openib_lazy_reopen(struct openib_lazy_conn *c)
{
    if (c->state == OPENIB_CONN_FAILED) {
        return OPAL_ERR_UNREACH;
    }
    c->state = OPENIB_CONN_CLOSED;
    c->why[0] = '\0';
    return opal_list_is_empty(&c->queued) ? OPAL_SUCCESS : openib_lazy_start(c);
}

void openib_lazy_failed(struct openib_lazy_conn *c, int rc, const char *why)
{
    opal_list_item_t *item;

    c->state = OPENIB_CONN_FAILED;
    c->error = rc;
    if (why && why != c->why) {
        snprintf(c->why, sizeof(c->why), "%s", why);
    }
    while (NULL != (item = opal_list_remove_first(&c->queued))) {
        c->ops->fail(c->ctx, item, rc);
    }
}

const char *openib_lazy_state_name(enum openib_conn_state s)
{
    static const char *const names[] = {
        [OPENIB_CONN_CLOSED] = "CLOSED",
        [OPENIB_CONN_CONNECTING] = "CONNECTING",
        [OPENIB_CONN_CONNECTED] = "CONNECTED",
        [OPENIB_CONN_FAILED] = "FAILED",
        [OPENIB_CONN_CLOSING] = "CLOSING",
    };
    return (unsigned) s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

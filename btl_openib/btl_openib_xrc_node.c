/*
 * btl_openib_xrc_node.c - the per-remote-node table of shared XRC send QPs.
 * A linked list: a process talks to few nodes over one port, and the table
 * is only searched when an endpoint connects.
 */
#include "opal_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal/constants.h"

#include "btl_openib/btl_openib_xrc_node.h"

void openib_xrc_node_table_init(struct openib_xrc_node_table *t)
{
    t->head = NULL;
    t->count = 0;
}

int openib_xrc_node_table_fini(struct openib_xrc_node_table *t)
{
    int leaked = 0;

    while (t->head) {
        struct openib_xrc_node *n = t->head;
        t->head = n->next;
        leaked++;
        free(n->waiters);
        free(n);
    }
    t->count = 0;
    return leaked;
}

static bool key_eq(const struct openib_xrc_node_key *a, const struct openib_xrc_node_key *b)
{
    return a->node_id == b->node_id && a->lid == b->lid && a->port_num == b->port_num &&
           0 == memcmp(a->gid, b->gid, sizeof(a->gid));
}

struct openib_xrc_node *openib_xrc_node_get(struct openib_xrc_node_table *t,
                                            const struct openib_xrc_node_key *key)
{
    struct openib_xrc_node *n;

    for (n = t->head; n; n = n->next) {
        if (key_eq(&n->key, key)) {
            n->refcount++;
            return n;
        }
    }
    n = calloc(1, sizeof(*n));
    if (NULL == n) {
        return NULL;
    }
    n->key = *key;
    n->refcount = 1;
    n->state = OPENIB_XRC_NODE_IDLE;
    n->next = t->head;
    t->head = n;
    t->count++;
    return n;
}

void *openib_xrc_node_put(struct openib_xrc_node_table *t, struct openib_xrc_node *n)
{
    struct openib_xrc_node **pp;
    void *qp;

    if (NULL == n || --n->refcount > 0) {
        return NULL;
    }
    for (pp = &t->head; *pp && *pp != n; pp = &(*pp)->next) {
    }
    if (*pp) {
        *pp = n->next;
        t->count--;
    }
    qp = n->qp;
    free(n->waiters);
    free(n);
    return qp;
}

static int add_waiter(struct openib_xrc_node *n, void *waiter)
{
    if (n->nwaiters == n->cap_waiters) {
        int cap = n->cap_waiters ? 2 * n->cap_waiters : 4;
        void **w = realloc(n->waiters, cap * sizeof(*w));
        if (NULL == w) {
            return OPAL_ERR_OUT_OF_RESOURCE;
        }
        n->waiters = w;
        n->cap_waiters = cap;
    }
    n->waiters[n->nwaiters++] = waiter;
    return OPAL_SUCCESS;
}

int openib_xrc_node_join(struct openib_xrc_node *n, void *waiter)
{
    int rc;

    switch (n->state) {
    case OPENIB_XRC_NODE_CONNECTED:
        return OPENIB_XRC_JOIN_READY;
    case OPENIB_XRC_NODE_FAILED:
        return n->fail_rc < 0 ? n->fail_rc : OPAL_ERR_UNREACH;
    case OPENIB_XRC_NODE_CONNECTING:
        rc = add_waiter(n, waiter);
        return OPAL_SUCCESS == rc ? OPENIB_XRC_JOIN_WAIT : rc;
    case OPENIB_XRC_NODE_IDLE:
    default:
        rc = add_waiter(n, waiter);
        if (OPAL_SUCCESS != rc) {
            return rc;
        }
        n->state = OPENIB_XRC_NODE_CONNECTING;
        n->driver = waiter;
        return OPENIB_XRC_JOIN_DRIVE;
    }
}

bool openib_xrc_node_leave(struct openib_xrc_node *n, void *waiter)
{
    int i;

    for (i = 0; i < n->nwaiters; ++i) {
        if (n->waiters[i] == waiter) {
            memmove(&n->waiters[i], &n->waiters[i + 1],
                    (n->nwaiters - i - 1) * sizeof(n->waiters[0]));
            n->nwaiters--;
            break;
        }
    }
    if (n->state == OPENIB_XRC_NODE_CONNECTING && n->driver == waiter) {
        n->driver = NULL;
        return true;
    }
    return false;
}

void openib_xrc_node_complete(struct openib_xrc_node *n, int rc, const char *why,
                              openib_xrc_node_cb cb, void *arg)
{
    void **w = n->waiters;
    int nw = n->nwaiters, i;

    /* Detach the list first: a callback may join, leave or fail again. */
    n->waiters = NULL;
    n->nwaiters = n->cap_waiters = 0;
    n->driver = NULL;
    if (OPAL_SUCCESS == rc) {
        n->state = OPENIB_XRC_NODE_CONNECTED;
    } else {
        n->state = OPENIB_XRC_NODE_FAILED;
        n->fail_rc = rc;
        snprintf(n->why, sizeof(n->why), "%s", why ? why : "connection failed");
    }
    for (i = 0; i < nw; ++i) {
        cb(w[i], rc, OPAL_SUCCESS == rc ? NULL : n->why, arg);
    }
    free(w);
}

int openib_xrc_node_reserve(struct openib_xrc_node *n, uint32_t want, int nq, uint32_t *per_q)
{
    uint32_t left = n->wqe_cap > n->wqe_used ? n->wqe_cap - n->wqe_used : 0;
    uint32_t got;

    *per_q = 0;
    if (nq <= 0) {
        return OPAL_ERR_BAD_PARAM;
    }
    got = left / (uint32_t) nq;
    if (got > want) {
        got = want;
    }
    if (0 == got) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    n->wqe_used += got * (uint32_t) nq;
    *per_q = got;
    return OPAL_SUCCESS;
}

void openib_xrc_node_unreserve(struct openib_xrc_node *n, uint32_t per_q, int nq)
{
    uint32_t all = per_q * (uint32_t) (nq > 0 ? nq : 0);

    n->wqe_used = all > n->wqe_used ? 0 : n->wqe_used - all;
}

/*
 * cpc_xoob_node.c - the per-remote-node table of shared XRC send QPs:
 * a hash by key for lookups, a doubly linked list for the final sweep.
 */
#include "opal_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal/constants.h"

#include "connect/cpc_xoob_node.h"

void openib_xrc_node_table_init(struct openib_xrc_node_table *t)
{
    t->head = NULL;
    t->count = 0;
    OBJ_CONSTRUCT(&t->by_key, opal_hash_table_t);
    opal_hash_table_init(&t->by_key, 64);
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
    OBJ_DESTRUCT(&t->by_key);
    return leaked;
}

/* The key's fields without the struct's padding bytes. */
#define PACKED_KEY_LEN (8 + 16 + 2 + 1)
static void pack_key(const struct openib_xrc_node_key *k, uint8_t out[PACKED_KEY_LEN])
{
    memcpy(out, &k->node_id, 8);
    memcpy(out + 8, k->gid, 16);
    memcpy(out + 24, &k->lid, 2);
    out[26] = k->port_num;
}

struct openib_xrc_node *openib_xrc_node_get(struct openib_xrc_node_table *t,
                                            const struct openib_xrc_node_key *key)
{
    uint8_t k[PACKED_KEY_LEN];
    struct openib_xrc_node *n;
    void *found;

    pack_key(key, k);
    if (OPAL_SUCCESS == opal_hash_table_get_value_ptr(&t->by_key, k, sizeof(k), &found)) {
        n = found;
        n->refcount++;
        return n;
    }
    n = calloc(1, sizeof(*n));
    if (NULL == n) {
        return NULL;
    }
    if (OPAL_SUCCESS != opal_hash_table_set_value_ptr(&t->by_key, k, sizeof(k), n)) {
        free(n);
        return NULL;
    }
    n->key = *key;
    n->refcount = 1;
    n->state = OPENIB_XRC_NODE_IDLE;
    n->next = t->head;
    if (t->head) {
        t->head->prev = n;
    }
    t->head = n;
    t->count++;
    return n;
}

void *openib_xrc_node_put(struct openib_xrc_node_table *t, struct openib_xrc_node *n)
{
    uint8_t k[PACKED_KEY_LEN];
    void *qp;

    if (NULL == n || --n->refcount > 0) {
        return NULL;
    }
    pack_key(&n->key, k);
    (void) opal_hash_table_remove_value_ptr(&t->by_key, k, sizeof(k));
    if (n->prev) {
        n->prev->next = n->next;
    } else {
        t->head = n->next;
    }
    if (n->next) {
        n->next->prev = n->prev;
    }
    t->count--;
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

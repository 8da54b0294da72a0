/*
 * cpc_xoob_node.h - XRC send-QP sharing: one entry per remote node, kept
 * by the xoob CPC, which also splits each shared QP's send WQEs among the
 * endpoints attached to it (openib_xrc_node_reserve).
 *
 * With XRC a process needs one send QP per remote node, not per remote
 * process: the peer's XRC SRQ number in each work request picks the process.
 * This table maps a remote node (its node id and port address) to that
 * shared QP, counts the endpoints using it, and keeps the endpoints waiting
 * while the first one connects it. Device-free (the QP is an opaque pointer)
 * so it is unit-tested without hardware. Single-threaded, like progress.
 */
#ifndef CPC_XOOB_NODE_H
#define CPC_XOOB_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "opal_config.h"
#include "opal/class/opal_hash_table.h"

struct openib_xrc_node_key {
    uint64_t node_id;     /* hash of the peer's host name (from its xoob blob) */
    uint8_t gid[16];      /* the peer port's GID */
    uint16_t lid;
    uint8_t port_num;
};

enum openib_xrc_node_state {
    OPENIB_XRC_NODE_IDLE = 0,    /* no send QP connected yet */
    OPENIB_XRC_NODE_CONNECTING,  /* one endpoint drives the handshake */
    OPENIB_XRC_NODE_CONNECTED,   /* the send QP is in RTS */
    OPENIB_XRC_NODE_FAILED,      /* sticky: every later join fails the same way */
};

struct openib_xrc_node {
    struct openib_xrc_node_key key;
    int refcount;
    enum openib_xrc_node_state state;
    void *qp;             /* opaque: the BTL's shared XRC send QP */
    uint32_t tgt_qpn;     /* the peer node's XRC target QP we send to */
    void *driver;         /* the waiter that connects it (CONNECTING) */
    void **waiters;       /* endpoints waiting for CONNECTED, in join order */
    int nwaiters, cap_waiters;
    /* Send WQEs of the shared QP handed out to its endpoints, so their
     * budgets together never exceed what the QP holds. */
    uint32_t wqe_cap, wqe_used;
    int fail_rc;
    char why[128];
    struct openib_xrc_node *next, *prev;
};

/* Entries found by key in O(1) (a hash of the packed key: a process may
 * talk to thousands of nodes), and listed for the final sweep. */
struct openib_xrc_node_table {
    struct openib_xrc_node *head;
    int count;
    opal_hash_table_t by_key;
};

/* Results of openib_xrc_node_join (>= 0; errors are OPAL_* < 0). */
#define OPENIB_XRC_JOIN_DRIVE 0   /* caller connects, then calls _complete */
#define OPENIB_XRC_JOIN_WAIT 1    /* caller is called back from _complete */
#define OPENIB_XRC_JOIN_READY 2   /* already connected: use node->qp now */

void openib_xrc_node_table_init(struct openib_xrc_node_table *t);
/* Frees every entry; returns how many were still there (leaks). */
int openib_xrc_node_table_fini(struct openib_xrc_node_table *t);

/* Find the entry for key or create it (IDLE); takes a reference. NULL when
 * out of memory. */
struct openib_xrc_node *openib_xrc_node_get(struct openib_xrc_node_table *t,
                                            const struct openib_xrc_node_key *key);
/* Drop a reference. When it was the last, the entry is removed and its qp
 * returned for the caller to destroy (NULL if it never had one). */
void *openib_xrc_node_put(struct openib_xrc_node_table *t, struct openib_xrc_node *n);

/* An endpoint wants the node's send QP: one of OPENIB_XRC_JOIN_*, or the
 * node's failure code (FAILED), or OPAL_ERR_OUT_OF_RESOURCE. */
int openib_xrc_node_join(struct openib_xrc_node *n, void *waiter);
/* A waiter goes away before the connection completed. Returns true when it
 * was the driver: the caller must then fail the node with
 * openib_xrc_node_complete so the others do not wait forever. */
bool openib_xrc_node_leave(struct openib_xrc_node *n, void *waiter);

/* The driver finished: rc OPAL_SUCCESS (qp/tgt_qpn set) or an error with
 * why. Every waiter, driver included, gets cb once, in join order; the list
 * is empty afterwards. */
typedef void (*openib_xrc_node_cb)(void *waiter, int rc, const char *why, void *arg);
void openib_xrc_node_complete(struct openib_xrc_node *n, int rc, const char *why,
                              openib_xrc_node_cb cb, void *arg);

/* Reserve send WQEs on the shared QP for one endpoint: up to `want` per
 * queue for nq queues, fewer when the QP is nearly full. *per_q gets the
 * grant; OPAL_ERR_OUT_OF_RESOURCE when not even one per queue is left. */
int openib_xrc_node_reserve(struct openib_xrc_node *n, uint32_t want, int nq, uint32_t *per_q);
void openib_xrc_node_unreserve(struct openib_xrc_node *n, uint32_t per_q, int nq);

#endif

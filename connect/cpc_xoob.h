/*
 * cpc_xoob.h - what the built-in xoob CPC needs from the BTL beyond the
 * public btl_ops: XRC objects (send and target QPs, SRQ numbers). Internal:
 * xoob is built in, so this table is not part of the plug-in ABI.
 */
#ifndef CPC_XOOB_H
#define CPC_XOOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "connect/cpc_xoob_node.h"

struct oob_event;

/* One side of an XRC connection as the other side needs it. */
struct openib_xoob_peer {
    uint32_t qpn;         /* initiator: its send QP; responder: its target QP */
    uint32_t psn;         /* the initiator's send PSN */
    uint32_t mtu;         /* bytes */
    uint8_t gid[16];
    uint16_t lid;
};

struct openib_xoob_btl_ops {
    uint32_t size;
    /* The port's XRC SRQ numbers (one per receive queue) and the queue
     * layout hash; NOT_SUPPORTED when the port has no XRC SRQs. */
    int (*port_srqs)(void *btl, uint32_t *srqn, int max, int *n, uint32_t *rq_layout);
    /* A send QP in INIT for a remote node that `sharers` endpoints use;
     * *wqe_cap is how many send WQEs it holds. */
    int (*send_qp_create)(void *btl, int sharers, void **qp, uint32_t *qpn, uint32_t *psn,
                          uint32_t *wqe_cap);
    /* Send QP to RTR and RTS towards the peer's target QP. */
    int (*send_qp_connect)(void *btl, void *qp, uint32_t psn, const struct openib_xoob_peer *tgt,
                           char *why, size_t why_len);
    void (*send_qp_destroy)(void *btl, void *qp);
    /* Responder: the target QP (in RTR) for an initiator's send QP, made or
     * found again for a repeated request. */
    int (*tgt_qp_get)(void *btl, const struct openib_xoob_peer *initiator, uint32_t *tgt_qpn,
                      char *why, size_t why_len);
    /* The endpoint sends on the node's connected send QP to the peer's SRQs. */
    int (*ep_attach)(void *btl_ep, struct openib_xrc_node *node, const uint32_t *srqn, int nsrq,
                     char *why, size_t why_len);
    /* Undo ep_attach (endpoint teardown; the node is still referenced). */
    void (*ep_detach)(void *btl_ep, struct openib_xrc_node *node);
};

/* The BTL hands its table over before querying ports; NULL (unit tests)
 * makes xoob decline every port. */
void openib_cpc_xoob_set_btl_ops(const struct openib_xoob_btl_ops *ops);

/* Called by openib_cpc_side_channel_progress for every side-channel event:
 * true when the event belonged to xoob (and was handled). */
bool openib_cpc_xoob_dispatch(const struct oob_event *ev);
/* The component's progress hook: the side channel it shares with oob, and
 * its handshakes' deadlines and retries (cheap when none is under way). */
int openib_cpc_xoob_progress(bool urgent);

#endif

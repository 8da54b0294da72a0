/*
 * btl_openib_qp_state.h - the state changes every QP of the BTL goes
 * through (RC QPs of endpoints, XRC send and target QPs). One place, so RC and XRC cannot
 * drift apart in timeouts, atomics depth or addressing.
 */
#ifndef BTL_OPENIB_QP_STATE_H
#define BTL_OPENIB_QP_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "btl_openib/btl_openib.h"

/* What RTR needs to know about the other end. */
struct openib_qp_peer {
    uint32_t qpn;
    uint32_t psn;           /* the peer's first send PSN (our receive PSN) */
    uint32_t mtu;           /* bytes; 0: use ours */
    uint16_t lid;
    const uint8_t *gid;     /* 16 bytes */
};

/* All three return OPAL_SUCCESS or an OPAL code (the verbs' errno value
 * converted by openib_err_from_errno); on failure errno holds that errno
 * value, for messages. */

/* RESET -> INIT on m's port, every remote access allowed (what is reachable
 * is decided by the rkeys handed out). */
int openib_qp_to_init(const mca_btl_openib_module_t *m, struct ibv_qp *qp);

/* INIT -> RTR towards peer. responder: the QP receives requests (RC QPs,
 * XRC target QPs) and gets RDMA-read/atomic depth and an RNR timer; an XRC
 * send QP receives nothing and may not set them. */
int openib_qp_to_rtr(const mca_btl_openib_module_t *m, struct ibv_qp *qp,
                     const struct openib_qp_peer *peer, bool responder);

/* RTR -> RTS with our send PSN and the btl_openib_ib_* transport timers. */
int openib_qp_to_rts(const mca_btl_openib_module_t *m, struct ibv_qp *qp, uint32_t sq_psn);

#endif

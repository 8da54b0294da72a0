/*
 * btl_openib_xrc.h - the BTL's XRC objects: the per-node XRC domain, XRC
 * SRQs, shared send QPs and target QPs, and what an XRC CPC asks of them.
 * Without XRC verbs (OPENIB_HAVE_XRC 0) every entry point says
 * NOT_SUPPORTED and X queues are refused before any of it is reached.
 */
#ifndef BTL_OPENIB_XRC_H
#define BTL_OPENIB_XRC_H

#include "openib_config.h"

#include "btl_openib/btl_openib.h"
#include "btl_openib/btl_openib_frag.h"
#include "openib/openib_cpc.h"

/* The device's XRC domain, shared with the job's other processes on this
 * node through a file named after the job; opened on first use. */
int openib_xrc_dev_open(struct openib_device *dev);
void openib_xrc_dev_close(struct openib_device *dev);

/* An XRC SRQ of the device's domain completing on the module's CQ. */
struct ibv_srq *openib_xrc_srq_create(mca_btl_openib_module_t *m, uint32_t max_wr);

/* The port's target QPs (made for remote send QPs) go at module teardown. */
void openib_xrc_port_fini(mca_btl_openib_module_t *m);

/* A receive on an X queue whose target QP is no endpoint's (it is shared per
 * remote node, maybe owned by another local process): deliver it and give
 * the buffer back to the SRQ. X queues have no per-peer credits to learn. */
void openib_xrc_recv_orphan(mca_btl_openib_module_t *m, openib_frag_t *f, uint32_t length);

/* What an XRC CPC (xoob) calls: openib_cpc_port.xrc of an XRC port. */
extern const struct openib_cpc_xrc_ops openib_xrc_cpc_ops;

/* Every WR on a shared XRC send QP names the peer's SRQ for its queue. */
static inline void openib_xrc_stamp_wr(const mca_btl_openib_endpoint_t *ep, int q,
                                       struct ibv_send_wr *wr)
{
#if OPENIB_HAVE_XRC
    wr->qp_type.xrc.remote_srqn = ep->xrc_srqn[q];
#else
    (void) ep;
    (void) q;
    (void) wr;
#endif
}

#endif

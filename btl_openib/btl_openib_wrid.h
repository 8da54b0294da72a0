/*
 * btl_openib_wrid.h - what a work request's wr_id says about it. Local
 * only: a wr_id comes back in our own completions and never travels (the
 * formats peers exchange are in wire/).
 */
#ifndef BTL_OPENIB_WRID_H
#define BTL_OPENIB_WRID_H

#include <stdint.h>

/* wr_id of a work request without a fragment (credit writes, fragment-less
 * inline sends): the endpoint pointer | queue << 1 | 1. Fragments and
 * endpoints are 16-byte aligned, so bit 0 tells the two apart. A
 * fragment's wr_id is the fragment pointer, | OPENIB_WRID_RING when it was
 * RDMA-written into the peer's eager ring on the first QP (not on its own
 * queue's QP). */
#define OPENIB_WRID_CTRL 1u
#define OPENIB_WRID_RING 2u
#define OPENIB_WRID_MAKE(ep, q) ((uintptr_t) (ep) | ((uintptr_t) (q) << 1) | OPENIB_WRID_CTRL)
#define OPENIB_WRID_EP(id) ((void *) (uintptr_t) ((id) & ~(uint64_t) 15))
#define OPENIB_WRID_QUEUE(id) ((int) (((id) >> 1) & 7))
#define OPENIB_WRID_FRAG(id) ((void *) (uintptr_t) ((id) & ~(uint64_t) 15))
/* The QP a fragment's work request went to. */
#define OPENIB_WRID_FRAG_QP(id, f) (((id) & OPENIB_WRID_RING) ? 0 : (f)->qp)

#endif

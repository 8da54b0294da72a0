/*
 * btl_openib_frag.h - fragments: send and receive buffers (registered, one
 * size class per receive queue) and RDMA descriptors.
 */
#ifndef BTL_OPENIB_FRAG_H
#define BTL_OPENIB_FRAG_H

#include "btl_openib/btl_openib.h"
#include "btl_openib/btl_openib_wrid.h"
#include "wire/data_hdr.h"

struct openib_frag {
    mca_btl_base_descriptor_t des;   /* first: starts with the free-list item */
    /* seg[0]: the PML's header (+ copied payload) after our wire header;
     * seg[1]: user data sent in place (zero-copy), when des_segment_count 2 */
    mca_btl_base_segment_t seg[2];
    enum openib_frag_kind kind;
    uint8_t qp;                      /* queue index */
    mca_btl_openib_endpoint_t *ep;
    mca_btl_openib_module_t *m;
    opal_free_list_t *home;
    struct openib_hdr *hdr;          /* registered buffer (send/recv) */
    uint32_t size;                   /* its bytes, our header included */
    uint32_t lkey;
    uint32_t len;                    /* bytes on the wire, header included */
    struct ibv_sge sge[2];
    mca_btl_base_registration_handle_t *user_reg; /* zero-copy: user data's registration */
    union {
        struct ibv_send_wr swr;
        struct ibv_recv_wr rwr;
    };
    /* RDMA and atomics */
    mca_btl_base_rdma_completion_fn_t rdma_cb;
    void *cbctx, *cbdata, *local_address;
    mca_btl_base_registration_handle_t *local_handle;
    /* RDMA staged through a host bounce buffer (local HMEM memory) */
    void *bounce;
    mca_btl_base_registration_handle_t *bounce_handle;
    size_t bounce_len;
    /* a loopback atomic on memory mapped here (btl_openib_rdma.c): the
     * target's registration, taken for this operation (user_reg holds the
     * result buffer's when the caller gave no local handle) */
    mca_btl_base_registration_handle_t *target_reg;
};
typedef struct openib_frag openib_frag_t;
OBJ_CLASS_DECLARATION(openib_frag_t);

int openib_frag_lists_init(mca_btl_openib_module_t *m);
void openib_frag_lists_fini(mca_btl_openib_module_t *m);

/* A send fragment able to carry `bytes` of payload after our header. */
openib_frag_t *openib_frag_alloc_send(mca_btl_openib_module_t *m, size_t bytes);
openib_frag_t *openib_frag_alloc_rdma(mca_btl_openib_module_t *m);
void openib_frag_return(openib_frag_t *f);

static inline void *openib_frag_payload(openib_frag_t *f)
{
    return (void *) (f->hdr + 1);
}

#endif

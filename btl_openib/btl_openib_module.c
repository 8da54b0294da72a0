/*
 * btl_openib_module.c - the BTL module operations (procs,
 * descriptors, sends); their ops table, which takes the lock, is in
 * btl_openib_ops.c. RDMA and atomics are in btl_openib_rdma.c.
 */
#include "opal_config.h"

#include <string.h>

#include "opal/constants.h"
#include "opal/datatype/opal_convertor.h"
#include "opal/util/bit_ops.h"

#include "btl_openib/btl_openib.h"
#include "btl_openib/btl_openib_credits.h"
#include "btl_openib/btl_openib_eager_rdma.h"
#include "btl_openib/btl_openib_frag.h"
#include "btl_openib/btl_openib_hmem_glue.h"
#include "btl_openib/btl_openib_module.h"
#include "btl_openib/btl_openib_peer_limit.h"
#include "btl_openib/btl_openib_proc.h"
#include "btl_openib/btl_openib_rdma.h"
#include "btl_openib/btl_openib_reg.h"
#include "btl_openib/btl_openib_send.h"
#include "btl_openib/btl_openib_teardown.h"
#include "mca/btl_openib_params.h"
#include "hmem/openib_hmem_btl.h"

int openib_add_procs(mca_btl_base_module_t *btl, size_t nprocs, opal_proc_t **procs,
                     mca_btl_base_endpoint_t **peers, opal_bitmap_t *reachable)
{
    mca_btl_openib_module_t *m = (mca_btl_openib_module_t *) btl;
    opal_proc_t *self = opal_proc_local_get();
    size_t i;

    for (i = 0; i < nprocs; ++i) {
        char why[160];

        if (NULL != peers[i]) {
            continue;
        }
        if (procs[i] == self) {
            /* A loopback endpoint (one QP connected to itself per queue):
             * osc/rdma needs one BTL that reaches every rank, self included. */
            struct openib_modex_port me;

            peers[i] = openib_peer_lookup(m, &self->proc_name);
            if (NULL == peers[i] &&
                OPAL_SUCCESS == openib_connect_modex_fill_port(&me, &m->cpc_port, m->cpcs,
                                                               m->num_cpcs)) {
                peers[i] = openib_endpoint_create(m, procs[i], &me);
            }
        } else {
            /* the existing endpoint when the peer contacted us first */
            peers[i] = openib_peer_endpoint(m, procs[i], why, sizeof(why));
            if (NULL == peers[i]) {
                OPENIB_VERBOSE(10, "%s:%d cannot reach rank %u: %s", m->dev->name, m->port_num,
                               procs[i]->proc_name.vpid, why);
            }
        }
        if (NULL != peers[i] && reachable) {
            opal_bitmap_set_bit(reachable, (int) i);
        }
    }
    return OPAL_SUCCESS;
}

int openib_del_procs(mca_btl_base_module_t *btl, size_t nprocs, opal_proc_t **procs,
                     mca_btl_base_endpoint_t **peers)
{
    size_t i;

    /* all at once, so their teardown waits overlap */
    openib_endpoints_settle((mca_btl_openib_endpoint_t **) peers, (int) nprocs);
    openib_endpoints_quiesce((mca_btl_openib_endpoint_t **) peers, (int) nprocs);
    for (i = 0; i < nprocs; ++i) {
        if (peers[i]) {
            openib_endpoint_destroy(peers[i]);
        }
    }
    return OPAL_SUCCESS;
}

int openib_finalize(mca_btl_base_module_t *btl)
{
    return openib_module_fini((mca_btl_openib_module_t *) btl);
}

mca_btl_base_descriptor_t *openib_alloc(mca_btl_base_module_t *btl,
                                        mca_btl_base_endpoint_t *ep, uint8_t order,
                                        size_t size, uint32_t flags)
{
    openib_frag_t *f = openib_frag_alloc_send((mca_btl_openib_module_t *) btl, size);

    if (OPAL_UNLIKELY(NULL == f)) {
        return NULL;
    }
    f->ep = ep;
    f->des.des_flags = flags;
    return &f->des;
}

int openib_free(mca_btl_base_module_t *btl, mca_btl_base_descriptor_t *des)
{
    openib_frag_return((openib_frag_t *) des);
    return OPAL_SUCCESS;
}

/* Below this, copying into the fragment beats registering the user buffer. */
#define OPENIB_INPLACE_MIN 16384

/*
 * Contiguous host data is sent where it lies: the fragment carries our
 * header and the PML's (seg[0]), the user buffer goes as a second SGE
 * (seg[1]), registered through the cache. Not for HMEM memory (the NIC
 * cannot reach it: it is copied through the hooks instead).
 */
static int openib_send_inplace(mca_btl_openib_module_t *m, mca_btl_base_endpoint_t *ep,
                               opal_convertor_t *conv, openib_frag_t *f, size_t reserve,
                               size_t max)
{
    enum openib_hmem_iface iface;
    uint64_t dev;
    size_t pos;
    void *src;

    if (opal_convertor_need_buffers(conv) || max > conv->local_size - conv->bConverted) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    opal_convertor_get_current_pointer(conv, &src);
    openib_hmem_detect(src, &iface, &dev);
    if (iface != OPENIB_HMEM_SYSTEM) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    f->user_reg = openib_register_mem(&m->super, ep, src, max, 0);
    if (NULL == f->user_reg) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    f->seg[0].seg_len = reserve;
    f->seg[1].seg_addr.pval = src;
    f->seg[1].seg_len = max;
    f->des.des_segment_count = 2;
    pos = conv->bConverted + max;
    opal_convertor_set_position(conv, &pos);
    m->stats.inplace_sends++;
    return OPAL_SUCCESS;
}

mca_btl_base_descriptor_t *openib_prepare_src(mca_btl_base_module_t *btl,
                                              mca_btl_base_endpoint_t *ep,
                                              opal_convertor_t *conv, uint8_t order,
                                              size_t reserve, size_t *size, uint32_t flags)
{
    mca_btl_openib_module_t *m = (mca_btl_openib_module_t *) btl;
    size_t max = *size;
    openib_frag_t *f;
    int rc;

    if (reserve + max > btl->btl_max_send_size) {
        max = btl->btl_max_send_size - reserve;
    }
    f = openib_frag_alloc_send(m, reserve + max);
    if (OPAL_UNLIKELY(NULL == f)) {
        return NULL;
    }
    if (max >= OPENIB_INPLACE_MIN && OPAL_SUCCESS == openib_send_inplace(m, ep, conv, f, reserve, max)) {
        *size = max;
        f->ep = ep;
        f->des.des_flags = flags;
        return &f->des;
    }
    rc = openib_hmem_pack(m, conv, (char *) openib_frag_payload(f) + reserve, &max);
    if (OPAL_UNLIKELY(rc < 0)) {
        openib_frag_return(f);
        return NULL;
    }
    *size = max;
    f->seg[0].seg_len = reserve + max;
    f->ep = ep;
    f->des.des_flags = flags;
    return &f->des;
}

int openib_send(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep,
                mca_btl_base_descriptor_t *des, mca_btl_base_tag_t tag)
{
    openib_frag_t *f = (openib_frag_t *) des;

    f->hdr->tag = tag;
    return openib_ep_submit(ep, f);
}

/* The payload went out from where it is: move the convertor past it. */
static void consume_payload(opal_convertor_t *conv, size_t payload_size)
{
    if (payload_size) {
        size_t pos = conv->bConverted + payload_size;
        opal_convertor_set_position(conv, &pos);
    }
}

/*
 * The smallest messages skip the fragment: our header, the PML's header and
 * the payload go as three inline SGEs straight from where they are, when
 * the payload is contiguous host memory that no HMEM override wants to copy
 * (then the NIC's inline copy is the only copy, as the default hook would
 * be). Returns OPAL_ERR_NOT_SUPPORTED when this path does not apply.
 */
static int sendi_inline(mca_btl_openib_module_t *m, mca_btl_base_endpoint_t *ep,
                        opal_convertor_t *conv, void *header, size_t header_size,
                        size_t payload_size, mca_btl_base_tag_t tag)
{
    size_t total = sizeof(struct openib_hdr) + header_size + payload_size;
    struct openib_hdr hdr = { .tag = tag };
    struct ibv_sge sge[3];
    struct ibv_send_wr wr;
    struct openib_ep_qp *qp;
    void *payload = NULL;
    int q;

    if (total > m->max_inline) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    if (payload_size) {
        if (opal_convertor_need_buffers(conv)) {
            return OPAL_ERR_NOT_SUPPORTED;
        }
        opal_convertor_get_current_pointer(conv, &payload);
        if (!openib_hmem_is_plain_host(m->dev->hmem, payload)) {
            return OPAL_ERR_NOT_SUPPORTED;
        }
    }
    if (!openib_ep_may_send_now(ep)) {
        return OPAL_ERR_NOT_SUPPORTED; /* behind what waits: the fragment path queues it */
    }
    if (ep->eager.peer_rkey &&
        OPAL_SUCCESS == openib_eager_rdma_sendi(ep, header, header_size, payload, payload_size, tag)) {
        consume_payload(conv, payload_size);
        return OPAL_SUCCESS;
    }
    q = openib_rq_spec_pick(&mca_btl_openib_component.rq, total);
    if (q < 0) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    qp = &ep->qps[q];
    if (openib_qp_data_room(ep, q) <= 0 || openib_credits_available(qp, q) <= 0) {
        return OPAL_ERR_NOT_SUPPORTED; /* the fragment path queues it */
    }
    openib_hdr_stamp(ep, &hdr);
    sge[0] = (struct ibv_sge) { .addr = (uintptr_t) &hdr, .length = sizeof(hdr) };
    sge[1] = (struct ibv_sge) { .addr = (uintptr_t) header, .length = (uint32_t) header_size };
    sge[2] = (struct ibv_sge) { .addr = (uintptr_t) payload, .length = (uint32_t) payload_size };
    wr = (struct ibv_send_wr) {
        .wr_id = OPENIB_WRID_MAKE(ep, q),
        .sg_list = sge,
        .num_sge = payload_size ? 3 : 2,
        .opcode = IBV_WR_SEND,
        .send_flags = IBV_SEND_INLINE,
    };
    if (OPAL_UNLIKELY(openib_qp_post(ep, q, &wr, false))) {
        openib_hdr_unstamp(ep);
        return OPAL_ERR_NOT_SUPPORTED;
    }
    if (openib_queue_is_pp(q)) {
        qp->sent++;
    }
    m->stats.sends++;
    m->stats.inline_sends++;
    m->stats.send_bytes += total - sizeof(hdr);
    m->stats.frag_inline_msgs++;
    m->stats.frag_inline_bytes += total - sizeof(hdr);
    consume_payload(conv, payload_size);
    return OPAL_SUCCESS;
}

int openib_sendi(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep,
                 opal_convertor_t *conv, void *header, size_t header_size,
                 size_t payload_size, uint8_t order, uint32_t flags,
                 mca_btl_base_tag_t tag, mca_btl_base_descriptor_t **descriptor)
{
    mca_btl_openib_module_t *m = (mca_btl_openib_module_t *) btl;
    size_t total = header_size + payload_size, max = payload_size;
    openib_frag_t *f;

    /* Only when the message can go out now; otherwise ob1 uses send(). */
    if (OPAL_UNLIKELY(ep->conn.state != OPENIB_CONN_CONNECTED || ep->stalled ||
                      total > btl->btl_eager_limit)) {
        if (descriptor) {
            *descriptor = openib_alloc(btl, ep, order, total, flags);
        }
        return OPAL_ERR_RESOURCE_BUSY;
    }
    openib_ep_touch(ep);
    if (OPAL_SUCCESS == sendi_inline(m, ep, conv, header, header_size, payload_size, tag)) {
        return OPAL_SUCCESS;
    }
    f = openib_frag_alloc_send(m, total);
    if (OPAL_UNLIKELY(NULL == f)) {
        if (descriptor) {
            *descriptor = NULL;
        }
        return OPAL_ERR_RESOURCE_BUSY;
    }
    openib_hmem_copy_header(m, openib_frag_payload(f), header, header_size);
    if (payload_size &&
        OPAL_UNLIKELY(openib_hmem_pack(m, conv, (char *) openib_frag_payload(f) + header_size,
                                       &max) < 0 || max != payload_size)) {
        openib_frag_return(f);
        if (descriptor) {
            *descriptor = NULL;
        }
        return OPAL_ERROR;
    }
    f->seg[0].seg_len = total;
    f->des.des_flags = flags | MCA_BTL_DES_FLAGS_BTL_OWNERSHIP;
    f->des.des_cbfunc = NULL;
    f->hdr->tag = tag;
    return openib_ep_submit(ep, f);
}

void openib_dump(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep, int verbose)
{
    mca_btl_openib_module_t *m = (mca_btl_openib_module_t *) btl;

    if (ep) {
        opal_output(0, "openib %s:%d endpoint %s: %s, CPC %s, %s", m->dev->name, m->port_num,
                    ep->desc, openib_lazy_state_name(ep->conn.state),
                    ep->cpc ? ep->cpc->component->name : "none",
                    ep->stalled ? "waiting for credits" : "not waiting");
    }
}

int openib_register_error(mca_btl_base_module_t *btl, mca_btl_base_module_error_cb_fn_t cb)
{
    ((mca_btl_openib_module_t *) btl)->error_cb = cb;
    return OPAL_SUCCESS;
}

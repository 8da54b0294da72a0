/*
 * btl_openib_frag.c - fragment free lists: send and receive buffers per
 * receive queue, small send buffers for queue 0, RDMA descriptors.
 */
#include "opal_config.h"

#include "opal/constants.h"
#include "opal/mca/mpool/base/base.h"
#include "opal/runtime/opal_params.h"

#include "btl_openib/btl_openib_frag.h"
#include "btl_openib/btl_openib_reg.h"
#include "mca/btl_openib_params.h"

OBJ_CLASS_INSTANCE(openib_frag_t, mca_btl_base_descriptor_t, NULL, NULL);

static int frag_item_init(opal_free_list_item_t *item, void *ctx)
{
    struct openib_frag_list_ctx *c = ctx;
    openib_frag_t *f = (openib_frag_t *) item;

    f->m = c->m;
    f->home = c->home;
    f->kind = c->kind;
    f->qp = c->qp;
    f->size = c->size;
    f->ep = NULL;
    f->des.des_segments = f->seg;
    f->des.des_segment_count = 1;
    if (item->ptr) {
        f->hdr = item->ptr;
        f->lkey = openib_item_lkey(item);
    }
    return OPAL_SUCCESS;
}

/* openib's own buffers are registered outside the cache's lookup: a chunk
 * is new memory, maybe at addresses the process freed a moment ago, and a
 * lookup there could hit a registration of those addresses that an
 * invalidation missed (btl_openib_release_log.h). Nothing else ever needs
 * to find them, and they are deregistered with their list. */
#define OWN_BUFFERS MCA_RCACHE_FLAGS_CACHE_BYPASS

static int list_init(mca_btl_openib_module_t *m, opal_free_list_t *fl,
                     struct openib_frag_list_ctx *c, enum openib_frag_kind kind, uint8_t qp,
                     size_t payload, int num)
{
    *c = (struct openib_frag_list_ctx) {
        .m = m, .home = fl, .kind = kind, .qp = qp, .size = (uint32_t) payload };
    return opal_free_list_init(fl, sizeof(openib_frag_t), opal_cache_line_size,
                               OBJ_CLASS(openib_frag_t), payload, payload ? 64 : 0, num,
                               openib_params.free_list_max, openib_params.free_list_inc,
                               payload ? mca_mpool_base_default_module : NULL, OWN_BUFFERS,
                               payload ? m->dev->rcache : NULL, frag_item_init, c);
}

/* Send buffer sizes for small messages to queue 0. With one large shared
 * queue (the default: one QP per peer), every message would otherwise hold
 * a buffer of that queue's size while it is in flight: 10,000 small
 * messages in flight would pin 640 MiB of 64 KiB buffers. The receiver's
 * buffer size does not depend on the sender's. */
static const uint32_t small_sizes[OPENIB_SEND_SMALL_CLASSES] = OPENIB_SEND_SMALL_SIZES;

int openib_frag_lists_init(mca_btl_openib_module_t *m)
{
    const struct openib_rq_spec *rq = &mca_btl_openib_component.rq;
    int i, rc;

    m->num_send_small = 0;
    for (i = 0; i < OPENIB_SEND_SMALL_CLASSES && rq->num > 0; ++i) {
        if (small_sizes[i] < rq->q[0].size) {
            m->num_send_small = i + 1;
        }
    }
    /* Construct every list first so that fini can destruct all of them
     * whatever step below fails. */
    for (i = 0; i < rq->num; ++i) {
        OBJ_CONSTRUCT(&m->send_frags[i], opal_free_list_t);
        OBJ_CONSTRUCT(&m->recv_frags[i], opal_free_list_t);
    }
    for (i = 0; i < m->num_send_small; ++i) {
        OBJ_CONSTRUCT(&m->send_small[i], opal_free_list_t);
    }
    OBJ_CONSTRUCT(&m->rdma_frags, opal_free_list_t);
    OBJ_CONSTRUCT(&m->mailboxes, opal_free_list_t);
    rc = opal_free_list_init(&m->mailboxes, sizeof(opal_free_list_item_t), opal_cache_line_size,
                             OBJ_CLASS(opal_free_list_item_t), OPENIB_MAILBOX_BYTES,
                             sizeof(uint64_t), 0, -1, openib_params.free_list_inc,
                             mca_mpool_base_default_module, OWN_BUFFERS, m->dev->rcache, NULL,
                             NULL);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    for (i = 0; i < m->num_send_small; ++i) {
        rc = list_init(m, &m->send_small[i], &m->fl_ctx[2 * OPENIB_MAX_QUEUES + 1 + i],
                       OPENIB_FRAG_SEND, 0, small_sizes[i], openib_params.free_list_num);
        if (OPAL_SUCCESS != rc) {
            return rc;
        }
    }
    for (i = 0; i < rq->num; ++i) {
        rc = list_init(m, &m->send_frags[i], &m->fl_ctx[2 * i], OPENIB_FRAG_SEND, i,
                       rq->q[i].size, openib_params.free_list_num);
        if (OPAL_SUCCESS != rc) {
            return rc;
        }
        rc = list_init(m, &m->recv_frags[i], &m->fl_ctx[2 * i + 1], OPENIB_FRAG_RECV, i,
                       rq->q[i].size,
                       rq->q[i].type == OPENIB_RQ_PP ? openib_params.free_list_num
                                                     : (int) rq->q[i].count);
        if (OPAL_SUCCESS != rc) {
            return rc;
        }
    }
    return list_init(m, &m->rdma_frags, &m->fl_ctx[2 * OPENIB_MAX_QUEUES], OPENIB_FRAG_RDMA, 0,
                     0, openib_params.free_list_num);
}

void openib_frag_lists_fini(mca_btl_openib_module_t *m)
{
    int i;

    for (i = 0; i < mca_btl_openib_component.rq.num; ++i) {
        OBJ_DESTRUCT(&m->send_frags[i]);
        OBJ_DESTRUCT(&m->recv_frags[i]);
    }
    for (i = 0; i < m->num_send_small; ++i) {
        OBJ_DESTRUCT(&m->send_small[i]);
    }
    OBJ_DESTRUCT(&m->rdma_frags);
    OBJ_DESTRUCT(&m->mailboxes);
}

openib_frag_t *openib_frag_alloc_send(mca_btl_openib_module_t *m, size_t bytes)
{
    size_t need = bytes + sizeof(struct openib_hdr);
    int q = openib_rq_spec_pick(&mca_btl_openib_component.rq, need), i;
    opal_free_list_t *fl;
    openib_frag_t *f;

    if (q < 0) {
        return NULL;
    }
    fl = &m->send_frags[q];
    for (i = 0; 0 == q && i < m->num_send_small; ++i) {
        if (need <= small_sizes[i]) {
            fl = &m->send_small[i];
            break;
        }
    }
    f = (openib_frag_t *) opal_free_list_get(fl);
    if (f) {
        f->des.des_flags = 0;
        f->des.des_cbfunc = NULL;
        f->seg[0].seg_addr.pval = openib_frag_payload(f);
        f->seg[0].seg_len = bytes;
        f->des.des_segments = f->seg;
        f->des.des_segment_count = 1;
        f->des.order = MCA_BTL_NO_ORDER;
        f->user_reg = NULL;
    }
    return f;
}

openib_frag_t *openib_frag_alloc_rdma(mca_btl_openib_module_t *m)
{
    return (openib_frag_t *) opal_free_list_get(&m->rdma_frags);
}

void openib_frag_return(openib_frag_t *f)
{
    opal_free_list_return(f->home, &f->des.super);
}

/*
 * btl_openib_qp_map.h - local QP number -> endpoint, for the receive path.
 *
 * A receive completion on a shared queue names only the QP it arrived on.
 * qp_map (an opal_hash_table) holds every live QP of the module; in front
 * of it, one direct-mapped slot per qp_num % OPENIB_QPN_CACHE answers the
 * busy peers with a load and a compare instead of a hash lookup per
 * completion. The slots only ever hold what qp_map holds: filled from it,
 * and set and cleared where it is (btl_openib_endpoint.c), all under the
 * BTL's lock. The async-event thread reads qp_map alone.
 */
#ifndef BTL_OPENIB_QP_MAP_H
#define BTL_OPENIB_QP_MAP_H

#include "btl_openib/btl_openib.h"

static inline struct openib_qpn_slot *openib_qpn_slot(mca_btl_openib_module_t *m, uint32_t qpn)
{
    return &m->qpn_cache[qpn % OPENIB_QPN_CACHE];
}

static inline void openib_qp_map_add(mca_btl_openib_module_t *m, uint32_t qpn,
                                     mca_btl_openib_endpoint_t *ep)
{
    struct openib_qpn_slot *s = openib_qpn_slot(m, qpn);

    opal_hash_table_set_value_uint32(&m->qp_map, qpn, ep);
    s->qpn = qpn;
    s->ep = ep;
}

static inline void openib_qp_map_remove(mca_btl_openib_module_t *m, uint32_t qpn)
{
    struct openib_qpn_slot *s = openib_qpn_slot(m, qpn);

    opal_hash_table_remove_value_uint32(&m->qp_map, qpn);
    if (s->qpn == qpn) {
        s->ep = NULL;
    }
}

/* The endpoint owning local QP qpn, or NULL. */
static inline mca_btl_openib_endpoint_t *openib_qp_map_find(mca_btl_openib_module_t *m,
                                                            uint32_t qpn)
{
    struct openib_qpn_slot *s = openib_qpn_slot(m, qpn);
    void *ep = NULL;

    if (OPAL_LIKELY(s->qpn == qpn && NULL != s->ep)) {
        return s->ep;
    }
    opal_hash_table_get_value_uint32(&m->qp_map, qpn, &ep);
    if (NULL != ep) {
        s->qpn = qpn;
        s->ep = ep;
    }
    return ep;
}

#endif

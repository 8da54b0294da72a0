/*
 * btl_openib_wc.h - how the progress loop sees a completion.
 *
 * Each ibv_wc is turned into the versioned completion record
 * (openib/openib_wc.h) and read back through it, so the data path depends
 * only on the record's documented fields.
 */
#ifndef BTL_OPENIB_WC_H
#define BTL_OPENIB_WC_H

#include "btl_openib/btl_openib.h"

struct openib_completion {
    uint64_t id;
    int status;            /* enum ibv_wc_status */
    int opcode;            /* enum ibv_wc_opcode */
    uint32_t length;
    uint32_t vendor_err;
    bool is_recv;
    mca_btl_openib_endpoint_t *ep;   /* from the local QP number */
};

void openib_completion_from_wc(mca_btl_openib_module_t *m, const struct ibv_wc *wc,
                               struct openib_completion *c);

#endif

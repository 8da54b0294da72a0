/*
 * cpc_endpoint.c - the BTL's calls into a chosen CPC module for one
 * endpoint. Going through here (not the hooks directly) keeps the size
 * checks of openib_abi.h in one place and gives the per-connection line.
 * Also the start and end of a built-in CPC's own state of an endpoint.
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connect/cpc_internal.h"

#define CPC_ENDPOINT_V1_SIZE OPENIB_SIZE_THROUGH(struct openib_cpc_endpoint, cpc_private)

static int check_pair(const struct openib_cpc_module *m, const struct openib_cpc_endpoint *cep)
{
    if (NULL == m || NULL == cep || NULL == m->component) {
        return OPAL_ERR_BAD_PARAM;
    }
    if (0 != openib_abi_check_size(m, m->size, OPENIB_CPC_MODULE_V1_SIZE, sizeof(*m)) ||
        0 != openib_abi_check_size(cep, cep->size, CPC_ENDPOINT_V1_SIZE, sizeof(*cep))) {
        return OPAL_ERR_BAD_PARAM;
    }
    return OPAL_SUCCESS;
}

int openib_connect_endpoint_init(struct openib_cpc_module *m, struct openib_cpc_endpoint *cep)
{
    int rc = check_pair(m, cep);

    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    return m->endpoint_init ? m->endpoint_init(m, cep) : OPAL_SUCCESS;
}

void openib_connect_describe_choice(const char *peer_desc, const struct openib_cpc_module *m)
{
    char extra[OPENIB_CPC_WHY_MAX] = "";

    if (NULL == m || NULL == m->component) {
        return;
    }
    /* describe() is v2: a v1 plug-in's module ends before it. */
    if (OPENIB_HAS_FIELD(m, struct openib_cpc_module, describe) && NULL != m->describe &&
        OPAL_SUCCESS == m->describe(m, extra, sizeof(extra))) {
        extra[sizeof(extra) - 1] = '\0';
    } else {
        extra[0] = '\0';
    }
    openib_cpc_log(10, "openib: connecting to %s with CPC %s (priority %u%s%s)",
                   peer_desc ? peer_desc : "(unknown peer)", m->component->name,
                   (unsigned) m->priority, extra[0] ? "; " : "", extra);
}

int openib_connect_start_connect(struct openib_cpc_module *m, struct openib_cpc_endpoint *cep)
{
    int rc = check_pair(m, cep);

    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    if (NULL == m->start_connect) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    openib_connect_describe_choice(cep->peer_desc, m);
    return m->start_connect(m, cep);
}

int openib_connect_endpoint_finalize(struct openib_cpc_module *m,
                                     struct openib_cpc_endpoint *cep)
{
    int rc = check_pair(m, cep);

    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    return m->endpoint_finalize ? m->endpoint_finalize(m, cep) : OPAL_SUCCESS;
}

/* ---- a built-in CPC's state of one endpoint (cep->cpc_private) ---- */

void *openib_cpc_ep_alloc(size_t size, uint32_t magic)
{
    void *e = calloc(1, size);

    if (NULL != e) {
        memcpy(e, &magic, sizeof(magic));
    }
    return e;
}

void openib_cpc_ep_attach(struct openib_cpc_endpoint *cep, void *e,
                          const struct openib_cpc_btl_ops **btl_ops, uint8_t *self,
                          bool *have_self)
{
    cep->cpc_private = e;
    *btl_ops = cep->btl_ops;
    memcpy(self, cep->local_id, cep->id_len); /* the BTL names us the same each time */
    *have_self = true;
}

int openib_cpc_ep_free(struct openib_cpc_endpoint *cep, void *e)
{
    const uint32_t none = 0;

    memcpy(e, &none, sizeof(none)); /* a stale pointer to it is not taken for a live one */
    free(e);
    cep->cpc_private = NULL;
    return OPAL_SUCCESS;
}

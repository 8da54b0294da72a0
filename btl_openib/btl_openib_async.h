/*
 * btl_openib_async.h - asynchronous device events and failing endpoints.
 *
 * Events are read from each device's async fd without blocking (the fd is
 * non-blocking and polled from progress at a low rate), so a port going down
 * or a QP error never stalls the data path.
 */
#ifndef BTL_OPENIB_ASYNC_H
#define BTL_OPENIB_ASYNC_H

#include "btl_openib/btl_openib.h"

int openib_async_init(struct openib_device *dev);
int openib_async_progress(void);

/* Mark an endpoint FAILED: queued operations complete with an error, the
 * PML's error callback runs, later sends return OPAL_ERR_UNREACH. */
void openib_endpoint_fail(mca_btl_openib_endpoint_t *ep, int rc, const char *why);

#endif

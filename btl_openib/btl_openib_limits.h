/*
 * btl_openib_limits.h - parameter limits that depend on the device or
 * port, checked when a port opens (see btl_openib_limits.c).
 */
#ifndef BTL_OPENIB_LIMITS_H
#define BTL_OPENIB_LIMITS_H

#include <stdint.h>

struct mca_btl_openib_module;

/* gid_index, cq_size, max_send_wr, the receive queues' counts and the
 * get/put limits against this port and its device (before any resource
 * of the port is created). OPAL_ERR_BAD_PARAM: the user was told. */
int openib_limits_check_port(struct mca_btl_openib_module *m);

/* max_inline_data against what the device accepts (found by probing). */
int openib_limits_check_inline(const struct mca_btl_openib_module *m, uint32_t device_max);

#endif

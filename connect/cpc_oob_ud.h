/*
 * cpc_oob_ud.h - the verbs datagram port of the side channel's UD
 * sessions (cpc_oob_ud.c): a UD QP per port, driven by the side channel's
 * thread through oob_ud_verbs_ops (cpc_oob_channel.h).
 */
#ifndef CPC_OOB_UD_H
#define CPC_OOB_UD_H

#include <stddef.h>
#include <stdint.h>

#include "openib/openib_cpc.h"
#include "connect/cpc_oob_channel.h"

struct oob_ud_port;

/* A UD QP on the port's PD, in RTS, its receives posted. NOT_SUPPORTED
 * with `why` when the device will not make one. */
int oob_ud_port_create(const struct openib_cpc_port *port, struct oob_ud_port **out,
                       uint32_t *qpn, char *why, size_t why_len);

extern const struct oob_dgram_ops oob_ud_verbs_ops;

#endif

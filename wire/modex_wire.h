/*
 * modex_wire.h - the modex blob: every port's identity and CPC list, as the
 * BTL publishes it and reads a peer's (layout in modex_wire.c; versioning
 * rules for every format in wire/README.md). Unit-tested in
 * tests/unit/connect/test_cpc_modex.c, fuzzed in test_fuzz_wire.c.
 */
#ifndef OPENIB_WIRE_MODEX_WIRE_H
#define OPENIB_WIRE_MODEX_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "openib/openib_cpc.h" /* OPENIB_CPC_BLOB_MAX */

struct openib_modex_cpc {
    uint8_t id;          /* enum openib_cpc_id */
    uint8_t priority;    /* 0..100 */
    uint8_t blob_len;
    uint8_t blob[OPENIB_CPC_BLOB_MAX];
};

#define OPENIB_MODEX_MAX_CPCS 8
/* The port's transport: only ports of the same one can be paired (an iWARP
 * port speaks MPA over TCP; an InfiniBand or RoCE port, IBTA transport). */
#define OPENIB_MODEX_TRANSPORT_IB 0
#define OPENIB_MODEX_TRANSPORT_IWARP 1

struct openib_modex_port {
    uint8_t gid[16];
    uint64_t subnet_prefix;
    uint16_t lid;
    uint32_t mtu;
    uint8_t link_layer;
    uint8_t transport;   /* OPENIB_MODEX_TRANSPORT_* */
    uint8_t port_num;
    char dev_name[32];
    uint8_t num_cpcs;
    struct openib_modex_cpc cpcs[OPENIB_MODEX_MAX_CPCS];
};

/* Encode ports into buf (at most cap bytes); *len gets the size used. */
int openib_connect_modex_encode(const struct openib_modex_port *ports, int nports,
                                uint8_t *buf, size_t cap, size_t *len);
/* Decode; rejects truncated, oversized or corrupt data with OPAL_ERR_BAD_PARAM
 * and never reads past buf + len. A well-formed blob of another format
 * version gives OPAL_ERR_NOT_SUPPORTED; more ports than max gives
 * OPAL_ERR_OUT_OF_RESOURCE with *nports set to the number needed. The format
 * is described in modex_wire.c. */
int openib_connect_modex_decode(const uint8_t *buf, size_t len,
                                struct openib_modex_port *ports, int max, int *nports);

/* Bytes openib_connect_modex_encode needs at most for nports ports. */
size_t openib_connect_modex_max_size(int nports);

/* The rules a port's CPC list must meet to be encoded or decoded: at most
 * OPENIB_MODEX_MAX_CPCS, ids non-zero and distinct, priorities 0..100. */
bool openib_connect_modex_cpcs_valid(const struct openib_modex_port *mp);

#endif

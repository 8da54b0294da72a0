/*
 * v1_reader.h - a tiny reader compiled against ONLY the frozen v1 headers
 * (tests/abi/v1), called by test_abi_v1.c which uses the current headers.
 * Its interface uses plain types so both sides can include it.
 */
#ifndef V1_READER_H
#define V1_READER_H

#include <stddef.h>
#include <stdint.h>

/* What a v1 CPC does with a struct it is handed: openib_abi_check_size
 * against its own v1 sizes, then reads a v1 field. 0, -EINVAL or -E2BIG. */
int v1_read_port(const void *port, uint32_t *caps_out);
int v1_read_component(const void *component, const char **name_out);
int v1_read_module(const void *module, uint8_t *priority_out);

/* Layout of the v1 structs as the v1 header compiled them, field by field,
 * for comparison with the current header's offsets. */
struct v1_layout {
    size_t port_size, port_caps, port_dev_name, port_port_num, port_gid, port_gid_index,
        port_ctx, port_btl;
    size_t comp_size, comp_name, comp_id, comp_default_priority, comp_register, comp_init,
        comp_query, comp_finalize;
    size_t mod_size, mod_component, mod_priority, mod_blob_len, mod_blob, mod_endpoint_init,
        mod_start_connect, mod_endpoint_finalize, mod_finalize, mod_uses_cts;
    size_t ep_size, ep_peer_blob, ep_peer_port, ep_cpc_private;
    size_t ops_size, ops_connect_complete, ops_endpoint_for_peer;
    size_t qp_size, qp_rq_layout;
    int abi_version;
};
void v1_get_layout(struct v1_layout *out);

#endif

/*
 * hmem_layout.h - the v1 fields of every struct in openib/openib_hmem.h,
 * listed once and compiled twice: against the frozen v1 header
 * (hmem_v1_layout.c) and against the current one (test_hmem_abi.c). Append
 * nothing here when a v2 adds fields: this list IS v1.
 */
#ifndef OPENIB_HMEM_LAYOUT_H
#define OPENIB_HMEM_LAYOUT_H

#include <stddef.h>

struct hmem_layout_entry {
    const char *what;
    size_t offset;
    size_t size;
};

#define HMEM_LAYOUT_FIELD(type, field) \
    { #type "." #field, offsetof(struct type, field), sizeof(((struct type *) 0)->field) }

#define HMEM_V1_LAYOUT                                              \
    HMEM_LAYOUT_FIELD(openib_hmem_override_ops, size),              \
    HMEM_LAYOUT_FIELD(openib_hmem_override_ops, flags),             \
    HMEM_LAYOUT_FIELD(openib_hmem_override_ops, copy_from_hmem_iov), \
    HMEM_LAYOUT_FIELD(openib_hmem_override_ops, copy_to_hmem_iov),  \
    HMEM_LAYOUT_FIELD(openib_hmem_stats, size),                     \
    HMEM_LAYOUT_FIELD(openib_hmem_stats, pad),                      \
    HMEM_LAYOUT_FIELD(openib_hmem_stats, from_hmem_calls),          \
    HMEM_LAYOUT_FIELD(openib_hmem_stats, from_hmem_bytes),          \
    HMEM_LAYOUT_FIELD(openib_hmem_stats, from_hmem_override_calls), \
    HMEM_LAYOUT_FIELD(openib_hmem_stats, to_hmem_calls),            \
    HMEM_LAYOUT_FIELD(openib_hmem_stats, to_hmem_bytes),            \
    HMEM_LAYOUT_FIELD(openib_hmem_stats, to_hmem_override_calls),   \
    HMEM_LAYOUT_FIELD(openib_hmem_stats, errors),                   \
    HMEM_LAYOUT_FIELD(openib_hmem_object_ops, size),                \
    HMEM_LAYOUT_FIELD(openib_hmem_object_ops, pad),                 \
    HMEM_LAYOUT_FIELD(openib_hmem_object_ops, set_op),              \
    HMEM_LAYOUT_FIELD(openib_hmem_object_ops, get_op),              \
    HMEM_LAYOUT_FIELD(openib_hmem_object_ops, set_ops),             \
    HMEM_LAYOUT_FIELD(openib_hmem_object_ops, get_stats),           \
    HMEM_LAYOUT_FIELD(openib_hmem_object, size),                    \
    HMEM_LAYOUT_FIELD(openib_hmem_object, abi_version),             \
    HMEM_LAYOUT_FIELD(openib_hmem_object, ops),                     \
    HMEM_LAYOUT_FIELD(openib_hmem_object, name),                    \
    HMEM_LAYOUT_FIELD(openib_hmem_plugin_info, size),               \
    HMEM_LAYOUT_FIELD(openib_hmem_plugin_info, abi_version),        \
    HMEM_LAYOUT_FIELD(openib_hmem_plugin_info, name),               \
    HMEM_LAYOUT_FIELD(openib_hmem_plugin_info, init),               \
    HMEM_LAYOUT_FIELD(openib_hmem_plugin_info, fini),               \
    { "union openib_hmem_op", 0, sizeof(union openib_hmem_op) },     \
    { "OPENIB_HMEM_SYSTEM", (size_t) OPENIB_HMEM_SYSTEM, 0 },        \
    { "OPENIB_HMEM_CUDA", (size_t) OPENIB_HMEM_CUDA, 0 },            \
    { "OPENIB_HMEM_ROCM", (size_t) OPENIB_HMEM_ROCM, 0 },            \
    { "OPENIB_HMEM_ZE", (size_t) OPENIB_HMEM_ZE, 0 },                \
    { "OPENIB_HMEM_OP_COPY_FROM_HMEM_IOV", (size_t) OPENIB_HMEM_OP_COPY_FROM_HMEM_IOV, 0 }, \
    { "OPENIB_HMEM_OP_COPY_TO_HMEM_IOV", (size_t) OPENIB_HMEM_OP_COPY_TO_HMEM_IOV, 0 },     \
    { "OPENIB_HMEM_FLAG_DESCENDANTS", (size_t) OPENIB_HMEM_FLAG_DESCENDANTS, 0 },           \
    { "OPENIB_HMEM_FLAG_DEFAULT", (size_t) OPENIB_HMEM_FLAG_DEFAULT, 0 },                   \
    { "OPENIB_HMEM_OVERRIDE_OPS_V1_SIZE", OPENIB_HMEM_OVERRIDE_OPS_V1_SIZE, 0 },            \
    { "OPENIB_HMEM_STATS_V1_SIZE", OPENIB_HMEM_STATS_V1_SIZE, 0 },                          \
    { "OPENIB_HMEM_OBJECT_V1_SIZE", OPENIB_HMEM_OBJECT_V1_SIZE, 0 },                        \
    { "OPENIB_HMEM_PLUGIN_INFO_V1_SIZE", OPENIB_HMEM_PLUGIN_INFO_V1_SIZE, 0 },              \
    { NULL, 0, 0 }

/* Built from the frozen header (libhmem_v1_layout). */
extern const struct hmem_layout_entry hmem_v1_layout[];
extern const unsigned hmem_v1_abi_version;
extern const char hmem_v1_plugin_symbol[];
extern const char hmem_v1_root_symbol[];

#endif

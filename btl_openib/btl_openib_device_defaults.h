/*
 * btl_openib_device_defaults.h - what a kind of device needs differently,
 * in one table (btl_openib_device_defaults.c), keyed by vendor, part and
 * transport. This is the job the old openib's device-params file did;
 * nothing elsewhere in the BTL tests for a particular device.
 *
 * An entry only raises defaults: a parameter the user set (command line,
 * environment or a parameter file) always wins, and a value is still
 * fitted to the device's limits like any other.
 *
 * Device-free (plain numbers in, an entry out) so the lookup is
 * unit-tested.
 */
#ifndef BTL_OPENIB_DEVICE_DEFAULTS_H
#define BTL_OPENIB_DEVICE_DEFAULTS_H

#include <stdint.h>

#define OPENIB_DEVICE_ANY UINT32_MAX

struct openib_device_defaults {
    const char *kind;        /* for verbose output: "Soft-iWARP (siw)" */
    uint32_t vendor_id;      /* ibv_device_attr.vendor_id, or OPENIB_DEVICE_ANY */
    uint32_t vendor_part_id; /* ibv_device_attr.vendor_part_id, or OPENIB_DEVICE_ANY */
    int transport;           /* IBV_TRANSPORT_*, or -1 for any */
    const char *why;         /* the reason for the values below, said at verbose 10 */
    int cq_size;             /* the completion queue has at least this many entries; 0: as set */
};

/* The first entry that matches (the table lists specific entries before
 * general ones), or NULL: the parameters' own defaults apply. */
const struct openib_device_defaults *openib_device_defaults_find(uint32_t vendor_id,
                                                                 uint32_t vendor_part_id,
                                                                 int transport);

#endif

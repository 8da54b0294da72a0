/*
 * cpc_oob_ifsel.h - which of this host's IPv4 addresses the oob/xoob side
 * channel listens on and publishes (btl_openib_oob_if_include / _exclude).
 *
 * Device-free and free of global state: the caller hands in the interface
 * list (oob_ifsel_scan reads the real one), so tests can use a fake list.
 */
#ifndef CPC_OOB_IFSEL_H
#define CPC_OOB_IFSEL_H

#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>

#define OOB_IFSEL_MAX_IFS 64

struct oob_if {
    char name[IF_NAMESIZE];
    uint32_t addr;      /* IPv4, network order */
    bool up;
    bool loopback;      /* IFF_LOOPBACK */
    bool bridge;        /* /sys/class/net/NAME/bridge exists */
};

/* What went wrong, for the help message (every field a string). */
struct oob_ifsel_err {
    const char *topic;  /* help topic in help-btl-openib-cpc.txt */
    char param[48];     /* the parameter at fault */
    char value[256];    /* its value */
    char bad[64];       /* the token that is wrong ("" for include+exclude) */
    char valid[512];    /* what is valid: forms and this host's names */
};

/* Usable IPv4 addresses of this host (up only), at most max. */
int oob_ifsel_scan(struct oob_if *ifs, int max);

/* Select addresses from ifs into out (at most max), in list order.
 * include / exclude: NULL or "" = unset; otherwise comma-separated
 * interface names or CIDR blocks a.b.c.d/n. Returns how many were
 * selected (may be 0 when include/exclude leave nothing), or
 * OPAL_ERR_BAD_PARAM with *err filled. *loopback_fallback is set when the
 * default left nothing and loopback was taken instead. */
int oob_ifsel_select(const struct oob_if *ifs, int nif, const char *include,
                     const char *exclude, uint32_t *out, int max, bool *loopback_fallback,
                     struct oob_ifsel_err *err);

/* True for names of bridges and virtual switches / container links that
 * the default leaves out (docker0, virbr0, veth*, br-*, ...). */
bool oob_ifsel_virtual_name(const char *name);

#endif

/*
 * cpc_rdma_cm_addr.c - the IPv4 address a port answers rdma_cm on.
 *
 * In order: what the BTL already knows (port->ipv4, v2), the address inside
 * a RoCE v2 IPv4-mapped GID (::ffff:a.b.c.d), then the address of the
 * port's network interface: on RoCE the kernel names it per GID in sysfs, on
 * InfiniBand it is the IPoIB interface whose hardware address holds the
 * port's GID, on iWARP the Ethernet interface whose MAC address the GID
 * carries (iWARP drivers make the GID from the MAC; sysfs names no
 * interface for them).
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netpacket/packet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "connect/cpc_rdma_cm.h"

#define IPOIB_HWADDR_LEN 20 /* 4 bytes of QPN and flags, then the GID */

static bool gid_is_v4_mapped(const uint8_t *gid)
{
    static const uint8_t prefix[12] = { [10] = 0xff, [11] = 0xff };

    return 0 == memcmp(gid, prefix, sizeof(prefix));
}

/* The interface sysfs names for one GID of a RoCE port. */
static bool roce_netdev(const struct openib_cpc_port *port, char *ifname, size_t len)
{
    char path[256];
    FILE *f;
    bool ok;

    if (NULL == port->dev_name || port->gid_index < 0) {
        return false;
    }
    snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%u/gid_attrs/ndevs/%d",
             port->dev_name, (unsigned) port->port_num, port->gid_index);
    f = fopen(path, "r");
    if (NULL == f) {
        return false;
    }
    ok = NULL != fgets(ifname, (int) len, f);
    fclose(f);
    if (ok) {
        ifname[strcspn(ifname, "\n")] = '\0';
    }
    return ok && ifname[0];
}

/* The IPoIB interface whose hardware address carries this GID. */
static bool ipoib_netdev(const struct ifaddrs *all, const uint8_t *gid, char *ifname,
                         size_t len)
{
    const struct ifaddrs *i;

    for (i = all; NULL != i; i = i->ifa_next) {
        const struct sockaddr_ll *ll = (const struct sockaddr_ll *) i->ifa_addr;

        if (NULL != ll && AF_PACKET == ll->sll_family && IPOIB_HWADDR_LEN == ll->sll_halen &&
            0 == memcmp(ll->sll_addr + 4, gid, 16)) {
            snprintf(ifname, len, "%s", i->ifa_name);
            return true;
        }
    }
    return false;
}

static uint32_t ifname_ipv4(const struct ifaddrs *all, const char *ifname);

/* iWARP: an Ethernet interface with an IPv4 address whose MAC is the
 * GID's first 6 bytes (the rest zero). */
static bool iwarp_netdev(const struct ifaddrs *all, const struct openib_cpc_port *port,
                         char *ifname, size_t len)
{
    static const uint8_t zero[10];
    const struct ifaddrs *i;

    if (!(port->caps & OPENIB_PORT_CAP_IWARP) || 0 != memcmp(port->gid + 6, zero, sizeof(zero))) {
        return false;
    }
    for (i = all; NULL != i; i = i->ifa_next) {
        const struct sockaddr_ll *ll = (const struct sockaddr_ll *) i->ifa_addr;

        if (NULL != ll && AF_PACKET == ll->sll_family && 6 == ll->sll_halen &&
            0 == memcmp(ll->sll_addr, port->gid, 6) && 0 != ifname_ipv4(all, i->ifa_name)) {
            snprintf(ifname, len, "%s", i->ifa_name);
            return true;
        }
    }
    return false;
}

static uint32_t ifname_ipv4(const struct ifaddrs *all, const char *ifname)
{
    const struct ifaddrs *i;

    for (i = all; NULL != i; i = i->ifa_next) {
        if (NULL != i->ifa_addr && AF_INET == i->ifa_addr->sa_family &&
            0 == strcmp(i->ifa_name, ifname)) {
            return ((const struct sockaddr_in *) i->ifa_addr)->sin_addr.s_addr;
        }
    }
    return 0;
}

int rcm_port_ipv4(const struct openib_cpc_port *port, uint32_t *ip, char *why, size_t why_len)
{
    struct ifaddrs *all = NULL;
    char ifname[IF_NAMESIZE + 1] = "";
    bool found;

    *ip = 0;
    if (OPENIB_HAS_FIELD(port, struct openib_cpc_port, ipv4) && 0 != port->ipv4) {
        *ip = port->ipv4;
        return OPAL_SUCCESS;
    }
    if (gid_is_v4_mapped(port->gid)) {
        memcpy(ip, port->gid + 12, 4);
        return OPAL_SUCCESS;
    }
    if (0 != getifaddrs(&all)) {
        snprintf(why, why_len, "cannot list the network interfaces to find the address of %s:%u",
                 port->dev_name ? port->dev_name : "?", (unsigned) port->port_num);
        return OPAL_ERR_NOT_SUPPORTED;
    }
    found = roce_netdev(port, ifname, sizeof(ifname)) ||
            ipoib_netdev(all, port->gid, ifname, sizeof(ifname)) ||
            iwarp_netdev(all, port, ifname, sizeof(ifname));
    if (found) {
        *ip = ifname_ipv4(all, ifname);
    }
    freeifaddrs(all);
    if (0 != *ip) {
        return OPAL_SUCCESS;
    }
    if (found) {
        snprintf(why, why_len, "port %s:%u has no IPv4 address (its interface %s has none)",
                 port->dev_name ? port->dev_name : "?", (unsigned) port->port_num, ifname);
    } else {
        snprintf(why, why_len,
                 "port %s:%u has no IPv4 address (no IPv4 GID and no network interface found)",
                 port->dev_name ? port->dev_name : "?", (unsigned) port->port_num);
    }
    return OPAL_ERR_NOT_SUPPORTED;
}

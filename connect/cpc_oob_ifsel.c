/*
 * cpc_oob_ifsel.c - choosing the side channel's interfaces.
 *
 * The side channel listens on (and publishes) only the selected
 * interfaces' addresses, never INADDR_ANY: what a stranger cannot reach it
 * cannot talk to, and a published address that is not this host's network
 * address (loopback, a container bridge that every host has with the same
 * 172.17.0.1) would let a request land on the wrong process.
 */
#include "opal_config.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "opal/constants.h"

#include "connect/cpc_oob_ifsel.h"

#define VALID_FORMS "comma-separated interface names or CIDR blocks a.b.c.d/n"

bool oob_ifsel_virtual_name(const char *name)
{
    /* Bridges and virtual switches of container and VM hosts, and the
     * host ends of their links: their addresses are private to this host
     * (often the same on every host, e.g. docker0's 172.17.0.1), so a
     * peer that tries them reaches the wrong host or nothing. */
    static const char *const prefixes[] = {
        "docker", "virbr", "veth", "br-", "vnet", "lxcbr", "lxdbr", "cni", "flannel",
        "cali", "weave", "podman", "tap", "tun", "kube-", "vxlan", "genev", "ovs-",
    };
    size_t i;

    for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); ++i) {
        if (0 == strncmp(name, prefixes[i], strlen(prefixes[i]))) {
            return true;
        }
    }
    return false;
}

int oob_ifsel_scan(struct oob_if *ifs, int max)
{
    struct ifaddrs *ifa, *p;
    int n = 0;

    if (getifaddrs(&ifa)) {
        return 0;
    }
    for (p = ifa; p && n < max; p = p->ifa_next) {
        char path[64 + IF_NAMESIZE];
        struct stat st;

        if (!p->ifa_addr || p->ifa_addr->sa_family != AF_INET || !(p->ifa_flags & IFF_UP)) {
            continue;
        }
        memset(&ifs[n], 0, sizeof(ifs[n]));
        snprintf(ifs[n].name, sizeof(ifs[n].name), "%s", p->ifa_name);
        ifs[n].addr = ((struct sockaddr_in *) p->ifa_addr)->sin_addr.s_addr;
        ifs[n].up = true;
        ifs[n].loopback = (p->ifa_flags & IFF_LOOPBACK) != 0;
        /* a Linux bridge has this directory whatever it is called */
        snprintf(path, sizeof(path), "/sys/class/net/%s/bridge", p->ifa_name);
        ifs[n].bridge = 0 == stat(path, &st) && S_ISDIR(st.st_mode);
        ++n;
    }
    freeifaddrs(ifa);
    return n;
}

/* "a.b.c.d/n" -> network and mask (network order); false if not CIDR */
static bool parse_cidr(const char *tok, uint32_t *net, uint32_t *mask)
{
    char buf[32];
    const char *slash = strchr(tok, '/');
    struct in_addr a;
    char *end;
    long bits;

    if (NULL == slash || (size_t) (slash - tok) >= sizeof(buf)) {
        return false;
    }
    memcpy(buf, tok, slash - tok);
    buf[slash - tok] = '\0';
    if (1 != inet_pton(AF_INET, buf, &a) || '\0' == slash[1]) {
        return false;
    }
    bits = strtol(slash + 1, &end, 10);
    if ('\0' != *end || bits < 0 || bits > 32) {
        return false;
    }
    *mask = htonl(bits == 0 ? 0 : 0xffffffffu << (32 - bits));
    *net = a.s_addr & *mask;
    return true;
}

static bool looks_like_cidr(const char *tok)
{
    return NULL != strchr(tok, '/') || (tok[0] >= '0' && tok[0] <= '9');
}

static void fill_err(struct oob_ifsel_err *err, const char *topic, const char *param,
                     const char *value, const char *bad, const struct oob_if *ifs, int nif)
{
    int i;

    memset(err, 0, sizeof(*err));
    err->topic = topic;
    snprintf(err->param, sizeof(err->param), "%s", param);
    snprintf(err->value, sizeof(err->value), "%s", value ? value : "");
    snprintf(err->bad, sizeof(err->bad), "%s", bad ? bad : "");
    snprintf(err->valid, sizeof(err->valid), VALID_FORMS "; interfaces here:");
    for (i = 0; i < nif; ++i) {
        size_t used = strlen(err->valid);
        snprintf(err->valid + used, sizeof(err->valid) - used, "%s %s", i ? "," : "",
                 ifs[i].name);
    }
}

/* Parse list into a per-interface match vector; false on a bad token. */
static bool match_list(const struct oob_if *ifs, int nif, const char *list, bool *hit,
                       char *bad, size_t bad_len)
{
    char *copy = strdup(list), *save = NULL, *tok;
    bool ok = true;
    int i;

    if (NULL == copy) {
        snprintf(bad, bad_len, "(out of memory)");
        return false;
    }
    for (tok = strtok_r(copy, ",", &save); tok && ok; tok = strtok_r(NULL, ",", &save)) {
        uint32_t net, mask;
        bool known = false;

        while (' ' == *tok) {
            ++tok;
        }
        tok[strcspn(tok, " ")] = '\0';
        if ('\0' == *tok) {
            continue;
        }
        if (looks_like_cidr(tok)) {
            if (!parse_cidr(tok, &net, &mask)) {
                snprintf(bad, bad_len, "%s", tok);
                ok = false;
                break;
            }
            /* a block that matches nothing here is no error: one value
             * serves every host of a job, whose subnets may differ */
            for (i = 0; i < nif; ++i) {
                hit[i] = hit[i] || (ifs[i].addr & mask) == net;
            }
            continue;
        }
        for (i = 0; i < nif; ++i) {
            if (0 == strcmp(ifs[i].name, tok)) {
                hit[i] = known = true;
            }
        }
        if (!known) {
            snprintf(bad, bad_len, "%s", tok);
            ok = false;
        }
    }
    free(copy);
    return ok;
}

/* An address two interfaces share is published once (it is one socket). */
static int add_addr(uint32_t *out, int n, uint32_t a)
{
    int i;

    for (i = 0; i < n; ++i) {
        if (out[i] == a) {
            return n;
        }
    }
    out[n] = a;
    return n + 1;
}

static bool is_set(const char *s)
{
    return NULL != s && '\0' != s[strspn(s, " ,")];
}

int oob_ifsel_select(const struct oob_if *ifs, int nif, const char *include,
                     const char *exclude, uint32_t *out, int max, bool *loopback_fallback,
                     struct oob_ifsel_err *err)
{
    bool hit[OOB_IFSEL_MAX_IFS] = { false };
    char bad[64] = "";
    int i, n = 0;

    *loopback_fallback = false;
    if (nif > OOB_IFSEL_MAX_IFS) {
        nif = OOB_IFSEL_MAX_IFS;
    }
    if (is_set(include) && is_set(exclude)) {
        fill_err(err, "oob if include and exclude", "btl_openib_oob_if_include", include, "",
                 ifs, nif);
        snprintf(err->bad, sizeof(err->bad), "%s", exclude); /* the exclude value */
        return OPAL_ERR_BAD_PARAM;
    }
    if (is_set(include)) {
        if (!match_list(ifs, nif, include, hit, bad, sizeof(bad))) {
            fill_err(err, "oob if bad value", "btl_openib_oob_if_include", include, bad, ifs,
                     nif);
            return OPAL_ERR_BAD_PARAM;
        }
        /* include is taken as asked, loopback and bridges too */
        for (i = 0; i < nif && n < max; ++i) {
            if (hit[i] && ifs[i].up) {
                n = add_addr(out, n, ifs[i].addr);
            }
        }
        return n;
    }
    if (is_set(exclude) && !match_list(ifs, nif, exclude, hit, bad, sizeof(bad))) {
        fill_err(err, "oob if bad value", "btl_openib_oob_if_exclude", exclude, bad, ifs, nif);
        return OPAL_ERR_BAD_PARAM;
    }
    /* The default, and exclude on top of it: no loopback (other hosts
     * cannot reach it, and a peer on this host trying 127.0.0.1 may reach
     * another job's process), no bridges or virtual switches (see
     * oob_ifsel_virtual_name). */
    for (i = 0; i < nif && n < max; ++i) {
        if (hit[i] || !ifs[i].up || ifs[i].loopback || ifs[i].bridge ||
            oob_ifsel_virtual_name(ifs[i].name)) {
            continue;
        }
        n = add_addr(out, n, ifs[i].addr);
    }
    if (0 == n) {
        /* Nothing else: loopback is reachable only from this host, so it
         * is safe, and a single-host job still runs. */
        for (i = 0; i < nif && n < max; ++i) {
            if (ifs[i].up && ifs[i].loopback && !hit[i]) {
                n = add_addr(out, n, ifs[i].addr);
            }
        }
        *loopback_fallback = n > 0;
    }
    return n;
}

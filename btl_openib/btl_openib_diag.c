/*
 * btl_openib_diag.c - telling the user why openib cannot run here (see
 * btl_openib_diag.h for when each message is shown).
 */
#include "opal_config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "opal/constants.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/util/argv.h"

#include "openib_config.h"
#include "btl_openib/btl_openib.h"
#include "btl_openib/btl_openib_diag.h"
#include "mca/btl_openib_param_check.h"
#include "mca/btl_openib_params.h"

#if OPENIB_HAVE_COMMON_VERBS
#include "opal/mca/common/verbs/common_verbs.h"
#endif

#define CAP_IPC_LOCK_BIT 14 /* linux/capability.h */

static void appendf(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void appendf(char *buf, size_t len, const char *fmt, ...)
{
    size_t used = strnlen(buf, len);
    va_list ap;

    if (used + 1 >= len) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(buf + used, len - used, fmt, ap);
    va_end(ap);
}

bool openib_diag_named(void)
{
    const char **value = NULL;
    char **items;
    bool named = false;
    int idx, i;

    if (OPAL_SUCCESS != mca_base_var_find_by_name("btl", &idx) ||
        OPAL_SUCCESS != mca_base_var_get_value(idx, &value, NULL, NULL) || NULL == value ||
        NULL == *value) {
        return false;
    }
    /* "^a,b" excludes; only an inclusive list names components. */
    if ('^' == (*value)[strspn(*value, " \t")]) {
        return false;
    }
    items = opal_argv_split(*value, ',');
    for (i = 0; items && items[i] && !named; ++i) {
        char *s = items[i] + strspn(items[i], " \t");
        named = 0 == strncmp(s, "openib", 6) && '\0' == s[6 + strspn(s + 6, " \t")];
    }
    opal_argv_free(items);
    return named;
}

/* Whether RLIMIT_MEMLOCK binds this process: the kernel skips it for
 * CAP_IPC_LOCK (root, usually). Unknown counts as exempt, so a check
 * that cannot be sure never refuses to run. */
static bool memlock_applies(void)
{
    char line[256];
    bool applies = false;
    FILE *f = fopen("/proc/self/status", "r");

    if (NULL == f) {
        return false;
    }
    while (fgets(line, sizeof(line), f)) {
        unsigned long long caps;

        if (1 == sscanf(line, "CapEff: %llx", &caps)) {
            applies = !(caps & (1ull << CAP_IPC_LOCK_BIT));
            break;
        }
    }
    fclose(f);
    return applies;
}

static void memlock_text(char *buf, size_t len, rlim_t *limit)
{
    struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };

    (void) getrlimit(RLIMIT_MEMLOCK, &rl);
    *limit = rl.rlim_cur;
    if (RLIM_INFINITY == rl.rlim_cur) {
        snprintf(buf, len, "unlimited");
    } else {
        char b[32];
        openib_params_bytes_text((uint64_t) rl.rlim_cur, b, sizeof(b));
        snprintf(buf, len, "%s (ulimit -l: %llu)", b, (unsigned long long) rl.rlim_cur / 1024);
    }
}

static uint64_t node_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);

    return pages > 0 && psize > 0 ? (uint64_t) pages * (uint64_t) psize : 0;
}

/* Start-up and per-peer needs, as help-text strings. */
static void needs_text(const struct openib_rq_spec *rq, char *start, char *peer, size_t len)
{
    openib_params_bytes_text(openib_params_startup_bytes(rq, openib_params.free_list_num), start,
                             len);
    openib_params_bytes_text(openib_params_per_peer_bytes(rq, openib_params.eager_rdma_num,
                                                          openib_params.eager_rdma_slots,
                                                          openib_params.eager_rdma_slot_size),
                             peer, len);
}

int openib_diag_check_memory(const struct openib_rq_spec *rq)
{
    uint64_t need = openib_params_startup_bytes(rq, openib_params.free_list_num);
    uint64_t ram = node_memory();
    /* openib is of use only once it connects a peer */
    uint64_t need_one_peer = need + openib_params_per_peer_bytes(rq, openib_params.eager_rdma_num,
                                                                 openib_params.eager_rdma_slots,
                                                                 openib_params.eager_rdma_slot_size);
    char start[32], peer[32], have[64], num[16];
    rlim_t limit;

    needs_text(rq, start, peer, sizeof(start));
    if (ram && need > ram) {
        /* The receive queues themselves are the problem: always said. */
        openib_params_bytes_text(ram, have, sizeof(have));
        snprintf(num, sizeof(num), "%d", openib_params.free_list_num);
        openib_show_help("queues-too-large", true, opal_process_info.nodename,
                         openib_params.receive_queues, num, start, have,
                         OPENIB_DEFAULT_RECEIVE_QUEUES);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    memlock_text(have, sizeof(have), &limit);
    if (RLIM_INFINITY == limit || (uint64_t) limit >= need_one_peer || !memlock_applies()) {
        return OPAL_SUCCESS;
    }
    if (openib_diag_named()) {
        openib_show_help("locked-memory", true, opal_process_info.nodename, have, start, peer,
                         "before registering anything: the limit is below what one port "
                         "and one peer need");
    } else {
        OPENIB_VERBOSE(1, "locked-memory limit %s is below what one port (%s) and one peer (%s) "
                       "need; openib disabled", have, start, peer);
    }
    return OPAL_ERR_OUT_OF_RESOURCE;
}

void openib_diag_registration_failed(const struct openib_device *dev)
{
    const struct openib_rq_spec *rq = &mca_btl_openib_component.rq;
    char start[32], peer[32], have[64], failed[160], size[32];
    rlim_t limit;

    if (mca_btl_openib_component.told_user || !openib_diag_named()) {
        return;
    }
    needs_text(rq, start, peer, sizeof(start));
    openib_params_bytes_text(dev->reg_failed_bytes, size, sizeof(size));
    snprintf(failed, sizeof(failed), "ibv_reg_mr of %s on %s: %s", size, dev->name,
             strerror(dev->reg_errno));
    memlock_text(have, sizeof(have), &limit);
    if (RLIM_INFINITY != limit && memlock_applies()) {
        openib_show_help("locked-memory", true, opal_process_info.nodename, have, start, peer,
                         failed);
        return;
    }
    openib_params_bytes_text(node_memory(), have, sizeof(have));
    openib_show_help("registration-failed", true, opal_process_info.nodename, failed, start, have);
}

/* "  rxe0:1  active, Ethernet" lines for every port of every device. */
static void list_ports(struct ibv_device **list, int n, char *buf, size_t len)
{
    int i, p;

    buf[0] = '\0';
    for (i = 0; i < n; ++i) {
        const char *name = ibv_get_device_name(list[i]);
        struct ibv_context *ctx = ibv_open_device(list[i]);
        struct ibv_device_attr da;

        if (NULL == ctx || ibv_query_device(ctx, &da)) {
            appendf(buf, len, "%s    %s  (cannot be opened: %s)", buf[0] ? "\n" : "",
                               name, strerror(errno));
            if (ctx) {
                ibv_close_device(ctx);
            }
            continue;
        }
        for (p = 1; p <= da.phys_port_cnt; ++p) {
            struct ibv_port_attr pa;

            if (ibv_query_port(ctx, (uint8_t) p, &pa)) {
                appendf(buf, len, "%s    %s:%d  (cannot be queried)",
                                   buf[0] ? "\n" : "", name, p);
                continue;
            }
            appendf(buf, len, "%s    %s:%d  %s, %s", buf[0] ? "\n" : "", name, p,
                               ibv_port_state_str(pa.state),
                               IBV_LINK_LAYER_ETHERNET == pa.link_layer ? "Ethernet"
                                                                        : "InfiniBand");
        }
        ibv_close_device(ctx);
    }
    if ('\0' == buf[0]) {
        snprintf(buf, len, "    (none: no verbs device on this node)");
    }
}

/* Number of ports of a device in the list, or -1 when it is not there. */
static int device_ports(struct ibv_device **list, int n, const char *name)
{
    int i, ports = -1;

    for (i = 0; i < n && ports < 0; ++i) {
        struct ibv_context *ctx;
        struct ibv_device_attr da;

        if (strcmp(ibv_get_device_name(list[i]), name)) {
            continue;
        }
        ctx = ibv_open_device(list[i]);
        ports = 0; /* there, even when it cannot be opened */
        if (ctx) {
            if (0 == ibv_query_device(ctx, &da)) {
                ports = da.phys_port_cnt;
            }
            ibv_close_device(ctx);
        }
    }
    return ports;
}

int openib_diag_check_if_include(struct ibv_device **list, int n)
{
    char **items;
    char missing[256] = "", ports[2048];
    int i;

    if (NULL == openib_params.if_include || '\0' == openib_params.if_include[0]) {
        return OPAL_SUCCESS;
    }
    items = opal_argv_split(openib_params.if_include, ',');
    for (i = 0; items && items[i]; ++i) {
        char *colon = strchr(items[i], ':');
        int have, port = 0;

        if (colon) {
            *colon = '\0';
            port = atoi(colon + 1);
        }
        have = device_ports(list, n, items[i]);
        if (have < 0 || (colon && (port < 1 || (have > 0 && port > have)))) {
            if (colon) {
                *colon = ':';
            }
            appendf(missing, sizeof(missing), "%s%s", missing[0] ? ", " : "", items[i]);
        }
    }
    opal_argv_free(items);
    if ('\0' == missing[0]) {
        return OPAL_SUCCESS;
    }
    if (!openib_diag_named()) {
        /* As before: the entries that exist are used. */
        OPENIB_VERBOSE(1, "btl_openib_if_include: %s not found on this node", missing);
        return OPAL_SUCCESS;
    }
    list_ports(list, n, ports, sizeof(ports));
    openib_show_help("if-include-nonexistent", true, opal_process_info.nodename,
                     openib_params.if_include, missing, ports);
    return OPAL_ERR_NOT_FOUND;
}

void openib_diag_no_usable_port(const char *why_none)
{
    struct ibv_device **list;
    char text[2400], ports[2048];
    int n = 0;

    if (mca_btl_openib_component.told_user || !openib_diag_named()) {
        return;
    }
    if (why_none) {
        snprintf(text, sizeof(text), "  %s", why_none);
    } else {
        list = ibv_get_device_list(&n);
        list_ports(list, list ? n : 0, ports, sizeof(ports));
        if (list) {
            ibv_free_device_list(list);
        }
        snprintf(text, sizeof(text), "  Ports on this node:\n%s%s%s%s%s", ports,
                 openib_params.if_include && *openib_params.if_include
                     ? "\n  btl_openib_if_include: " : "",
                 openib_params.if_include && *openib_params.if_include ? openib_params.if_include
                                                                        : "",
                 openib_params.if_exclude && *openib_params.if_exclude
                     ? "\n  btl_openib_if_exclude: " : "",
                 openib_params.if_exclude && *openib_params.if_exclude ? openib_params.if_exclude
                                                                        : "");
    }
    openib_show_help("no-usable-port", true, opal_process_info.nodename, text);
}

int openib_diag_fork_support(void)
{
    if (openib_params.want_fork_support <= 0) {
        return OPAL_SUCCESS;
    }
#if OPENIB_HAVE_COMMON_VERBS
    /* Open MPI's own test calls ibv_fork_init when its variable is not 0,
     * and shows its help text when that fails and the variable is > 0. */
    opal_common_verbs_want_fork_support = 1;
    if (OPAL_SUCCESS != opal_common_verbs_fork_test()) {
        mca_btl_openib_component.told_user = true;
        return OPAL_ERROR;
    }
#else
    int rc = ibv_fork_init();

    if (0 != rc) {
        openib_show_help("fork-init-failed", true, opal_process_info.nodename, strerror(rc));
        return OPAL_ERROR;
    }
#endif
    OPENIB_VERBOSE(10, "fork support enabled (ibv_fork_init)");
    return OPAL_SUCCESS;
}

/*
 * cpc_oob_params.c - btl_openib_oob_* parameters of the side channel that
 * oob and xoob share, and the address selection built from them.
 */
#include "opal_config.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "opal/constants.h"
#include "opal/mca/base/mca_base_var.h"

#include "connect/cpc_internal.h"
#include "connect/cpc_oob_channel.h"
#include "connect/cpc_oob_ifsel.h"
#include "connect/cpc_oob_params.h"

/* An honest initiator sends its request the moment its connection is up
 * (one round trip), so an unverified session that has delivered nothing
 * for 10 s is not a handshake; 10 s still covers TCP's first
 * retransmissions (1 s, 3 s) on a lossy or emulated network. */
#define IDLE_S_DEFAULT 10
/* One node may hold one process per core, all connecting to the same
 * busy peer at once (their requests wait, unverified, until that peer's
 * MPI thread looks); 64 covers common node sizes, and a refused initiator
 * retries anyway. A stranger's silent sessions are evicted first. */
#define PER_SOURCE_DEFAULT 64

static char *if_include, *if_exclude, *side_channel;
static int idle_s = IDLE_S_DEFAULT, per_source = PER_SOURCE_DEFAULT;
static int test_idle_ms, test_per_source;

static pthread_mutex_t sel_lock = PTHREAD_MUTEX_INITIALIZER;
static bool sel_done;
static int sel_n;
static uint32_t sel_addrs[OOB_MAX_ADDRS];

/* One row of oob_params_register's table: name, type, level, storage, then
 * the help text (the longest part, so last). */
#define OOB_PARAM(name_, type_, level_, storage_, help_)                          \
    { .name = (name_), .help = (help_), .type = MCA_BASE_VAR_TYPE_##type_,       \
      .level = OPAL_INFO_LVL_##level_, .storage = (storage_) }

void oob_params_register(void)
{
    const struct mca_base_component_2_1_0_t *btl = openib_cpc_reg.btl;
    static const struct {
        const char *name, *help;
        mca_base_var_type_t type;
        mca_base_var_info_lvl_t level;
        void *storage;
    } params[] = {
        OOB_PARAM("oob_if_include", STRING, 4, &if_include,
                  "Interfaces the oob/xoob side channel listens on and publishes: "
                  "comma-separated interface names or CIDR blocks a.b.c.d/n (loopback and "
                  "bridges too, if named). Mutually exclusive with btl_openib_oob_if_exclude. "
                  "Default (both unset): every interface that is up except loopback and "
                  "bridges/virtual switches (docker*, virbr*, veth*, br-*, ...); loopback only "
                  "if nothing else is left"),
        OOB_PARAM("oob_if_exclude", STRING, 4, &if_exclude,
                  "Interfaces the oob/xoob side channel leaves out, besides loopback and "
                  "bridges: comma-separated interface names or CIDR blocks a.b.c.d/n. Mutually "
                  "exclusive with btl_openib_oob_if_include"),
        OOB_PARAM("oob_side_channel", STRING, 4, &side_channel,
                  "What carries the oob CPC's handshakes: auto (default: UD, one datagram QP per "
                  "port for every peer, where both ports have one, else TCP; a peer whose UD "
                  "side channel never answers is tried again over TCP), ud (UD only: no TCP "
                  "listener and no IP address needed; a peer that exited is noticed by its "
                  "silence, after btl_openib_connect_oob_timeout), tcp (TCP only: one connection "
                  "per handshake). xoob always uses TCP"),
        OOB_PARAM("oob_unverified_idle", INT, 5, &idle_s,
                  "Seconds an accepted side-channel session that no job member has been verified "
                  "on may go without delivering a handshake message before it is closed "
                  "(keepalives do not count; a message waiting for this process to look at it "
                  "does)"),
        OOB_PARAM("oob_unverified_per_source", INT, 5, &per_source,
                  "Most accepted, not yet verified side-channel sessions from one source "
                  "address; over it the oldest silent one is closed, or else the new one. "
                  "Verified sessions are never limited"),
    };
    size_t i;

    /* Registered on the BTL component, so they go away when it closes:
     * the var system frees string storage at finalize, and ours is in a
     * library that is unloaded by then (ompi_info). */
    if (NULL == btl) {
        return; /* unit tests: no MCA system */
    }
    for (i = 0; i < sizeof(params) / sizeof(params[0]); ++i) {
        (void) mca_base_component_var_register(btl, params[i].name, params[i].help,
                                               params[i].type, NULL, 0, 0, params[i].level,
                                               MCA_BASE_VAR_SCOPE_READONLY, params[i].storage);
    }
}

int oob_params_idle_ms(void)
{
    if (test_idle_ms > 0) {
        return test_idle_ms;
    }
    return (idle_s > 0 ? idle_s : IDLE_S_DEFAULT) * 1000;
}

int oob_params_per_source(void)
{
    if (test_per_source > 0) {
        return test_per_source;
    }
    return per_source > 0 ? per_source : PER_SOURCE_DEFAULT;
}

int oob_params_side_channel(void)
{
    static const char *const names[] = { [OOB_SIDE_AUTO] = "auto", [OOB_SIDE_UD] = "ud",
                                         [OOB_SIDE_TCP] = "tcp" };
    static int told = -1;
    const char *v = NULL == side_channel || '\0' == side_channel[0] ? "auto" : side_channel;
    int i;

    for (i = 0; i < (int) (sizeof(names) / sizeof(names[0])); ++i) {
        if (0 == strcasecmp(v, names[i])) {
            return i;
        }
    }
    if (told < 0) { /* once, however many ports ask */
        told = 1;
        openib_cpc_help("oob side channel bad value", 3, openib_cpc_hostname(), v,
                        "auto, ud, tcp");
    }
    return OOB_SIDE_BAD;
}

void oob_params_set_side_channel(const char *value)
{
    static char v[32];

    snprintf(v, sizeof(v), "%s", value ? value : "");
    side_channel = v;
}

void oob_params_set_if(const char *include, const char *exclude)
{
    static char inc[256], exc[256];

    pthread_mutex_lock(&sel_lock);
    snprintf(inc, sizeof(inc), "%s", include ? include : "");
    snprintf(exc, sizeof(exc), "%s", exclude ? exclude : "");
    if_include = inc;
    if_exclude = exc;
    sel_done = false;
    pthread_mutex_unlock(&sel_lock);
}

void oob_params_forget(void)
{
    pthread_mutex_lock(&sel_lock);
    sel_done = false;
    pthread_mutex_unlock(&sel_lock);
}

void oob_params_set_limits(int idle_ms, int src)
{
    test_idle_ms = idle_ms;
    test_per_source = src;
}

static void int_error(const char *param, int v, const char *valid)
{
    char value[24];

    snprintf(value, sizeof(value), "%d", v);
    openib_cpc_help("oob if bad value", 5, openib_cpc_hostname(), param, value, value, valid);
}

/* Once per process: the parameters are read-only, and one help message
 * is enough however many ports ask. */
static void select_once(void)
{
    struct oob_if ifs[OOB_IFSEL_MAX_IFS];
    struct oob_ifsel_err err;
    char list[OOB_MAX_ADDRS * 18] = "";
    bool fallback = false;
    int nif, n, i;

    sel_done = true;
    sel_n = 0;
    if (idle_s < 1) {
        int_error("btl_openib_oob_unverified_idle", idle_s, "a number of seconds, 1 or more");
        return;
    }
    if (per_source < 1) {
        int_error("btl_openib_oob_unverified_per_source", per_source, "a count, 1 or more");
        return;
    }
    nif = oob_ifsel_scan(ifs, OOB_IFSEL_MAX_IFS);
    n = oob_ifsel_select(ifs, nif, if_include, if_exclude, sel_addrs, OOB_MAX_ADDRS, &fallback,
                         &err);
    if (n < 0) {
        if (0 == strcmp(err.topic, "oob if include and exclude")) {
            openib_cpc_help(err.topic, 4, openib_cpc_hostname(), err.value, err.bad, err.valid);
        } else {
            openib_cpc_help(err.topic, 5, openib_cpc_hostname(), err.param, err.value, err.bad,
                            err.valid);
        }
        return;
    }
    sel_n = n;
    for (i = 0; i < n; ++i) {
        char a[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &sel_addrs[i], a, sizeof(a));
        openib_cpc_strcatf(list, sizeof(list), "%s%s", i ? " " : "", a);
    }
    if (fallback) {
        openib_cpc_log(1, "openib: oob side channel: no interface left besides loopback and "
                          "bridges; using loopback (%s), reachable from this host only",
                       list);
    } else {
        openib_cpc_log(5, "openib: oob side channel listens on %s", n ? list : "(nothing)");
    }
}

int oob_local_addrs(uint32_t *addrs, int max)
{
    int n;

    pthread_mutex_lock(&sel_lock);
    if (!sel_done) {
        select_once();
    }
    n = sel_n < max ? sel_n : max;
    memcpy(addrs, sel_addrs, n * sizeof(*addrs));
    pthread_mutex_unlock(&sel_lock);
    return n;
}

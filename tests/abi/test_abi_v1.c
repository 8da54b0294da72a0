/*
 * test_abi_v1.c - binary compatibility for real, both directions:
 *
 *  1. The frozen v1 headers (tests/abi/v1) still describe the first bytes of
 *     today's structs: same offsets, and the *_V1_SIZE macros match.
 *  2. A CPC plug-in compiled against only the v1 headers is loaded by the
 *     current framework (openib_connect_load_plugin), selected by name,
 *     queried, published in the modex, matched, and connected through
 *     openib_connect_start_connect(); the framework never touches the v2
 *     fields the plug-in's structs do not have (poisoned: touching them
 *     would crash).
 *  3. A v2 struct handed to code that knows only v1 is accepted when its
 *     unknown tail is zero and refused with -E2BIG when a v2 field is set.
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "connect/openib_connect.h"
#include "tests/abi/v1_reader.h"
#include "tests/unit/connect/cpc_test.h"

#ifndef CPC_PLUGIN_V1_PATH
#error "CPC_PLUGIN_V1_PATH must name the built v1 plug-in"
#endif

struct v1_plugin_stats {
    int init_calls, query_calls, finalize_calls, module_finalize_calls;
    int endpoint_init_calls, start_calls, endpoint_finalize_calls;
    int last_priority;
    uint32_t last_port_size;
    int last_port_check;
};

#define OFF(t, f) offsetof(struct t, f)

static void test_layout(void)
{
    struct v1_layout v;

    v1_get_layout(&v);
    CHECK_EQ(v.abi_version, 1);
    /* v1 sizes as the current header states them */
    CHECK_EQ(v.port_size, OPENIB_CPC_PORT_V1_SIZE);
    CHECK_EQ(v.comp_size, OPENIB_CPC_COMPONENT_V1_SIZE);
    CHECK(v.mod_size >= OPENIB_CPC_MODULE_V1_SIZE);
    CHECK_EQ(v.mod_size, OFF(openib_cpc_module, describe)); /* v2 starts where v1 ended */
    CHECK(v.port_size < sizeof(struct openib_cpc_port));
    CHECK(v.comp_size < sizeof(struct openib_cpc_component));
    CHECK(v.mod_size < sizeof(struct openib_cpc_module));
    /* unchanged structs are unchanged */
    CHECK_EQ(v.ep_size, sizeof(struct openib_cpc_endpoint));
    /* btl_ops grew in v3 (peer_qp_info, connect_established) */
    CHECK_EQ(v.ops_size, OPENIB_CPC_BTL_OPS_V1_SIZE);
    CHECK(v.ops_size < sizeof(struct openib_cpc_btl_ops));
    CHECK_EQ(v.qp_size, sizeof(struct openib_cpc_qp_info));
    /* no field moved */
    CHECK_EQ(v.port_caps, OFF(openib_cpc_port, caps));
    CHECK_EQ(v.port_dev_name, OFF(openib_cpc_port, dev_name));
    CHECK_EQ(v.port_port_num, OFF(openib_cpc_port, port_num));
    CHECK_EQ(v.port_gid, OFF(openib_cpc_port, gid));
    CHECK_EQ(v.port_gid_index, OFF(openib_cpc_port, gid_index));
    CHECK_EQ(v.port_ctx, OFF(openib_cpc_port, ctx));
    CHECK_EQ(v.port_btl, OFF(openib_cpc_port, btl));
    CHECK_EQ(v.comp_name, OFF(openib_cpc_component, name));
    CHECK_EQ(v.comp_id, OFF(openib_cpc_component, id));
    CHECK_EQ(v.comp_default_priority, OFF(openib_cpc_component, default_priority));
    CHECK_EQ(v.comp_register, OFF(openib_cpc_component, register_params));
    CHECK_EQ(v.comp_init, OFF(openib_cpc_component, init));
    CHECK_EQ(v.comp_query, OFF(openib_cpc_component, query));
    CHECK_EQ(v.comp_finalize, OFF(openib_cpc_component, finalize));
    CHECK_EQ(v.mod_component, OFF(openib_cpc_module, component));
    CHECK_EQ(v.mod_priority, OFF(openib_cpc_module, priority));
    CHECK_EQ(v.mod_blob_len, OFF(openib_cpc_module, blob_len));
    CHECK_EQ(v.mod_blob, OFF(openib_cpc_module, blob));
    CHECK_EQ(v.mod_endpoint_init, OFF(openib_cpc_module, endpoint_init));
    CHECK_EQ(v.mod_start_connect, OFF(openib_cpc_module, start_connect));
    CHECK_EQ(v.mod_endpoint_finalize, OFF(openib_cpc_module, endpoint_finalize));
    CHECK_EQ(v.mod_finalize, OFF(openib_cpc_module, finalize));
    CHECK_EQ(v.mod_uses_cts, OFF(openib_cpc_module, uses_cts));
    CHECK_EQ(v.ep_peer_blob, OFF(openib_cpc_endpoint, peer_blob));
    CHECK_EQ(v.ep_peer_port, OFF(openib_cpc_endpoint, peer_port));
    CHECK_EQ(v.ep_cpc_private, OFF(openib_cpc_endpoint, cpc_private));
    CHECK_EQ(v.ops_connect_complete, OFF(openib_cpc_btl_ops, connect_complete));
    CHECK_EQ(v.ops_endpoint_for_peer, OFF(openib_cpc_btl_ops, endpoint_for_peer));
    CHECK_EQ(v.qp_rq_layout, OFF(openib_cpc_qp_info, rq_layout));
}

/* v2 structs into v1 code (rule 3 of openib_abi.h). */
static void test_v2_into_v1_reader(void)
{
    static const char *const al[] = { "x", NULL };
    struct openib_cpc_port port;
    struct openib_cpc_component comp;
    struct openib_cpc_module mod;
    const char *name = NULL;
    uint32_t caps = 0;
    uint8_t prio = 0;

    openib_cpc_port_init(&port);
    port.caps = OPENIB_PORT_CAP_SRQ;
    CHECK_EQ(v1_read_port(&port, &caps), 0);       /* v2 size, zero tail */
    CHECK_EQ(caps, OPENIB_PORT_CAP_SRQ);
    port.ipv4 = 0x0100000a;
    CHECK_EQ(v1_read_port(&port, &caps), -E2BIG);  /* a v2 field it cannot honour */
    port.ipv4 = 0;
    port.size = OPENIB_CPC_PORT_V1_SIZE;           /* a v1-sized caller */
    CHECK_EQ(v1_read_port(&port, &caps), 0);
    port.size = OPENIB_CPC_PORT_V1_SIZE - 1;       /* smaller than any version */
    CHECK_EQ(v1_read_port(&port, &caps), -EINVAL);

    memset(&comp, 0, sizeof(comp));
    comp.size = sizeof(comp);
    comp.name = "v2comp";
    CHECK_EQ(v1_read_component(&comp, &name), 0);
    CHECK_EQ(strcmp(name, "v2comp"), 0);
    comp.aliases = al;
    CHECK_EQ(v1_read_component(&comp, &name), -E2BIG);

    openib_cpc_module_init(&mod);
    mod.priority = 42;
    CHECK_EQ(v1_read_module(&mod, &prio), 0);
    CHECK_EQ(prio, 42);
    mod.describe = (int (*)(const struct openib_cpc_module *, char *, size_t)) 1;
    CHECK_EQ(v1_read_module(&mod, &prio), -E2BIG);
}

/* ---- a stand-in BTL for the plug-in's calls back ---- */

static int btl_local_calls, btl_connect_calls, btl_complete_calls, btl_failed_calls;
static struct openib_cpc_qp_info btl_peer_seen;
static int btl_ep_token;

static int t_local_qp_info(void *btl_ep, struct openib_cpc_qp_info *out)
{
    CHECK(btl_ep == &btl_ep_token);
    btl_local_calls++;
    out->num_qps = 1;
    out->qpn[0] = 77;
    return OPAL_SUCCESS;
}

static int t_connect_qps(void *btl_ep, const struct openib_cpc_qp_info *peer, bool to_rts)
{
    btl_connect_calls++;
    CHECK(to_rts);
    btl_peer_seen = *peer;
    return OPAL_SUCCESS;
}

static int t_qps_to_rts(void *btl_ep) { return OPAL_SUCCESS; }
static int t_post_recvs(void *btl_ep) { return OPAL_SUCCESS; }
static void t_complete(void *btl_ep) { btl_complete_calls++; }
static void t_failed(void *btl_ep, int rc, const char *why) { btl_failed_calls++; }
static struct openib_cpc_endpoint *t_for_peer(void *btl, const void *id, size_t len, char *why,
                                              size_t wl)
{
    return NULL;
}

static const struct openib_cpc_btl_ops t_ops = {
    .size = sizeof(struct openib_cpc_btl_ops),
    .local_qp_info = t_local_qp_info,
    .connect_qps = t_connect_qps,
    .qps_to_rts = t_qps_to_rts,
    .post_recvs = t_post_recvs,
    .connect_complete = t_complete,
    .connect_failed = t_failed,
    .endpoint_for_peer = t_for_peer,
};

static char log_line[2048];
static void log_hook(const char *line)
{
    if (strstr(line, "connecting to")) {
        snprintf(log_line, sizeof(log_line), "%s", line);
    }
}

static char help_topic[64], help_reasons[1200];
static void help_hook(const char *file, const char *topic, int nargs, const char *const *args)
{
    snprintf(help_topic, sizeof(help_topic), "%s", topic);
    help_reasons[0] = '\0';
    if (nargs >= 4) {
        snprintf(help_reasons, sizeof(help_reasons), "%s", args[3]);
    }
    if (0 == strcmp(topic, "cpc name not found") && nargs >= 5) {
        snprintf(help_reasons, sizeof(help_reasons), "%s", args[4]);
    }
}

static void test_v1_plugin(void)
{
    struct openib_cpc_port port;
    struct openib_cpc_module *mods[4], *local;
    const struct openib_modex_cpc *remote;
    struct openib_modex_port mp, decoded, peer;
    struct openib_cpc_port peer_port;
    struct openib_cpc_endpoint ep;
    struct v1_plugin_stats *st;
    uint8_t buf[4096];
    size_t len;
    void *self;
    int n = 0, nports = 0, rc;

    openib_connect_finalize();
    openib_connect_set_help_hook(help_hook);

    rc = openib_connect_load_plugin(CPC_PLUGIN_V1_PATH);
    CHECK_EQ(rc, OPAL_SUCCESS);
    if (OPAL_SUCCESS != rc) {
        return;
    }
    /* The counters, through our own reference to the library. */
    self = dlopen(CPC_PLUGIN_V1_PATH, RTLD_NOW | RTLD_NOLOAD);
    CHECK(NULL != self);
    st = self ? dlsym(self, "v1_plugin_stats") : NULL;
    CHECK(NULL != st);
    if (NULL == st) {
        return;
    }
    CHECK_EQ(strcmp(openib_connect_name(100), "v1mock"), 0);
    /* loading it twice is refused (same id and name) */
    CHECK_EQ(openib_connect_load_plugin(CPC_PLUGIN_V1_PATH), OPAL_EXISTS);

    /* Names are looked up without reading a v1 table's (absent) aliases:
     * an unknown name walks every table. */
    openib_connect_set_selection(NULL, "nosuch");
    CHECK_EQ(openib_connect_init(), OPAL_ERR_BAD_PARAM);
    CHECK_EQ(strcmp(help_topic, "cpc name not found"), 0);
    CHECK_EQ(strcmp(help_reasons, "v1mock"), 0); /* the valid list, no alias part */

    openib_connect_set_selection("v1mock", NULL);
    CHECK_EQ(openib_connect_set_priority("v1mock", 33), OPAL_SUCCESS);
    CHECK_EQ(openib_connect_init(), OPAL_SUCCESS);
    CHECK_EQ(st->init_calls, 1);
    /* A v1 table has no progress hook: where v5 keeps one lies poison, which
     * the framework must not call. */
    CHECK_EQ(openib_connect_progress(true), 0);

    /* Query with a current (v2) port: zero tail, so the v1 CPC takes it. */
    openib_cpc_port_init(&port);
    port.dev_name = "rxe0";
    port.port_num = 1;
    port.mtu = 1024;
    rc = openib_connect_query_port(&port, mods, 4, &n);
    CHECK_EQ(rc, OPAL_SUCCESS);
    CHECK_EQ(n, 1);
    CHECK_EQ(st->last_port_size, sizeof(struct openib_cpc_port));
    CHECK_EQ(st->last_port_check, 0);
    CHECK_EQ(st->last_priority, 33);
    if (1 != n) {
        return;
    }
    CHECK_EQ(mods[0]->size, OFF(openib_cpc_module, describe)); /* a v1-sized module */
    CHECK_EQ(mods[0]->priority, 33);
    CHECK_STR_HAS(openib_connect_last_summary(), "CPCs usable: v1mock(33)");

    /* Its blob goes into the modex and comes back out. */
    CHECK_EQ(openib_connect_modex_fill_port(&mp, &port, mods, n), OPAL_SUCCESS);
    CHECK_EQ(openib_connect_modex_encode(&mp, 1, buf, sizeof(buf), &len), OPAL_SUCCESS);
    CHECK_EQ(openib_connect_modex_decode(buf, len, &decoded, 1, &nports), OPAL_SUCCESS);
    CHECK_EQ(nports, 1);
    CHECK_EQ(decoded.num_cpcs, 1);
    CHECK_EQ(decoded.cpcs[0].id, 100);
    CHECK_EQ(decoded.cpcs[0].blob_len, 7);
    CHECK(0 == memcmp(decoded.cpcs[0].blob, "v1:rxe0", 7));

    /* A peer offering it (and something we lack) matches it. */
    peer = decoded;
    peer.num_cpcs = 2;
    peer.cpcs[1] = (struct openib_modex_cpc){ .id = 1, .priority = 99 };
    CHECK_EQ(openib_connect_match(mods, n, &peer, &local, &remote), OPAL_SUCCESS);
    CHECK(local == mods[0]);
    CHECK(remote == &peer.cpcs[0]);

    /* Connect through the framework. */
    openib_connect_modex_peer_port(&peer, &peer_port);
    openib_cpc_endpoint_init(&ep);
    ep.btl_ep = &btl_ep_token;
    ep.btl_ops = &t_ops;
    ep.peer_desc = "rank 1 on nodeB";
    ep.peer_blob = remote->blob;
    ep.peer_blob_len = remote->blob_len;
    ep.peer_port = &peer_port;
    openib_connect_set_log_hook(log_hook);
    openib_connect_set_verbose(-1, 10);
    CHECK_EQ(openib_connect_endpoint_init(local, &ep), OPAL_SUCCESS);
    CHECK_EQ(st->endpoint_init_calls, 1);
    CHECK(ep.cpc_private == st);
    CHECK_EQ(openib_connect_start_connect(local, &ep), OPAL_SUCCESS);
    CHECK_EQ(st->start_calls, 1);
    CHECK_EQ(btl_local_calls, 1);
    CHECK_EQ(btl_connect_calls, 1);
    CHECK_EQ(btl_complete_calls, 1);
    CHECK_EQ(btl_failed_calls, 0);
    CHECK_EQ(btl_peer_seen.qpn[0], 1077);
    CHECK_EQ(btl_peer_seen.lid, 7); /* the peer blob length, as the plug-in saw it */
    CHECK_EQ(btl_peer_seen.mtu, 1024);
    /* no describe() in a v1 module: the line stops at the priority */
    CHECK_EQ(strcmp(log_line, "openib: connecting to rank 1 on nodeB with CPC v1mock "
                              "(priority 33)"), 0);
    openib_connect_set_log_hook(NULL);
    openib_connect_set_verbose(-1, 0);
    CHECK_EQ(openib_connect_endpoint_finalize(local, &ep), OPAL_SUCCESS);
    CHECK_EQ(st->endpoint_finalize_calls, 1);
    openib_connect_release_modules(mods, n);
    CHECK_EQ(st->module_finalize_calls, 1);

    /* A port with a v2 field set: the v1 CPC must refuse it (-E2BIG) and
     * say so; with nothing else left the port has no CPC. */
    port.ipv4 = 0x0100000a;
    help_topic[0] = '\0';
    rc = openib_connect_query_port(&port, mods, 4, &n);
    CHECK_EQ(rc, OPAL_ERR_NOT_AVAILABLE);
    CHECK_EQ(st->last_port_check, -E2BIG);
    CHECK_STR_HAS(openib_connect_last_reasons(),
                  "v1mock: port struct has fields this v1 CPC does not know (-7)");
    CHECK_EQ(strcmp(help_topic, "no cpc for port"), 0);

    CHECK_EQ(openib_connect_finalize(), OPAL_SUCCESS);
    CHECK_EQ(st->finalize_calls, 1);
    dlclose(self);
}

int main(void)
{
    test_layout();
    test_v2_into_v1_reader();
    test_v1_plugin();
    openib_connect_finalize();
    return test_report("test_abi_v1");
}

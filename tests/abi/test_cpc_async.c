/*
 * test_cpc_async.c - the CPC interface's v5 progress hook, with a plug-in
 * (cpc_plugin_async.c) that connects asynchronously: start_connect returns
 * at once, the plug-in's own thread learns of the peer's reply and of a
 * peer's own request, wakes the framework, and the plug-in's progress hook,
 * run by openib_connect_progress in this (the "MPI") thread, finishes both
 * connections through btl_ops. Also: no hook runs before init or after
 * finalize.
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "connect/openib_connect.h"
#include "tests/unit/connect/cpc_test.h"

#ifndef CPC_PLUGIN_ASYNC_PATH
#error "CPC_PLUGIN_ASYNC_PATH must name the built asynchronous plug-in"
#endif

struct async_plugin_stats {
    int set_wake_calls, wakes, progress_calls, urgent_calls;
    int started, completed, passive_completed, failed;
    pthread_t cpc_thread;
    pthread_t completed_on;
    pthread_t passive_completed_on;
};

static int btl_token, ep_a_token, ep_b_token;
static int complete_a, complete_b, failed_calls, for_peer_calls;
static struct openib_cpc_endpoint ep_b;

static int t_local_qp_info(void *btl_ep, struct openib_cpc_qp_info *out)
{
    out->num_qps = 1;
    out->qpn[0] = btl_ep == &ep_a_token ? 10 : 20;
    return OPAL_SUCCESS;
}

static int t_connect_qps(void *btl_ep, const struct openib_cpc_qp_info *peer, bool to_rts)
{
    CHECK(to_rts);
    CHECK_EQ(peer->qpn[0], (btl_ep == &ep_a_token ? 10 : 20) + 1000);
    return OPAL_SUCCESS;
}

static int t_qps_to_rts(void *btl_ep) { return OPAL_SUCCESS; }
static int t_post_recvs(void *btl_ep) { return OPAL_SUCCESS; }

static void t_complete(void *btl_ep)
{
    if (btl_ep == &ep_a_token) {
        complete_a++;
    } else if (btl_ep == &ep_b_token) {
        complete_b++;
    }
}

static void t_failed(void *btl_ep, int rc, const char *why) { failed_calls++; }

/* The passive side: the peer that asked first gets an endpoint made here. */
static struct openib_cpc_endpoint *t_for_peer(void *btl, const void *id, size_t len, char *why,
                                              size_t wl)
{
    for_peer_calls++;
    CHECK(btl == &btl_token);
    CHECK_EQ(len, 8);
    CHECK(0 == memcmp(id, "peerB", 5));
    return &ep_b;
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

/* What the BTL's progress does: urgent when a CPC woke it, else periodic. */
static int btl_progress(void)
{
    if (__atomic_load_n(&openib_connect_work, __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&openib_connect_work, 0, __ATOMIC_RELAXED);
        return openib_connect_progress(true);
    }
    return openib_connect_progress(false);
}

int main(void)
{
    struct openib_cpc_port port;
    struct openib_cpc_module *mods[4];
    struct openib_cpc_endpoint ep_a;
    struct async_plugin_stats *st;
    struct timespec nap = { .tv_sec = 0, .tv_nsec = 1000000L };
    time_t end;
    void *self;
    int n = 0, rc;

    rc = openib_connect_load_plugin(CPC_PLUGIN_ASYNC_PATH);
    CHECK_EQ(rc, OPAL_SUCCESS);
    self = dlopen(CPC_PLUGIN_ASYNC_PATH, RTLD_NOW | RTLD_NOLOAD);
    st = self ? dlsym(self, "async_plugin_stats") : NULL;
    CHECK(NULL != st);
    if (OPAL_SUCCESS != rc || NULL == st) {
        return test_report("test_cpc_async");
    }

    /* Loaded, not initialized: no hook runs. */
    CHECK_EQ(openib_connect_progress(true), 0);
    CHECK_EQ(st->progress_calls, 0);

    openib_connect_set_selection("asyncmock", NULL);
    CHECK_EQ(openib_connect_init(), OPAL_SUCCESS);
    CHECK_EQ(st->set_wake_calls, 1);

    openib_cpc_port_init(&port);
    port.dev_name = "rxe0";
    port.port_num = 1;
    port.mtu = 1024;
    port.btl = &btl_token;
    CHECK_EQ(openib_connect_query_port(&port, mods, 4, &n), OPAL_SUCCESS);
    CHECK_EQ(n, 1);
    if (1 != n) {
        return test_report("test_cpc_async");
    }

    openib_cpc_endpoint_init(&ep_a);
    ep_a.btl_ep = &ep_a_token;
    ep_a.btl_ops = &t_ops;
    ep_a.peer_desc = "rank 1 on nodeB";
    openib_cpc_endpoint_init(&ep_b);
    ep_b.btl_ep = &ep_b_token;
    ep_b.btl_ops = &t_ops;
    ep_b.peer_desc = "rank 2 on nodeB";
    CHECK_EQ(openib_connect_endpoint_init(mods[0], &ep_a), OPAL_SUCCESS);
    CHECK_EQ(openib_connect_endpoint_init(mods[0], &ep_b), OPAL_SUCCESS);

    /* Started, not connected: that happens in progress, later. */
    CHECK_EQ(openib_connect_start_connect(mods[0], &ep_a), OPAL_SUCCESS);
    CHECK_EQ(st->started, 1);
    CHECK_EQ(complete_a, 0);

    end = time(NULL) + 10; /* a bound, not a timing assertion */
    while ((complete_a < 1 || complete_b < 1) && time(NULL) < end) {
        btl_progress();
        nanosleep(&nap, NULL);
    }
    CHECK_EQ(complete_a, 1);
    CHECK_EQ(complete_b, 1);
    CHECK_EQ(for_peer_calls, 1);
    CHECK_EQ(failed_calls, 0);
    CHECK_EQ(st->failed, 0);
    CHECK_EQ(st->wakes, 2);
    /* each wake reached the hook as an urgent call */
    CHECK(st->urgent_calls >= 1);
    CHECK(st->progress_calls >= st->urgent_calls);
    /* the connections were finished by this thread, not the plug-in's */
    CHECK(pthread_equal(st->completed_on, pthread_self()));
    CHECK(pthread_equal(st->passive_completed_on, pthread_self()));
    CHECK(!pthread_equal(st->completed_on, st->cpc_thread));

    CHECK_EQ(openib_connect_endpoint_finalize(mods[0], &ep_a), OPAL_SUCCESS);
    CHECK_EQ(openib_connect_endpoint_finalize(mods[0], &ep_b), OPAL_SUCCESS);
    openib_connect_release_modules(mods, n);
    CHECK_EQ(openib_connect_finalize(), OPAL_SUCCESS);

    /* Finalized: no hook runs. */
    n = st->progress_calls;
    CHECK_EQ(openib_connect_progress(true), 0);
    CHECK_EQ(st->progress_calls, n);
    dlclose(self);
    return test_report("test_cpc_async");
}

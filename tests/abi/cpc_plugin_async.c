/*
 * cpc_plugin_async.c - a CPC plug-in built against the current headers that
 * works the way a real asynchronous CPC does (interface v5): start_connect
 * only starts a handshake; the "peer's reply" and a "peer's own request"
 * (a passive side) arrive on the plug-in's own thread, which queues them
 * and calls the wake function it got through set_wake; the plug-in's
 * progress hook, run by the framework in the thread that drives MPI, then
 * finishes each connection through btl_ops. test_cpc_async drives it.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "openib/openib_cpc.h"

/* Counters and thread ids the test reads with dlsym. */
struct async_plugin_stats {
    int set_wake_calls, wakes, progress_calls, urgent_calls;
    int started, completed, passive_completed, failed;
    pthread_t cpc_thread;        /* the plug-in's own thread */
    pthread_t completed_on;      /* the thread connect_complete ran on */
    pthread_t passive_completed_on;
};
struct async_plugin_stats async_plugin_stats;

/* What the plug-in's thread hands to progress (one slot each: one
 * handshake at a time is all the test asks of it). */
static struct openib_cpc_endpoint *reply_for; /* our request was answered */
static int incoming;                          /* a peer asked us first */
static void *incoming_btl;
static void (*wake)(void);
static pthread_t thread;
static bool thread_running;
static const struct openib_cpc_btl_ops *passive_ops;

static void async_set_wake(void (*fn)(void))
{
    async_plugin_stats.set_wake_calls++;
    wake = fn;
}

static int connect_ep(struct openib_cpc_endpoint *ep)
{
    struct openib_cpc_qp_info mine, peer;
    int rc;

    openib_cpc_qp_info_init(&mine);
    rc = ep->btl_ops->local_qp_info(ep->btl_ep, &mine);
    if (OPENIB_CPC_SUCCESS != rc) {
        return rc;
    }
    openib_cpc_qp_info_init(&peer);
    peer.num_qps = 1;
    peer.qpn[0] = mine.qpn[0] + 1000;
    rc = ep->btl_ops->connect_qps(ep->btl_ep, &peer, true);
    if (OPENIB_CPC_SUCCESS != rc) {
        return rc;
    }
    ep->btl_ops->connect_complete(ep->btl_ep);
    return OPENIB_CPC_SUCCESS;
}

/* Runs only in the thread that drives MPI (the framework's promise). */
static int async_progress(bool urgent)
{
    struct openib_cpc_endpoint *ep;
    char why[128] = "";
    int n = 0;

    async_plugin_stats.progress_calls++;
    async_plugin_stats.urgent_calls += urgent;
    ep = __atomic_exchange_n(&reply_for, NULL, __ATOMIC_ACQUIRE);
    if (NULL != ep) {
        n++;
        if (OPENIB_CPC_SUCCESS == connect_ep(ep)) {
            async_plugin_stats.completed++;
            async_plugin_stats.completed_on = pthread_self();
        } else {
            async_plugin_stats.failed++;
        }
    }
    if (__atomic_exchange_n(&incoming, 0, __ATOMIC_ACQUIRE)) {
        static const uint8_t peer_id[8] = { 'p', 'e', 'e', 'r', 'B', 0, 0, 1 };

        n++;
        /* a passive side: the BTL makes (or finds) the endpoint */
        ep = passive_ops->endpoint_for_peer(incoming_btl, peer_id, sizeof(peer_id), why,
                                            sizeof(why));
        if (NULL != ep && OPENIB_CPC_SUCCESS == connect_ep(ep)) {
            async_plugin_stats.passive_completed++;
            async_plugin_stats.passive_completed_on = pthread_self();
        } else {
            async_plugin_stats.failed++;
        }
    }
    return n;
}

static void nap_ms(long ms)
{
    struct timespec t = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

    nanosleep(&t, NULL);
}

/* The plug-in's own thread: the peer answers our request a little later,
 * then asks us for a connection of its own. Each is queued, then woken. */
static void *cpc_thread(void *arg)
{
    struct openib_cpc_endpoint *ep = arg;

    nap_ms(50);
    __atomic_store_n(&reply_for, ep, __ATOMIC_RELEASE);
    async_plugin_stats.wakes++;
    wake();
    nap_ms(50);
    __atomic_store_n(&incoming, 1, __ATOMIC_RELEASE);
    async_plugin_stats.wakes++;
    wake();
    return NULL;
}

static int async_endpoint_init(struct openib_cpc_module *m, struct openib_cpc_endpoint *ep)
{
    (void) m;
    ep->cpc_private = &async_plugin_stats;
    return OPENIB_CPC_SUCCESS;
}

static int async_start_connect(struct openib_cpc_module *m, struct openib_cpc_endpoint *ep)
{
    (void) m;
    if (NULL == wake || thread_running) {
        return OPENIB_CPC_ERR_NOT_SUPPORTED;
    }
    passive_ops = ep->btl_ops;
    async_plugin_stats.started++;
    if (0 != pthread_create(&thread, NULL, cpc_thread, ep)) {
        return OPENIB_CPC_ERR_OUT_OF_RESOURCE;
    }
    thread_running = true;
    async_plugin_stats.cpc_thread = thread;
    return OPENIB_CPC_SUCCESS; /* the connection completes in progress */
}

static int async_endpoint_finalize(struct openib_cpc_module *m, struct openib_cpc_endpoint *ep)
{
    (void) m;
    (void) ep;
    return OPENIB_CPC_SUCCESS;
}

static int async_module_finalize(struct openib_cpc_module *m)
{
    free(m);
    return OPENIB_CPC_SUCCESS;
}

static const struct openib_cpc_component async_component;

static int async_query(const struct openib_cpc_port *port, int priority,
                       struct openib_cpc_module **out, char *why, size_t why_len)
{
    struct openib_cpc_module *m = malloc(sizeof(*m));

    (void) why;
    (void) why_len;
    if (NULL == m) {
        return OPENIB_CPC_ERR_OUT_OF_RESOURCE;
    }
    openib_cpc_module_init(m);
    m->component = &async_component;
    m->priority = (uint8_t) priority;
    m->blob_len = 1;
    m->blob[0] = 'a';
    m->endpoint_init = async_endpoint_init;
    m->start_connect = async_start_connect;
    m->endpoint_finalize = async_endpoint_finalize;
    m->finalize = async_module_finalize;
    incoming_btl = port->btl;
    *out = m;
    return OPENIB_CPC_SUCCESS;
}

static int async_finalize(void)
{
    if (thread_running) {
        pthread_join(thread, NULL);
        thread_running = false;
    }
    return OPENIB_CPC_SUCCESS;
}

static const struct openib_cpc_component async_component = {
    .size = sizeof(struct openib_cpc_component),
    .abi_version = OPENIB_CPC_ABI_VERSION,
    .name = "asyncmock",
    .id = 101,
    .default_priority = 20,
    .query = async_query,
    .finalize = async_finalize,
    .progress = async_progress,
    .set_wake = async_set_wake,
};

const struct openib_cpc_component *openib_cpc_plugin_component(void)
{
    return &async_component;
}

/*
 * btl_openib_device.c - finding verbs devices and active ports, and making
 * one BTL module per port that if_include/if_exclude allow.
 */
#include "opal_config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "opal/constants.h"
#include "opal/mca/btl/base/base.h"
#include "opal/util/argv.h"

#include "openib_config.h"
#include "btl_openib/btl_openib.h"
#include "btl_openib/btl_openib_async.h"
#include "btl_openib/btl_openib_gid.h"
#include "btl_openib/btl_openib_reg.h"
#include "btl_openib/btl_openib_diag.h"
#include "btl_openib/btl_openib_limits.h"
#include "btl_openib/btl_openib_hmem_glue.h"
#include "btl_openib/btl_openib_xrc.h"
#include "mca/btl_openib_params.h"

static const char *link_layer_name(uint8_t ll)
{
    switch (ll) {
    case IBV_LINK_LAYER_INFINIBAND: return "InfiniBand";
    case IBV_LINK_LAYER_ETHERNET: return "Ethernet";
    default: return "unspecified";
    }
}

/* Does "dev" or "dev:port" in a comma-separated list name this port? */
static bool list_names_port(const char *list, const char *dev, int port)
{
    char **items = opal_argv_split(list, ',');
    bool hit = false;
    int i;

    for (i = 0; items && items[i] && !hit; ++i) {
        char *colon = strchr(items[i], ':');
        if (colon) {
            *colon = '\0';
            hit = 0 == strcmp(items[i], dev) && atoi(colon + 1) == port;
        } else {
            hit = 0 == strcmp(items[i], dev);
        }
    }
    opal_argv_free(items);
    return hit;
}

static bool port_selected(const char *dev, int port)
{
    if (openib_params.if_include && *openib_params.if_include) {
        return list_names_port(openib_params.if_include, dev, port);
    }
    if (openib_params.if_exclude && *openib_params.if_exclude) {
        return !list_names_port(openib_params.if_exclude, dev, port);
    }
    return true;
}

/* The GID this port uses: the user's (btl_openib_gid_index, checked by
 * btl_openib_limits.c), on Ethernet the best by type (btl_openib_gid.h),
 * else index 0 (InfiniBand's port GID). */
static int pick_gid_index(struct ibv_context *ctx, uint8_t port, const struct ibv_port_attr *pa,
                          union ibv_gid *gid, uint32_t *ipv4)
{
    static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    int best = 0, i, n = 0;

    *ipv4 = 0;
    if (openib_params.gid_index >= 0) {
        best = openib_params.gid_index;
    } else if (pa->link_layer == IBV_LINK_LAYER_ETHERNET) {
        struct ibv_gid_entry e[256];

        for (i = 0; i < pa->gid_tbl_len && i < 256; ++i) {
            if (0 == ibv_query_gid_ex(ctx, port, (uint32_t) i, &e[n], 0)) {
                n++; /* empty entries answer ENODATA */
            }
        }
        i = openib_gid_pick(e, n);
        best = i >= 0 ? (int) e[i].gid_index : 0;
    }
    if (ibv_query_gid(ctx, port, best, gid)) {
        return -1;
    }
    if (0 == memcmp(gid->raw, v4mapped, sizeof(v4mapped))) {
        memcpy(ipv4, gid->raw + 12, 4);
    }
    return best;
}

static struct openib_device *device_open(struct ibv_device *ibdev)
{
    struct openib_device *dev = calloc(1, sizeof(*dev));

    if (NULL == dev) {
        return NULL;
    }
    snprintf(dev->name, sizeof(dev->name), "%s", ibv_get_device_name(ibdev));
    dev->ctx = ibv_open_device(ibdev);
    if (NULL == dev->ctx) {
        OPENIB_VERBOSE(1, "cannot open device %s: %s", dev->name, strerror(errno));
        goto err_free;
    }
    if (ibv_query_device(dev->ctx, &dev->attr)) {
        OPENIB_VERBOSE(1, "cannot query device %s: %s", dev->name, strerror(errno));
        goto err_close;
    }
    dev->pd = ibv_alloc_pd(dev->ctx);
    if (NULL == dev->pd) {
        OPENIB_VERBOSE(1, "cannot allocate a protection domain on %s: %s", dev->name,
                       strerror(errno));
        goto err_close;
    }
    if (OPAL_SUCCESS != openib_reg_cache_create(dev)) {
        goto err_pd;
    }
    dev->hmem = openib_hmem_glue_child(mca_btl_openib_component.hmem_root);
    dev->xrc = OPENIB_HAVE_XRC && (dev->attr.device_cap_flags & IBV_DEVICE_XRC);
    dev->xrcd_fd = -1; /* the XRC domain opens with the first X queue */
    (void) openib_device_defaults_find(dev->attr.vendor_id, dev->attr.vendor_part_id,
                                       (int) dev->ctx->device->transport_type, &dev->defaults);
    return dev;

err_pd:
    ibv_dealloc_pd(dev->pd);
err_close:
    ibv_close_device(dev->ctx);
err_free:
    free(dev);
    return NULL;
}

static void device_release(struct openib_device *dev)
{
    if (NULL == dev || --dev->refcount > 0) {
        return;
    }
    openib_reg_cache_destroy(dev);
    openib_hmem_glue_release(dev->hmem);
    openib_xrc_dev_close(dev); /* after the modules' XRC SRQs and QPs */
    if (dev->pd) {
        ibv_dealloc_pd(dev->pd);
    }
    if (dev->ctx) {
        ibv_close_device(dev->ctx);
    }
    free(dev);
}

static int add_module(struct openib_device *dev, uint8_t port, const struct ibv_port_attr *pa)
{
    mca_btl_openib_module_t *m, **grown;
    int rc;

    m = malloc(sizeof(*m));
    if (NULL == m) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    *m = openib_module_template;
    m->dev = dev;
    m->port_num = port;
    m->port_attr = *pa;
    rc = openib_limits_check_port(m);
    if (OPAL_SUCCESS != rc) {
        free(m);
        return rc;
    }
    m->gid_index = pick_gid_index(dev->ctx, port, pa, &m->gid, &m->ipv4);
    if (m->gid_index < 0) {
        OPENIB_VERBOSE(1, "%s:%d: cannot read GID table; port skipped", dev->name, port);
        free(m);
        return OPAL_ERR_NOT_AVAILABLE;
    }
    m->index = mca_btl_openib_component.num_modules;
    dev->refcount++;
    dev->reg_errno = 0;
    rc = openib_module_init(m);
    if (OPAL_SUCCESS != rc) {
        if (dev->reg_errno) {
            openib_diag_registration_failed(dev);
        }
        dev->refcount--;
        free(m);
        return rc;
    }
    grown = realloc(mca_btl_openib_component.modules,
                    sizeof(*grown) * (mca_btl_openib_component.num_modules + 1));
    if (NULL == grown) {
        openib_module_fini(m);
        dev->refcount--;
        free(m);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    mca_btl_openib_component.modules = grown;
    grown[mca_btl_openib_component.num_modules++] = m;
    /* Shown at btl_openib_verbose >= 10 and also at btl_base_verbose >= 10,
     * so the usual "which BTL is this" switch names our version. */
    opal_output_verbose(openib_params.verbose >= 10 ? 0 : 10,
                        openib_params.verbose >= 10 ? mca_btl_openib_component.output
                                                    : opal_btl_base_framework.framework_output,
                        "openib: %s: module %d opened on %s port %d (%s, MTU %u, GID index %d, "
                        "CPCs %d)",
                        openib_params.version, m->index, dev->name, port,
                        link_layer_name(pa->link_layer), 128u << pa->active_mtu, m->gid_index,
                        m->num_cpcs);
    return OPAL_SUCCESS;
}

int openib_devices_open(void)
{
    struct ibv_device **list;
    int ndev = 0, i, p;

    list = ibv_get_device_list(&ndev);
    if (NULL == list || 0 == ndev) {
        char why[160];

        snprintf(why, sizeof(why), "No verbs device was found (%s).",
                 list ? "ibv_get_device_list returned none" : strerror(errno));
        OPENIB_VERBOSE(1, "no verbs devices found (%s); openib disabled",
                       list ? "ibv_get_device_list returned none"
                            : strerror(errno));
        if (list) {
            ibv_free_device_list(list);
        }
        openib_diag_no_usable_port(why);
        return OPAL_ERR_NOT_AVAILABLE;
    }
    if (OPAL_SUCCESS != openib_diag_check_if_include(list, ndev)) {
        ibv_free_device_list(list);
        return OPAL_ERR_NOT_FOUND;
    }
    mca_btl_openib_component.devices = calloc(ndev, sizeof(struct openib_device *));
    if (NULL == mca_btl_openib_component.devices) {
        ibv_free_device_list(list);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    for (i = 0; i < ndev; ++i) {
        const char *name = ibv_get_device_name(list[i]);
        struct openib_device *dev;
        bool any = false;

        for (p = 1; p <= 8 && !any; ++p) {
            any = port_selected(name, p);
        }
        if (!any) {
            OPENIB_VERBOSE(10, "device %s skipped by if_include/if_exclude", name);
            continue;
        }
        dev = device_open(list[i]);
        if (NULL == dev) {
            continue;
        }
        dev->refcount = 1;
        mca_btl_openib_component.devices[mca_btl_openib_component.num_devices++] = dev;
    }
    ibv_free_device_list(list);
    /* Every module uses the same queues, and so must every peer: decided
     * once, before the first module, from all the devices this process
     * uses. */
    for (i = 0; i < mca_btl_openib_component.num_devices; ++i) {
        struct openib_device *dev = mca_btl_openib_component.devices[i];

        if ((0 == dev->attr.max_srq || 1 == dev->defaults.per_peer_queues) &&
            openib_rq_spec_has_shared(&mca_btl_openib_component.rq)) {
            if (OPAL_SUCCESS != openib_component_queues_without_srq(
                                    dev->name, 0 == dev->attr.max_srq
                                                   ? "has no shared receive queues"
                                                   : "is iWARP, which has no receiver-not-ready "
                                                     "retry, so a shared queue would lose "
                                                     "connections")) {
                return OPAL_ERR_BAD_PARAM;
            }
            break;
        }
    }
    for (i = 0; i < mca_btl_openib_component.num_devices; ++i) {
        struct openib_device *dev = mca_btl_openib_component.devices[i];

        for (p = 1; p <= dev->attr.phys_port_cnt; ++p) {
            struct ibv_port_attr pa;

            if (!port_selected(dev->name, p)) {
                OPENIB_VERBOSE(10, "%s:%d skipped by if_include/if_exclude", dev->name, p);
                continue;
            }
            if (ibv_query_port(dev->ctx, p, &pa)) {
                OPENIB_VERBOSE(1, "%s:%d: cannot query port: %s", dev->name, p, strerror(errno));
                continue;
            }
            if (pa.state != IBV_PORT_ACTIVE) {
                OPENIB_VERBOSE(10, "%s:%d is not active (state %d); skipped", dev->name, p,
                               pa.state);
                continue;
            }
            if (OPAL_ERR_BAD_PARAM == add_module(dev, p, &pa) &&
                mca_btl_openib_component.told_user) {
                /* a setting beyond this port's limits: the user was told */
                return OPAL_ERR_BAD_PARAM;
            }
        }
    }
    if (0 == mca_btl_openib_component.num_modules) {
        OPENIB_VERBOSE(1, "no usable active port on %d verbs device(s); openib disabled", ndev);
        openib_diag_no_usable_port(NULL);
        return OPAL_ERR_NOT_AVAILABLE;
    }
    return openib_async_start(); /* without it a port going down would go unnoticed */
}

void openib_devices_close(void)
{
    int i;

    openib_async_stop();
    for (i = 0; i < mca_btl_openib_component.num_modules; ++i) {
        mca_btl_openib_module_t *m = mca_btl_openib_component.modules[i];
        if (m) {
            openib_module_fini(m);
            device_release(m->dev);
            free(m);
        }
    }
    free(mca_btl_openib_component.modules);
    mca_btl_openib_component.modules = NULL;
    mca_btl_openib_component.num_modules = 0;
    for (i = 0; i < mca_btl_openib_component.num_devices; ++i) {
        device_release(mca_btl_openib_component.devices[i]);
    }
    free(mca_btl_openib_component.devices);
    mca_btl_openib_component.devices = NULL;
    mca_btl_openib_component.num_devices = 0;
}

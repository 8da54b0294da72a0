/*
 * btl_openib_device.c - opening the verbs devices whose active ports
 * if_include/if_exclude allow (found by Open MPI's common verbs code), and
 * making one BTL module per such port.
 */
#include "opal_config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "opal/constants.h"
#include "opal/mca/btl/base/base.h"
#include "opal/class/opal_list.h"
#include "opal/mca/common/verbs/common_verbs.h"

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

/* Takes over the context common verbs opened for this device: the list's
 * release leaves it open once this succeeds. */
static struct openib_device *device_adopt(opal_common_verbs_device_item_t *di)
{
    struct openib_device *dev = calloc(1, sizeof(*dev));

    if (NULL == dev) {
        return NULL;
    }
    snprintf(dev->name, sizeof(dev->name), "%s", di->device_name);
    dev->ctx = di->context;
    dev->attr = di->device_attr;
    dev->pd = ibv_alloc_pd(dev->ctx);
    if (NULL == dev->pd) {
        OPENIB_VERBOSE(1, "cannot allocate a protection domain on %s: %s", dev->name,
                       strerror(errno));
        free(dev);
        return NULL; /* the list's release closes the context */
    }
    if (OPAL_SUCCESS != openib_reg_cache_create(dev)) {
        goto err_pd;
    }
    dev->hmem = openib_hmem_glue_child(mca_btl_openib_component.hmem_root);
    dev->xrc = OPENIB_HAVE_XRC && (dev->attr.device_cap_flags & IBV_DEVICE_XRC);
    dev->xrcd_fd = -1; /* the XRC domain opens with the first X queue */
    (void) openib_device_defaults_find(dev->attr.vendor_id, dev->attr.vendor_part_id,
                                       (int) dev->ctx->device->transport_type, &dev->defaults);
    di->destructor_free_context = false;
    return dev;

err_pd:
    ibv_dealloc_pd(dev->pd);
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

static const char *nonempty(const char *list)
{
    return list && *list ? list : NULL;
}

/* The device a port of the list belongs to, adopted on its first port. */
static struct openib_device *device_of(opal_common_verbs_port_item_t *pi)
{
    struct openib_device *dev;
    int i;

    for (i = 0; i < mca_btl_openib_component.num_devices; ++i) {
        if (mca_btl_openib_component.devices[i]->ctx == pi->device->context) {
            return mca_btl_openib_component.devices[i];
        }
    }
    dev = device_adopt(pi->device);
    if (NULL != dev) {
        dev->refcount = 1;
        mca_btl_openib_component.devices[mca_btl_openib_component.num_devices++] = dev;
    }
    return dev;
}

/* Every module uses the same queues, and so must every peer: decided once,
 * before the first module, from all the devices this process uses. */
static int check_shared_queues(void)
{
    int i;

    for (i = 0; i < mca_btl_openib_component.num_devices; ++i) {
        struct openib_device *dev = mca_btl_openib_component.devices[i];

        if ((0 == dev->attr.max_srq || 1 == dev->defaults.per_peer_queues) &&
            openib_rq_spec_has_shared(&mca_btl_openib_component.rq)) {
            return openib_component_queues_without_srq(
                dev->name, 0 == dev->attr.max_srq
                               ? "has no shared receive queues"
                               : "is iWARP, which has no receiver-not-ready retry, so a shared "
                                 "queue would lose connections");
        }
    }
    return OPAL_SUCCESS;
}

/* The active ports if_include/if_exclude allow, on devices of the two
 * transports a reliable-connected BTL can use (usNIC and raw Ethernet
 * devices are left out). NULL where none is, or where a device could not
 * be opened or queried (common verbs then told the user). */
static opal_list_t *find_ports(void)
{
    /* Our own check (openib_diag_check_if_include) names a missing entry
     * together with the ports that exist, so common verbs' warning would
     * only repeat it. */
    opal_common_verbs_warn_nonexistent_if = false;
    return opal_common_verbs_find_ports(nonempty(openib_params.if_include),
                                        nonempty(openib_params.if_exclude),
                                        OPAL_COMMON_VERBS_FLAGS_TRANSPORT_IB |
                                            OPAL_COMMON_VERBS_FLAGS_TRANSPORT_IWARP,
                                        openib_params.verbose > 0
                                            ? mca_btl_openib_component.output
                                            : -1);
}

int openib_devices_open(void)
{
    struct ibv_device **list;
    opal_common_verbs_port_item_t *pi;
    opal_list_t *ports;
    int ndev = 0, rc;

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
    rc = openib_diag_check_if_include(list, ndev);
    ibv_free_device_list(list);
    if (OPAL_SUCCESS != rc) {
        return OPAL_ERR_NOT_FOUND;
    }
    ports = find_ports();
    if (NULL == ports) {
        OPENIB_VERBOSE(1, "no usable active port on %d verbs device(s); openib disabled", ndev);
        openib_diag_no_usable_port(NULL);
        return OPAL_ERR_NOT_AVAILABLE;
    }
    mca_btl_openib_component.devices = calloc(opal_list_get_size(ports) + 1,
                                              sizeof(struct openib_device *));
    if (NULL == mca_btl_openib_component.devices) {
        OPAL_LIST_RELEASE(ports);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    OPAL_LIST_FOREACH (pi, ports, opal_common_verbs_port_item_t) {
        (void) device_of(pi);
    }
    rc = check_shared_queues();
    OPAL_LIST_FOREACH (pi, ports, opal_common_verbs_port_item_t) {
        struct openib_device *dev;

        if (OPAL_SUCCESS != rc) {
            break;
        }
        dev = device_of(pi);
        if (NULL != dev && OPAL_ERR_BAD_PARAM == add_module(dev, pi->port_num, &pi->port_attr) &&
            mca_btl_openib_component.told_user) {
            rc = OPAL_ERR_BAD_PARAM; /* a setting beyond this port's limits: the user was told */
        }
    }
    OPAL_LIST_RELEASE(ports); /* the adopted contexts stay open */
    if (OPAL_SUCCESS != rc) {
        return OPAL_ERR_BAD_PARAM;
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

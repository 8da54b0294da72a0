/*
 * hmem_iface.c - which memory interfaces this process can use, and which one
 * a buffer belongs to. Probed once; nothing here needs a GPU runtime at
 * build time, and a missing runtime only makes its interface unavailable.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "hmem/hmem_private.h"

#define HMEM_WHY_MAX 256

struct hmem_iface_state {
    bool available; /* runtime found (and, for CUDA, initialized) */
    bool has_copy;  /* a built-in copy can run */
    char status[HMEM_WHY_MAX];
};

/* Runtimes we only report: found or not. ROCm and Level Zero buffers are not
 * detected and have no built-in copy; an override may still handle them. */
static const struct hmem_presence {
    const char *env;     /* overrides the library name; empty disables */
    const char *library;
} hmem_presence[HMEM_IFACE_NUM] = {
    [OPENIB_HMEM_ROCM] = { .env = "OPENIB_HMEM_ROCM_LIBRARY", .library = "libhsa-runtime64.so.1" },
    [OPENIB_HMEM_ZE] = { .env = "OPENIB_HMEM_ZE_LIBRARY", .library = "libze_loader.so.1" },
};

static struct hmem_iface_state hmem_iface[HMEM_IFACE_NUM];
static pthread_once_t hmem_iface_once = PTHREAD_ONCE_INIT;
/* Set (release) once the probe is done: lets every send skip pthread_once. */
static bool hmem_probed;
/* Read on every detect: set once by the probe, before anyone can read it
 * (pthread_once orders it). */
static bool hmem_cuda_usable;

static void hmem_probe_presence(enum openib_hmem_iface iface)
{
    const struct hmem_presence *p = &hmem_presence[iface];
    struct hmem_iface_state *s = &hmem_iface[iface];
    const char *lib = getenv(p->env);
    const char *err;
    void *h;

    if (NULL == lib) {
        lib = p->library;
    }
    if ('\0' == lib[0]) {
        snprintf(s->status, sizeof(s->status), "%s: not available: disabled (%s is empty)",
                 openib_hmem_iface_name(iface), p->env);
        return;
    }
    h = dlopen(lib, RTLD_LAZY | RTLD_LOCAL);
    if (NULL == h) {
        err = dlerror();
        snprintf(s->status, sizeof(s->status), "%s: not available: %s not found (%s)",
                 openib_hmem_iface_name(iface), lib, NULL != err ? err : "dlopen failed");
        return;
    }
    dlclose(h);
    s->available = true;
    snprintf(s->status, sizeof(s->status),
             "%s: runtime present (%s); no built-in copy or buffer detection, an override "
             "may handle it",
             openib_hmem_iface_name(iface), lib);
}

static void hmem_probe_all(void)
{
    struct hmem_iface_state *s;
    char why[HMEM_WHY_MAX - 32];

    s = &hmem_iface[OPENIB_HMEM_SYSTEM];
    s->available = s->has_copy = true;
    snprintf(s->status, sizeof(s->status), "system: available (memcpy)");

    s = &hmem_iface[OPENIB_HMEM_CUDA];
    if (0 == hmem_cuda_probe(why, sizeof(why))) {
        s->available = s->has_copy = true;
        snprintf(s->status, sizeof(s->status), "cuda: available: %s", why);
    } else {
        snprintf(s->status, sizeof(s->status), "cuda: not available: %s", why);
    }
    hmem_cuda_usable = s->available;

    hmem_probe_presence(OPENIB_HMEM_ROCM);
    hmem_probe_presence(OPENIB_HMEM_ZE);
    __atomic_store_n(&hmem_probed, true, __ATOMIC_RELEASE);
}

void openib_hmem_iface_probe(void)
{
    if (HMEM_UNLIKELY(!__atomic_load_n(&hmem_probed, __ATOMIC_ACQUIRE))) {
        pthread_once(&hmem_iface_once, hmem_probe_all);
    }
}

bool openib_hmem_iface_available(enum openib_hmem_iface iface)
{
    openib_hmem_iface_probe();
    return (unsigned) iface < HMEM_IFACE_NUM && hmem_iface[iface].available;
}

bool openib_hmem_iface_has_copy(enum openib_hmem_iface iface)
{
    openib_hmem_iface_probe();
    return (unsigned) iface < HMEM_IFACE_NUM && hmem_iface[iface].has_copy;
}

const char *openib_hmem_iface_status(enum openib_hmem_iface iface)
{
    openib_hmem_iface_probe();
    if ((unsigned) iface >= HMEM_IFACE_NUM) {
        return "unknown memory interface";
    }
    return hmem_iface[iface].status;
}

int openib_hmem_detect(const void *addr, enum openib_hmem_iface *iface, uint64_t *device)
{
    uint64_t dev = 0;

    if (NULL == iface) {
        return -EINVAL;
    }
    openib_hmem_iface_probe();
    if (HMEM_UNLIKELY(hmem_cuda_usable) && NULL != addr && hmem_cuda_is_device_ptr(addr, &dev)) {
        *iface = OPENIB_HMEM_CUDA;
    } else {
        *iface = OPENIB_HMEM_SYSTEM;
        dev = 0;
    }
    if (NULL != device) {
        *device = dev;
    }
    return 0;
}

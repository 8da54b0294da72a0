/*
 * hmem_iface.c - which memory interfaces this process can use, and which one
 * a buffer belongs to. Nothing here needs a GPU runtime at build time, and a
 * missing runtime only makes its interface unavailable.
 *
 * CUDA is started (cuInit) only when needed. The rule (btl_openib_hmem_cuda
 * = auto): device memory can only exist in a process that has the CUDA
 * driver library loaded - every CUDA allocation, through the runtime or the
 * driver API, is made by libcuda.so.1, which the application (or its CUDA
 * runtime) loads before it can allocate anything. So while that library is
 * not in the process, every buffer is host memory and the driver is not
 * touched; the first time a buffer is looked up after the application has
 * loaded it, CUDA is started and asks the driver. Whether it is loaded is
 * asked with dlopen(RTLD_NOLOAD), which never loads it; that costs a search
 * of the library path when it is absent (~0.1 ms), so it is asked again
 * only after the process has loaded some new library (dl_iterate_phdr's
 * dlpi_adds counter, ~25 ns), and only on a memory-type cache miss.
 * Rules by address (heap, stack, /proc/self/maps) would also spare cuInit
 * in a process that loaded the driver but sends only host memory; they
 * rest on how the driver maps device memory, which is not documented and
 * could not be checked without a GPU, so they are not used.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "hmem/hmem_private.h"

#define HMEM_WHY_MAX 512

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

/* CUDA's state: read on every detect (acquire), changed under hmem_cuda_lock. */
enum hmem_cuda_state {
    HMEM_CUDA_UNSET = 0, /* mode not applied yet */
    HMEM_CUDA_OFF,       /* never: all memory is host memory */
    HMEM_CUDA_IDLE,      /* auto: the driver is not loaded in the process (yet) */
    HMEM_CUDA_ON,        /* started: the driver classifies cache misses */
    HMEM_CUDA_FAILED,    /* tried and not usable: all memory is host memory */
};
static int hmem_cuda_state;
static enum openib_hmem_cuda_mode hmem_cuda_mode = OPENIB_HMEM_CUDA_AUTO;
static pthread_mutex_t hmem_cuda_lock = PTHREAD_MUTEX_INITIALIZER;
static char hmem_cuda_lib[256];
/* dlpi_adds when the driver was last found not loaded (~0: never asked). */
static unsigned long long hmem_cuda_adds_seen = ~0ULL;
static openib_hmem_status_fn hmem_status_hook;

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

/* ---- CUDA: when it is started ---- */

static void hmem_cuda_publish(int state)
{
    __atomic_store_n(&hmem_cuda_state, state, __ATOMIC_RELEASE);
}

/* Start the driver now (under hmem_cuda_lock). `when` says why, for the log. */
static void hmem_cuda_start_locked(const char *when)
{
    struct hmem_iface_state *s = &hmem_iface[OPENIB_HMEM_CUDA];
    char why[HMEM_WHY_MAX - 64];

    if (OPAL_SUCCESS == hmem_cuda_start(hmem_cuda_lib, why, sizeof(why))) {
        s->available = s->has_copy = true;
        snprintf(s->status, sizeof(s->status), "cuda: available: %s (started %s)", why, when);
        hmem_cuda_publish(HMEM_CUDA_ON);
    } else {
        snprintf(s->status, sizeof(s->status), "cuda: not available: %s", why);
        hmem_cuda_publish(HMEM_CUDA_FAILED);
    }
}

/* Apply the mode (under hmem_cuda_lock). A started driver stays started. */
static void hmem_cuda_apply_locked(void)
{
    struct hmem_iface_state *s = &hmem_iface[OPENIB_HMEM_CUDA];
    const char *lib = getenv("OPENIB_HMEM_CUDA_LIBRARY");
    int st = __atomic_load_n(&hmem_cuda_state, __ATOMIC_RELAXED);

    if (HMEM_CUDA_ON == st) {
        return;
    }
    s->available = s->has_copy = false;
    snprintf(hmem_cuda_lib, sizeof(hmem_cuda_lib), "%s", NULL != lib ? lib : "libcuda.so.1");
    if (OPENIB_HMEM_CUDA_NEVER == hmem_cuda_mode) {
        snprintf(s->status, sizeof(s->status),
                 "cuda: not used (btl_openib_hmem_cuda=never: every buffer is host memory)");
        hmem_cuda_publish(HMEM_CUDA_OFF);
    } else if ('\0' == hmem_cuda_lib[0]) {
        snprintf(s->status, sizeof(s->status),
                 "cuda: not available: disabled (OPENIB_HMEM_CUDA_LIBRARY is empty)");
        hmem_cuda_publish(HMEM_CUDA_FAILED);
    } else if (OPENIB_HMEM_CUDA_ALWAYS == hmem_cuda_mode) {
        hmem_cuda_start_locked("at start-up: btl_openib_hmem_cuda=always");
    } else {
        snprintf(s->status, sizeof(s->status),
                 "cuda: not started: %s is not loaded in this process, so no buffer can be "
                 "device memory (btl_openib_hmem_cuda=auto starts CUDA once it is)",
                 hmem_cuda_lib);
        __atomic_store_n(&hmem_cuda_adds_seen, ~0ULL, __ATOMIC_RELAXED);
        hmem_cuda_publish(HMEM_CUDA_IDLE);
    }
}

static int hmem_cuda_state_now(void)
{
    int st = __atomic_load_n(&hmem_cuda_state, __ATOMIC_ACQUIRE);

    if (HMEM_UNLIKELY(HMEM_CUDA_UNSET == st)) {
        pthread_mutex_lock(&hmem_cuda_lock);
        if (HMEM_CUDA_UNSET == __atomic_load_n(&hmem_cuda_state, __ATOMIC_RELAXED)) {
            hmem_cuda_apply_locked();
        }
        pthread_mutex_unlock(&hmem_cuda_lock);
        st = __atomic_load_n(&hmem_cuda_state, __ATOMIC_ACQUIRE);
    }
    return st;
}

static int hmem_dl_adds_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    if (size >= offsetof(struct dl_phdr_info, dlpi_adds) + sizeof(info->dlpi_adds)) {
        *(unsigned long long *) data = info->dlpi_adds;
    }
    return 1; /* the first object is enough: the counter is process-wide */
}

/* Has the application loaded the driver library? Cheap unless the process
 * loaded some library since we last looked. */
static bool hmem_cuda_driver_appeared(void)
{
    unsigned long long adds = ~0ULL;

    (void) dl_iterate_phdr(hmem_dl_adds_cb, &adds);
    if (~0ULL != adds && adds == __atomic_load_n(&hmem_cuda_adds_seen, __ATOMIC_RELAXED)) {
        return false;
    }
    if (hmem_cuda_lib_loaded(hmem_cuda_lib)) {
        return true;
    }
    __atomic_store_n(&hmem_cuda_adds_seen, adds, __ATOMIC_RELAXED);
    return false;
}

/* IDLE and the driver is loaded: start it. Returns the new state. */
static int hmem_cuda_start_now(void)
{
    openib_hmem_status_fn hook = NULL;
    int st;

    pthread_mutex_lock(&hmem_cuda_lock);
    if (HMEM_CUDA_IDLE == __atomic_load_n(&hmem_cuda_state, __ATOMIC_RELAXED)) {
        hmem_cuda_start_locked("on first use: the application loaded the CUDA driver");
        hook = hmem_status_hook;
    }
    st = __atomic_load_n(&hmem_cuda_state, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&hmem_cuda_lock);
    if (NULL != hook) {
        hook(OPENIB_HMEM_CUDA, hmem_iface[OPENIB_HMEM_CUDA].status);
    }
    return st;
}

/* CUDA started if it can be: ON, or IDLE with the driver loaded. */
static bool hmem_cuda_ready(void)
{
    int st = hmem_cuda_state_now();

    if (HMEM_CUDA_IDLE == st && hmem_cuda_driver_appeared()) {
        st = hmem_cuda_start_now();
    }
    return HMEM_CUDA_ON == st;
}

int openib_hmem_set_cuda_mode(enum openib_hmem_cuda_mode mode)
{
    if ((unsigned) mode > OPENIB_HMEM_CUDA_ALWAYS) {
        return openib_err_to_abi_errno(OPAL_ERR_BAD_PARAM); /* -EINVAL */
    }
    pthread_mutex_lock(&hmem_cuda_lock);
    hmem_cuda_mode = mode;
    hmem_cuda_apply_locked();
    pthread_mutex_unlock(&hmem_cuda_lock);
    return 0;
}

enum openib_hmem_cuda_mode openib_hmem_cuda_mode(void)
{
    enum openib_hmem_cuda_mode m;

    pthread_mutex_lock(&hmem_cuda_lock);
    m = hmem_cuda_mode;
    pthread_mutex_unlock(&hmem_cuda_lock);
    return m;
}

void openib_hmem_set_status_hook(openib_hmem_status_fn fn)
{
    pthread_mutex_lock(&hmem_cuda_lock);
    hmem_status_hook = fn;
    pthread_mutex_unlock(&hmem_cuda_lock);
}

/* ---- probing ---- */

static void hmem_probe_all(void)
{
    struct hmem_iface_state *s;

    s = &hmem_iface[OPENIB_HMEM_SYSTEM];
    s->available = s->has_copy = true;
    snprintf(s->status, sizeof(s->status), "system: available (memcpy)");

    (void) hmem_cuda_state_now();
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
    if (OPENIB_HMEM_CUDA == iface) {
        return HMEM_CUDA_ON == hmem_cuda_state_now();
    }
    return (unsigned) iface < HMEM_IFACE_NUM && hmem_iface[iface].available;
}

bool openib_hmem_iface_has_copy(enum openib_hmem_iface iface)
{
    openib_hmem_iface_probe();
    if (OPENIB_HMEM_CUDA == iface) {
        /* Someone holds what it says is device memory: start CUDA if the
         * driver is in the process (else there is no device memory). */
        return hmem_cuda_ready();
    }
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

/* ---- detection ---- */

static int hmem_detect_answer(const struct hmem_mt_entry *e, enum openib_hmem_iface *iface,
                              uint64_t *device)
{
    bool cuda = HMEM_MT_CUDA_DEVICE == e->type || HMEM_MT_CUDA_MANAGED == e->type;

    *iface = cuda ? OPENIB_HMEM_CUDA : OPENIB_HMEM_SYSTEM;
    if (NULL != device) {
        *device = cuda ? e->device : 0;
    }
    return 0;
}

/* A cache miss (or a stale or freed CUDA entry): classify and cache.
 * `was_cuda`: the address belonged to a driver allocation, so it lies in
 * the driver's address space and is not cached as host memory. */
static int hmem_detect_slow(const void *addr, bool was_cuda, enum openib_hmem_iface *iface,
                            uint64_t *device)
{
    struct hmem_mt_entry e = { .type = HMEM_MT_HOST };
    uint64_t gen = hmem_mt_generation();
    int st = __atomic_load_n(&hmem_cuda_state, __ATOMIC_ACQUIRE);

    if (HMEM_CUDA_IDLE == st) {
        if (!hmem_cuda_driver_appeared()) {
            /* No driver in the process: host memory, and it stays host
             * memory until it is unmapped, driver or not. */
            hmem_mt_insert_host((uintptr_t) addr, gen);
            return hmem_detect_answer(&e, iface, device);
        }
        st = hmem_cuda_start_now();
    }
    if (HMEM_CUDA_ON != st) {
        return hmem_detect_answer(&e, iface, device);
    }
    hmem_cuda_classify(addr, &e);
    if (HMEM_MT_HOST == e.type) {
        if (!was_cuda) {
            hmem_mt_insert_host((uintptr_t) addr, gen);
        }
    } else {
        hmem_mt_insert(&e, gen);
    }
    return hmem_detect_answer(&e, iface, device);
}

int openib_hmem_detect(const void *addr, enum openib_hmem_iface *iface, uint64_t *device)
{
    struct hmem_mt_entry e;
    uint64_t id;
    int st;

    if (NULL == iface) {
        return openib_err_to_abi_errno(OPAL_ERR_BAD_PARAM); /* -EINVAL */
    }
    st = __atomic_load_n(&hmem_cuda_state, __ATOMIC_ACQUIRE);
    if (HMEM_UNLIKELY(HMEM_CUDA_UNSET == st)) {
        openib_hmem_iface_probe();
        st = hmem_cuda_state_now();
    }
    /* No CUDA (never, or not usable): one branch, like a build without it.
     * Else the buffer asked about last time, still cached as host memory
     * (a send loop's case), is answered from that one cache entry. */
    if (HMEM_CUDA_OFF == st || HMEM_CUDA_FAILED == st || NULL == addr ||
        hmem_mt_hint_is_host((uintptr_t) addr)) {
        *iface = OPENIB_HMEM_SYSTEM;
        if (NULL != device) {
            *device = 0;
        }
        return 0;
    }
    if (HMEM_LIKELY(hmem_mt_lookup((uintptr_t) addr, &e))) {
        if (HMEM_LIKELY(HMEM_MT_HOST == e.type)) {
            return hmem_detect_answer(&e, iface, device);
        }
        if (HMEM_MT_CUDA_FREED == e.type) {
            return hmem_detect_slow(addr, true, iface, device);
        }
        /* A driver allocation: still the same one? (one driver call) */
        if (OPAL_SUCCESS == hmem_cuda_buffer_id(addr, &id) && id == e.buffer_id) {
            return hmem_detect_answer(&e, iface, device);
        }
        hmem_mt_mark_freed(&e);
        return hmem_detect_slow(addr, true, iface, device);
    }
    return hmem_detect_slow(addr, false, iface, device);
}

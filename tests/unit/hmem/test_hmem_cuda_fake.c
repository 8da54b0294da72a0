/*
 * test_hmem_cuda_fake.c - the CUDA code path against a fake driver library
 * (hmem_fake_cuda.so), so it is exercised on every host: loading and the
 * reasons it fails, buffer detection, copies through iovecs into and out of
 * "device memory", borrowing the memory's context when the thread has none,
 * driver errors. Also the presence-only probes of ROCm and Level Zero.
 * CUDA starts lazily (btl_openib_hmem_cuda=auto): the working scenario
 * loads the fake driver first, as an application using CUDA would; the
 * reasons CUDA is not available are seen with mode always, which starts it
 * at once. (Lazy start and the memory-type cache: test_hmem_cache.c.)
 * The interface probe runs once per process, so each scenario runs in a
 * child with its own environment.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hmem/openib_hmem_btl.h"
#include "tests/unit/hmem/hmem_test.h"

struct fake_cuda_stats {
    unsigned long dtoh, htod, push, pop, attr, no_ctx_errors, init, uninit_calls;
};

static const char *fake_path, *fake_old_path;

static void scenario_working(void)
{
    void *h;
    void *(*arena)(int, size_t *);
    void (*set_current)(int);
    struct fake_cuda_stats *fs;
    struct openib_hmem_object *obj;
    struct openib_hmem_stats st = OPENIB_HMEM_STATS_INITIALIZER;
    enum openib_hmem_iface iface;
    uint64_t dev = 99;
    unsigned char *d0, *d1, *managed, *pinned, host[256], back[256];
    unsigned char plain[16];
    size_t len, i;
    unsigned long push0;

    setenv("OPENIB_HMEM_CUDA_LIBRARY", fake_path, 1);
    /* The application loads the driver (here: the fake) to use CUDA. */
    h = dlopen(fake_path, RTLD_NOW);
    CHECK(NULL != h);
    if (NULL == h) {
        return;
    }
    *(void **) &arena = dlsym(h, "fake_cuda_arena");
    *(void **) &set_current = dlsym(h, "fake_cuda_set_current");
    fs = dlsym(h, "fake_cuda_stats");
    CHECK(NULL != arena && NULL != set_current && NULL != fs);
    d0 = arena(0, &len);
    d1 = arena(1, &len);
    managed = arena(2, &len);
    pinned = arena(3, &len);
    CHECK(!openib_hmem_iface_available(OPENIB_HMEM_CUDA)); /* not started yet */
    CHECK_STR_CONTAINS(openib_hmem_iface_status(OPENIB_HMEM_CUDA), "cuda: not started");
    CHECK_EQ(fs->init, 0);

    /* Detection (the first lookup starts CUDA). */
    CHECK_EQ(openib_hmem_detect(d0 + 5, &iface, &dev), 0);
    CHECK_EQ(iface, OPENIB_HMEM_CUDA);
    CHECK_EQ(dev, 0);
    CHECK_EQ(fs->init, 1);
    CHECK_EQ(fs->uninit_calls, 0);
    CHECK(openib_hmem_iface_available(OPENIB_HMEM_CUDA));
    CHECK(openib_hmem_iface_has_copy(OPENIB_HMEM_CUDA));
    CHECK_STR_CONTAINS(openib_hmem_iface_status(OPENIB_HMEM_CUDA), "cuda: available");
    CHECK_STR_CONTAINS(openib_hmem_iface_status(OPENIB_HMEM_CUDA), "2 device(s)");
    CHECK_STR_CONTAINS(openib_hmem_iface_status(OPENIB_HMEM_CUDA), "12.4");
    CHECK_STR_CONTAINS(openib_hmem_iface_status(OPENIB_HMEM_CUDA), "started on first use");
    CHECK_EQ(openib_hmem_detect(d1 + 1000, &iface, &dev), 0);
    CHECK_EQ(iface, OPENIB_HMEM_CUDA);
    CHECK_EQ(dev, 1);
    CHECK_EQ(openib_hmem_detect(managed, &iface, &dev), 0);
    CHECK_EQ(iface, OPENIB_HMEM_CUDA);
    CHECK_EQ(openib_hmem_detect(pinned, &iface, &dev), 0);
    CHECK_EQ(iface, OPENIB_HMEM_SYSTEM); /* pinned host memory: memcpy is fine */
    CHECK_EQ(dev, 0);
    CHECK_EQ(openib_hmem_detect(plain, &iface, &dev), 0);
    CHECK_EQ(iface, OPENIB_HMEM_SYSTEM);
    CHECK_EQ(openib_hmem_detect(plain, NULL, NULL), -EINVAL);

    /* Copies into and out of device 1 through a 4-entry iovec (one empty),
     * from a thread with no current context: the driver would refuse, so
     * the memory's own context must be borrowed (pushed and popped). */
    CHECK_EQ(openib_hmem_object_create(NULL, "cuda", &obj), 0);
    {
        struct iovec iov[4] = {
            { d1, 40 }, { d1 + 100, 0 }, { d1 + 200, 60 }, { d1 + 400, 100 },
        };

        for (i = 0; i < sizeof(host); ++i) {
            host[i] = (unsigned char) (i ^ 0x5C);
        }
        memset(d1, 0, 1024);
        set_current(-1);
        push0 = fs->push;
        CHECK_EQ(openib_hmem_copy_to_iov(obj, OPENIB_HMEM_CUDA, 1, iov, 4, 10, host, 150), 150);
        CHECK_EQ(fs->htod, 3);
        CHECK_EQ(fs->push - push0, 3);
        CHECK_EQ(fs->pop, fs->push);
        CHECK(0 == memcmp(d1 + 10, host, 30));
        CHECK(0 == memcmp(d1 + 200, host + 30, 60));
        CHECK(0 == memcmp(d1 + 400, host + 90, 60));
        CHECK_EQ(d1[9], 0);
        CHECK_EQ(d1[460], 0);

        memset(back, 0, sizeof(back));
        CHECK_EQ(openib_hmem_copy_from_iov(obj, OPENIB_HMEM_CUDA, 1, back, 256, iov, 4, 10), 190);
        CHECK(0 == memcmp(back, host, 150));
        CHECK_EQ(fs->dtoh, 3);

        /* With a current context nothing is pushed. */
        set_current(1);
        push0 = fs->push;
        CHECK_EQ(openib_hmem_copy_from_buf(obj, OPENIB_HMEM_CUDA, 1, back, d1 + 10, 30), 30);
        CHECK_EQ(fs->push, push0);
        CHECK(0 == memcmp(back, host, 30));
        CHECK_EQ(fs->no_ctx_errors, 0);

        /* Managed memory goes through the driver too. */
        CHECK_EQ(openib_hmem_copy_to_buf(obj, OPENIB_HMEM_CUDA, 0, managed, host, 8), 8);
        CHECK(0 == memcmp(managed, host, 8));

        /* A driver error (memory it does not know) is -EIO, counted. */
        CHECK_EQ(openib_hmem_copy_from_buf(obj, OPENIB_HMEM_CUDA, 0, back, plain, 8), -EIO);
        set_current(-1);
        /* No context to borrow from: -EIO too. */
        CHECK_EQ(openib_hmem_copy_to_buf(obj, OPENIB_HMEM_CUDA, 0, plain, host, 8), -EIO);
    }
    CHECK_EQ(openib_hmem_get_stats(obj, &st), 0);
    CHECK_EQ(st.to_hmem_calls, 2);
    CHECK_EQ(st.to_hmem_bytes, 158);
    CHECK_EQ(st.from_hmem_calls, 2);
    CHECK_EQ(st.from_hmem_bytes, 220);
    CHECK_EQ(st.errors, 2);
    CHECK_EQ(fs->uninit_calls, 0); /* nothing called the driver before cuInit */
    openib_hmem_object_free(obj);
    dlclose(h);
}

static void scenario_absent(const char *lib, const char *init_rc, const char *expect)
{
    struct openib_hmem_object *obj;
    enum openib_hmem_iface iface = OPENIB_HMEM_ZE;
    unsigned char buf[8] = { 0 }, out[8];

    setenv("OPENIB_HMEM_CUDA_LIBRARY", lib, 1);
    if (NULL != init_rc) {
        setenv("FAKE_CUDA_INIT_RC", init_rc, 1);
    }
    /* Start now, so that the reason shows (auto would wait for the
     * application to load the driver). */
    CHECK_EQ(openib_hmem_set_cuda_mode(OPENIB_HMEM_CUDA_ALWAYS), 0);
    CHECK(!openib_hmem_iface_available(OPENIB_HMEM_CUDA));
    CHECK(!openib_hmem_iface_has_copy(OPENIB_HMEM_CUDA));
    CHECK_STR_CONTAINS(openib_hmem_iface_status(OPENIB_HMEM_CUDA), "cuda: not available: ");
    CHECK_STR_CONTAINS(openib_hmem_iface_status(OPENIB_HMEM_CUDA), expect);
    CHECK_EQ(openib_hmem_detect(buf, &iface, NULL), 0);
    CHECK_EQ(iface, OPENIB_HMEM_SYSTEM);
    CHECK_EQ(openib_hmem_object_create(NULL, "nocuda", &obj), 0);
    CHECK_EQ(openib_hmem_copy_from_buf(obj, OPENIB_HMEM_CUDA, 0, out, buf, 8), -ENODEV);
    CHECK_EQ(openib_hmem_copy_from_buf(obj, OPENIB_HMEM_SYSTEM, 0, out, buf, 8), 8);
    openib_hmem_object_free(obj);
}

static void scenario_presence(void)
{
    struct openib_hmem_object *obj;
    struct iovec iov = { NULL, 0 };
    unsigned char out[8];

    setenv("OPENIB_HMEM_CUDA_LIBRARY", "", 1);
    /* Any loadable library stands in for the ROCm runtime. */
    setenv("OPENIB_HMEM_ROCM_LIBRARY", fake_path, 1);
    setenv("OPENIB_HMEM_ZE_LIBRARY", "/nonexistent/libze_loader.so.1", 1);
    CHECK(openib_hmem_iface_available(OPENIB_HMEM_SYSTEM));
    CHECK_STR_CONTAINS(openib_hmem_iface_status(OPENIB_HMEM_CUDA), "disabled");
    CHECK(openib_hmem_iface_available(OPENIB_HMEM_ROCM));
    CHECK(!openib_hmem_iface_has_copy(OPENIB_HMEM_ROCM));
    CHECK_STR_CONTAINS(openib_hmem_iface_status(OPENIB_HMEM_ROCM), "runtime present");
    CHECK(!openib_hmem_iface_available(OPENIB_HMEM_ZE));
    CHECK_STR_CONTAINS(openib_hmem_iface_status(OPENIB_HMEM_ZE), "not available");
    CHECK_STR_CONTAINS(openib_hmem_iface_status(OPENIB_HMEM_ZE), "/nonexistent/libze_loader.so.1");
    CHECK(!openib_hmem_iface_available((enum openib_hmem_iface) 9));
    CHECK_STR_CONTAINS(openib_hmem_iface_status((enum openib_hmem_iface) 9), "unknown");
    /* Present but no built-in copy: -ENOSYS (an override could do it). */
    CHECK_EQ(openib_hmem_object_create(NULL, "rocm", &obj), 0);
    iov.iov_base = out;
    iov.iov_len = sizeof(out);
    CHECK_EQ(openib_hmem_copy_from_iov(obj, OPENIB_HMEM_ROCM, 0, out, 8, &iov, 1, 0), -ENOSYS);
    openib_hmem_object_free(obj);
}

/* Run fn in a child; its failures become ours. */
static void s_init_fails(void) { scenario_absent(fake_path, "100", "cuInit failed: CUDA error 100"); }
static void s_no_device_msg(void) { scenario_absent(fake_path, "100", "no CUDA-capable device"); }
static void s_old_driver(void) { scenario_absent(fake_old_path, NULL, "lacks cuMemcpyHtoD_v2"); }
static void s_missing(void) { scenario_absent("/nonexistent/libcuda.so.1", NULL, "/nonexistent/libcuda.so.1 not found"); }
static void s_disabled(void) { scenario_absent("", NULL, "disabled (OPENIB_HMEM_CUDA_LIBRARY is empty)"); }
/* auto, and the driver library cannot even be loaded: never started. */
static void s_auto_missing(void)
{
    struct openib_hmem_object *obj;
    enum openib_hmem_iface iface = OPENIB_HMEM_ZE;
    unsigned char buf[8] = { 0 }, out[8];

    setenv("OPENIB_HMEM_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
    CHECK(!openib_hmem_iface_available(OPENIB_HMEM_CUDA));
    CHECK_STR_CONTAINS(openib_hmem_iface_status(OPENIB_HMEM_CUDA), "cuda: not started: ");
    CHECK_STR_CONTAINS(openib_hmem_iface_status(OPENIB_HMEM_CUDA), "/nonexistent/libcuda.so.1 is not loaded");
    CHECK_EQ(openib_hmem_detect(buf, &iface, NULL), 0);
    CHECK_EQ(iface, OPENIB_HMEM_SYSTEM);
    CHECK_EQ(openib_hmem_object_create(NULL, "nocuda", &obj), 0);
    CHECK_EQ(openib_hmem_copy_from_buf(obj, OPENIB_HMEM_CUDA, 0, out, buf, 8), -ENODEV);
    CHECK_STR_CONTAINS(openib_hmem_iface_status(OPENIB_HMEM_CUDA), "cuda: not started: ");
    openib_hmem_object_free(obj);
}

static void s_no_devices(void)
{
    setenv("FAKE_CUDA_DEVICES", "0", 1);
    scenario_absent(fake_path, NULL, "no CUDA devices");
}

int main(void)
{
    fake_path = hmem_test_module("tests/unit/hmem", "hmem_fake_cuda");
    fake_old_path = hmem_test_module("tests/unit/hmem", "hmem_fake_cuda_old");
    in_child("working fake driver", scenario_working);
    in_child("cuInit fails", s_init_fails);
    in_child("cuInit error string", s_no_device_msg);
    in_child("driver lacks a symbol", s_old_driver);
    in_child("library missing", s_missing);
    in_child("disabled", s_disabled);
    in_child("no devices", s_no_devices);
    in_child("auto, library missing", s_auto_missing);
    in_child("rocm/ze presence", scenario_presence);
    return unit_finish("test_hmem_cuda_fake");
}

/*
 * verbs_leakcheck.c - the project's leak check for verbs objects.
 *
 * LD_PRELOAD it into an MPI process: it counts every verbs object created
 * and destroyed (device contexts, PDs, CQs, SRQs, QPs, MRs) and at exit
 * prints one line per process:
 *   verbs-leakcheck pid=P ctx=N pd=N cq=N srq=N qp=N mr=N created=N
 * where each count is objects still alive. A test asserts all are zero.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static long live_ctx, live_pd, live_cq, live_srq, live_qp, live_mr, created;

/* the live MRs, so a leak report can say which (by address and length) */
#define MAX_TRACKED 1024
static struct ibv_mr *tracked[MAX_TRACKED];
static void *tracked_caller[MAX_TRACKED];
static void *last_caller;
/* libibverbs' ibv_reg_mr calls ibv_reg_mr_iova2 itself: count once. */
static __thread int in_reg;

static void track(struct ibv_mr *m, int add)
{
    int i;
    for (i = 0; i < MAX_TRACKED; ++i) {
        if (add ? tracked[i] == NULL : tracked[i] == m) {
            tracked[i] = add ? m : NULL;
            tracked_caller[i] = add ? last_caller : NULL;
            return;
        }
    }
}

#define REAL(name) static __typeof__(name) *real_##name; \
    if (!real_##name) real_##name = (__typeof__(name) *) dlsym(RTLD_NEXT, #name)

/* librdmacm opens each device it binds to once and keeps that context in
 * its device cache until the process exits (it has no call to release it),
 * so the rdma_cm CPC's listener leaves one behind by design. Those are
 * reported apart (rdmacm_cache=N) and not counted as leaks; librdmacm's PD
 * on that context is counted: it is freed only when every cm_id is gone. */
#define MAX_CACHED 16
static struct ibv_context *rdmacm_cached[MAX_CACHED];
static long rdmacm_cache;

static int from_librdmacm(void *caller)
{
    Dl_info di = { 0 };
    return dladdr(caller, &di) && di.dli_fname && strstr(di.dli_fname, "librdmacm");
}

struct ibv_context *ibv_open_device(struct ibv_device *d)
{
    REAL(ibv_open_device);
    void *caller = __builtin_return_address(0);
    struct ibv_context *c = real_ibv_open_device(d);
    if (c && from_librdmacm(caller) && rdmacm_cache < MAX_CACHED) {
        rdmacm_cached[rdmacm_cache++] = c;
    } else if (c) {
        __atomic_add_fetch(&live_ctx, 1, __ATOMIC_RELAXED);
        created++;
    }
    return c;
}

int ibv_close_device(struct ibv_context *c)
{
    REAL(ibv_close_device);
    int i, cached = 0;
    for (i = 0; i < rdmacm_cache; ++i) {
        if (rdmacm_cached[i] == c) {
            rdmacm_cached[i] = rdmacm_cached[--rdmacm_cache];
            cached = 1;
            break;
        }
    }
    int rc = real_ibv_close_device(c);
    if (!rc && !cached) __atomic_sub_fetch(&live_ctx, 1, __ATOMIC_RELAXED);
    return rc;
}

struct ibv_pd *ibv_alloc_pd(struct ibv_context *c)
{
    REAL(ibv_alloc_pd);
    struct ibv_pd *p = real_ibv_alloc_pd(c);
    if (p) { __atomic_add_fetch(&live_pd, 1, __ATOMIC_RELAXED); created++; }
    return p;
}

int ibv_dealloc_pd(struct ibv_pd *p)
{
    REAL(ibv_dealloc_pd);
    int rc = real_ibv_dealloc_pd(p);
    if (!rc) __atomic_sub_fetch(&live_pd, 1, __ATOMIC_RELAXED);
    return rc;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *c, int cqe, void *ctx,
                             struct ibv_comp_channel *ch, int vec)
{
    REAL(ibv_create_cq);
    struct ibv_cq *q = real_ibv_create_cq(c, cqe, ctx, ch, vec);
    if (q) { __atomic_add_fetch(&live_cq, 1, __ATOMIC_RELAXED); created++; }
    return q;
}

int ibv_destroy_cq(struct ibv_cq *q)
{
    REAL(ibv_destroy_cq);
    int rc = real_ibv_destroy_cq(q);
    if (!rc) __atomic_sub_fetch(&live_cq, 1, __ATOMIC_RELAXED);
    return rc;
}

struct ibv_srq *ibv_create_srq(struct ibv_pd *p, struct ibv_srq_init_attr *a)
{
    REAL(ibv_create_srq);
    struct ibv_srq *s = real_ibv_create_srq(p, a);
    if (s) { __atomic_add_fetch(&live_srq, 1, __ATOMIC_RELAXED); created++; }
    return s;
}

int ibv_destroy_srq(struct ibv_srq *s)
{
    REAL(ibv_destroy_srq);
    int rc = real_ibv_destroy_srq(s);
    if (!rc) __atomic_sub_fetch(&live_srq, 1, __ATOMIC_RELAXED);
    return rc;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *p, struct ibv_qp_init_attr *a)
{
    REAL(ibv_create_qp);
    struct ibv_qp *q = real_ibv_create_qp(p, a);
    if (q) { __atomic_add_fetch(&live_qp, 1, __ATOMIC_RELAXED); created++; }
    return q;
}

int ibv_destroy_qp(struct ibv_qp *q)
{
    REAL(ibv_destroy_qp);
    int rc = real_ibv_destroy_qp(q);
    if (!rc) __atomic_sub_fetch(&live_qp, 1, __ATOMIC_RELAXED);
    return rc;
}

#undef ibv_reg_mr
struct ibv_mr *ibv_reg_mr(struct ibv_pd *p, void *addr, size_t len, int access)
{
    REAL(ibv_reg_mr);
    last_caller = __builtin_return_address(0);
    in_reg++;
    struct ibv_mr *m = real_ibv_reg_mr(p, addr, len, access);
    in_reg--;
    if (m) { __atomic_add_fetch(&live_mr, 1, __ATOMIC_RELAXED); created++; track(m, 1); }
    return m;
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *p, void *addr, size_t len, uint64_t iova,
                                unsigned int access)
{
    REAL(ibv_reg_mr_iova2);
    if (!in_reg) {
        last_caller = __builtin_return_address(0);
    }
    struct ibv_mr *m = real_ibv_reg_mr_iova2(p, addr, len, iova, access);
    if (m && !in_reg) { __atomic_add_fetch(&live_mr, 1, __ATOMIC_RELAXED); created++; track(m, 1); }
    return m;
}

int ibv_dereg_mr(struct ibv_mr *m)
{
    REAL(ibv_dereg_mr);
    track(m, 0);
    int rc = real_ibv_dereg_mr(m);
    if (!rc) __atomic_sub_fetch(&live_mr, 1, __ATOMIC_RELAXED);
    return rc;
}

/* Open descriptors on the rdma_cm device: event channels nobody closed. */
static long rdma_cm_fds(void)
{
    char path[64], target[64];
    long n = 0;
    int fd;

    for (fd = 0; fd < 4096; ++fd) {
        ssize_t l;
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        l = readlink(path, target, sizeof(target) - 1);
        if (l > 0) {
            target[l] = '\0';
            n += 0 == strcmp(target, "/dev/infiniband/rdma_cm");
        }
    }
    return n;
}

__attribute__((destructor)) static void report(void)
{
    if (created) {
        fprintf(stderr, "verbs-leakcheck pid=%d ctx=%ld pd=%ld cq=%ld srq=%ld qp=%ld mr=%ld created=%ld rdmacm_cache=%ld rdma_cm_fds=%ld\n",
                (int) getpid(), live_ctx, live_pd, live_cq, live_srq, live_qp, live_mr, created,
                rdmacm_cache, rdma_cm_fds());
        for (int i = 0; i < MAX_TRACKED; ++i) {
            if (tracked[i]) {
                Dl_info di = { 0 };
                dladdr(tracked_caller[i], &di);
                fprintf(stderr, "verbs-leakcheck pid=%d live MR addr=%p length=%zu registered by %s\n",
                        (int) getpid(), tracked[i]->addr, tracked[i]->length,
                        di.dli_sname ? di.dli_sname : (di.dli_fname ? di.dli_fname : "?"));
            }
        }
    }
}

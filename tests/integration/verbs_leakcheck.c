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

struct ibv_context *ibv_open_device(struct ibv_device *d)
{
    REAL(ibv_open_device);
    struct ibv_context *c = real_ibv_open_device(d);
    if (c) { __atomic_add_fetch(&live_ctx, 1, __ATOMIC_RELAXED); created++; }
    return c;
}

int ibv_close_device(struct ibv_context *c)
{
    REAL(ibv_close_device);
    int rc = real_ibv_close_device(c);
    if (!rc) __atomic_sub_fetch(&live_ctx, 1, __ATOMIC_RELAXED);
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

__attribute__((destructor)) static void report(void)
{
    if (created) {
        fprintf(stderr, "verbs-leakcheck pid=%d ctx=%ld pd=%ld cq=%ld srq=%ld qp=%ld mr=%ld created=%ld\n",
                (int) getpid(), live_ctx, live_pd, live_cq, live_srq, live_qp, live_mr, created);
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

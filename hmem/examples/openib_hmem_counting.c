/*
 * openib_hmem_counting.c - example HMEM override plug-in: counts the calls
 * and bytes of each copy operation, then hands the copy to the operation
 * that was in place before it (the built-in default), so data is unchanged.
 *
 *   mpirun --mca btl_openib_hmem_override /path/openib_hmem_counting.so ...
 *
 * Environment:
 *   OPENIB_HMEM_COUNT_OPS   which ops to override: "both" (default), "from"
 *                           (copy_from_hmem_iov only) or "to"
 *                           (copy_to_hmem_iov only); anything else fails init
 *   OPENIB_HMEM_COUNT_FILE  where the totals go when the plug-in is unloaded
 *                           (or the process exits): appended as one line per
 *                           process; "%p" becomes the pid, "%r" the MPI rank
 *                           (OMPI_COMM_WORLD_RANK). Unset: stderr.
 * The line:
 *   openib_hmem_counting pid=P rank=R ops=both from_hmem_calls=N
 *   from_hmem_bytes=N to_hmem_calls=N to_hmem_bytes=N       (one line)
 *
 * Built only against openib/openib_hmem.h: no Open MPI headers, no link
 * against the component.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "openib/openib_hmem.h"

struct counting_totals {
    uint64_t from_calls, from_bytes, to_calls, to_bytes;
};

static struct counting_totals counting;
static union openib_hmem_op counting_next_from, counting_next_to;
static const char *counting_mode = "none";
static int counting_reported;

static ssize_t counting_from(void *dst, size_t len, enum openib_hmem_iface iface, uint64_t device,
                             const struct iovec *iov, size_t cnt, uint64_t off)
{
    ssize_t rc = counting_next_from.copy_from_hmem_iov(dst, len, iface, device, iov, cnt, off);

    if (rc >= 0) {
        __atomic_fetch_add(&counting.from_calls, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&counting.from_bytes, (uint64_t) rc, __ATOMIC_RELAXED);
    }
    return rc;
}

static ssize_t counting_to(enum openib_hmem_iface iface, uint64_t device, const struct iovec *iov,
                           size_t cnt, uint64_t off, const void *src, size_t len)
{
    ssize_t rc = counting_next_to.copy_to_hmem_iov(iface, device, iov, cnt, off, src, len);

    if (rc >= 0) {
        __atomic_fetch_add(&counting.to_calls, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&counting.to_bytes, (uint64_t) rc, __ATOMIC_RELAXED);
    }
    return rc;
}

/* For in-process tests (dlsym): the totals so far. */
__attribute__((visibility("default"))) void openib_hmem_counting_totals(uint64_t out[4])
{
    out[0] = __atomic_load_n(&counting.from_calls, __ATOMIC_RELAXED);
    out[1] = __atomic_load_n(&counting.from_bytes, __ATOMIC_RELAXED);
    out[2] = __atomic_load_n(&counting.to_calls, __ATOMIC_RELAXED);
    out[3] = __atomic_load_n(&counting.to_bytes, __ATOMIC_RELAXED);
}

/* Expand %p and %r in the file name. */
static void counting_path(const char *tmpl, char *out, size_t len)
{
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    size_t o = 0;
    int n;

    for (; '\0' != *tmpl && o + 1 < len; ++tmpl) {
        if ('%' == tmpl[0] && ('p' == tmpl[1] || 'r' == tmpl[1])) {
            n = 'p' == tmpl[1] ? snprintf(out + o, len - o, "%ld", (long) getpid())
                               : snprintf(out + o, len - o, "%s", NULL != rank ? rank : "x");
            o += n > 0 ? (size_t) n : 0;
            ++tmpl;
        } else {
            out[o++] = *tmpl;
        }
    }
    out[o < len ? o : len - 1] = '\0';
}

static void counting_report(void)
{
    const char *tmpl = getenv("OPENIB_HMEM_COUNT_FILE");
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    uint64_t t[4];
    char line[512], path[1024];
    int fd = STDERR_FILENO, n;

    if (__atomic_exchange_n(&counting_reported, 1, __ATOMIC_ACQ_REL)) {
        return;
    }
    openib_hmem_counting_totals(t);
    n = snprintf(line, sizeof(line),
                 "openib_hmem_counting pid=%ld rank=%s ops=%s from_hmem_calls=%llu "
                 "from_hmem_bytes=%llu to_hmem_calls=%llu to_hmem_bytes=%llu\n",
                 (long) getpid(), NULL != rank ? rank : "x", counting_mode,
                 (unsigned long long) t[0], (unsigned long long) t[1],
                 (unsigned long long) t[2], (unsigned long long) t[3]);
    if (n <= 0) {
        return;
    }
    if (NULL != tmpl && '\0' != tmpl[0]) {
        counting_path(tmpl, path, sizeof(path));
        fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0) {
            fprintf(stderr, "openib_hmem_counting: cannot open %s: %s\n", path, strerror(errno));
            fd = STDERR_FILENO;
        }
    }
    /* One write of one line: lines of several ranks do not interleave. */
    if (write(fd, line, (size_t) n) < 0) {
        /* nowhere left to report to */
    }
    if (STDERR_FILENO != fd) {
        close(fd);
    }
}

/* The ops this plug-in counts: each under the names OPENIB_HMEM_COUNT_OPS
 * takes for it alone, with our op and where the op it replaces is kept. */
static const struct counting_op {
    const char *mode; /* OPENIB_HMEM_COUNT_OPS value, and ops= in the report */
    const char *name; /* the op's own name, also accepted */
    enum openib_hmem_op_type type;
    union openib_hmem_op ours;
    union openib_hmem_op *next; /* what ours calls */
} counting_ops[] = {
    { "from", "copy_from_hmem_iov", OPENIB_HMEM_OP_COPY_FROM_HMEM_IOV,
      { .copy_from_hmem_iov = counting_from }, &counting_next_from },
    { "to", "copy_to_hmem_iov", OPENIB_HMEM_OP_COPY_TO_HMEM_IOV,
      { .copy_to_hmem_iov = counting_to }, &counting_next_to },
};
#define COUNTING_NUM_OPS (sizeof(counting_ops) / sizeof(counting_ops[0]))

/* Puts ours in front of the object's op of this type, which op->next keeps
 * (our op calls it); on failure, why says which op and the error. */
static int counting_override(struct openib_hmem_object *root, const struct counting_op *op,
                             char *why, size_t why_len)
{
    int rc = openib_hmem_get_op(root, op->type, op->next, 0);

    if (0 == rc) {
        rc = openib_hmem_set_op(root, op->type, &op->ours, 0);
    }
    if (0 != rc) {
        snprintf(why, why_len, "cannot override %s on %s: error %d", op->name, root->name, rc);
    }
    return rc;
}

/* The op OPENIB_HMEM_COUNT_OPS names alone, or NULL. */
static const struct counting_op *counting_op_named(const char *mode)
{
    size_t i;

    for (i = 0; i < COUNTING_NUM_OPS; ++i) {
        if (0 == strcmp(mode, counting_ops[i].mode) || 0 == strcmp(mode, counting_ops[i].name)) {
            return &counting_ops[i];
        }
    }
    return NULL;
}

static int counting_init(struct openib_hmem_object *root, char *why, size_t why_len)
{
    const char *mode = getenv("OPENIB_HMEM_COUNT_OPS");
    const struct counting_op *only = NULL; /* NULL: every op ("both") */
    size_t i;
    int rc;

    if (NULL != mode && '\0' != mode[0] && 0 != strcmp(mode, "both")) {
        only = counting_op_named(mode);
        if (NULL == only) {
            snprintf(why, why_len, "OPENIB_HMEM_COUNT_OPS='%s': use both, from or to", mode);
            return -EINVAL;
        }
    }
    for (i = 0; i < COUNTING_NUM_OPS; ++i) {
        if (NULL != only && only != &counting_ops[i]) {
            continue;
        }
        rc = counting_override(root, &counting_ops[i], why, why_len);
        if (0 != rc) {
            return rc;
        }
    }
    counting_mode = NULL != only ? only->mode : "both";
    return 0;
}

static void counting_fini(void)
{
    counting_report();
}

/* Also report when the process exits without the component unloading us. */
__attribute__((destructor)) static void counting_destructor(void)
{
    if (0 != strcmp(counting_mode, "none")) {
        counting_report();
    }
}

OPENIB_HMEM_PLUGIN_DEFINE("counting", counting_init, counting_fini);

/*
 * openib_abi.h - the rules every versioned openib struct follows.
 *
 * A struct that crosses a boundary (BTL <-> CPC, component <-> plug-in or
 * application, one release <-> the next) starts with `uint32_t size`, set by
 * its _INITIALIZER or _init() from the headers the *caller* compiled against.
 *
 *   1. Fields are never removed, reordered or reused; structs only grow.
 *   2. A reader checks the caller's size before touching a newer field
 *      (OPENIB_HAS_FIELD) and treats an absent or zero newer field as the old
 *      behaviour.
 *   3. A struct larger than the reader knows is accepted only if every byte
 *      past the reader's size is zero (openib_abi_check_size); otherwise the
 *      caller asked for something the reader cannot do, and gets -E2BIG.
 *   4. A struct smaller than the first published version is -EINVAL.
 */
#ifndef OPENIB_ABI_H
#define OPENIB_ABI_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* True when a struct of type TYPE at P, carrying its caller's size in
 * P->size, is large enough to contain FIELD. */
#define OPENIB_HAS_FIELD(p, type, field) \
    ((p)->size >= offsetof(type, field) + sizeof(((type *)0)->field))

/* The size of a struct version: everything up to and including LAST_FIELD. */
#define OPENIB_SIZE_THROUGH(type, last_field) \
    (offsetof(type, last_field) + sizeof(((type *)0)->last_field))

/*
 * Check a caller-supplied struct against what this reader knows.
 *   given:     the caller's size field
 *   min_size:  the size of the first published version
 *   known:     sizeof the struct as this reader was compiled
 * Returns 0 when usable, -EINVAL when smaller than v1, -E2BIG when larger with
 * a non-zero unknown tail.
 */
static inline int openib_abi_check_size(const void *p, size_t given, size_t min_size,
                                        size_t known)
{
    const unsigned char *b = (const unsigned char *) p;
    size_t i;

    if (NULL == p || given < min_size) {
        return -EINVAL;
    }
    for (i = known; i < given; ++i) {
        if (b[i]) {
            return -E2BIG;
        }
    }
    return 0;
}

/*
 * What every versioned struct's _init() does: zero the whole struct, padding
 * too (an older reader checks our tail, rule 3), then record in its size
 * field the size this header gives it. Not an interface of its own: call the
 * _init() of the struct.
 */
static inline int openib_abi_init_sized_(void *obj, uint32_t *size, size_t len)
{
    memset(obj, 0, len);
    *size = (uint32_t) len;
    return 0;
}

/*
 * The _init() and _destroy() of a versioned struct, written once for all.
 * OPENIB_ABI_SIZED_FUNCTIONS(openib_x) defines
 *   static inline int openib_x_init(struct openib_x *p): p zeroed and
 *       p->size its sizeof (openib_abi_init_sized_); returns 0
 *   static inline void openib_x_destroy(struct openib_x *p): frees nothing
 *       (no v1 struct holds anything to free), for symmetry with _init;
 * OPENIB_ABI_VERSIONED_FUNCTIONS(openib_x, V) the same, with _init also
 * setting p->abi_version = V (the structs that carry their ABI version).
 */
#define OPENIB_ABI_FUNCTIONS_(name, set_version)                         \
    static inline int name##_init(struct name *p)                        \
    {                                                                    \
        openib_abi_init_sized_(p, &p->size, sizeof(*p));                 \
        set_version;                                                     \
        return 0;                                                        \
    }                                                                    \
    static inline void name##_destroy(struct name *p) { (void) p; }
#define OPENIB_ABI_SIZED_FUNCTIONS(name) OPENIB_ABI_FUNCTIONS_(name, (void) 0)
#define OPENIB_ABI_VERSIONED_FUNCTIONS(name, version) \
    OPENIB_ABI_FUNCTIONS_(name, p->abi_version = (version))

#ifdef __cplusplus
}
#endif
#endif /* OPENIB_ABI_H */

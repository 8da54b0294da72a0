/*
 * hmem_dl_syms.h - fill a struct of function pointers from a library loaded
 * with dlopen, by a table of (symbol, field offset, required). The CUDA
 * driver is loaded this way so the build needs no CUDA headers: by
 * hmem_cuda.c, and by bench/hmem_copy_bench.c for the application's side.
 * Header-only, so that whatever builds hmem/ needs no new object.
 */
#ifndef OPENIB_HMEM_DL_SYMS_H
#define OPENIB_HMEM_DL_SYMS_H

#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

struct hmem_dl_sym {
    const char *name; /* the library's symbol */
    size_t offset;    /* of its function pointer in the caller's struct */
    bool required;    /* false: the pointer stays NULL where it is absent */
};
#define HMEM_DL_SYM(api_type_, field_, symbol_, required_) \
    { .name = symbol_, .offset = offsetof(api_type_, field_), .required = required_ }

/* Stores each symbol of syms[0 .. n) that handle has in its field of *api
 * (NULL for an absent optional one). Returns NULL, or the name of the first
 * required symbol the library lacks (the fields before it are then set). */
static inline const char *hmem_dl_syms_load(void *handle, const struct hmem_dl_sym *syms,
                                            size_t n, void *api)
{
    void *sym;
    size_t i;

    for (i = 0; i < n; ++i) {
        sym = dlsym(handle, syms[i].name);
        if (NULL == sym && syms[i].required) {
            return syms[i].name;
        }
        /* a function pointer stored from dlsym's void *, as POSIX allows */
        memcpy((char *) api + syms[i].offset, &sym, sizeof(sym));
    }
    return NULL;
}

#endif

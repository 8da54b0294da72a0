/*
 * cpc_internal.h - state shared by the files of the CPC framework.
 * Not for the BTL: it uses openib_connect.h only.
 *
 * Names: three kinds of endpoint meet in connect/, and each has one name
 * everywhere here: `cep` is the CPC interface's struct openib_cpc_endpoint
 * (what the BTL hands a CPC), `e` a CPC's own state for that connection
 * (struct oob_ep, xoob_ep, rcm_ep, hung off cep), and `ep` only ever the
 * BTL's endpoint, which connect/ sees as an opaque pointer.
 */
#ifndef OPENIB_CPC_INTERNAL_H
#define OPENIB_CPC_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "connect/openib_connect.h"

#define CPC_HIDDEN __attribute__((visibility("hidden")))

/* Built-ins plus a few plug-ins; a fixed array so entries never move (the MCA
 * system keeps pointers to each entry's priority storage). */
#define CPC_MAX_COMPONENTS 16

/* Help file for every opal_show_help from this framework (in mca/). */
#define CPC_HELP_FILE "help-btl-openib-cpc.txt"

enum cpc_state {
    CPC_STATE_REGISTERED = 0, /* added, init not run yet */
    CPC_STATE_UNSELECTED,     /* left out by cpc_include / cpc_exclude */
    CPC_STATE_DECLINED,       /* init said NOT_SUPPORTED: gone for the process */
    CPC_STATE_ACTIVE,         /* init succeeded (or had no init) */
};

struct cpc_entry {
    const struct openib_cpc_component *c;
    const char *const *aliases;   /* NULL unless the component is v2+ */
    int (*progress)(bool urgent); /* NULL unless the component is v5+ and has one */
    int priority;                 /* MCA storage; starts at default_priority */
    int priority_var;             /* MCA variable index, -1 when not registered */
    enum cpc_state state;
    char why[OPENIB_CPC_WHY_MAX]; /* why it is UNSELECTED or DECLINED */
    void *dl_handle;              /* plug-in library, NULL for built-ins */
};

struct cpc_registry {
    struct cpc_entry e[CPC_MAX_COMPONENTS];
    int n;
    bool initialized;

    /* Set by openib_connect_register_params; NULL in unit tests. */
    const struct mca_base_component_2_1_0_t *btl;
    char *mca_include;            /* MCA storage (owned by the var system) */
    char *mca_exclude;
    char *mca_plugins;

    /* openib_connect_set_selection() overrides the MCA values (tests). */
    bool sel_override;
    char *sel_include;
    char *sel_exclude;

    int verbose_stream;
    int verbose_level;
    openib_connect_help_hook_fn help_hook;
    openib_connect_log_hook_fn log_hook;

    char last_reasons[1024];
    char last_summary[1024];
};

extern struct cpc_registry openib_cpc_reg CPC_HIDDEN;

/* cpc_registry.c */
struct cpc_entry *openib_cpc_find_name(const char *name) CPC_HIDDEN;
struct cpc_entry *openib_cpc_find_id(uint8_t id) CPC_HIDDEN;
int openib_cpc_add_builtins(void) CPC_HIDDEN;

/* cpc_params.c */
int openib_cpc_register_priority(struct cpc_entry *e) CPC_HIDDEN;
/* A CPC's own integer parameter btl_openib_NAME (read-only, level 5),
 * stored in *storage, which holds its default. */
void openib_cpc_register_int(const char *name, const char *help, int *storage) CPC_HIDDEN;
/* btl_openib_cpc_plugins, loaded once by openib_connect_init (cpc_params.c). */
void openib_cpc_load_mca_plugins(void) CPC_HIDDEN;
int openib_cpc_names_list(char *buf, size_t len) CPC_HIDDEN;
int openib_cpc_check_priorities(void) CPC_HIDDEN;

/* cpc_select.c: for a CPC that moves QPs itself with ibv_modify_qp (oob,
 * xoob): on an iWARP port fills why, says so at verbose 1 (a user who
 * forced such a CPC learns why at the lowest level) and returns true; the
 * CPC then declines with OPAL_ERR_NOT_SUPPORTED. */
bool openib_cpc_decline_iwarp(const struct openib_cpc_port *port, const char *cpc, char *why,
                              size_t why_len) CPC_HIDDEN;

/* cpc_endpoint.c: a built-in CPC's state of one endpoint, which begins
 * with a uint32_t magic of that CPC's (so a cpc_private is never taken for
 * another CPC's). _alloc: zeroed but for the magic, NULL when out of memory.
 * _attach, once endpoint_init's checks passed: cep holds e, and the module
 * learns the BTL's calls and our process name (cep->id_len bytes at self).
 * _free: the magic cleared, e freed and cep's pointer to it cleared;
 * returns OPAL_SUCCESS. */
void *openib_cpc_ep_alloc(size_t size, uint32_t magic) CPC_HIDDEN;
void openib_cpc_ep_attach(struct openib_cpc_endpoint *cep, void *e,
                          const struct openib_cpc_btl_ops **btl_ops, uint8_t *self,
                          bool *have_self) CPC_HIDDEN;
int openib_cpc_ep_free(struct openib_cpc_endpoint *cep, void *e) CPC_HIDDEN;

/* cpc_log.c: help messages and verbose output, both redirectable for tests.
 * Every help topic takes only %s arguments. */
void openib_cpc_help(const char *topic, int nargs, ...) CPC_HIDDEN;
void openib_cpc_log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3))) CPC_HIDDEN;
const char *openib_cpc_hostname(void) CPC_HIDDEN;

/* Append printf-style to buf (always NUL-terminated, silently truncated). */
void openib_cpc_strcatf(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4))) CPC_HIDDEN;

#endif /* OPENIB_CPC_INTERNAL_H */

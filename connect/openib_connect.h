/*
 * openib_connect.h - the CPC framework as the BTL sees it.
 *
 * Lifecycle (all calls from the BTL component, single-threaded):
 *   openib_connect_register_params()   component register: cpc_include,
 *                                      cpc_exclude, connect_<name>_priority,
 *                                      and each CPC's own parameters
 *   openib_connect_init()              component init: validate include/
 *                                      exclude (user errors through
 *                                      opal_show_help), run each CPC's init
 *   openib_connect_query_port()        per port: the CPC modules usable there
 *   openib_connect_modex_*()           encode/decode a port's identity and CPCs
 *                                      (wire/modex_wire.h)
 *   openib_connect_match()             per peer port: the CPC both sides pick
 *   openib_connect_endpoint_init() /   per endpoint, through the framework
 *   _start_connect() / _endpoint_finalize()   (size checks, verbose line)
 *   openib_connect_release_modules()   per port at teardown
 *   openib_connect_finalize()          component close
 * plus openib_connect_set_verbose() once the BTL's output stream is open.
 *
 * Errors are OPAL_* codes. Every user-visible failure has already been shown
 * through opal_show_help when the function returns.
 */
#ifndef OPENIB_CONNECT_H
#define OPENIB_CONNECT_H

#include <stddef.h>
#include <stdint.h>

#include "openib/openib_cpc.h"
#include "wire/modex_wire.h"

/* The CPCs built into the component (each in its own connect/cpc_<name>.c). */
extern const struct openib_cpc_component openib_cpc_oob_component;
extern const struct openib_cpc_component openib_cpc_rdma_cm_component;
extern const struct openib_cpc_component openib_cpc_xoob_component;

/* Register the framework's MCA parameters under the given MCA component
 * (the BTL component: names come out as btl_openib_...). */
struct mca_base_component_2_1_0_t;
int openib_connect_register_params(const struct mca_base_component_2_1_0_t *btl_component);

/* Add a CPC component (built-in table or plug-in) before init. Checks its
 * size/version by the rules of openib_abi.h (-EINVAL case: BAD_PARAM, -E2BIG
 * case: NOT_SUPPORTED), its name ([a-z0-9_], < OPENIB_CPC_NAME_MAX), wire id
 * (1..127), default priority (<= 100) and query; OPAL_EXISTS when its id,
 * name or an alias is taken; OPAL_ERR_RESOURCE_BUSY after init. */
int openib_connect_add_component(const struct openib_cpc_component *c);

/* dlopen a CPC plug-in library exporting OPENIB_CPC_PLUGIN_SYMBOL; its wire
 * id must be in OPENIB_CPC_ID_PLUGIN_FIRST..LAST. The path must follow the
 * plug-in path rule (mca/btl_openib_path_check.h): else "cpc plugin
 * refused" is shown and OPAL_ERR_BAD_PARAM returned. Other failures are
 * shown ("cpc plugin failed") and returned (OPAL_ERR_NOT_FOUND when the
 * library or symbol is missing). btl_openib_cpc_plugins loads its list at
 * openib_connect_init (never in ompi_info). */
int openib_connect_load_plugin(const char *path);

/* Validate include/exclude and run every remaining CPC's init. Returns
 * OPAL_ERR_BAD_PARAM on a user error (already shown). */
int openib_connect_init(void);

/* Query every available CPC for a port. On success fills mods (caller-owned
 * array of at most max entries) sorted by priority, highest first (ties:
 * lower wire id first), and *n; modules beyond max are released. Keep max <=
 * OPENIB_MODEX_MAX_CPCS so they all fit in the modex. When none is usable:
 * shows the "no CPC for this port" help naming every CPC tried and why it
 * declined, and returns OPAL_ERR_NOT_AVAILABLE. A CPC's error other than
 * NOT_SUPPORTED is shown ("cpc query failed") and returned, with every module
 * already made for this port released. openib_connect_last_reasons() /
 * _last_summary() tell what happened on this port either way. */
int openib_connect_query_port(const struct openib_cpc_port *port,
                              struct openib_cpc_module **mods, int max, int *n);

/* Finalize the given modules (module finalize hooks). */
void openib_connect_release_modules(struct openib_cpc_module **mods, int n);

int openib_connect_finalize(void);

/* Run the progress hook (v5) of every CPC whose init succeeded, from the
 * BTL's progress: `urgent` when a CPC asked for it (openib_connect_work),
 * else the periodic look for timers. Returns the number of events handled. */
int openib_connect_progress(bool urgent);

/* The rdma_cm CPC's progress hook: a counter increment on most calls, or a
 * full look when `now` (work was queued for us). Returns the number of
 * events handled. */
int openib_cpc_rdma_cm_progress(bool now);

/* Set by a CPC's thread whenever it queues work for the MPI thread (a side
 * channel message, a connection request); the BTL's progress tests it on
 * every call (one load) and then runs the CPCs' progress at once. Without
 * it, a process that calls MPI rarely (MPI_Test or MPI_Iprobe now and then)
 * would look at connection requests only every few thousand calls, which
 * can be minutes. Cleared by the MPI thread before it looks. */
extern volatile int32_t openib_connect_work;

static inline void openib_connect_work_queued(void)
{
    __atomic_store_n(&openib_connect_work, 1, __ATOMIC_RELEASE);
}
/* The same as a function: what a plug-in CPC's set_wake hook receives. */
void openib_connect_request_progress(void);

/* The oob CPC's side channel so far (MPI_T): sessions over UD, and TCP
 * connections (one per handshake over TCP). */
void openib_connect_side_channel_counts(unsigned long long *ud_sessions,
                                        unsigned long long *tcp_connections);

/* Name of a CPC by wire id ("oob", ...), "unknown" if none. */
const char *openib_connect_name(uint8_t id);

/* ---- matching: the CPC both ends pick, computed independently ---- */

/* Pick the CPC for a connection between a local port (its modules) and a
 * peer port (its modex entry). Both sides get the same answer whichever side
 * computes it. On success *local is our module for it and *remote the peer's
 * entry. OPAL_ERR_NOT_FOUND when the two share no CPC. */
int openib_connect_match(struct openib_cpc_module *const *mods, int nmods,
                         const struct openib_modex_port *peer,
                         struct openib_cpc_module **local,
                         const struct openib_modex_cpc **remote);

/* The rule itself on plain (id, priority) lists, for tests and for both
 * sides: returns the chosen id or -1. */
int openib_connect_pick(const struct openib_modex_cpc *a, int na,
                        const struct openib_modex_cpc *b, int nb);

/* ====================================================================
 * Additions beyond the lifecycle above (all optional for the BTL unless
 * marked). Same conventions: OPAL_* codes, single-threaded.
 * ==================================================================== */

/* Verbose output: lines at `level` >= 10 go to opal_output(stream) (stderr
 * when stream < 0): one line per queried port with the usable CPCs and their
 * priorities and every decline with its reason, and one line per connection
 * started through openib_connect_start_connect(). The BTL calls this from
 * component init with its output stream and btl_openib_verbose. */
void openib_connect_set_verbose(int stream, int level);

/* ---- endpoint calls: the BTL should use these rather than the module's
 * hooks directly; they check the structs' sizes and which hooks exist. ---- */

/* After the endpoint picked `m` (openib_connect_match). Fine if the module
 * has no endpoint_init. */
int openib_connect_endpoint_init(struct openib_cpc_module *m, struct openib_cpc_endpoint *cep);
/* Start the connection (first send). Logs "openib: connecting to <peer> with
 * CPC <name>" at verbose >= 10. */
int openib_connect_start_connect(struct openib_cpc_module *m, struct openib_cpc_endpoint *cep);
/* Endpoint teardown; fine if the module has no endpoint_finalize. */
int openib_connect_endpoint_finalize(struct openib_cpc_module *m,
                                     struct openib_cpc_endpoint *cep);
/* The per-connection verbose line alone (for a BTL that calls the hooks
 * itself). */
void openib_connect_describe_choice(const char *peer_desc, const struct openib_cpc_module *m);

/* ---- what the last openib_connect_query_port() decided ---- */

/* One line per CPC that was not usable on the last queried port,
 * "<name>: <reason>", newline-separated; "" when every CPC was usable. */
const char *openib_connect_last_reasons(void);
/* The verbose line for the last queried port (usable CPCs with priorities,
 * declines with reasons), whatever the verbosity. */
const char *openib_connect_last_summary(void);

/* ---- selection without the MCA system (tests, tools) ---- */

/* Override cpc_include / cpc_exclude for the next openib_connect_init()
 * (NULL or "" = unset). The strings are copied. */
int openib_connect_set_selection(const char *include, const char *exclude);

/* Set a CPC's priority as btl_openib_connect_<name>_priority would (validated
 * to 0..100 at init). OPAL_ERR_NOT_FOUND for an unknown name. */
int openib_connect_set_priority(const char *name, int priority);

/* Parse one comma-separated cpc_include/cpc_exclude value against a list of
 * components (names and v2 aliases; blanks around names are ignored). Sets
 * bit i of *mask for comps[i]. On an unknown name returns OPAL_ERR_BAD_PARAM
 * with the name in `bad`; a value with no name at all ("," ) is also
 * OPAL_ERR_BAD_PARAM with bad = "". Pure: no help message, no state. */
int openib_connect_parse_cpc_list(const char *list,
                                  const struct openib_cpc_component *const *comps, int ncomps,
                                  uint32_t *mask, char *bad, size_t bad_len);

/* Redirect opal_show_help (tests): the hook gets the help file, the topic and
 * the already-formatted %s arguments. NULL restores opal_show_help. */
typedef void (*openib_connect_help_hook_fn)(const char *file, const char *topic, int nargs,
                                            const char *const *args);
void openib_connect_set_help_hook(openib_connect_help_hook_fn hook);
/* Redirect verbose lines (tests). NULL restores opal_output. */
typedef void (*openib_connect_log_hook_fn)(const char *line);
void openib_connect_set_log_hook(openib_connect_log_hook_fn hook);

/* ---- modex helpers ---- */

/* Fill a modex port entry from a port and its modules (from query_port). */
int openib_connect_modex_fill_port(struct openib_modex_port *mp,
                                   const struct openib_cpc_port *port,
                                   struct openib_cpc_module *const *mods, int nmods);

/* The peer port's identity as a struct openib_cpc_port (for
 * openib_cpc_endpoint.peer_port). out->dev_name points into mp. */
int openib_connect_modex_peer_port(const struct openib_modex_port *mp,
                                   struct openib_cpc_port *out);

#endif /* OPENIB_CONNECT_H */

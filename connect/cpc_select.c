/*
 * cpc_select.c - which CPCs run: include/exclude, each CPC's init, and the
 * per-port query that turns the survivors into modules.
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connect/cpc_internal.h"

/* Verbose level of the per-port and per-connection lines. */
#define CPC_VERBOSE_CHOICE 10

bool openib_cpc_decline_iwarp(const struct openib_cpc_port *port, const char *cpc, char *why,
                              size_t why_len)
{
    if (!(port->caps & OPENIB_PORT_CAP_IWARP)) {
        return false;
    }
    /* iWARP QPs go to RTS only through the iWARP CM (MPA over TCP); the
     * RTR transition by hand fails at the first send, too late for a clean
     * fallback to another BTL. */
    snprintf(why, why_len, "iWARP port: its queue pairs are connected only by the iWARP "
                           "connection manager, through the rdma_cm CPC");
    openib_cpc_log(1, "openib: CPC %s declines port %s:%u: %s", cpc,
                   port->dev_name ? port->dev_name : "?", (unsigned) port->port_num, why);
    return true;
}

static bool is_set(const char *s)
{
    return NULL != s && '\0' != s[0];
}

static bool component_has_name(const struct openib_cpc_component *c, const char *tok,
                               size_t len)
{
    const char *const *aliases = NULL;
    int i;

    if (strlen(c->name) == len && 0 == strncmp(c->name, tok, len)) {
        return true;
    }
    if (OPENIB_HAS_FIELD(c, struct openib_cpc_component, aliases)) {
        aliases = c->aliases;
    }
    for (i = 0; NULL != aliases && NULL != aliases[i]; ++i) {
        if (strlen(aliases[i]) == len && 0 == strncmp(aliases[i], tok, len)) {
            return true;
        }
    }
    return false;
}

int openib_connect_parse_cpc_list(const char *list,
                                  const struct openib_cpc_component *const *comps, int ncomps,
                                  uint32_t *mask, char *bad, size_t bad_len)
{
    const char *p = list;
    int named = 0;
    int i;

    if (NULL == mask || ncomps < 0 || ncomps > 32 || (ncomps > 0 && NULL == comps)) {
        return OPAL_ERR_BAD_PARAM;
    }
    *mask = 0;
    if (NULL != bad && bad_len > 0) {
        bad[0] = '\0';
    }
    if (!is_set(list)) {
        return OPAL_SUCCESS;
    }
    while (*p) {
        const char *start = p, *end;
        size_t len;
        bool found = false;

        while (*p && ',' != *p) {
            ++p;
        }
        end = p;
        if (',' == *p) {
            ++p;
        }
        /* Blanks around a name are a typing habit, not a different name. */
        while (start < end && (' ' == *start || '\t' == *start)) {
            ++start;
        }
        while (end > start && (' ' == end[-1] || '\t' == end[-1])) {
            --end;
        }
        len = (size_t) (end - start);
        if (0 == len) {
            continue;
        }
        ++named;
        for (i = 0; i < ncomps; ++i) {
            if (NULL != comps[i] && component_has_name(comps[i], start, len)) {
                *mask |= 1u << i;
                found = true;
            }
        }
        if (!found) {
            if (NULL != bad && bad_len > 0) {
                snprintf(bad, bad_len, "%.*s", (int) len, start);
            }
            return OPAL_ERR_BAD_PARAM;
        }
    }
    /* "," or " , ": the user set the parameter but named nothing. */
    return named ? OPAL_SUCCESS : OPAL_ERR_BAD_PARAM;
}

int openib_connect_set_selection(const char *include, const char *exclude)
{
    char *inc = NULL, *exc = NULL;

    if ((include && NULL == (inc = strdup(include))) ||
        (exclude && NULL == (exc = strdup(exclude)))) {
        free(inc);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    free(openib_cpc_reg.sel_include);
    free(openib_cpc_reg.sel_exclude);
    openib_cpc_reg.sel_include = inc;
    openib_cpc_reg.sel_exclude = exc;
    openib_cpc_reg.sel_override = true;
    return OPAL_SUCCESS;
}

/* Parse one of the two lists; a bad name is shown to the user here. */
static int parse_param(const char *param, const char *value, uint32_t *mask)
{
    const struct openib_cpc_component *comps[CPC_MAX_COMPONENTS];
    char bad[OPENIB_CPC_NAME_MAX + 32];
    char names[400];
    int i, rc;

    for (i = 0; i < openib_cpc_reg.n; ++i) {
        comps[i] = openib_cpc_reg.e[i].c;
    }
    rc = openib_connect_parse_cpc_list(value, comps, openib_cpc_reg.n, mask, bad, sizeof(bad));
    if (OPAL_SUCCESS != rc) {
        openib_cpc_names_list(names, sizeof(names));
        openib_cpc_help("cpc name not found", 5, openib_cpc_hostname(), param, value,
                        bad[0] ? bad : "(no name in the list)", names);
    }
    return rc;
}

static int apply_selection(void)
{
    const char *inc = openib_cpc_reg.sel_override ? openib_cpc_reg.sel_include
                                                  : openib_cpc_reg.mca_include;
    const char *exc = openib_cpc_reg.sel_override ? openib_cpc_reg.sel_exclude
                                                  : openib_cpc_reg.mca_exclude;
    uint32_t mask = 0;
    int i, rc;

    if (is_set(inc) && is_set(exc)) {
        char names[400];

        openib_cpc_names_list(names, sizeof(names));
        openib_cpc_help("cpc include and exclude", 4, openib_cpc_hostname(), inc, exc, names);
        return OPAL_ERR_BAD_PARAM;
    }
    if (is_set(inc)) {
        rc = parse_param("btl_openib_cpc_include", inc, &mask);
        if (OPAL_SUCCESS != rc) {
            return rc;
        }
        for (i = 0; i < openib_cpc_reg.n; ++i) {
            if (!(mask & (1u << i))) {
                openib_cpc_reg.e[i].state = CPC_STATE_UNSELECTED;
                snprintf(openib_cpc_reg.e[i].why, OPENIB_CPC_WHY_MAX,
                         "not in btl_openib_cpc_include");
            }
        }
    } else if (is_set(exc)) {
        rc = parse_param("btl_openib_cpc_exclude", exc, &mask);
        if (OPAL_SUCCESS != rc) {
            return rc;
        }
        for (i = 0; i < openib_cpc_reg.n; ++i) {
            if (mask & (1u << i)) {
                openib_cpc_reg.e[i].state = CPC_STATE_UNSELECTED;
                snprintf(openib_cpc_reg.e[i].why, OPENIB_CPC_WHY_MAX,
                         "excluded by btl_openib_cpc_exclude");
            }
        }
    }
    return OPAL_SUCCESS;
}

/* Undo a partial init so a failed init leaves nothing running. */
static void rollback_init(void)
{
    int i;

    for (i = 0; i < openib_cpc_reg.n; ++i) {
        struct cpc_entry *e = &openib_cpc_reg.e[i];

        if (CPC_STATE_ACTIVE == e->state && NULL != e->c->finalize) {
            (void) e->c->finalize();
        }
        e->state = CPC_STATE_REGISTERED;
        e->why[0] = '\0';
    }
}

int openib_connect_init(void)
{
    char code[16];
    int i, rc;

    if (openib_cpc_reg.initialized) {
        return OPAL_SUCCESS;
    }
    /* A BTL that skipped register_params still gets the built-ins. */
    if (0 == openib_cpc_reg.n) {
        rc = openib_cpc_add_builtins();
        if (OPAL_SUCCESS != rc) {
            return rc;
        }
    }
    openib_cpc_load_mca_plugins();
    for (i = 0; i < openib_cpc_reg.n; ++i) {
        openib_cpc_reg.e[i].state = CPC_STATE_REGISTERED;
        openib_cpc_reg.e[i].why[0] = '\0';
    }

    rc = openib_cpc_check_priorities();
    if (OPAL_SUCCESS != rc) {
        goto err;
    }
    rc = apply_selection();
    if (OPAL_SUCCESS != rc) {
        goto err;
    }

    for (i = 0; i < openib_cpc_reg.n; ++i) {
        struct cpc_entry *e = &openib_cpc_reg.e[i];
        char why[OPENIB_CPC_WHY_MAX] = "";

        if (CPC_STATE_REGISTERED != e->state) {
            continue;
        }
        rc = e->c->init ? e->c->init(why, sizeof(why)) : OPAL_SUCCESS;
        why[sizeof(why) - 1] = '\0'; /* whatever the CPC wrote */
        if (OPAL_SUCCESS == rc) {
            e->state = CPC_STATE_ACTIVE;
            if (OPENIB_HAS_FIELD(e->c, struct openib_cpc_component, set_wake) &&
                NULL != e->c->set_wake) {
                e->c->set_wake(openib_connect_request_progress);
            }
            continue;
        }
        if (OPAL_ERR_NOT_SUPPORTED == rc) {
            /* Quietly gone for this process; the reason still shows up in
             * verbose output and in a "no CPC for this port" message. */
            e->state = CPC_STATE_DECLINED;
            snprintf(e->why, sizeof(e->why), "%s", why[0] ? why : "declined at init");
            openib_cpc_log(CPC_VERBOSE_CHOICE, "openib: CPC %s unavailable: %s", e->c->name,
                           e->why);
            continue;
        }
        snprintf(code, sizeof(code), "%d", rc);
        openib_cpc_help("cpc init failed", 4, openib_cpc_hostname(), e->c->name, code,
                        why[0] ? why : "(no reason given)");
        goto err;
    }
    openib_cpc_reg.initialized = true;
    return OPAL_SUCCESS;

err:
    rollback_init();
    return rc;
}

/* A module is trusted only after these checks: the BTL and the modex read it
 * blindly later. Returns NULL when fine, else what is wrong. */
static const char *module_problem(const struct cpc_entry *e, const struct openib_cpc_module *m)
{
    if (NULL == m) {
        return "query succeeded without a module";
    }
    if (0 != openib_abi_check_size(m, m->size, OPENIB_CPC_MODULE_V1_SIZE, sizeof(*m))) {
        return "module struct has a bad size";
    }
    if (m->component != e->c) {
        return "module does not point back to its component";
    }
    if (m->priority > 100) {
        return "module priority above 100";
    }
    if (NULL == m->start_connect) {
        return "module has no start_connect";
    }
    return NULL;
}

static int cmp_modules(const void *a, const void *b)
{
    const struct openib_cpc_module *ma = *(struct openib_cpc_module *const *) a;
    const struct openib_cpc_module *mb = *(struct openib_cpc_module *const *) b;

    if (ma->priority != mb->priority) {
        return ma->priority > mb->priority ? -1 : 1;
    }
    /* Same tie rule as matching: lower wire id first. */
    return (int) ma->component->id - (int) mb->component->id;
}

static void add_reason(char *list, size_t len, const char *name, const char *why)
{
    openib_cpc_strcatf(list, len, "%s%s: %s", list[0] ? "\n" : "", name, why);
}

void openib_connect_release_modules(struct openib_cpc_module **mods, int n)
{
    int i;

    for (i = 0; NULL != mods && i < n; ++i) {
        if (NULL != mods[i] && NULL != mods[i]->finalize) {
            (void) mods[i]->finalize(mods[i]);
        }
        if (NULL != mods) {
            mods[i] = NULL;
        }
    }
}

int openib_connect_query_port(const struct openib_cpc_port *port,
                              struct openib_cpc_module **mods, int max, int *n)
{
    struct openib_cpc_module *found[CPC_MAX_COMPONENTS];
    char *reasons = openib_cpc_reg.last_reasons;
    const size_t rlen = sizeof(openib_cpc_reg.last_reasons);
    char *summary = openib_cpc_reg.last_summary;
    const size_t slen = sizeof(openib_cpc_reg.last_summary);
    char portname[64], portnum[8], code[16], indented[1200];
    int nfound = 0, i, rc;
    const char *p;

    if (NULL == port || NULL == mods || NULL == n || max <= 0) {
        return OPAL_ERR_BAD_PARAM;
    }
    *n = 0;
    if (!openib_cpc_reg.initialized) {
        return OPAL_ERR_NOT_INITIALIZED;
    }
    if (0 != openib_abi_check_size(port, port->size, OPENIB_CPC_PORT_V1_SIZE, sizeof(*port))) {
        return OPAL_ERR_BAD_PARAM;
    }
    reasons[0] = '\0';
    snprintf(portname, sizeof(portname), "%s:%u", port->dev_name ? port->dev_name : "?",
             (unsigned) port->port_num);
    snprintf(portnum, sizeof(portnum), "%u", (unsigned) port->port_num);

    for (i = 0; i < openib_cpc_reg.n; ++i) {
        struct cpc_entry *e = &openib_cpc_reg.e[i];
        char why[OPENIB_CPC_WHY_MAX] = "";
        struct openib_cpc_module *m = NULL;
        const char *problem;

        if (CPC_STATE_ACTIVE != e->state) {
            add_reason(reasons, rlen, e->c->name, e->why);
            continue;
        }
        rc = e->c->query(port, e->priority, &m, why, sizeof(why));
        why[sizeof(why) - 1] = '\0';
        if (OPAL_ERR_NOT_SUPPORTED == rc) {
            add_reason(reasons, rlen, e->c->name, why[0] ? why : "declined this port");
            continue;
        }
        if (OPAL_SUCCESS != rc) {
            add_reason(reasons, rlen, e->c->name, why[0] ? why : "query failed");
            snprintf(code, sizeof(code), "%d", rc);
            openib_cpc_help("cpc query failed", 6, openib_cpc_hostname(), e->c->name,
                            port->dev_name ? port->dev_name : "?",
                            portnum, code,
                            why[0] ? why : "(no reason given)");
            openib_connect_release_modules(found, nfound);
            return rc;
        }
        problem = module_problem(e, m);
        if (NULL != problem) {
            /* A broken CPC must not take the port down with it; do not call
             * into a module whose size we could not trust. */
            if (NULL != m && 0 == openib_abi_check_size(m, m->size, OPENIB_CPC_MODULE_V1_SIZE,
                                                        sizeof(*m)) &&
                NULL != m->finalize) {
                (void) m->finalize(m);
            }
            add_reason(reasons, rlen, e->c->name, problem);
            continue;
        }
        found[nfound++] = m;
    }

    qsort(found, nfound, sizeof(found[0]), cmp_modules);

    /* The one line a user (or an integration test) reads to see what was
     * chosen here and why the rest was not. */
    snprintf(summary, slen, "openib: port %s CPCs usable:", portname);
    for (i = 0; i < nfound; ++i) {
        openib_cpc_strcatf(summary, slen, "%s %s(%u)", i ? "," : "", found[i]->component->name,
                           (unsigned) found[i]->priority);
    }
    if (0 == nfound) {
        openib_cpc_strcatf(summary, slen, " none");
    }
    if (reasons[0]) {
        openib_cpc_strcatf(summary, slen, "; declined:");
        for (p = reasons, i = 0; *p; ++i) {
            size_t l = strcspn(p, "\n");
            size_t name_len = strcspn(p, ":");

            openib_cpc_strcatf(summary, slen, "%s %.*s (%.*s)", i ? "," : "", (int) name_len, p,
                               (int) (l > name_len + 2 ? l - name_len - 2 : 0),
                               p + name_len + 2);
            p += l;
            if ('\n' == *p) {
                ++p;
            }
        }
    }
    openib_cpc_log(CPC_VERBOSE_CHOICE, "%s", summary);

    if (0 == nfound) {
        indented[0] = '\0';
        for (p = reasons; *p;) {
            size_t l = strcspn(p, "\n");

            openib_cpc_strcatf(indented, sizeof(indented), "%s  %.*s", indented[0] ? "\n" : "",
                               (int) l, p);
            p += l;
            if ('\n' == *p) {
                ++p;
            }
        }
        openib_cpc_help("no cpc for port", 4, openib_cpc_hostname(),
                        port->dev_name ? port->dev_name : "?",
                        portnum,
                        indented[0] ? indented : "  (no CPC is registered)");
        return OPAL_ERR_NOT_AVAILABLE;
    }

    for (i = 0; i < nfound; ++i) {
        if (i < max) {
            mods[i] = found[i];
        } else if (NULL != found[i]->finalize) {
            (void) found[i]->finalize(found[i]); /* the caller has no room for it */
        }
    }
    *n = nfound < max ? nfound : max;
    return OPAL_SUCCESS;
}

const char *openib_connect_last_reasons(void)
{
    return openib_cpc_reg.last_reasons;
}

const char *openib_connect_last_summary(void)
{
    return openib_cpc_reg.last_summary;
}

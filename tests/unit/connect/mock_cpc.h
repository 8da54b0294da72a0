/*
 * mock_cpc.h - scriptable CPC components for the framework tests.
 *
 *   mock_a  id 64  default priority 30
 *   mock_b  id 65  default priority 70
 *   mock_c  id 66  default priority 50  alias "mockc"
 *   mock_d  id 67  default priority 50
 *
 * Each one's init/query result is set in mock_cfg[] before the framework
 * runs, and every call is counted there.
 */
#ifndef MOCK_CPC_H
#define MOCK_CPC_H

#include <stdbool.h>

#include "connect/openib_connect.h"

enum { MOCK_A, MOCK_B, MOCK_C, MOCK_D, MOCK_N };

struct mock_cfg {
    int init_rc;               /* what init returns */
    const char *init_why;      /* what it writes into why */
    int query_rc;
    const char *query_why;
    bool bad_priority;         /* return a module with priority 150 */
    bool wrong_component;      /* module->component points elsewhere */
    int start_rc;
    /* counters */
    int register_calls, init_calls, query_calls, finalize_calls;
    int module_finalize_calls, endpoint_init_calls, start_calls, endpoint_finalize_calls;
    int last_query_priority;
    struct openib_cpc_endpoint *last_ep;
};

extern struct mock_cfg mock_cfg[MOCK_N];
extern const struct openib_cpc_component *const mock_components[MOCK_N];

/* Zero every counter and set every mock to "works". */
void mock_reset(void);
/* openib_connect_finalize, then add all mocks (only mocks: no built-ins). */
int mock_fresh_framework(void);
/* A port struct as the BTL would hand it over. */
void mock_port(struct openib_cpc_port *p, const char *dev, uint32_t caps);
/* Index of the mock a module belongs to, -1 if none. */
int mock_index(const struct openib_cpc_module *m);

/* Captured help messages (the framework's help hook). */
#define MOCK_HELP_MAX 16
struct mock_help {
    char topic[64];
    int nargs;
    char args[6][1200];
};
extern struct mock_help mock_helps[MOCK_HELP_MAX];
extern int mock_nhelps;
void mock_help_hook(const char *file, const char *topic, int nargs, const char *const *args);
void mock_help_clear(void);
/* The last help with this topic, or NULL. */
const struct mock_help *mock_help_find(const char *topic);

#endif

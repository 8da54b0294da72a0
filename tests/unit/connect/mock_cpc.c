/*
 * mock_cpc.c - scriptable CPC components (see mock_cpc.h).
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <stdio.h>
#include <string.h>

#include "tests/unit/connect/mock_cpc.h"

struct mock_cfg mock_cfg[MOCK_N];
struct mock_help mock_helps[MOCK_HELP_MAX];
int mock_nhelps;

/* One module per mock is plenty: a test queries one port at a time. */
static struct openib_cpc_module mock_modules[MOCK_N];

static int m_endpoint_init(struct openib_cpc_module *m, struct openib_cpc_endpoint *ep)
{
    mock_cfg[mock_index(m)].endpoint_init_calls++;
    return OPAL_SUCCESS;
}

static int m_start(struct openib_cpc_module *m, struct openib_cpc_endpoint *ep)
{
    struct mock_cfg *c = &mock_cfg[mock_index(m)];

    c->start_calls++;
    c->last_ep = ep;
    return c->start_rc;
}

static int m_endpoint_finalize(struct openib_cpc_module *m, struct openib_cpc_endpoint *ep)
{
    mock_cfg[mock_index(m)].endpoint_finalize_calls++;
    return OPAL_SUCCESS;
}

static int m_module_finalize(struct openib_cpc_module *m)
{
    mock_cfg[mock_index(m)].module_finalize_calls++;
    return OPAL_SUCCESS;
}

static int m_describe(const struct openib_cpc_module *m, char *buf, size_t len)
{
    snprintf(buf, len, "mock module %s", m->component->name);
    return OPAL_SUCCESS;
}

static int do_init(int i, char *why, size_t len)
{
    mock_cfg[i].init_calls++;
    if (mock_cfg[i].init_why) {
        snprintf(why, len, "%s", mock_cfg[i].init_why);
    }
    return mock_cfg[i].init_rc;
}

static int do_query(int i, const struct openib_cpc_port *port, int priority,
                    struct openib_cpc_module **out, char *why, size_t len)
{
    struct openib_cpc_module *m = &mock_modules[i];

    mock_cfg[i].query_calls++;
    mock_cfg[i].last_query_priority = priority;
    if (mock_cfg[i].query_why) {
        snprintf(why, len, "%s", mock_cfg[i].query_why);
    }
    if (OPAL_SUCCESS != mock_cfg[i].query_rc) {
        return mock_cfg[i].query_rc;
    }
    openib_cpc_module_init(m);
    m->component = mock_components[i];
    if (mock_cfg[i].wrong_component) {
        m->component = mock_components[(i + 1) % MOCK_N];
    }
    m->priority = (uint8_t) (mock_cfg[i].bad_priority ? 150 : priority);
    m->blob_len = (uint8_t) snprintf((char *) m->blob, sizeof(m->blob), "blob-of-%s",
                                     mock_components[i]->name);
    m->endpoint_init = m_endpoint_init;
    m->start_connect = m_start;
    m->endpoint_finalize = m_endpoint_finalize;
    m->finalize = m_module_finalize;
    m->describe = m_describe;
    *out = m;
    return OPAL_SUCCESS;
}

#define MOCK_FUNCS(I)                                                                   \
    static void reg_##I(const struct openib_cpc_component *self)                         \
    {                                                                                     \
        mock_cfg[I].register_calls++;                                                     \
    }                                                                                     \
    static int init_##I(char *why, size_t len) { return do_init(I, why, len); }          \
    static int query_##I(const struct openib_cpc_port *port, int priority,               \
                         struct openib_cpc_module **out, char *why, size_t len)          \
    {                                                                                     \
        return do_query(I, port, priority, out, why, len);                               \
    }                                                                                     \
    static int fini_##I(void)                                                             \
    {                                                                                     \
        mock_cfg[I].finalize_calls++;                                                     \
        return OPAL_SUCCESS;                                                              \
    }

MOCK_FUNCS(0)
MOCK_FUNCS(1)
MOCK_FUNCS(2)
MOCK_FUNCS(3)

static const char *const mock_c_aliases[] = { "mockc", NULL };

#define MOCK_COMPONENT(I, NAME, ID, PRIO, ALIASES)                                        \
    {                                                                                     \
        .size = sizeof(struct openib_cpc_component), .abi_version = OPENIB_CPC_ABI_VERSION, \
        .name = NAME, .id = ID, .default_priority = PRIO, .register_params = reg_##I,      \
        .init = init_##I, .query = query_##I, .finalize = fini_##I, .aliases = ALIASES,   \
    }

static const struct openib_cpc_component mock_tables[MOCK_N] = {
    MOCK_COMPONENT(0, "mock_a", 64, 30, NULL),
    MOCK_COMPONENT(1, "mock_b", 65, 70, NULL),
    MOCK_COMPONENT(2, "mock_c", 66, 50, mock_c_aliases),
    MOCK_COMPONENT(3, "mock_d", 67, 50, NULL),
};

const struct openib_cpc_component *const mock_components[MOCK_N] = {
    &mock_tables[0], &mock_tables[1], &mock_tables[2], &mock_tables[3],
};

int mock_index(const struct openib_cpc_module *m)
{
    int i;

    for (i = 0; i < MOCK_N; ++i) {
        if (m == &mock_modules[i]) {
            return i;
        }
    }
    return -1;
}

void mock_reset(void)
{
    int i;

    memset(mock_cfg, 0, sizeof(mock_cfg));
    for (i = 0; i < MOCK_N; ++i) {
        mock_cfg[i].init_rc = OPAL_SUCCESS;
        mock_cfg[i].query_rc = OPAL_SUCCESS;
        mock_cfg[i].start_rc = OPAL_SUCCESS;
    }
    mock_help_clear();
}

int mock_fresh_framework(void)
{
    int i, rc;

    openib_connect_finalize();
    mock_reset();
    openib_connect_set_help_hook(mock_help_hook);
    for (i = 0; i < MOCK_N; ++i) {
        rc = openib_connect_add_component(mock_components[i]);
        if (OPAL_SUCCESS != rc) {
            return rc;
        }
    }
    return OPAL_SUCCESS;
}

void mock_port(struct openib_cpc_port *p, const char *dev, uint32_t caps)
{
    openib_cpc_port_init(p);
    p->dev_name = dev;
    p->caps = caps;
    p->port_num = 1;
    p->link_layer = 2;
    p->mtu = 1024;
    p->gid[15] = 7;
    p->subnet_prefix = 0xfe80000000000000ull;
}

void mock_help_hook(const char *file, const char *topic, int nargs, const char *const *args)
{
    struct mock_help *h;
    int i;

    if (mock_nhelps >= MOCK_HELP_MAX) {
        return;
    }
    h = &mock_helps[mock_nhelps++];
    snprintf(h->topic, sizeof(h->topic), "%s", topic);
    h->nargs = nargs;
    for (i = 0; i < nargs && i < 6; ++i) {
        snprintf(h->args[i], sizeof(h->args[i]), "%s", args[i]);
    }
    if (0 != strcmp(file, "help-btl-openib-cpc.txt")) {
        snprintf(h->topic, sizeof(h->topic), "WRONG FILE %s", file);
    }
}

void mock_help_clear(void)
{
    memset(mock_helps, 0, sizeof(mock_helps));
    mock_nhelps = 0;
}

const struct mock_help *mock_help_find(const char *topic)
{
    int i;

    for (i = mock_nhelps - 1; i >= 0; --i) {
        if (0 == strcmp(mock_helps[i].topic, topic)) {
            return &mock_helps[i];
        }
    }
    return NULL;
}

/*
 * test_cpc_parse.c - the cpc_include/cpc_exclude list parser on its own:
 * no Open MPI, no registry, just strings against component tables.
 */
#include "opal_config.h"
#include "opal/constants.h"

#include <string.h>

#include "connect/openib_connect.h"
#include "tests/unit/connect/cpc_test.h"
#include "tests/unit/connect/mock_cpc.h"

static const struct openib_cpc_component *comps[4];

static int parse(const char *s, uint32_t *mask, char *bad)
{
    return openib_connect_parse_cpc_list(s, comps, 4, mask, bad, 64);
}

int main(void)
{
    const struct openib_cpc_component *builtin[3] = {
        &openib_cpc_oob_component, &openib_cpc_rdma_cm_component, &openib_cpc_xoob_component,
    };
    char bad[64];
    uint32_t mask;
    int i;

    for (i = 0; i < 4; ++i) {
        comps[i] = mock_components[i];
    }

    CHECK_EQ(parse(NULL, &mask, bad), OPAL_SUCCESS);
    CHECK_EQ(mask, 0);
    CHECK_EQ(parse("", &mask, bad), OPAL_SUCCESS);
    CHECK_EQ(mask, 0);
    CHECK_EQ(parse("mock_a", &mask, bad), OPAL_SUCCESS);
    CHECK_EQ(mask, 1u << 0);
    CHECK_EQ(parse("mock_d,mock_b", &mask, bad), OPAL_SUCCESS);
    CHECK_EQ(mask, (1u << 3) | (1u << 1));
    CHECK_EQ(parse(" mock_a ,\tmock_c\t", &mask, bad), OPAL_SUCCESS);
    CHECK_EQ(mask, (1u << 0) | (1u << 2));
    CHECK_EQ(parse("mockc", &mask, bad), OPAL_SUCCESS); /* alias */
    CHECK_EQ(mask, 1u << 2);
    CHECK_EQ(parse("mock_a,,mock_a,", &mask, bad), OPAL_SUCCESS); /* repeats, empties */
    CHECK_EQ(mask, 1u << 0);

    CHECK_EQ(parse("mock_a,bogus,mock_b", &mask, bad), OPAL_ERR_BAD_PARAM);
    CHECK_EQ(strcmp(bad, "bogus"), 0);
    CHECK_EQ(parse("mock", &mask, bad), OPAL_ERR_BAD_PARAM); /* no prefix matching */
    CHECK_EQ(strcmp(bad, "mock"), 0);
    CHECK_EQ(parse("mock_a_x", &mask, bad), OPAL_ERR_BAD_PARAM);
    CHECK_EQ(parse("MOCK_A", &mask, bad), OPAL_ERR_BAD_PARAM); /* names are exact */
    CHECK_EQ(parse("mock_a mock_b", &mask, bad), OPAL_ERR_BAD_PARAM);
    CHECK_EQ(strcmp(bad, "mock_a mock_b"), 0);
    CHECK_EQ(parse(",", &mask, bad), OPAL_ERR_BAD_PARAM);
    CHECK_EQ(strcmp(bad, ""), 0);
    CHECK_EQ(parse(" ", &mask, bad), OPAL_ERR_BAD_PARAM);
    CHECK_EQ(parse("^mock_a", &mask, bad), OPAL_ERR_BAD_PARAM); /* no negation syntax */

    /* The shipped names: "rdmacm" is rdma_cm. */
    CHECK_EQ(openib_connect_parse_cpc_list("rdmacm", builtin, 3, &mask, bad, 64), OPAL_SUCCESS);
    CHECK_EQ(mask, 1u << 1);
    CHECK_EQ(openib_connect_parse_cpc_list("oob,rdma_cm,xoob", builtin, 3, &mask, bad, 64),
             OPAL_SUCCESS);
    CHECK_EQ(mask, 7);
    CHECK_EQ(openib_connect_parse_cpc_list("udcm", builtin, 3, &mask, bad, 64),
             OPAL_ERR_BAD_PARAM);

    /* A v1 component has no aliases field: whatever lies where v2 keeps it
     * must not be read. */
    {
        static const char *const fake[] = { "ghost", NULL };
        struct openib_cpc_component v1 = *mock_components[0];
        const struct openib_cpc_component *one[1] = { &v1 };

        v1.size = OPENIB_CPC_COMPONENT_V1_SIZE;
        v1.aliases = fake;
        CHECK_EQ(openib_connect_parse_cpc_list("ghost", one, 1, &mask, bad, 64),
                 OPAL_ERR_BAD_PARAM);
        v1.size = sizeof(v1);
        CHECK_EQ(openib_connect_parse_cpc_list("ghost", one, 1, &mask, bad, 64), OPAL_SUCCESS);
    }

    /* bad arguments */
    CHECK_EQ(openib_connect_parse_cpc_list("mock_a", comps, 4, NULL, bad, 64), OPAL_ERR_BAD_PARAM);
    CHECK_EQ(openib_connect_parse_cpc_list("mock_a", comps, 33, &mask, bad, 64),
             OPAL_ERR_BAD_PARAM);
    CHECK_EQ(openib_connect_parse_cpc_list("mock_a", comps, 4, &mask, NULL, 0),
             OPAL_SUCCESS);
    return test_report("test_cpc_parse");
}

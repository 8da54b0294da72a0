/*
 * cpc_test_opal.h - Open MPI's runtime as far as the side channel's tests
 * need it: the MCA and help systems (opal_init_util) and the event layer,
 * which only opal_init opens in an MPI process. The side channel's thread
 * runs on an opal_event base, and opening the event framework is what
 * turns on libevent's locking, without which another thread cannot add an
 * event to a running base or stop it.
 */
#ifndef CPC_TEST_OPAL_H
#define CPC_TEST_OPAL_H

#include <stdio.h>

#include "opal/constants.h"
#include "opal/mca/base/mca_base_framework.h"
#include "opal/mca/event/base/base.h"
#include "opal/runtime/opal.h"

static inline int test_opal_init(int *argc, char ***argv)
{
    if (OPAL_SUCCESS != opal_init_util(argc, argv) ||
        OPAL_SUCCESS != mca_base_framework_open(&opal_event_base_framework, 0)) {
        fprintf(stderr, "opal_init_util or opening the event framework failed\n");
        return OPAL_ERROR;
    }
    return OPAL_SUCCESS;
}

static inline void test_opal_fini(void)
{
    (void) mca_base_framework_close(&opal_event_base_framework);
    (void) opal_finalize_util();
}

#endif

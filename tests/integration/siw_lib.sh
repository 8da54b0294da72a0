# shellcheck shell=bash
# For the tests with a '# devices: rxe,siw' header (source after lib.sh):
# siw and rxe name the Soft-iWARP and Soft-RoCE devices, SIW_ARGS keeps
# openib on siw alone, and the test fails at once without a siw device.
# shellcheck disable=SC2034 # used by the tests that source this
siw=$OPENIB_TEST_SIW_DEVICE
# shellcheck disable=SC2034
rxe=$OPENIB_TEST_DEVICE
need_device "$siw" rxe,siw
# shellcheck disable=SC2034
SIW_ARGS=(--mca btl_openib_if_include "$siw")

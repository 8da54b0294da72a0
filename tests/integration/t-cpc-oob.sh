#!/bin/bash
# The oob CPC alone (btl_openib_cpc_include=oob): a 16 MiB verified
# ping-pong with no verbs object left at exit, then four ranks' crossing-
# connect storm and all-to-all; the verbose log shows oob made every
# connection, exactly one per endpoint.
# timeout: 500
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
. "$OPENIB_SRCDIR/tests/integration/cpc_lib.sh"
need_cmd mpirun mpicc gcc
use_our_component
cpc_carries_everything oob
ok "oob alone carried the 16 MiB ping-pong and the 4-rank storm and all-to-all"

#!/bin/bash
# CPC selection end to end (2 ranks, small verified ping-pong each):
#  - default priorities pick the documented default, oob (50 over rdma_cm's 40);
#  - cpc_exclude of one CPC leaves the other carrying every connection (the
#    exclusion of rdma_cm is spelled with its alias, rdmacm);
#  - raising btl_openib_connect_rdma_cm_priority makes rdma_cm the choice;
#  - a fixed btl_openib_connect_rdma_cm_port serves one process per address:
#    the other's rdma_cm declines with the bind error and oob connects;
#  - cpc_include=xoob on rxe fails fast with the "no CPC" help naming xoob's
#    reason (no XRC on rxe);
#  - X (XRC) receive queues on rxe fail fast with the XRC help naming the
#    device and the parameter value;
#  - an unknown name fails fast with the list of valid names.
# timeout: 600
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
. "$OPENIB_SRCDIR/tests/integration/cpc_lib.sh"
need_cmd mpirun
use_our_component
dev=$OPENIB_TEST_DEVICE
FAST=90 # seconds: a failing job must end well before the 240 s guard

run_select default
[ "$RUN_RC" = 0 ] || fail "default selection: mpirun exited with status $RUN_RC"
assert_small_pingpong "$RUN_OUT"
assert_grep "openib: port $dev:1 CPCs usable: oob\\(50\\), rdma_cm\\(40\\); declined: xoob \\(device $dev does not support XRC\\)" \
	"$RUN_OUT" "the per-port CPC line with default priorities"
assert_openib_carried "$RUN_OUT" 2 2 oob
ok "default priorities: oob"

run_select exclude-oob --mca btl_openib_cpc_exclude oob
[ "$RUN_RC" = 0 ] || fail "cpc_exclude=oob: mpirun exited with status $RUN_RC"
assert_small_pingpong "$RUN_OUT"
assert_grep "CPCs usable: rdma_cm\\(40\\); declined: oob \\(excluded by btl_openib_cpc_exclude\\)" \
	"$RUN_OUT" "oob excluded"
assert_openib_carried "$RUN_OUT" 2 2 rdma_cm
ok "cpc_exclude=oob: rdma_cm"

run_select exclude-rdmacm --mca btl_openib_cpc_exclude rdmacm
[ "$RUN_RC" = 0 ] || fail "cpc_exclude=rdmacm: mpirun exited with status $RUN_RC"
assert_small_pingpong "$RUN_OUT"
assert_grep "CPCs usable: oob\\(50\\); declined: rdma_cm \\(excluded by btl_openib_cpc_exclude\\)" \
	"$RUN_OUT" "rdma_cm excluded by its alias"
assert_openib_carried "$RUN_OUT" 2 2 oob
ok "cpc_exclude=rdmacm (alias): oob"

run_select rdma-cm-priority --mca btl_openib_connect_rdma_cm_priority 60
[ "$RUN_RC" = 0 ] || fail "rdma_cm priority 60: mpirun exited with status $RUN_RC"
assert_small_pingpong "$RUN_OUT"
assert_grep "CPCs usable: rdma_cm\\(60\\), oob\\(50\\)" "$RUN_OUT" "rdma_cm first at priority 60"
assert_openib_carried "$RUN_OUT" 2 2 rdma_cm
ok "btl_openib_connect_rdma_cm_priority=60: rdma_cm"

run_select fixed-port --mca btl_openib_connect_rdma_cm_port 7471
[ "$RUN_RC" = 0 ] || fail "fixed rdma_cm port: mpirun exited with status $RUN_RC"
assert_small_pingpong "$RUN_OUT"
n=$(count_lines "port $dev:1 CPCs usable: oob\\(50\\), rdma_cm\\(40\\)" "$RUN_OUT")
[ "$n" = 1 ] || fail "fixed rdma_cm port: $n processes listen (want 1)"
n=$(count_lines "port $dev:1 CPCs usable: oob\\(50\\); declined: rdma_cm \\(btl_openib_connect_rdma_cm_port 7471 is taken on [0-9.]+ \\(Address already in use\\); use 0 \\(any free port\\) or a free port\\)" "$RUN_OUT")
[ "$n" = 1 ] || fail "fixed rdma_cm port: $n processes declined with the bind error (want 1)"
assert_openib_carried "$RUN_OUT" 2 2 oob
ok "btl_openib_connect_rdma_cm_port=7471: one listener, the other process declined, oob connected"

# fail_fast NAME HELP-REGEX ARGS...: the job must fail well before the guard,
# and its output show the help. Open MPI 4.1.4's relay of a process's help
# text to mpirun sometimes loses it ("ORTE_ERROR_LOG: Data unpack would read
# past end of buffer in file .../show_help.c", seen with btl tcp's own help
# too), so a run where every copy was lost is repeated, at most 3 times.
fail_fast() {
	local name=$1 help=$2 try
	shift 2
	for try in 1 2 3; do
		run_select "$name-$try" "$@"
		[ "$RUN_RC" != 0 ] || fail "$name: the job succeeded"
		[ "$RUN_RC" != 124 ] && [ "$RUN_SECS" -lt "$FAST" ] ||
			fail "$name: the job took $RUN_SECS s (status $RUN_RC), not a fast failure"
		grep -q 'openib: connected to rank' "$RUN_OUT" && fail "$name: a connection was made"
		grep -Eq "$help" "$RUN_OUT" && return 0
		grep -q 'ORTE_ERROR_LOG: .*show_help.c' "$RUN_OUT" ||
			fail "$name: no help /$help/ and no sign that Open MPI lost it"
		note "$name: Open MPI lost the help text (try $try); again"
	done
	fail "$name: Open MPI lost the help text 3 times"
}

fail_fast include-xoob 'No connection method \(CPC\) can be used on a port' \
	--mca btl_openib_cpc_include xoob
assert_grep "^ +xoob: device $dev does not support XRC\$" "$RUN_OUT" "xoob's reason in the help"
assert_grep '^ +oob: not in btl_openib_cpc_include$' "$RUN_OUT" "why oob was not tried"
assert_grep '^ +rdma_cm: not in btl_openib_cpc_include$' "$RUN_OUT" "why rdma_cm was not tried"
ok "cpc_include=xoob: failed in $RUN_SECS s (status $RUN_RC) naming xoob's reason"

fail_fast xrc-queues 'asks for XRC queues \(X,\.\.\.\):' \
	--mca btl_openib_receive_queues X,4096,256:X,65536,64
assert_grep "^ +X,4096,256:X,65536,64\$" "$RUN_OUT" "the XRC help quotes btl_openib_receive_queues"
assert_grep "^but device $dev does not support XRC" "$RUN_OUT" "the XRC help names the device"
ok "X receive queues on $dev: refused in $RUN_SECS s (status $RUN_RC) with the XRC help"

fail_fast include-unknown 'An unknown connection method \(CPC\) name was given' \
	--mca btl_openib_cpc_include oob,nosuchcpc
assert_grep '^ +Unknown name: +nosuchcpc$' "$RUN_OUT" "the unknown name"
assert_grep '^ +Valid CPCs: +oob, rdma_cm \(alias: rdmacm\), xoob$' "$RUN_OUT" "the valid names"
ok "unknown CPC name: failed in $RUN_SECS s (status $RUN_RC) listing the valid names"

#!/bin/bash
# openib over Soft-iWARP (siw0, btl_openib_if_include siw0), 2 ranks:
#  - oob and xoob decline the iWARP port (reason at verbose 1), rdma_cm is
#    the port's only CPC and makes both connections: the iWARP CM moves the
#    BTL's QPs, one connection per QP, the initiator sending first;
#  - a ping-pong from 0 B to 16 MiB, every byte verified, carried by openib
#    (statistics) with rdma_cm, and rxe0 sent nothing;
#  - btl_openib_cpc_include oob fails fast with the "no CPC" help, whose
#    reason for oob names iWARP and the CPC that can connect it; with
#    openib,tcp the same setting leaves the job to TCP, which runs it.
# devices: rxe,siw
# timeout: 900
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
. "$OPENIB_SRCDIR/tests/integration/cpc_lib.sh"
need_cmd mpirun
use_our_component
. "$OPENIB_SRCDIR/tests/integration/siw_lib.sh"
FAST=120 # seconds: a failing job must end well before the 240 s guard

pp=$(pingpong_bin) || exit 1
out=$OPENIB_TEST_TMP/pp-siw.out
rxe_tx0=$(dev_counter "$rxe" sent_pkts)
timeout 600 "${MPIRUN[@]}" "${MPI_OPENIB_ARGS[@]}" "${SIW_ARGS[@]}" --mca btl_openib_verbose 10 \
	"$pp" -n 2 -m 16777216 >"$out" 2>&1
rc=$?
rxe_tx=$(($(dev_counter "$rxe" sent_pkts) - rxe_tx0))
show "$out"
[ "$rc" = 0 ] || fail "ping-pong over $siw: mpirun exited with status $rc"
assert_grep '^pingpong: verification PASSED: [0-9]+ sizes \(0\.\.16777216 B\), 2 iterations, [1-9][0-9]* messages, [1-9][0-9]* bytes verified, 0 errors$' \
	"$out" "verified ping-pong up to 16 MiB over $siw"
assert_grep "openib: port $siw:1 CPCs usable: rdma_cm\\(40\\); declined: oob \\(iWARP port: its queue pairs are connected only by the iWARP connection manager, through the rdma_cm CPC\\), xoob \\(iWARP port" \
	"$out" "the per-port CPC line: rdma_cm only, oob and xoob declined for iWARP"
assert_grep "openib: $siw:1: btl_openib_latency 2 us from the port \\(transport 1, link layer [0-9]+\\)" \
	"$out" "btl_latency 2 from the port (iWARP, ranked with RoCE)"
n=$(count_lines "openib: CPC oob declines port $siw:1: iWARP port" "$out")
[ "$n" -ge 2 ] || fail "oob's iWARP decline logged by $n processes (want 2)"
grep -Eq "openib: port $rxe:1 " "$out" && fail "$rxe was used despite btl_openib_if_include $siw"
assert_openib_carried "$out" 2 2 rdma_cm
n=$(count_lines "openib: connected to rank [0-9]+ .* port $siw:1 with CPC rdma_cm \\([0-9]+ QPs, initiator, this side sends first\\)" "$out")
[ "$n" = 1 ] || fail "$n initiators (want 1: one connection, one initiator)"
n=$(count_lines "openib: connected to rank [0-9]+ .* port $siw:1 with CPC rdma_cm \\([0-9]+ QPs, responder, the peer sends first\\)" "$out")
[ "$n" = 1 ] || fail "$n responders (want 1)"
[ "$rxe_tx" = 0 ] || fail "$rxe sent $rxe_tx packets: the traffic did not (only) go over $siw"
ok "ping-pong over $siw: rdma_cm, one initiator and one responder; $rxe sent nothing"

# cpc_include oob: no CPC on the only port; the job ends fast, and the
# help says why oob cannot serve it. Open MPI 4.1.4's help relay sometimes
# loses the text (t-cpc-select.sh): a run where it was lost is repeated.
for try in 1 2 3; do
	run_select "siw-oob-$try" "${SIW_ARGS[@]}" --mca btl_openib_cpc_include oob
	[ "$RUN_RC" != 0 ] || fail "cpc_include=oob on $siw: the job succeeded"
	[ "$RUN_RC" != 124 ] && [ "$RUN_SECS" -lt "$FAST" ] ||
		fail "cpc_include=oob on $siw: the job took $RUN_SECS s (status $RUN_RC), not a fast failure"
	grep -q 'openib: connected to rank' "$RUN_OUT" && fail "cpc_include=oob on $siw: a connection was made"
	grep -Eq 'No connection method \(CPC\) can be used on a port' "$RUN_OUT" && break
	help_lost "$RUN_OUT" ||
		fail "cpc_include=oob on $siw: no 'no CPC' help and no sign that Open MPI lost it"
	note "Open MPI lost the help text (try $try); again"
	[ "$try" = 3 ] && fail "Open MPI lost the help text 3 times"
done
assert_grep "^ +oob: iWARP port: its queue pairs are connected only by the iWARP connection manager, through the rdma_cm CPC\$" \
	"$RUN_OUT" "oob's reason in the help names iWARP"
assert_grep "^ +rdma_cm: not in btl_openib_cpc_include\$" "$RUN_OUT" "why rdma_cm was not tried"
ok "cpc_include=oob on $siw: failed in $RUN_SECS s (status $RUN_RC) with the 'no CPC' help naming iWARP"

# The same with openib,tcp: openib, asked for by name, says it has no CPC
# for the port, and the job still runs, over TCP (verified, no openib
# connection made).
out=$OPENIB_TEST_TMP/siw-oob-tcp.out
timeout 240 "${MPIRUN[@]}" --mca pml ob1 --mca btl openib,tcp,self "${SIW_ARGS[@]}" \
	--mca btl_openib_cpc_include oob --mca btl_openib_verbose 10 "$pp" -n 1 -m 65536 >"$out" 2>&1
rc=$?
show "$out"
[ "$rc" = 0 ] || fail "cpc_include=oob on $siw with openib,tcp: mpirun exited with status $rc"
assert_small_pingpong "$out"
grep -q 'openib: connected to rank' "$out" && fail "cpc_include=oob on $siw with openib,tcp: an openib connection was made"
assert_grep "openib: CPC oob declines port $siw:1: iWARP port" "$out" "oob declined $siw"
ok "cpc_include=oob on $siw with openib,tcp: openib steps aside, TCP carries the verified ping-pong"

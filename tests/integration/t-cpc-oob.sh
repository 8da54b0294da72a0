#!/bin/bash
# The oob CPC alone (btl_openib_cpc_include=oob): a 16 MiB verified
# ping-pong with no verbs object left at exit, then four ranks' crossing-
# connect storm and all-to-all; the verbose log shows oob made every
# connection, exactly one per endpoint, every handshake over the UD side
# channel (the default) and none over TCP. The storm again with
# btl_openib_oob_side_channel tcp: every handshake over TCP. A rank that
# may use UD only and one that may use TCP only have no side channel in
# common: the connection fails, saying so. Then a peer that never answers
# (cpc_slow_peer.c, rank 1 connecting to rank 0 right after MPI_Init),
# over UD (auto) and over TCP:
#  - stopped (SIGSTOP: its kernel accepts TCP connections, its
#    side-channel thread answers nothing): rank 1 gives up when the 6 s
#    timeout of silence runs out, with the message naming it;
#  - exited without MPI_Finalize (the job goes on, by
#    orte_allowed_exit_without_sync): every published address refuses the
#    connection (over UD: the TCP probe of the silent UD QP) and rank 1
#    fails at once, saying the peer exited.
# (t-cpc-busy-peer.sh: a peer computing outside MPI is waited for.)
# timeout: 600
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
. "$OPENIB_SRCDIR/tests/integration/cpc_lib.sh"
need_cmd mpirun mpicc gcc
use_our_component
cpc_carries_everything oob
assert_side_channel "$OPENIB_TEST_TMP/pp-oob.out" ud 2
assert_side_channel "$OPENIB_TEST_TMP/storm-oob.out" ud 4
ok "oob alone carried the 16 MiB ping-pong and the 4-rank storm and all-to-all, handshakes over UD"

prog=$OPENIB_TEST_TMP/mpi_patterns
out=$OPENIB_TEST_TMP/storm-tcp.out
mpirun --allow-run-as-root --oversubscribe -np 4 "${MPI_OPENIB_ARGS[@]}" \
	--mca btl_openib_cpc_include oob --mca btl_openib_oob_side_channel tcp \
	--mca btl_openib_verbose 10 "$prog" storm alltoall >"$out" 2>&1
rc=$?
show "$out"
[ "$rc" = 0 ] || fail "storm/alltoall with oob_side_channel tcp: mpirun exited with status $rc"
assert_grep '^PASS storm \(4 ranks\)' "$out" "crossing-connect storm over TCP"
assert_grep '^PASS alltoall \(4 ranks\)' "$out" "all-to-all over TCP"
assert_openib_carried "$out" 12 4 oob
assert_side_channel "$out" tcp 4

# UD only against TCP only: nothing in common, said; the job fails
out=$OPENIB_TEST_TMP/mixed.out
pp=$(pingpong_bin) || exit 1
timeout 300 mpirun --allow-run-as-root --oversubscribe "${MPI_OPENIB_ARGS[@]}" \
	--mca btl_openib_cpc_include oob --mca btl_openib_verbose 100 \
	-np 1 -x OMPI_MCA_btl_openib_oob_side_channel=ud "$pp" -n 1 -m 1024 : \
	-np 1 -x OMPI_MCA_btl_openib_oob_side_channel=tcp "$pp" -n 1 -m 1024 >"$out" 2>&1
rc=$?
grep -E 'oob rank|connecting|side channel|rror' "$out" | cut -c1-240
[ "$rc" != 0 ] || fail "UD-only and TCP-only ranks: the job succeeded"
[ "$rc" != 124 ] || fail "UD-only and TCP-only ranks: the job hung"
assert_grep 'failed: no side channel in common: the peer publishes (UD|TCP), this process may use (UD only|TCP only) \(btl_openib_oob_side_channel\)' \
	"$out" "no side channel in common"
ok "a UD-only and a TCP-only rank: the connection failed, saying why (status $rc)"

brief() { grep -E 'oob rank|PASS|FAIL|connected to|Reason|rror' "$RUN_OUT" | cut -c1-240; }
for side in auto tcp; do
	OOB=(--mca btl_openib_cpc_include oob --mca btl_openib_verbose 100
		--mca btl_openib_oob_side_channel "$side")
	slow_peer "oob-$side-stopped" stop 4 "${OOB[@]}" --mca btl_openib_connect_oob_timeout 6
	brief
	assert_peer_failed "$RUN_OUT" oob \
		"no answer at all within 6 s \(btl_openib_connect_oob_timeout\), not even from the peer's side-channel thread" \
		"stopped peer ($side)"
	ok "stopped ($side): rank 1 gave up after 6 s of silence; the job ended in $RUN_SECS s (status $RUN_RC)"

	slow_peer "oob-$side-exited" exit 4 "${OOB[@]}" --mca orte_allowed_exit_without_sync 1
	brief
	assert_peer_failed "$RUN_OUT" oob \
		'connection refused at every address the peer published: the peer process has exited' \
		"exited peer ($side)"
	if grep -q 'no answer at all within' "$RUN_OUT"; then
		fail "exited peer ($side): reported as a timeout, not as gone"
	fi
	ok "exited ($side): rank 1 failed at once, the peer's listener gone; the job ended in $RUN_SECS s (status $RUN_RC)"
done

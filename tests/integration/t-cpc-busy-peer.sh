#!/bin/bash
# A busy peer is not a dead one. Rank 0 computes for 120 s outside MPI right
# after MPI_Init (no MPI call at all) while rank 1 connects to it and sends
# 1 MiB; with the default connect timeouts (30 s) that is four timeouts of
# waiting. The connection waits for rank 0 - its side-channel thread (oob)
# or its listener thread (rdma_cm) answers for it meanwhile - and then the
# data is verified both ways (rank 0 replies 1 MiB). Both CPCs run at once,
# each in its own mpirun (ephemeral ports), to share the guest's time; the
# verbose log shows which CPC made each connection and that the peer was
# found alive but busy. (cpc_slow_peer.c; t-cpc-oob.sh and
# t-cpc-rdma-cm-faults.sh have the peers that are really gone.)
# timeout: 600
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
. "$OPENIB_SRCDIR/tests/integration/cpc_lib.sh"
need_cmd mpirun mpicc
use_our_component
slow_peer_bin >/dev/null || exit 1 # built once, before the two runs

busy() {
	slow_peer "busy-$1" 120 1048576 --mca btl_openib_cpc_include "$1" \
		--mca btl_openib_verbose 100
	echo "$RUN_RC $RUN_SECS" >"$OPENIB_TEST_TMP/busy-$1.rc"
}
t0=$SECONDS
busy oob &
p_oob=$!
busy rdma_cm &
p_rcm=$!
wait "$p_oob" "$p_rcm"
secs=$((SECONDS - t0))

for cpc in oob rdma_cm; do
	out=$OPENIB_TEST_TMP/busy-$cpc.out
	read -r rc run_secs <"$OPENIB_TEST_TMP/busy-$cpc.rc"
	grep -E "$cpc rank|PASS|FAIL|connected to|Reason|rror" "$out" | cut -c1-240
	[ "$rc" = 0 ] || fail "$cpc: mpirun exited with status $rc after $run_secs s"
	assert_grep '^PASS slow-peer \(rank 0 slept 120 s, 1048576 bytes verified\)' "$out" \
		"$cpc: rank 0 got every byte after its 120 s outside MPI"
	assert_grep '^PASS slow-peer reply \(1048576 bytes verified\)' "$out" \
		"$cpc: rank 1 got every byte back"
	assert_openib_carried "$out" 2 2 "$cpc"
	if grep -Eq 'failed: |gave up|no answer at all' "$out"; then
		fail "$cpc: a connection failed or gave up"
	fi
done
assert_grep 'openib: oob rank 0 .*: the peer is alive but its process has not taken our message yet' \
	"$OPENIB_TEST_TMP/busy-oob.out" "oob: rank 0's side-channel thread said it was alive and busy"
assert_grep 'openib: rdma_cm rank 0 .*: attempt [0-9]+: the peer is alive but its process is not in MPI \(busy answer 1 from its listener thread\)' \
	"$OPENIB_TEST_TMP/busy-rdma_cm.out" "rdma_cm: rank 0's listener thread answered busy"
n=$(grep -Ec 'busy answer [0-9]+ from' "$OPENIB_TEST_TMP/busy-rdma_cm.out")
ok "a peer 120 s outside MPI: oob and rdma_cm both waited for it and carried 1 MiB each way ($n rdma_cm busy lines logged); both runs took $secs s together"

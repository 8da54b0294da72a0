#!/bin/bash
# Peers that are busy, stopped or gone, across two nodes (rank 0 on node1
# is the peer; rank 1 on node2 connects to it right after MPI_Init,
# cpc_slow_peer.c), with oob and with rdma_cm:
#  - busy: rank 0 computes 45 s outside MPI, beyond the default 30 s
#    connect timeout; the connection waits for it and 64 KiB go each way;
#  - stopped (SIGSTOP): rank 1 gives up after the timeout (6 s here), saying
#    the peer's threads did not answer;
#  - exited: rank 1 fails at once, saying the peer is gone.
# nodes: 2
# timeout: 700
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
. "$OPENIB_SRCDIR/tests/integration/cpc_lib.sh"
need_nodes 2
node1=${BED_NODES[0]} node2=${BED_NODES[1]}
need_cmd mpirun mpicc timeout
use_our_component
# slow_peer (cpc_lib.sh) runs "${MPIRUN[@]}": here one rank on each node
MPIRUN=("${MPIRUN_NODES[@]}")
slow_peer_bin >/dev/null || exit 1

# The two busy jobs run side by side, each with its own ORTE session
# directory base: two orteds setting up and removing the shared default tree
# at once on node2 failed a job in CI ("session_dir.c ... No such file or
# directory", before any rank started).
busy() {
	slow_peer "busy-$1" 45 65536 --mca btl_openib_cpc_include "$1" --mca btl_openib_verbose 100 \
		--mca orte_tmpdir_base "/tmp/openib-faults-busy-$1"
	echo "$RUN_RC $RUN_SECS" >"$OPENIB_TEST_TMP/busy-$1.rc"
}
busy oob &
p1=$!
busy rdma_cm &
p2=$!
wait "$p1" "$p2"
for cpc in oob rdma_cm; do
	out=$OPENIB_TEST_TMP/busy-$cpc.out
	read -r rc secs <"$OPENIB_TEST_TMP/busy-$cpc.rc"
	grep -E "$cpc rank|PASS|FAIL|connected to|Reason|rror" "$out" | cut -c1-240
	[ "$rc" = 0 ] || fail "busy ($cpc): mpirun exited with status $rc after $secs s"
	assert_grep '^PASS slow-peer \(rank 0 slept 45 s, 65536 bytes verified\)' "$out" "busy ($cpc): rank 0 got every byte"
	assert_grep '^PASS slow-peer reply \(65536 bytes verified\)' "$out" "busy ($cpc): rank 1 got every byte back"
	assert_grep "^\\[$node2:[0-9]+\\] openib: connected to rank 0 \\($node1\\)" "$out" "busy ($cpc): $node2 connected to $node1"
	assert_openib_carried "$out" 2 2 "$cpc"
	ok "busy ($cpc): $node1's rank 45 s outside MPI was waited for; 64 KiB each way across the nodes"
done

brief() { grep -E 'rank 0|PASS|FAIL|connected to|Reason|rror' "$RUN_OUT" | cut -c1-240; }
slow_peer oob-stopped stop 4 --mca btl_openib_cpc_include oob --mca btl_openib_verbose 100 \
	--mca btl_openib_connect_oob_timeout 6
brief
assert_peer_failed "$RUN_OUT" oob \
	"no answer at all within 6 s \\(btl_openib_connect_oob_timeout\\), not even from the peer's side-channel thread" \
	"oob, stopped peer"
ok "oob, stopped: gave up after 6 s of silence across the nodes (job ended in $RUN_SECS s)"
slow_peer rcm-stopped stop 4 --mca btl_openib_cpc_include rdma_cm --mca btl_openib_verbose 100 \
	--mca btl_openib_connect_rdma_cm_timeout 6
brief
assert_peer_failed "$RUN_OUT" rdma_cm 'no answer at all within 6 s \(btl_openib_connect_rdma_cm_timeout\)' \
	"rdma_cm, stopped peer"
ok "rdma_cm, stopped: gave up after 6 s of silence across the nodes (job ended in $RUN_SECS s)"

slow_peer oob-exited exit 4 --mca btl_openib_cpc_include oob --mca btl_openib_verbose 100 \
	--mca orte_allowed_exit_without_sync 1
brief
assert_peer_failed "$RUN_OUT" oob 'connection refused at every address the peer published: the peer process has exited' \
	"oob, exited peer"
ok "oob, exited: failed at once across the nodes (job ended in $RUN_SECS s)"
slow_peer rcm-exited exit 4 --mca btl_openib_cpc_include rdma_cm --mca btl_openib_verbose 100 \
	--mca orte_allowed_exit_without_sync 1
brief
assert_peer_failed "$RUN_OUT" rdma_cm \
	"nothing listens at the peer's rdma_cm address any more \\(IB CM reject reason 8, invalid service ID\\): the peer process has exited" \
	"rdma_cm, exited peer"
ok "rdma_cm, exited: failed at once across the nodes (job ended in $RUN_SECS s)"

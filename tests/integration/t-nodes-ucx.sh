#!/bin/bash
# Two nodes: a verified ping-pong (0 B .. 4 MiB) with one rank on each node
# over pml ucx on the rxe devices (rc_verbs/ud_verbs).  Each rank says where
# it ran, and both nodes' rxe0 sent and received the RDMA packets that
# carried the messages (hw_counters sent_pkts/rcvd_pkts).
# nodes: 2
# timeout: 300
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
need_nodes 2
node1=${BED_NODES[0]} node2=${BED_NODES[1]}
need_cmd mpirun
pp=$(pingpong_bin) || exit 1
iters=3
out=$OPENIB_TEST_TMP/pingpong.out
dev=$OPENIB_TEST_DEVICE

declare -A sent0 rcvd0
for n in "$node1" "$node2"; do
	sent0[$n]=$(node_counter "$n" "$dev" sent_pkts)
	rcvd0[$n]=$(node_counter "$n" "$dev" rcvd_pkts)
done
"${MPIRUN_NODES[@]}" "${MPI_UCX_ARGS[@]}" "$pp" -H -n "$iters" >"$out" 2>&1
rc=$?
show "$out"
[ "$rc" = 0 ] || fail "mpirun exited with status $rc"
assert_ranks_on_nodes "$out"
check_pingpong "$out" "$iters"

# Each way, half of the verified bytes, in RoCE packets of at most 4 KiB.
bytes=$(sed -nE 's/^pingpong: verification PASSED: .* ([0-9]+) bytes verified.*/\1/p' "$out")
min=$((bytes / 2 / 4096))
for n in "$node1" "$node2"; do
	sent=$(($(node_counter "$n" "$dev" sent_pkts) - sent0[$n]))
	rcvd=$(($(node_counter "$n" "$dev" rcvd_pkts) - rcvd0[$n]))
	note "$n: $dev sent $sent packets, received $rcvd"
	[ "$sent" -ge "$min" ] || fail "$n: $dev sent only $sent packets (want >= $min): the data did not travel over verbs"
	[ "$rcvd" -ge "$min" ] || fail "$n: $dev received only $rcvd packets (want >= $min)"
done
ok "RDMA packets crossed the wire: each node's $dev sent and received >= $min"

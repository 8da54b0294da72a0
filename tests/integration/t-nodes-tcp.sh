#!/bin/bash
# Two nodes (two guests joined by a virtual wire): a verified ping-pong
# (0 B .. 4 MiB, every byte checked) with one rank on each node, pml ob1 and
# btl tcp.  Each rank says where it ran (rank 0 on node1, rank 1 on node2),
# and the bytes went through both nodes' wire interfaces.
# nodes: 2
# timeout: 300
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
need_nodes 2
node1=${BED_NODES[0]} node2=${BED_NODES[1]}
need_cmd mpirun
pp=$(pingpong_bin) || exit 1
iters=3
out=$OPENIB_TEST_TMP/pingpong.out

declare -A tx0 rx0
for n in "$node1" "$node2"; do
	tx0[$n]=$(node_netdev_bytes "$n" "$OPENIB_TEST_DEVICE" tx)
	rx0[$n]=$(node_netdev_bytes "$n" "$OPENIB_TEST_DEVICE" rx)
done
"${MPIRUN_NODES[@]}" "${MPI_TCP_ARGS[@]}" "$pp" -H -n "$iters" >"$out" 2>&1
rc=$?
show "$out"
[ "$rc" = 0 ] || fail "mpirun exited with status $rc"
assert_ranks_on_nodes "$out"
check_pingpong "$out" "$iters"

# Half of the verified bytes went each way: each node sent and received at
# least that much on its wire interface (TCP/IP headers come on top).
bytes=$(sed -nE 's/^pingpong: verification PASSED: .* ([0-9]+) bytes verified.*/\1/p' "$out")
half=$((bytes / 2))
for n in "$node1" "$node2"; do
	tx=$(($(node_netdev_bytes "$n" "$OPENIB_TEST_DEVICE" tx) - tx0[$n]))
	rx=$(($(node_netdev_bytes "$n" "$OPENIB_TEST_DEVICE" rx) - rx0[$n]))
	note "$n: wire interface sent $tx B, received $rx B (each way: $half B of messages)"
	[ "$tx" -ge "$half" ] || fail "$n sent only $tx B on the wire, less than the $half B it sent"
	[ "$rx" -ge "$half" ] || fail "$n received only $rx B on the wire, less than the $half B sent to it"
done
ok "the messages crossed the wire: each node sent and received >= $half B"

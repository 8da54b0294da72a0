#!/bin/bash
# Across two nodes over Soft-iWARP (siw0 on each node, its own NIC and
# wire): rdma_cm is the only CPC that can connect iWARP.
#  - a verified ping-pong 0 B-16 MiB, rank 0 on node1 and rank 1 on node2,
#    rank 0 sending first and then rank 1 (-r: the receiving side meets its
#    peer through the connect request and makes its endpoint on demand);
#    the bytes crossed siw0's wire on both nodes and rxe0 sent nothing;
#  - 4 ranks, two per node: the crossing-connect storm, an all-to-all and
#    10,000 messages in flight, every byte checked; 12 connections by
#    rdma_cm.
# nodes: 2
# devices: rxe,siw
# timeout: 900
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
need_nodes 2
node1=${BED_NODES[0]} node2=${BED_NODES[1]}
need_cmd mpirun timeout
use_our_component
pp=$(pingpong_bin) || exit 1
. "$OPENIB_SRCDIR/tests/integration/siw_lib.sh"

for first in 0 1; do
	name=siw-first$first
	out=$OPENIB_TEST_TMP/$name.out
	flag=()
	[ "$first" = 0 ] || flag=(-r)
	r1=$(node_counter "$node1" "$rxe" sent_pkts)
	r2=$(node_counter "$node2" "$rxe" sent_pkts)
	b1=$(node_netdev_bytes "$node1" "$siw" tx)
	b2=$(node_netdev_bytes "$node2" "$siw" tx)
	timeout -k 10 600 "${MPIRUN_NODES[@]}" "${MPI_OPENIB_ARGS[@]}" "${SIW_ARGS[@]}" \
		--mca btl_openib_verbose 10 "$pp" -H -n 1 -m 16777216 "${flag[@]}" >"$out" 2>&1
	rc=$?
	show "$out"
	[ "$rc" = 0 ] || fail "$name: mpirun exited with status $rc"
	assert_ranks_on_nodes "$out"
	assert_grep '^pingpong: verification PASSED: [0-9]+ sizes \(0\.\.16777216 B\), 1 iterations, [1-9][0-9]* messages, [1-9][0-9]* bytes verified, 0 errors$' \
		"$out" "$name: verification"
	assert_openib_carried "$out" 2 2 rdma_cm
	passive=$([ "$first" = 0 ] && echo "$node2" || echo "$node1")
	peer=$([ "$first" = 0 ] && echo "rank 0 \\($node1\\)" || echo "rank 1 \\($node2\\)")
	assert_grep "^\\[$passive:[0-9]+\\] openib: $peer port [^ ]+ contacted us first: endpoint made on demand" \
		"$out" "$name: $passive made its endpoint on demand"
	r1=$(($(node_counter "$node1" "$rxe" sent_pkts) - r1))
	r2=$(($(node_counter "$node2" "$rxe" sent_pkts) - r2))
	b1=$(($(node_netdev_bytes "$node1" "$siw" tx) - b1))
	b2=$(($(node_netdev_bytes "$node2" "$siw" tx) - b2))
	# 16 MiB went each way over siw0's wire
	[ "$b1" -ge 16777216 ] && [ "$b2" -ge 16777216 ] || fail "$name: only $b1 / $b2 bytes left $node1 / $node2 through $siw's interface"
	[ "$r1" = 0 ] && [ "$r2" = 0 ] || fail "$name: $rxe sent $r1 / $r2 packets"
	ok "$name: 0 B-16 MiB verified across $node1 and $node2 over $siw with rdma_cm; $b1 and $b2 bytes sent on its wire"
done

prog=$OPENIB_TEST_TMP/mpi_patterns
build_mpi_program "$OPENIB_SRCDIR/tests/integration/mpi_patterns.c" "$prog"
out=$OPENIB_TEST_TMP/siw-patterns.out
timeout -k 10 700 mpirun --allow-run-as-root --oversubscribe -np 4 --host "$node1:2,$node2:2" \
	"${MPI_OPENIB_ARGS[@]}" "${SIW_ARGS[@]}" --mca btl_openib_verbose 10 "$prog" storm alltoall many >"$out" 2>&1
rc=$?
show "$out"
[ "$rc" = 0 ] || fail "4 ranks on two nodes over $siw: mpirun exited with status $rc"
for p in storm alltoall many; do
	assert_grep "^PASS $p \\(4 ranks\\)" "$out" "$p across two nodes on $siw"
done
assert_openib_carried "$out" 12 4 rdma_cm
ok "4 ranks, two per node, over $siw: storm, all-to-all, 10,000 in flight verified"

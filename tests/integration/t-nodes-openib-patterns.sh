#!/bin/bash
# Across two nodes over OUR openib, 4 ranks (2 per node), every byte checked:
# a master/worker where the workers on both nodes speak first and the
# master receives with MPI_ANY_SOURCE, the crossing-connect storm, a
# strided all-to-all, 10,000 messages in flight, probe/cancel; with oob and
# rdma_cm. Then osc/rdma: put/get/atomics (mpi_patterns osc); dynamic
# windows, including elements attached while the other ranks use the
# window, through osc/pt2pt over openib (Open MPI 4.1.4's osc/rdma deadlocks
# on the first access to a dynamic window of another node: its
# find_dynamic_region takes the peer's region lock exclusively and then
# again shared while refreshing the region table; fixed in 4.1.5); a one-way
# burst right after connect; and teardown with traffic in flight under the
# verbs leak check.
# nodes: 2
# timeout: 900
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
need_nodes 2
node1=${BED_NODES[0]} node2=${BED_NODES[1]}
need_cmd mpirun gcc timeout
use_our_component
MPI4=(mpirun --allow-run-as-root --oversubscribe -np 4 --host "$node1:2,$node2:2")
prog=$OPENIB_TEST_TMP/mpi_patterns
build_mpi_program "$OPENIB_SRCDIR/tests/integration/mpi_patterns.c" "$prog"

# assert_hosts LOG: ranks 0-1 ran on node1 and 2-3 on node2 ("hosts" pattern)
assert_hosts() {
	local r want
	for r in 0 1 2 3; do
		want=$([ "$r" -lt 2 ] && echo "$node1" || echo "$node2")
		assert_grep "^rank $r of 4 on $want\$" "$1" "rank $r on $want"
	done
}

for cpc in oob rdma_cm; do
	out=$OPENIB_TEST_TMP/p2p-$cpc.out
	timeout -k 10 400 "${MPI4[@]}" "${MPI_OPENIB_ARGS[@]}" --mca btl_openib_cpc_include "$cpc" \
		--mca btl_openib_verbose 10 "$prog" hosts masterworker storm alltoall many probe >"$out" 2>&1
	rc=$?
	show "$out"
	[ "$rc" = 0 ] || fail "$cpc: mpirun exited with status $rc"
	assert_hosts "$out"
	for p in masterworker storm alltoall many probe; do
		assert_grep "^PASS $p \\(4 ranks\\)" "$out" "$cpc: $p"
	done
	assert_openib_carried "$out" 12 4 "$cpc"
	# the workers on node2 reached the master first
	assert_grep "^\\[$node1:[0-9]+\\] openib: rank [23] \\($node2\\) port [^ ]+ contacted us first" "$out" \
		"$cpc: endpoints made on demand on $node1"
	ok "$cpc: master/worker (workers first, MPI_ANY_SOURCE), storm, all-to-all, 10,000 in flight, probe across $node1 and $node2"
done

out=$OPENIB_TEST_TMP/osc.out
timeout -k 10 300 "${MPI4[@]}" "${MPI_OPENIB_ARGS[@]}" --mca osc rdma --mca btl_openib_verbose 10 \
	"$prog" hosts osc >"$out" 2>&1
rc=$?
show "$out"
[ "$rc" = 0 ] || fail "osc: mpirun exited with status $rc"
assert_hosts "$out"
assert_grep '^PASS osc \(4 ranks\)' "$out" "osc rdma: put/get/accumulate/fetch-and-op/compare-and-swap"
[ "$(openib_stats_sum "$out" atomics)" -gt 0 ] || fail "osc: no atomic went over openib"
ok "osc rdma across the nodes: $(openib_stats_sum "$out" atomics) atomics over openib"

dyn=$OPENIB_TEST_TMP/osc_dynamic
build_mpi_program "$OPENIB_SRCDIR/tests/integration/osc_dynamic.c" "$dyn"
out=$OPENIB_TEST_TMP/dyn.out
timeout -k 10 400 "${MPI4[@]}" "${MPI_OPENIB_ARGS[@]}" --mca osc pt2pt --mca btl_openib_verbose 10 \
	"$dyn" flushget dtype reattach llist chase llist-live chase-live >"$out" 2>&1
rc=$?
show "$out"
[ "$rc" = 0 ] || fail "dynamic windows: mpirun exited with status $rc"
for t in flushget dtype reattach llist chase llist-live chase-live; do
	assert_grep "^PASS $t \\(4 ranks\\)$" "$out" "dynamic windows: $t"
done
if grep -Eq 'refused an|lost its connection|completion error' "$out"; then
	fail "dynamic windows: an operation was refused or a connection lost"
fi
[ "$(openib_stats_sum "$out" sends)" -gt 1000 ] || fail "dynamic windows: osc/pt2pt's messages did not go over openib"
ok "dynamic windows across the nodes (osc/pt2pt over openib): all seven tests, elements attached while in use included"

burst=$OPENIB_TEST_TMP/oneway_burst
build_mpi_program "$OPENIB_SRCDIR/tests/integration/oneway_burst.c" "$burst"
for cpc in oob rdma_cm; do
	out=$OPENIB_TEST_TMP/burst-$cpc.out
	timeout -k 10 200 "${MPIRUN_NODES[@]}" "${MPI_OPENIB_ARGS[@]}" --mca btl_openib_cpc_include "$cpc" \
		--mca btl_openib_eager_rdma_num 0 --mca btl_openib_verbose 10 "$burst" 1000 8 poll >"$out" 2>&1
	rc=$?
	show "$out"
	[ "$rc" = 0 ] || fail "one-way burst ($cpc): mpirun exited with status $rc"
	assert_grep '^oneway: PASSED 1000 messages of 8 B, 8000 bytes verified, 0 errors$' "$out" "one-way burst ($cpc)"
	assert_openib_carried "$out" 2 1 "$cpc"
	ok "one-way burst of 1000 after connect from $node1 to a polling $node2 ($cpc)"
done

td=$OPENIB_TEST_TMP/teardown_inflight
build_mpi_program "$OPENIB_SRCDIR/tests/integration/teardown_inflight.c" "$td"
shim=$OPENIB_TEST_TMP/verbs_leakcheck.so
gcc -O2 -Wall -shared -fPIC -o "$shim" "$OPENIB_SRCDIR/tests/integration/verbs_leakcheck.c" -ldl -libverbs ||
	fail "building the leak check"
out=$OPENIB_TEST_TMP/teardown.out
timeout -k 10 300 "${MPI4[@]}" "${MPI_OPENIB_ARGS[@]}" --mca btl_openib_verbose 10 \
	-x LD_PRELOAD="$shim" "$td" >"$out" 2>&1
rc=$?
show "$out"
[ "$rc" = 0 ] || fail "teardown: mpirun exited with status $rc"
assert_grep '^teardown: PASSED 4 ranks, [1-9][0-9]* bytes verified, 0 errors$' "$out" "teardown: verification"
if grep -Eq 'lost its connection|could not connect|completion error|refused an' "$out"; then
	fail "teardown: an error on the way out"
fi
[ "$(grep -c '^verbs-leakcheck ' "$out")" = 4 ] || fail "teardown: the leak check did not report for 4 processes"
if grep '^verbs-leakcheck ' "$out" | grep -Ev 'ctx=0 pd=0 cq=0 srq=0 qp=0 mr=0 created=[1-9]'; then
	fail "teardown: verbs objects left at exit"
fi
ok "teardown across the nodes with traffic in flight: data verified, no verbs object left, nothing reported lost"

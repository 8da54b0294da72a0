#!/bin/bash
# Four ranks over OUR openib: a crossing-connect storm (everyone sends to
# everyone first thing), all-to-all with a non-contiguous datatype, 10,000
# non-blocking messages in flight, Probe/Iprobe/Cancel; then one-sided
# put/get/accumulate/fetch-and-op/compare-and-swap through osc rdma. Every
# received byte is checked by the program.
# timeout: 500
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
need_cmd mpirun
use_our_component
prog=$OPENIB_TEST_TMP/mpi_patterns
build_mpi_program "$OPENIB_SRCDIR/tests/integration/mpi_patterns.c" "$prog"

out=$OPENIB_TEST_TMP/p2p.out
mpirun --allow-run-as-root --oversubscribe -np 4 "${MPI_OPENIB_ARGS[@]}" \
	--mca btl_openib_verbose 10 "$prog" storm alltoall many probe >"$out" 2>&1
rc=$?
show "$out"
[ "$rc" = 0 ] || fail "mpirun (4 ranks) exited with status $rc"
for p in storm alltoall many probe; do
	assert_grep "^PASS $p \\(4 ranks\\)" "$out" "$p"
done
# 4 ranks, everyone to everyone: 12 directed connections seen complete
assert_openib_carried "$out" 12 4 oob
[ "$(openib_stats_sum "$out" receives)" -ge 40000 ] || fail "fewer receives than the 10,000-message test alone needs"
ok "crossing-connect storm, all-to-all, 10,000 in flight, probe/cancel"

# The same with an eager-RDMA ring for every peer from its first message:
# 12 rings among 4 ranks, the storm and all-to-all through them, the
# 10,000 in flight overflowing them onto the queues; every byte checked.
out=$OPENIB_TEST_TMP/p2p-rings.out
mpirun --allow-run-as-root --oversubscribe -np 4 "${MPI_OPENIB_ARGS[@]}" \
	--mca btl_openib_eager_rdma_threshold 1 --mca btl_openib_verbose 10 \
	"$prog" storm alltoall many probe >"$out" 2>&1
rc=$?
show "$out"
[ "$rc" = 0 ] || fail "mpirun (4 ranks, rings for every peer) exited with status $rc"
for p in storm alltoall many probe; do
	assert_grep "^PASS $p \\(4 ranks\\)" "$out" "$p with rings"
done
rings=$(openib_stats_sum "$out" eager_rdma_rings)
esent=$(openib_stats_sum "$out" eager_rdma_sent)
[ "$rings" = 12 ] || fail "$rings eager-RDMA rings among 4 ranks (want 12)"
[ "$esent" -gt 0 ] && [ "$esent" = "$(openib_stats_sum "$out" eager_rdma_received)" ] ||
	fail "rings: $esent written, $(openib_stats_sum "$out" eager_rdma_received) taken"
ok "12 rings among 4 ranks: $esent messages written and taken, data verified"

out=$OPENIB_TEST_TMP/osc.out
mpirun --allow-run-as-root --oversubscribe -np 2 "${MPI_OPENIB_ARGS[@]}" --mca osc rdma \
	--mca btl_openib_verbose 10 "$prog" osc >"$out" 2>&1
rc=$?
show "$out"
[ "$rc" = 0 ] || fail "mpirun (osc rdma) exited with status $rc"
assert_grep '^PASS osc \(2 ranks\)' "$out" "one-sided through osc rdma over openib"
assert_grep 'openib: connected to rank' "$out" "osc rdma brought up openib connections"

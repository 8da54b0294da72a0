#!/bin/bash
# Derived datatypes over OUR openib (pml ob1, btl openib,self), every byte
# checked by dtype_matrix.c: contiguous, vector, negative-stride hvector,
# indexed, struct with gaps, resized, vector of structs; 0 B to 16 MiB
# across every protocol boundary (inline, eager-RDMA slot, eager limit,
# rendezvous, pipelined RDMA); Recv, Irecv, Mprobe/Mrecv, Sendrecv and
# receiving into (or sending from) a type with the same signature; with
# mpi_leave_pinned 0 and 1; then Alltoallv/Allgather on 4 ranks and osc/rdma
# put/get/accumulate on allocated and created windows. Gaps in receive
# buffers must stay untouched. The statistics prove openib carried it: the
# non-contiguous payload above the eager limit was packed by openib. Each
# mpirun is bounded (a hang guard: a broken packer can loop forever), so a
# hang still shows what was received until then.
# timeout: 900
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
need_cmd mpirun
use_our_component
prog=$OPENIB_TEST_TMP/dtype_matrix
build_mpi_program "$OPENIB_SRCDIR/tests/integration/dtype_matrix.c" "$prog"

# sum_noncontig LOG: the non-contiguous bytes above the eager limit the
# ranks sent to other ranks (each rank prints its own).
sum_noncontig() {
	sed -nE 's/^noncontig-large rank=[0-9]+ bytes=([0-9]+)$/\1/p' "$1" | awk '{ s += $1 } END { print s + 0 }'
}

# assert_packed LOG: openib packed at least all of that payload itself.
assert_packed() {
	local want got
	want=$(sum_noncontig "$1")
	got=$(openib_stats_sum "$1" packed_bytes)
	[ "$want" -gt 0 ] || fail "the program reports no non-contiguous payload above the eager limit"
	[ "$got" -ge "$want" ] || fail "openib packed $got non-contiguous bytes, the ranks sent $want above the eager limit"
	ok "openib packed $got non-contiguous bytes (>= $want sent above the eager limit)"
}

# mpi_leave_pinned 1 changes only the RDMA protocols of contiguous data:
# up to 1.1 MiB (past the 1 MiB pipeline send length) is enough there.
for lp in 0 1; do
	out=$OPENIB_TEST_TMP/p2p-lp$lp.out
	if [ $lp = 0 ]; then
		max=16777216 want='7 types x 13 sizes x 6 forms, 472 messages, 142892544 bytes verified'
	else
		max=1100000 want='7 types x 11 sizes x 6 forms, 462 messages, 75781741 bytes verified'
	fi
	start=$SECONDS
	timeout -k 10 400 "${MPIRUN[@]}" "${MPI_OPENIB_ARGS[@]}" --mca mpi_leave_pinned $lp \
		--mca btl_openib_verbose 10 "$prog" p2p $max >"$out" 2>&1
	rc=$?
	show "$out"
	note "p2p, mpi_leave_pinned $lp: $((SECONDS - start)) s"
	[ "$rc" = 0 ] || fail "mpirun (p2p, mpi_leave_pinned $lp) exited with status $rc"
	assert_grep "^dtype-matrix p2p: $want, 0 errors\$" "$out" "p2p matrix, mpi_leave_pinned $lp"
	ok "$(grep '^dtype-matrix p2p:' "$out") (mpi_leave_pinned $lp)"
	assert_openib_carried "$out" 2 2 oob
	assert_packed "$out"
	rdma=$(($(openib_stats_sum "$out" gets) + $(openib_stats_sum "$out" puts)))
	[ "$rdma" -gt 0 ] || fail "no RDMA rendezvous ran (mpi_leave_pinned $lp)"
	ok "contiguous data went by RDMA rendezvous ($rdma operations)"
done

out=$OPENIB_TEST_TMP/coll.out
start=$SECONDS
timeout -k 10 300 mpirun --allow-run-as-root --oversubscribe -np 4 "${MPI_OPENIB_ARGS[@]}" \
	--mca btl_openib_verbose 10 "$prog" coll >"$out" 2>&1
rc=$?
show "$out"
note "collectives: $((SECONDS - start)) s"
[ "$rc" = 0 ] || fail "mpirun (collectives, 4 ranks) exited with status $rc"
assert_grep '^dtype-matrix coll: 7 types x 3 sizes x 2 collectives \(alltoallv, allgather\) on 4 ranks, 32 operations, 19084640 bytes verified, 0 errors$' \
	"$out" "collectives matrix"
ok "$(grep '^dtype-matrix coll:' "$out")"
assert_openib_carried "$out" 12 4 oob
# The algorithms forward parts of receive buffers (twin receive types are
# contiguous), so not every derived-type byte leaves as one message: only
# require that openib packed non-contiguous data.
[ "$(openib_stats_sum "$out" packed_bytes)" -gt 0 ] || fail "openib packed no non-contiguous data in the collectives"
ok "openib packed $(openib_stats_sum "$out" packed_bytes) non-contiguous bytes in the collectives"

out=$OPENIB_TEST_TMP/osc.out
start=$SECONDS
timeout -k 10 300 "${MPIRUN[@]}" "${MPI_OPENIB_ARGS[@]}" --mca osc rdma --mca btl_openib_verbose 10 \
	"$prog" osc >"$out" 2>&1
rc=$?
show "$out"
note "osc: $((SECONDS - start)) s"
[ "$rc" = 0 ] || fail "mpirun (osc rdma) exited with status $rc"
assert_grep '^dtype-matrix osc: 7 types x 4 sizes x put/get/accumulate x win_allocate/win_create on 2 ranks, 120 operations, 6752136 bytes verified, 0 errors$' \
	"$out" "one-sided matrix"
ok "$(grep '^dtype-matrix osc:' "$out")"
rdma=$(($(openib_stats_sum "$out" gets) + $(openib_stats_sum "$out" puts)))
[ "$rdma" -gt 0 ] || fail "osc rdma made no RDMA operation over openib"
ok "osc rdma ran over openib ($rdma puts and gets)"

# Fragment order: 86 sizes of a nested type per round whose last, short
# fragment fits the eager-RDMA ring while the others take the shared queue
# (dtype_order.c). Delivered out of order, Open MPI's receive convertor
# would corrupt them or crash (2 of 258 were, before openib kept each
# peer's messages in order); with the default rings, and without.
order=$OPENIB_TEST_TMP/dtype_order
build_mpi_program "$OPENIB_SRCDIR/tests/integration/dtype_order.c" "$order"
for rings in 1 0; do
	out=$OPENIB_TEST_TMP/order-$rings.out
	timeout -k 10 300 "${MPIRUN[@]}" "${MPI_OPENIB_ARGS[@]}" --mca btl_openib_verbose 10 \
		--mca btl_openib_eager_rdma_num "$((rings * 16))" "$order" 3 >"$out" 2>&1
	rc=$?
	show "$out"
	[ "$rc" = 0 ] || fail "mpirun (fragment order, rings $rings) exited with status $rc"
	assert_grep '^dtype-order: 258 messages, [1-9][0-9]* bytes checked, 0 corrupted$' "$out" "fragment order (rings $rings)"
	if [ "$rings" = 1 ]; then
		[ "$(openib_stats_sum "$out" eager_rdma_received)" -gt 0 ] ||
			fail "fragment order: no message went through a ring"
	fi
	ok "$(grep '^dtype-order:' "$out") (rings $rings)"
done

#!/bin/bash
# openib over Soft-iWARP (siw0 only, so rdma_cm makes every connection):
#  - 4 ranks: the crossing-connect storm (everyone sends to everyone first
#    thing), an all-to-all with a non-contiguous datatype, 10,000 messages
#    in flight and probe/cancel, every byte checked by the program; 12
#    connections, all with rdma_cm, and rxe0 sent nothing. 4 ranks with
#    the default queues need the device table's CQ size on siw (its note
#    in btl_openib_device_defaults.c), and iWARP gets no eager-RDMA rings
#    from it: both asserted at verbose 10; a user's eager_rdma_num wins;
#  - the per-peer queues a device without SRQs gets by default;
#  - one-sided on a device without atomics: the BTL advertises none
#    (siw: ATOMIC_NONE), so osc rdma declines it and osc pt2pt carries
#    put/get/accumulate, MPI_Fetch_and_op and MPI_Compare_and_swap (exactly
#    one winner), verified on 4 ranks.
# devices: rxe,siw
# timeout: 900
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
. "$OPENIB_SRCDIR/tests/integration/cpc_lib.sh"
need_cmd mpirun
use_our_component
. "$OPENIB_SRCDIR/tests/integration/siw_lib.sh"
prog=$OPENIB_TEST_TMP/mpi_patterns
build_mpi_program "$OPENIB_SRCDIR/tests/integration/mpi_patterns.c" "$prog"

# patterns4 NAME "PATTERN..." [MPIRUN-ARGS...]: mpi_patterns on 4 ranks over
# siw alone (verbose 10), output in $out; each pattern must say PASS.
patterns4() {
	local name=$1 pats=$2 p rc
	shift 2
	out=$OPENIB_TEST_TMP/$name.out
	# shellcheck disable=SC2086 # $pats: one word per pattern
	timeout 700 mpirun --allow-run-as-root --oversubscribe -np 4 "${MPI_OPENIB_ARGS[@]}" "${SIW_ARGS[@]}" \
		--mca btl_openib_verbose 10 "$@" "$prog" $pats >"$out" 2>&1
	rc=$?
	show "$out"
	[ "$rc" = 0 ] || fail "$name: mpirun (4 ranks on $siw) exited with status $rc"
	for p in $pats; do
		assert_grep "^PASS $p \\(4 ranks\\)" "$out" "$name: $p"
	done
}

rxe_tx0=$(dev_counter "$rxe" sent_pkts)
patterns4 siw-p2p "storm alltoall many probe"
rxe_tx=$(($(dev_counter "$rxe" sent_pkts) - rxe_tx0))
assert_openib_carried "$out" 12 4 rdma_cm
[ "$(openib_stats_sum "$out" receives)" -ge 40000 ] || fail "fewer receives than the 10,000-message test alone needs"
n=$(count_lines "openib: $siw:1: Soft-iWARP \\(siw\\): btl_openib_cq_size 32768 from the device table" "$out")
[ "$n" = 4 ] || fail "the device table's siw entry applied in $n processes (want 4)"
n=$(count_lines "openib: $siw:1: iWARP: btl_openib_eager_rdma_num 0 from the device table \\(iWARP \\(DDP\\) may place" "$out")
[ "$n" = 4 ] || fail "the device table's iWARP entry (no eager-RDMA rings) applied in $n processes (want 4)"
n=$(count_lines "openib: $siw is iWARP, which has no receiver-not-ready retry, so a shared queue would lose connections: btl_openib_receive_queues P," "$out")
[ "$n" = 4 ] || fail "the per-peer queues for iWARP applied in $n processes (want 4)"
[ "$(openib_stats_sum "$out" eager_rdma_rings)" = 0 ] || fail "eager-RDMA rings made on iWARP"
[ "$rxe_tx" = 0 ] || fail "$rxe sent $rxe_tx packets: the traffic did not (only) go over $siw"
ok "4 ranks on $siw: storm, all-to-all, 10,000 in flight, probe/cancel; 12 connections by rdma_cm, no rings"

# The user's setting beats the table: rings for every peer from the first
# message (siw itself places a write's bytes in order), data verified.
patterns4 siw-rings "storm alltoall many" --mca btl_openib_eager_rdma_num 16 \
	--mca btl_openib_eager_rdma_threshold 1
grep -q "btl_openib_eager_rdma_num 0 from the device table" "$out" && fail "the table overrode the user's eager_rdma_num"
rings=$(openib_stats_sum "$out" eager_rdma_rings)
[ "$rings" = 12 ] || fail "$rings eager-RDMA rings among 4 ranks with eager_rdma_num 16 (want 12)"
ok "btl_openib_eager_rdma_num set by the user wins over the table: 12 rings on $siw, data verified"

# The queues a device without SRQs gets by default (all per peer; siw has
# SRQs, so they are asked for by name here, the same string as
# OPENIB_DEFAULT_RECEIVE_QUEUES_NO_SRQ): 4 ranks, data verified.
nosrq=$(sed -nE 's/^#define OPENIB_DEFAULT_RECEIVE_QUEUES_NO_SRQ "(.*)"$/\1/p' "$OPENIB_SRCDIR/mca/btl_openib_params.h")
[ -n "$nosrq" ] || fail "OPENIB_DEFAULT_RECEIVE_QUEUES_NO_SRQ not found in mca/btl_openib_params.h"
patterns4 siw-nosrq "storm alltoall many" --mca btl_openib_receive_queues "$nosrq"
assert_openib_carried "$out" 12 4 rdma_cm
ok "the no-SRQ default queues ($nosrq) on $siw: storm, all-to-all, 10,000 in flight verified"

# One-sided without atomics. The BTL advertises none on siw (ATOMIC_NONE).
# Open MPI 4.1.4's osc rdma needs BTL atomics, so it declines such a BTL;
# osc pt2pt carries one-sided over ob1 and openib instead (chosen here by
# name: by itself Open MPI picks osc sm on one node and osc ucx where UCX
# is installed, neither of which uses a BTL). 4 ranks: put/get/accumulate,
# MPI_Fetch_and_op and MPI_Compare_and_swap (exactly one winner) verified,
# and no verbs atomic posted.
patterns4 siw-osc osc --mca osc pt2pt
atomics=$(openib_stats_sum "$out" atomics)
[ "$atomics" = 0 ] || fail "$atomics verbs atomics posted on $siw, which has none"
assert_openib_carried "$out" 12 4 rdma_cm
ok "one-sided (osc pt2pt) on $siw (no atomics): fetch-and-op and compare-and-swap verified, 0 verbs atomics"

# osc rdma alone cannot serve a BTL without atomics: the window creation
# fails with Open MPI's error (no hang), proof that none were advertised.
# The error is a help text: a run where Open MPI lost it is repeated.
out=$OPENIB_TEST_TMP/siw-osc-rdma.out
for try in 1 2 3; do
	timeout 300 mpirun --allow-run-as-root --oversubscribe -np 2 "${MPI_OPENIB_ARGS[@]}" "${SIW_ARGS[@]}" \
		--mca osc rdma "$prog" osc >"$out" 2>&1
	rc=$?
	show "$out"
	[ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "osc rdma alone on $siw: status $rc (want a failure, not success or a hang)"
	grep -q 'MPI_ERR_WIN' "$out" && break
	help_lost "$out" || fail "osc rdma alone on $siw: no MPI_ERR_WIN, and no sign that Open MPI lost it"
	[ "$try" = 3 ] && fail "Open MPI lost the help text 3 times"
	note "Open MPI lost the help text (try $try); again"
done
ok "osc rdma alone on $siw: window refused (MPI_ERR_WIN), as Open MPI 4.1.4 needs BTL atomics for it"

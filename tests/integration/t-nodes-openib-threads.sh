#!/bin/bash
# MPI_THREAD_MULTIPLE over OUR openib across two nodes (issue 16), every
# byte checked by the programs: mt_stress with 4 threads per rank (own tags
# and communicators, MPI_ANY_SOURCE receive-first, Isend/Irecv storms with a
# strided vector, probes, osc/rdma put/get/atomics on a window per thread)
# for 60 s on 2 ranks, one per node, with rdma_cm, and on 4 ranks, two per
# node, with oob; then mt_connect_storm on 4 ranks, two per node (every
# thread of every rank sends to every other rank at once, with no traffic
# before), with each CPC. Each job: the node every rank ran on,
# MPI_THREAD_MULTIPLE provided, openib made every connection with the CPC
# named and carried the traffic.
# The bed's wires use a FIFO qdisc (tests/guest/stage2.sh): with the default
# fq_codel, and with the 67 ms ACK timeout openib used to default to, the
# emulated link dropped and spuriously retransmitted packets under this load
# and Soft-RoCE failed the retransmitted operations
# (tests/guest/rxe-loss-repro.sh), with no openib involved.
# nodes: 2
# timeout: 800
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
. "$OPENIB_SRCDIR/tests/integration/threads_lib.sh"
need_nodes 2
node1=${BED_NODES[0]} node2=${BED_NODES[1]}
need_cmd mpirun timeout
use_our_component
build_thread_programs

MPIRUN_T=(mpirun --allow-run-as-root --oversubscribe "${MPI_OPENIB_ARGS[@]}" --mca btl_openib_verbose 10)
# hang guard: 60 s of rounds, the watchdog's 120 s, start-up and teardown
stress() {
	local np=$1 hosts=$2 cpc=$3
	shift 3
	run_job "stress-$np-$cpc" 300 "${MPIRUN_T[@]}" -np "$np" --host "$hosts" \
		--mca btl_openib_cpc_include "$cpc" --mca osc rdma "$MT_STRESS" --seconds 60 --threads 4 \
		--watchdog 120 --backtrace
	check_mt_stress "$OUT" "$RC" "$np" 4 60
	assert_thread_hosts mt_stress "$OUT" "$@"
	assert_openib_carried "$OUT" $((np * (np - 1))) "$np" "$cpc"
	check_osc_over_openib "$OUT"
}
stress 2 "$node1,$node2" rdma_cm "$node1" "$node2"
stress 4 "$node1:2,$node2:2" oob "$node1" "$node1" "$node2" "$node2"

for cpc in oob rdma_cm; do
	run_job "storm-$cpc" 200 "${MPIRUN_T[@]}" -np 4 --host "$node1:2,$node2:2" \
		--mca btl_openib_cpc_include "$cpc" "$MT_CONNECT_STORM" --threads 4 --reps 4
	check_mt_connect_storm "$OUT" "$RC" 4 4 4
	assert_thread_hosts mt_connect_storm "$OUT" "$node1" "$node1" "$node2" "$node2"
	assert_openib_carried "$OUT" 12 4 "$cpc"
done

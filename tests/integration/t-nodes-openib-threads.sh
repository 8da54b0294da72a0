#!/bin/bash
# MPI_THREAD_MULTIPLE over OUR openib across two nodes (issue 16), every
# byte checked by the programs: mt_stress (2 threads per rank here: own tags and
# communicators, MPI_ANY_SOURCE receive-first, Isend/Irecv storms with a
# strided vector, probes, osc/rdma put/get/atomics on a window per thread)
# byte checked by the programs: mt_stress (2 threads per rank here: own tags and
# communicators, MPI_ANY_SOURCE receive-first, Isend/Irecv storms with a
# strided vector, probes, osc/rdma put/get/atomics on a window per thread)
# for 60 s on 2 ranks, one per node, with rdma_cm; then mt_connect_storm on
# 4 ranks, two per node (every thread of every rank sends to every other
# rank at once, with no traffic before), with each CPC. Each job: the node
# every rank ran on, MPI_THREAD_MULTIPLE provided, openib made every
# connection with the CPC named and carried the traffic.
# NOT HERE, because it fails: mt_stress with 4 threads per rank across the
# nodes (2 ranks: about 1 run in 5; 4 ranks two per node, 3 ranks, and 2
# ranks x 8 threads: nearly always), while 4 ranks x 4 threads on one node
# (t-openib-threads) and 1 or 2 threads per rank across the nodes pass.
# That load makes the emulated link between the two TCG guests drop packets
# (rxe's counters show retransmissions), and connections then fail with
# "local QP operation error" on a receive and "remote operation error",
# "remote invalid request" or "remote access error" at the sender. Raw
# ib_send_bw fails the same way with no openib and no MPI
# (tests/guest/rxe-loss-repro.sh): Soft-RoCE in Debian 12's 6.1 kernel
# mishandles retransmitted multi-packet operations. Some runs instead stop
# making progress on one connection with no error at all; that is not
# explained yet (rxe dropping a message for good would look like this, an
# openib bug too). Issue 16 stays open on it.
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
np=2 cpc=rdma_cm
# hang guard: 60 s of rounds, the watchdog's 120 s, start-up and teardown
run_job "stress-$np-$cpc" 300 "${MPIRUN_T[@]}" -np "$np" --host "$node1,$node2" \
	--mca btl_openib_cpc_include "$cpc" --mca osc rdma "$MT_STRESS" --seconds 60 --threads 2 --watchdog 120 --backtrace
check_mt_stress "$OUT" "$RC" "$np" 2 60
assert_thread_hosts mt_stress "$OUT" "$node1" "$node2"
assert_openib_carried "$OUT" 2 "$np" "$cpc"
check_osc_over_openib "$OUT"

for cpc in oob rdma_cm; do
	run_job "storm-$cpc" 200 "${MPIRUN_T[@]}" -np 4 --host "$node1:2,$node2:2" \
		--mca btl_openib_cpc_include "$cpc" "$MT_CONNECT_STORM" --threads 4 --reps 4
	check_mt_connect_storm "$OUT" "$RC" 4 4 4
	assert_thread_hosts mt_connect_storm "$OUT" "$node1" "$node1" "$node2" "$node2"
	assert_openib_carried "$OUT" 12 4 "$cpc"
done

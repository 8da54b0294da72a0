#!/bin/bash
# MPI_THREAD_MULTIPLE over OUR openib across two nodes (issue 16), every
# byte checked by the programs: mt_stress (4 threads per rank: own tags and
# communicators, MPI_ANY_SOURCE receive-first, Isend/Irecv storms with a
# strided vector, probes, osc/rdma put/get/atomics on a window per thread)
# for 60 s on 2 ranks (one per node) with rdma_cm and on 4 ranks (two per
# node) with oob; then mt_connect_storm on 4 ranks (every thread of every
# rank sends to every other rank at once, with no traffic before) with each
# CPC. Each job: the node every rank ran on, MPI_THREAD_MULTIPLE provided,
# openib made every connection with the CPC named and carried the traffic.
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
for spec in 2:rdma_cm 4:oob; do
	np=${spec%%:*} cpc=${spec#*:}
	if [ "$np" = 2 ]; then
		hosts=("$node1" "$node2") hostarg=$node1,$node2
	else
		hosts=("$node1" "$node1" "$node2" "$node2") hostarg=$node1:2,$node2:2
	fi
	# hang guard: 60 s of rounds, the watchdog's 120 s, start-up and teardown
	run_job "stress-$np-$cpc" 300 "${MPIRUN_T[@]}" -np "$np" --host "$hostarg" \
		--mca btl_openib_cpc_include "$cpc" --mca osc rdma "$MT_STRESS" --seconds 60 --threads 4 --watchdog 120 --backtrace
	check_mt_stress "$OUT" "$RC" "$np" 4 60
	assert_thread_hosts mt_stress "$OUT" "${hosts[@]}"
	assert_openib_carried "$OUT" $((np * (np - 1))) "$np" "$cpc"
	check_osc_over_openib "$OUT"
done

for cpc in oob rdma_cm; do
	run_job "storm-$cpc" 200 "${MPIRUN_T[@]}" -np 4 --host "$node1:2,$node2:2" \
		--mca btl_openib_cpc_include "$cpc" "$MT_CONNECT_STORM" --threads 4 --reps 4
	check_mt_connect_storm "$OUT" "$RC" 4 4 4
	assert_thread_hosts mt_connect_storm "$OUT" "$node1" "$node1" "$node2" "$node2"
	assert_openib_carried "$OUT" 12 4 "$cpc"
done

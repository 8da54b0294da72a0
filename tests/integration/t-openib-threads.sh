#!/bin/bash
# MPI_THREAD_MULTIPLE over OUR openib on one node (issue 16), every byte
# checked by the programs: mt_stress (4 threads per rank, each with its own
# tag and communicator: ring, MPI_ANY_SOURCE receive-first, Isend/Irecv
# storms of 0 B-256 KiB and a strided vector, probes, and osc/rdma put, get,
# fetch_and_op, compare_and_swap and accumulate on a window per thread) for
# 60 s on 2 ranks with the oob CPC and on 4 ranks with rdma_cm; then
# mt_connect_storm (no traffic before: every thread of every rank sends to
# every other rank at once, so connections are asked for from both sides by
# several threads together), on 4 ranks with each CPC. Each job: the level
# provided was MPI_THREAD_MULTIPLE, openib made the connections with the
# CPC named and carried the traffic (osc atomics included).
# timeout: 600
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
. "$OPENIB_SRCDIR/tests/integration/threads_lib.sh"
need_cmd mpirun timeout
use_our_component
build_thread_programs

MPIRUN_T=(mpirun --allow-run-as-root --oversubscribe "${MPI_OPENIB_ARGS[@]}" --mca btl_openib_verbose 10)
for spec in 2:oob 4:rdma_cm; do
	np=${spec%%:*} cpc=${spec#*:}
	# hang guard: 60 s of rounds, the watchdog's 120 s, start-up and teardown
	run_job "stress-$np-$cpc" 280 "${MPIRUN_T[@]}" -np "$np" --mca btl_openib_cpc_include "$cpc" \
		--mca osc rdma "$MT_STRESS" --seconds 60 --threads 4 --watchdog 120 --backtrace
	note_rxe_retries
	check_mt_stress "$OUT" "$RC" "$np" 4 60
	assert_openib_carried "$OUT" $((np * (np - 1))) "$np" "$cpc"
	check_osc_over_openib "$OUT"
done

for cpc in oob rdma_cm; do
	run_job "storm-$cpc" 200 "${MPIRUN_T[@]}" -np 4 --mca btl_openib_cpc_include "$cpc" \
		"$MT_CONNECT_STORM" --threads 4 --reps 4
	check_mt_connect_storm "$OUT" "$RC" 4 4 4
	assert_openib_carried "$OUT" 12 4 "$cpc"
done

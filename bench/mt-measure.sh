#!/bin/bash
# mt-measure.sh RESDIR: the measuring part of mt-bench.sh, run inside the
# Soft-RoCE guest (both ranks in one guest).  Runs OPENIB_MT_ROUNDS rounds;
# each round runs, back to back:
#   the single-thread comparison (when a "before" build is given): openib
#     before and after, MPI_THREAD_SINGLE, then MPI_THREAD_MULTIPLE with one
#     thread; latency and rate (mt_msgrate --tests rate,lat); the order of
#     before and after alternates from round to round, so that neither
#     always runs first.  "before" is also run under MPI_THREAD_MULTIPLE:
#     a component that declines it fails there in round 1, the report says
#     so, and later rounds do not ask it again.  Then the same two levels over TCP (ob1, btl
#     tcp,self): the share of Open MPI's own layers in what
#     MPI_THREAD_MULTIPLE costs.
#   the threaded table: for each N of OPENIB_MT_THREADS, openib (the "after"
#     build), UCX and TCP with N threads per rank.
# Writes into RESDIR, per run and round R:
#   st_CONFIG_LEVEL.rR.csv/.err/.status/.pkts  (CONFIG before|after|tcp,
#                                              LEVEL single|multiple)
#   mt_CONFIG_nN.rR.csv/.err/.status/.pkts     (CONFIG openib|ucx|tcp)
#   guest-elapsed   seconds this script took, by the guest's clock
# .csv is mt_msgrate's output; .pkts the packets this guest's rxe device sent
# and received during the run.
#
# Environment (set by mt-bench.sh): OPENIB_MT_BIN, OPENIB_MT_AFTER,
# OPENIB_MT_BEFORE (may be empty), OPENIB_MT_ONLY, OPENIB_MT_THREADS,
# OPENIB_MT_ROUNDS, OPENIB_MT_SAMPLES, OPENIB_MT_ITERS, OPENIB_MT_LAT_ITERS,
# OPENIB_MT_WARMUP, OPENIB_MT_STEP_TIMEOUT.

# shellcheck source-path=SCRIPTDIR
# shellcheck disable=SC2317 # the steps run through timed (progress.sh)
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
SRCDIR=$(cd "$HERE/.." && pwd -P)
PROG=mt-bench
RES=${1:?usage: mt-measure.sh RESDIR}
export OPENIB_LIB_NO_TMP=1
# shellcheck source=../tests/integration/lib.sh
. "$SRCDIR/tests/integration/lib.sh"
# shellcheck source=progress.sh
. "$HERE/progress.sh"

T_START=$EPOCHREALTIME
dev=$OPENIB_TEST_DEVICE
only=,${OPENIB_MT_ONLY:-openib,ucx,tcp},
rounds=${OPENIB_MT_ROUNDS:-2}
step_to=${OPENIB_MT_STEP_TIMEOUT:-300}
windows=${OPENIB_MT_ITERS:-60}
BENCH_ARGS=(--samples "${OPENIB_MT_SAMPLES:-8}" --lat-iters "${OPENIB_MT_LAT_ITERS:-300}"
	--warmup "${OPENIB_MT_WARMUP:-10}")
echo "$PROG: one guest ($(hostname), $(nproc) vCPUs), $dev $(dev_ipv4 "$dev"); $rounds round(s); results in $RES"

# per_thread N: windows per thread of a rate sample.  OPENIB_MT_ITERS
# windows per sample are shared among the threads, so that every sample
# moves the same number of messages whatever N is (the aggregate rate falls
# with N on the guest's 2 vCPUs: a fixed count per thread would make the
# runs with 4 threads the longest by far).
per_thread() { echo $((windows / $1 > 0 ? windows / $1 : 1)); }

# mtrun NAME COMPONENT-DIR MPIRUN-ARGS... -- MT_MSGRATE-ARGS...: one mpirun
# of mt_msgrate into RES/NAME.*; COMPONENT-DIR (may be empty: Open MPI's own
# components) holds the openib component to load.
mtrun() {
	local name=$1 comp=$2 c s0 r0 margs=()
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do margs+=("$1"); shift; done
	shift
	if [ -n "$comp" ]; then
		# mpirun passes OMPI_MCA_* of its environment to every rank.
		export OMPI_MCA_mca_base_component_path="$comp/.libs:$OMPI_SYSTEM_COMPONENT_DIR"
	else
		unset OMPI_MCA_mca_base_component_path
	fi
	s0=$(dev_counter "$dev" sent_pkts)
	r0=$(dev_counter "$dev" rcvd_pkts)
	timeout -k 10 "$step_to" "${MPIRUN[@]}" "${margs[@]}" "$OPENIB_MT_BIN" "${BENCH_ARGS[@]}" "$@" \
		>"$RES/$name.csv" 2>"$RES/$name.err"
	c=$?
	unset OMPI_MCA_mca_base_component_path
	echo "$dev sent $(($(dev_counter "$dev" sent_pkts) - s0)) received $(($(dev_counter "$dev" rcvd_pkts) - r0)) packets" >"$RES/$name.pkts"
	step_result "$RES" "$name" "$c" 8
}

# st CONFIG LEVEL: one single-thread comparison run; CONFIG before or after
# (openib), or tcp: the control, what MPI_THREAD_MULTIPLE costs in Open
# MPI's own layers (ob1, opal) with a BTL that did not change
st() {
	local dir=$OPENIB_MT_AFTER args=("${MPI_OPENIB_ARGS[@]}") what="openib $1"
	case $1 in
	before) dir=$OPENIB_MT_BEFORE ;;
	tcp) dir='' args=("${MPI_TCP_ARGS[@]}") what=TCP ;;
	esac
	timed "$r: $what, MPI_THREAD_${2^^}, 1 thread" \
		mtrun "st_$1_$2.r$ROUND" "$dir" "${args[@]}" -- --threads 1 --iters "$(per_thread 1)" --level "$2" --tests rate,lat
}

for ((ROUND = 1; ROUND <= rounds; ROUND++)); do
	r="round $ROUND/$rounds"
	if [ -n "${OPENIB_MT_BEFORE:-}" ]; then
		if ((ROUND % 2)); then order=(before after); else order=(after before); fi
		for b in "${order[@]}"; do st "$b" single; done
		for b in "${order[@]}"; do
			# a "before" that refused MULTIPLE in round 1 is not asked again
			[ "$b" = before ] && [ "$ROUND" != 1 ] &&
				[ "$(cat "$RES/st_before_multiple.r1.status" 2>/dev/null)" != 0 ] && continue
			st "$b" multiple
		done
		if [[ $only == *,tcp,* ]]; then
			st tcp single
			st tcp multiple
		fi
	fi
	for n in ${OPENIB_MT_THREADS//,/ }; do
		if [[ $only == *,openib,* ]]; then
			timed "$r: openib, $n thread(s)" mtrun "mt_openib_n$n.r$ROUND" "$OPENIB_MT_AFTER" \
				"${MPI_OPENIB_ARGS[@]}" -- --threads "$n" --iters "$(per_thread "$n")"
		fi
		if [[ $only == *,ucx,* ]]; then
			timed "$r: UCX, $n thread(s)" mtrun "mt_ucx_n$n.r$ROUND" '' "${MPI_UCX_ARGS[@]}" -- --threads "$n" --iters "$(per_thread "$n")"
		fi
		if [[ $only == *,tcp,* ]]; then
			timed "$r: TCP, $n thread(s)" mtrun "mt_tcp_n$n.r$ROUND" '' "${MPI_TCP_ARGS[@]}" -- --threads "$n" --iters "$(per_thread "$n")"
		fi
	done
done
secs_since "$T_START" >"$RES/guest-elapsed"
exit 0

# shellcheck shell=bash disable=SC2034 # variables here are read by the tests that source it
# Helpers for the MPI_THREAD_MULTIPLE tests (t-openib-threads, t-nodes-openib-threads,
# t-openib-mpi4py); source after lib.sh and openib_lib.sh.

# build_thread_programs: compile mt_stress and mt_connect_storm (-g: a hang
# the watchdog catches is shown with backtraces); sets
# MT_STRESS and MT_CONNECT_STORM to their paths.
build_thread_programs() {
	need_cmd mpicc
	local p pid pids=()
	# both at once: the guest has two vCPUs, and compiling is slow there
	for p in mt_stress mt_connect_storm; do
		mpicc -O2 -g -Wall -pthread -o "$OPENIB_TEST_TMP/$p" "$OPENIB_SRCDIR/tests/integration/$p.c" &
		pids+=($!)
	done
	for pid in "${pids[@]}"; do
		wait "$pid" || fail "mpicc of mt_stress.c or mt_connect_storm.c failed"
	done
	MT_STRESS=$OPENIB_TEST_TMP/mt_stress
	MT_CONNECT_STORM=$OPENIB_TEST_TMP/mt_connect_storm
}

# run_job NAME GUARD CMD...: run CMD under a hang guard of GUARD seconds,
# output in $OUT (shown in the test log with the time it took), status in $RC.
run_job() {
	local name=$1 guard=$2 t0=$SECONDS
	shift 2
	OUT=$OPENIB_TEST_TMP/$name.out
	timeout -k 10 "$guard" "$@" >"$OUT" 2>&1
	RC=$?
	show "$OUT"
	note "$name: status $RC after $((SECONDS - t0)) s"
}

# check_thread_job PROG LOG RC: the job exited 0 and PROG (its name in the
# output) was given MPI_THREAD_MULTIPLE and reported no error.
check_thread_job() {
	[ "$3" = 0 ] || fail "$1 in $(basename "$2"): mpirun exited with status $3"
	assert_grep "^$1: thread level provided MPI_THREAD_MULTIPLE" "$2" "$1: the thread level"
	if grep -E "^$1: rank [0-9]+ (thread|\\(|:)" "$2"; then
		fail "$1 in $(basename "$2"): errors reported (above)"
	fi
}

# check_mt_stress LOG RC NP THREADS SECONDS: mt_stress passed with these
# settings, having checked messages and bytes.
check_mt_stress() {
	local line
	check_thread_job mt_stress "$1" "$2"
	assert_grep "^mt_stress: PASSED ranks=$3 threads=$4 seconds=$5 msgs=[1-9][0-9]* bytes=[1-9][0-9]*\$" \
		"$1" "mt_stress ($3 ranks)"
	line=$(grep -E '^mt_stress: PASSED' "$1")
	ok "$line ($(sed -n 's/^mt_stress: detail //p' "$1"))"
}

# check_mt_connect_storm LOG RC NP THREADS REPS: every message of every
# repetition arrived and was checked (5 per thread and directed pair).
check_mt_connect_storm() {
	local want=$(($5 * $4 * $3 * ($3 - 1) * 5))
	check_thread_job mt_connect_storm "$1" "$2"
	assert_grep "^mt_connect_storm: PASSED ranks=$3 threads=$4 reps=$5 msgs=$want bytes=[1-9][0-9]*\$" \
		"$1" "mt_connect_storm ($3 ranks)"
	ok "$(grep -E '^mt_connect_storm: PASSED' "$1")"
}

# check_osc_over_openib LOG: mt_stress used both kinds of window, and
# osc/rdma's atomics, puts and gets went through openib.
check_osc_over_openib() {
	local a p g
	assert_grep '^mt_stress: detail .*, osc on MPI_Win_allocate and MPI_Win_create windows,' "$1" \
		"mt_stress: windows of both flavors"
	a=$(openib_stats_sum "$1" atomics)
	p=$(openib_stats_sum "$1" puts)
	g=$(openib_stats_sum "$1" gets)
	[ "$a" -gt 0 ] || fail "no atomic operation went through openib (osc rdma)"
	if [ "$p" = 0 ] || [ "$g" = 0 ]; then fail "puts $p, gets $g through openib"; fi
	ok "through openib: $a atomics, $p puts, $g gets"
}

# assert_thread_hosts PROG LOG NODE...: PROG's rank i ran on the i-th NODE
# (its "PROG: rank R of N on HOST" lines).
assert_thread_hosts() {
	local prog=$1 log=$2 r=0 n host
	shift 2
	n=$#
	for host in "$@"; do
		assert_grep "^$prog: rank $r of $n on $host\$" "$log" "$prog: rank $r on $host"
		r=$((r + 1))
	done
	ok "$prog: ranks 0-$((n - 1)) ran on $*"
}

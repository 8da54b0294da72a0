# shellcheck shell=bash disable=SC2034 # variables here are read by the tests that source it
# Helpers for the CPC selection tests (tests/integration/t-cpc-*.sh); source
# after lib.sh and openib_lib.sh.

# count_lines REGEX FILE: lines of FILE matching the ERE (0 when none)
count_lines() { grep -Ec -- "$1" "$2"; }

# leakcheck_shim: build the verbs leak check (LD_PRELOAD) once, print its path.
leakcheck_shim() {
	local shim=$OPENIB_TEST_TMP/verbs_leakcheck.so
	[ -f "$shim" ] || gcc -O2 -Wall -shared -fPIC -o "$shim" \
		"$OPENIB_SRCDIR/tests/integration/verbs_leakcheck.c" -ldl -libverbs >&2 ||
		fail "building the leak check"
	echo "$shim"
}

# assert_no_leaks LOG NRANKS: every process reported, with no verbs object
# and no rdma_cm event channel left (librdmacm's own device cache aside).
assert_no_leaks() {
	local n
	n=$(count_lines '^verbs-leakcheck .*created=' "$1")
	[ "$n" -ge "$2" ] || fail "the leak check reported for $n processes (want $2)"
	if grep '^verbs-leakcheck .*created=' "$1" |
		grep -Ev 'ctx=0 pd=0 cq=0 srq=0 qp=0 mr=0 created=[1-9][0-9]* rdmacm_cache=[0-9]+ rdma_cm_fds=0$'; then
		fail "verbs objects or rdma_cm event channels left at exit (above)"
	fi
	ok "no verbs object and no rdma_cm event channel left in $n processes"
}

# cpc_carries_everything CPC [NAME]: with btl_openib_cpc_include=NAME
# (default CPC), a 16 MiB verified ping-pong (leak-checked) and four ranks'
# crossing-connect storm plus all-to-all run, and CPC made every connection:
# exactly one per endpoint (2, then 12).
cpc_carries_everything() {
	local cpc=$1 name=${2:-$1} pp prog out rc n
	pp=$(pingpong_bin) || exit 1
	out=$OPENIB_TEST_TMP/pp-$cpc.out
	"${MPIRUN[@]}" "${MPI_OPENIB_ARGS[@]}" --mca btl_openib_cpc_include "$name" \
		--mca btl_openib_verbose 10 -x LD_PRELOAD="$(leakcheck_shim)" \
		"$pp" -n 2 -m 16777216 >"$out" 2>&1
	rc=$?
	show "$out"
	[ "$rc" = 0 ] || fail "ping-pong with cpc_include=$name: mpirun exited with status $rc"
	assert_grep '^pingpong: verification PASSED: [0-9]+ sizes \(0\.\.16777216 B\), 2 iterations, [1-9][0-9]* messages, [1-9][0-9]* bytes verified, 0 errors$' \
		"$out" "verified ping-pong up to 16 MiB"
	assert_openib_carried "$out" 2 2 "$cpc"
	n=$(count_lines 'openib: connected to rank' "$out")
	[ "$n" = 2 ] || fail "$n connection lines for 2 endpoints"
	assert_no_leaks "$out" 2

	prog=$OPENIB_TEST_TMP/mpi_patterns
	[ -x "$prog" ] || build_mpi_program "$OPENIB_SRCDIR/tests/integration/mpi_patterns.c" "$prog"
	out=$OPENIB_TEST_TMP/storm-$cpc.out
	mpirun --allow-run-as-root --oversubscribe -np 4 "${MPI_OPENIB_ARGS[@]}" \
		--mca btl_openib_cpc_include "$name" --mca btl_openib_verbose "${CPC_VERBOSE:-10}" \
		"$prog" storm alltoall >"$out" 2>&1
	rc=$?
	show "$out"
	[ "$rc" = 0 ] || fail "storm/alltoall with cpc_include=$name: mpirun exited with status $rc"
	assert_grep '^PASS storm \(4 ranks\)' "$out" "crossing-connect storm"
	assert_grep '^PASS alltoall \(4 ranks\)' "$out" "all-to-all"
	assert_openib_carried "$out" 12 4 "$cpc"
	n=$(count_lines 'openib: connected to rank' "$out")
	[ "$n" = 12 ] || fail "$n connection lines for 12 endpoints"
	STORM_LOG=$out
}

# run_select NAME ARGS...: a small 2-rank ping-pong with extra mpirun ARGS
# (btl_openib_verbose $RUN_VERBOSE, default 10), output in
# $OPENIB_TEST_TMP/NAME.out (RUN_OUT), status in RUN_RC, seconds in RUN_SECS.
run_select() {
	local name=$1 pp t0
	shift
	pp=$(pingpong_bin) || exit 1
	RUN_OUT=$OPENIB_TEST_TMP/$name.out
	t0=$SECONDS
	timeout 240 "${MPIRUN[@]}" "${MPI_OPENIB_ARGS[@]}" --mca btl_openib_verbose "${RUN_VERBOSE:-10}" "$@" \
		"$pp" -n 1 -m 65536 >"$RUN_OUT" 2>&1
	RUN_RC=$?
	RUN_SECS=$((SECONDS - t0))
	show "$RUN_OUT"
}

# assert_small_pingpong LOG: the small ping-pong of run_select verified
assert_small_pingpong() {
	assert_grep '^pingpong: verification PASSED: [0-9]+ sizes \(0\.\.65536 B\), 1 iterations, [1-9][0-9]* messages, [1-9][0-9]* bytes verified, 0 errors$' \
		"$1" "verified ping-pong"
}

# slow_peer NAME MODE BYTES [MPIRUN ARGS...]: cpc_slow_peer (rank 1 sends
# BYTES to rank 0 first thing) with rank 0 in MODE right after MPI_Init: a
# delay in seconds (computing outside MPI), "exit" or "stop". Output in
# $OPENIB_TEST_TMP/NAME.out (RUN_OUT), status in RUN_RC, seconds in
# RUN_SECS. A rank left stopped is killed afterwards, by the pid it printed.
slow_peer_bin() {
	local prog=$OPENIB_TEST_TMP/cpc_slow_peer
	[ -x "$prog" ] || build_mpi_program "$OPENIB_SRCDIR/tests/integration/cpc_slow_peer.c" "$prog"
	echo "$prog"
}
slow_peer() {
	local name=$1 mode=$2 bytes=$3 prog t0 pid
	shift 3
	prog=$(slow_peer_bin) || exit 1
	RUN_OUT=$OPENIB_TEST_TMP/$name.out
	t0=$SECONDS
	timeout 400 "${MPIRUN[@]}" "${MPI_OPENIB_ARGS[@]}" "$@" "$prog" "$mode" "$bytes" \
		>"$RUN_OUT" 2>&1
	RUN_RC=$?
	RUN_SECS=$((SECONDS - t0))
	for pid in $(sed -n 's/^slow-peer: rank 0 pid \([0-9]*\) stops$/\1/p' "$RUN_OUT"); do
		kill -KILL "$pid" 2>/dev/null
	done
}

# assert_peer_failed LOG CPC REASON WHAT: rank 1 gave up on rank 0 with
# CPC, for REASON (an ERE), in the CPC's log line and in the connect-failed
# help the user sees (unless Open MPI 4.1.4's help relay lost the text, an
# ORTE defect: t-cpc-select.sh says more), and the job did not succeed.
assert_peer_failed() {
	local log=$1 cpc=$2 reason=$3
	[ "$RUN_RC" != 0 ] || fail "$4: the job succeeded"
	[ "$RUN_RC" != 124 ] || fail "$4: the job hung until the test's guard ($RUN_SECS s)"
	assert_grep "openib: $cpc rank 0 .*: failed: $reason" "$log" "$4: the $cpc log line"
	if grep -q 'could not connect to rank 0' "$log"; then
		assert_grep "Reason: +$cpc: $reason" "$log" "$4: the reason in the help"
	else
		assert_grep 'ORTE_ERROR_LOG: .*show_help.c' "$log" \
			"$4: the help, or a sign that Open MPI lost it"
		note "$4: Open MPI lost the connect-failed help text (ORTE show_help relay)"
	fi
}

#!/bin/bash
# ThreadSanitizer over openib with threads (issue 16's TSan job; run by
# `make check-tsan`, not by `make check`): the stress program mt_stress at a
# reduced size (2 ranks, 2 threads each, 10 s, MPI_THREAD_MULTIPLE, every
# byte checked) over --mca btl openib,self, once with each CPC, the ranks
# running a ThreadSanitizer build of our component (tests/tsan-build.sh,
# made by run-all). Any TSan report fails the test: one with a frame in
# openib-ng's code is a bug of ours; one entirely inside Open MPI,
# libibverbs or the rxe provider must be suppressed in tests/tsan.supp with
# a comment saying why it is not ours. A canary program with a deliberate
# race runs first, so that a machinery that reports nothing (libtsan not
# loaded, options not read, logs elsewhere) cannot pass for a clean run.
#
# Settings the TSan runs need (tests/tsan.supp says more):
# - mpi_leave_pinned 0. TSan replaces malloc with its own allocator, which
#   returns memory to the kernel with raw munmap/madvise system calls that
#   Open MPI's memory hooks never see; a registration kept for reuse then
#   outlives its pages, and RDMA reads old or zeroed memory (mt_stress
#   found 256 KiB and 32 KiB messages wrong in every run with it, and ranks
#   crashed; none without it, and none without TSan).
# - Open MPI's memory hooks: the runs set btl_openib_hmem_cuda=never, so our
#   memory-type cache does not register a release callback. Open MPI's
#   memory patcher runs the callbacks inside libc's munmap/madvise, in any
#   thread, and glibc calls madvise on a thread's stack as the thread exits,
#   after TSan has let go of the thread: our instrumented callback then
#   crashed the ranks (SIGSEGV at exit) or hung them (futex wait) in every
#   run with it, and never without it. gdb shows the crash: TSan's
#   MutexPreLock, from pthread_mutex_lock in openib_hmem_cache_release <-
#   hmem_release_cb <- opal_mem_hooks_release_hook <- glibc's
#   advise_stack_range in start_thread, in a thread marked "Exiting". So the memory-type cache of host
#   ranges, and registrations reused across messages, are not exercised
#   under TSan; registration itself is (every rendezvous registers).
# tsan: yes
# timeout: 1000
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
. "$OPENIB_SRCDIR/tests/integration/tsan_lib.sh"
need_cmd mpirun mpicc gcc timeout

supp=$OPENIB_SRCDIR/tests/tsan.supp
tsan_supp_check "$supp" || fail "tests/tsan.supp breaks its rules (above)"
ok "tests/tsan.supp: $(grep -Ecv '^(#|[[:space:]]*$)' "$supp") suppression(s), each explained, none naming our code"
tsan_setup

# --- the canary: a known race must be reported from both ranks -------------
canary=$OPENIB_TEST_TMP/tsan_canary
gcc -O1 -g -fsanitize=thread -Wall -o "$canary" "$OPENIB_SRCDIR/tests/integration/tsan_canary.c" -pthread ||
	fail "building the canary"
out=$OPENIB_TEST_TMP/canary.out
timeout -k 10 180 "${MPIRUN[@]}" "$TSAN_RANK" "$canary" >"$out" 2>&1
rc=$?
show "$out"
[ "$rc" = 0 ] || fail "mpirun (canary) exited with status $rc"
[ "$(grep -c '^tsan_canary: counter' "$out")" = 2 ] || fail "the canary did not run in 2 ranks"
tsan_scan 'tsan_canary\.c:[0-9]+' canary 'the canary'
[ "$TSAN_OURS" = 2 ] && [ "$TSAN_ELSEWHERE" = 0 ] ||
	fail "the canary's race was reported $TSAN_OURS time(s) (want 2, one per rank) and $TSAN_ELSEWHERE other report(s): the TSan machinery does not work, so the runs below could not fail"
ok "canary: ThreadSanitizer reported the deliberate race in both ranks, through the wrapper and the logs"

# --- mt_stress under TSan, with each CPC --------------------------------------
[ -f "$OPENIB_SRCDIR/tests/integration/mt_stress.c" ] ||
	fail "tests/integration/mt_stress.c does not exist (issue 16's stress program)"
prog=$OPENIB_TEST_TMP/mt_stress
build_mpi_program "$OPENIB_SRCDIR/tests/integration/mt_stress.c" "$prog"
# Both CPCs run even when the first fails: each has its own thread.
problems=()
for cpc in oob rdma_cm; do
	out=$OPENIB_TEST_TMP/mt_stress-$cpc.out
	# the program's own watchdog (180 s without progress) comes first
	timeout -k 10 420 "${MPIRUN[@]}" "${MPI_OPENIB_ARGS[@]}" --mca btl_openib_cpc_include "$cpc" \
		--mca btl_openib_verbose 10 --mca btl_openib_hmem_cuda never --mca mpi_leave_pinned 0 \
		"$TSAN_RANK" "$prog" --seconds 10 --threads 2 >"$out" 2>&1
	rc=$?
	show "$out"
	tsan_scan "$TSAN_OURS_RE" "mt_stress-$cpc"
	n=${#problems[@]}
	[ "$TSAN_OURS" = 0 ] ||
		problems+=("$cpc: ThreadSanitizer: $TSAN_OURS report(s) in openib-ng's code (above)")
	[ "$TSAN_ELSEWHERE" = 0 ] ||
		problems+=("$cpc: ThreadSanitizer: $TSAN_ELSEWHERE report(s) outside openib-ng's code (above): if one lies entirely inside Open MPI, libibverbs or the rxe provider, suppress it in tests/tsan.supp with a comment saying why it is not ours")
	[ "$rc" = 0 ] || problems+=("$cpc: mpirun (mt_stress) exited with status $rc")
	(assert_grep '^mt_stress: PASSED ranks=2 threads=2 seconds=[0-9]+ msgs=[1-9][0-9]* bytes=[1-9][0-9]*' \
		"$out" "mt_stress under TSan, $cpc") || problems+=("$cpc: mt_stress did not pass (above)")
	(assert_openib_carried "$out" 2 2 "$cpc") || problems+=("$cpc: openib did not carry the traffic (above)")
	[ "${#problems[@]}" != "$n" ] || ok "$cpc: mt_stress passed over openib under ThreadSanitizer, no report"
done
[ "${#problems[@]}" = 0 ] || {
	printf 'FAIL: %s\n' "${problems[@]}" >&2
	fail "${#problems[@]} problem(s) (above)"
}

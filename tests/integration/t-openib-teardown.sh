#!/bin/bash
# Teardown with traffic in flight: 4 ranks warm up (connections and
# eager-RDMA rings everywhere), send bursts of inline, ring, eager and
# RDMA-rendezvous messages on a communicator freed while they are pending,
# do a one-sided round, and finalize straight after a last burst, so
# unreaped sends, ring writes, credit returns and the rendezvous' control
# messages are still queued when the endpoints are closed. Every byte is
# checked (teardown_inflight.c). Run under the verbs leak check, then with
# an AddressSanitizer build of the component (a completion that outlived
# its endpoint would be a use after free), with each CPC.
# asan: yes
# timeout: 600
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
need_cmd mpirun gcc timeout
use_our_component
prog=$OPENIB_TEST_TMP/teardown_inflight
build_mpi_program "$OPENIB_SRCDIR/tests/integration/teardown_inflight.c" "$prog"
shim=$OPENIB_TEST_TMP/verbs_leakcheck.so
gcc -O2 -Wall -shared -fPIC -o "$shim" "$OPENIB_SRCDIR/tests/integration/verbs_leakcheck.c" -ldl -libverbs ||
	fail "building the leak check"

# check_clean LOG WHAT: the run verified its data, and no connection was
# lost and no completion failed on the way out
check_clean() {
	assert_grep '^teardown: PASSED 4 ranks, [1-9][0-9]* bytes verified, 0 errors$' "$1" "$2: verification"
	if grep -Eq 'lost its connection|could not connect|completion error|refused an' "$1"; then
		fail "$2: an error on the way out (above)"
	fi
}

out=$OPENIB_TEST_TMP/leak.out
timeout -k 10 240 mpirun --allow-run-as-root --oversubscribe -np 4 "${MPI_OPENIB_ARGS[@]}" \
	--mca btl_openib_verbose 10 -x LD_PRELOAD="$shim" "$prog" >"$out" 2>&1
rc=$?
show "$out"
[ "$rc" = 0 ] || fail "mpirun (leak check) exited with status $rc"
check_clean "$out" "leak check"
assert_openib_carried "$out" 12 4 oob
[ "$(openib_stats_sum "$out" eager_rdma_rings)" -ge 12 ] || fail "fewer than 12 eager-RDMA rings: the ring path did not run"
[ "$(openib_stats_sum "$out" gets)" -gt 0 ] || fail "no RDMA get: the rendezvous did not run"
n=$(grep -c '^verbs-leakcheck ' "$out")
[ "$n" = 4 ] || fail "the leak check reported for $n processes (want 4)"
if grep '^verbs-leakcheck ' "$out" | grep -Ev 'ctx=0 pd=0 cq=0 srq=0 qp=0 mr=0 created=[1-9]'; then
	fail "verbs objects left at exit (above)"
fi
ok "leak check: data verified, no verbs object left in 4 processes, nothing reported lost"

# The AddressSanitizer build (tests/asan-build.sh, made by run-all). Leaks
# are the verbs leak check's job (Open MPI's own would drown ours); a small
# quarantine keeps four instrumented processes within the guest's memory.
asan_so=${OPENIB_ASAN_BUILDDIR:-}/.libs/mca_btl_openib.so
[ -n "${OPENIB_ASAN_BUILDDIR:-}" ] && [ -f "$asan_so" ] ||
	fail "no AddressSanitizer build (OPENIB_ASAN_BUILDDIR=${OPENIB_ASAN_BUILDDIR:-unset}; run-all makes it with tests/asan-build.sh)"
libasan=$(ldd "$asan_so" | awk '/libasan/ { print $3 }')
[ -f "$libasan" ] || fail "cannot find the libasan that $asan_so needs"
for cpc in oob rdma_cm; do
	out=$OPENIB_TEST_TMP/asan-$cpc.out
	OMPI_MCA_mca_base_component_path="$OPENIB_ASAN_BUILDDIR/.libs:$OMPI_SYSTEM_COMPONENT_DIR" \
		timeout -k 10 240 mpirun --allow-run-as-root --oversubscribe -np 4 "${MPI_OPENIB_ARGS[@]}" \
		--mca btl_openib_cpc_include "$cpc" --mca btl_openib_verbose 10 \
		-x LD_PRELOAD="$libasan" -x ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:quarantine_size_mb=16:malloc_context_size=8 \
		"$prog" >"$out" 2>&1
	rc=$?
	show "$out"
	if grep -q 'ERROR: AddressSanitizer' "$out"; then
		fail "AddressSanitizer ($cpc): a memory error (above)"
	fi
	[ "$rc" = 0 ] || fail "mpirun (AddressSanitizer, $cpc) exited with status $rc"
	check_clean "$out" "AddressSanitizer, $cpc"
	assert_openib_carried "$out" 12 4 "$cpc"
	ok "AddressSanitizer, $cpc: data verified, no memory error, nothing reported lost"
done

#!/bin/bash
# MPI ping-pong (0 B .. 4 MiB, every byte verified) with pml ob1 and btl tcp.
# Also checks that the verifier catches a corrupted byte (pingpong -x).
# timeout: 300
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
need_cmd mpirun
pp=$(pingpong_bin) || exit 1
iters=3
out=$OPENIB_TEST_TMP/pingpong.out
"${MPIRUN[@]}" "${MPI_TCP_ARGS[@]}" "$pp" -n "$iters" >"$out" 2>&1
rc=$?
show "$out"
[ "$rc" = 0 ] || fail "mpirun exited with status $rc"
check_pingpong "$out" "$iters"

# Self-test of the verifier: one corrupted byte must be reported.
bad=$OPENIB_TEST_TMP/corrupt.out
"${MPIRUN[@]}" "${MPI_TCP_ARGS[@]}" "$pp" -n 1 -m 65536 -x >"$bad" 2>&1
rc=$?
show "$bad"
[ "$rc" != 0 ] || fail "pingpong -x (corrupted byte) exited with status 0"
assert_grep '^pingpong: verification FAILED: .* 1 errors$' "$bad" "corruption detected"
ok "the verifier detects a corrupted byte"

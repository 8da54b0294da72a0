#!/bin/bash
# Ping-pong over OUR openib (pml ob1, btl openib,self) from 0 B to 16 MiB,
# powers of two and odd sizes, every byte verified: eager sends, send/recv
# fragments and the RDMA (get) rendezvous all run. The verbose log proves
# openib carried the bytes and that the oob CPC made the connection.
# timeout: 400
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
need_cmd mpirun
use_our_component
pp=$(pingpong_bin) || exit 1
out=$OPENIB_TEST_TMP/pp.out
"${MPIRUN[@]}" "${MPI_OPENIB_ARGS[@]}" --mca btl_openib_verbose 10 "$pp" -n 2 -m 16777216 >"$out" 2>&1
rc=$?
show "$out"
[ "$rc" = 0 ] || fail "mpirun exited with status $rc"
assert_grep '^pingpong: verification PASSED: [0-9]+ sizes \(0\.\.16777216 B\), 2 iterations, [1-9][0-9]* messages, [1-9][0-9]* bytes verified, 0 errors$' "$out" "verification up to 16 MiB"
assert_openib_carried "$out" 2 oob
gets=$(openib_stats_sum "$out" gets)
[ "$gets" -gt 0 ] || fail "no RDMA get: the rendezvous path did not run"
ok "RDMA rendezvous ran ($gets gets)"
sent=$(openib_stats_sum "$out" sends)
[ "$sent" -gt 100 ] || fail "only $sent sends over openib"
ok "$sent sends over openib"

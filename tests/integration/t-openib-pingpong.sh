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
pkts0=$(dev_counter "$OPENIB_TEST_DEVICE" sent_pkts)
"${MPIRUN[@]}" "${MPI_OPENIB_ARGS[@]}" --mca btl_openib_verbose 10 "$pp" -n 2 -m 16777216 >"$out" 2>&1
rc=$?
pkts=$(( $(dev_counter "$OPENIB_TEST_DEVICE" sent_pkts) - pkts0 ))
show "$out"
[ "$rc" = 0 ] || fail "mpirun exited with status $rc"
assert_grep '^pingpong: verification PASSED: [0-9]+ sizes \(0\.\.16777216 B\), 2 iterations, [1-9][0-9]* messages, [1-9][0-9]* bytes verified, 0 errors$' "$out" "verification up to 16 MiB"
assert_openib_carried "$out" 2 2 oob
gets=$(openib_stats_sum "$out" gets)
[ "$gets" -gt 0 ] || fail "no RDMA get: the rendezvous path did not run"
ok "RDMA rendezvous ran ($gets gets)"
sent=$(openib_stats_sum "$out" sends)
[ "$sent" -gt 100 ] || fail "only $sent sends over openib"
ok "$sent sends over openib"
# Small messages moved to eager-RDMA rings once each rank had heard from the
# other: both rings offered, and every message written into one was taken.
ering=$(openib_stats_sum "$out" eager_rdma_rings)
esent=$(openib_stats_sum "$out" eager_rdma_sent)
erecv=$(openib_stats_sum "$out" eager_rdma_received)
[ "$ering" = 2 ] || fail "$ering eager-RDMA rings (want one per direction)"
[ "$esent" -gt 0 ] && [ "$esent" = "$erecv" ] || fail "eager RDMA: $esent written, $erecv taken"
efrag=$(openib_stats_sum "$out" eager_rdma_from_frags)
# both ways in: inline from the caller's memory (small) and from a
# registered fragment (too large to go inline, or ob1's control messages)
[ "$efrag" -gt 0 ] && [ "$efrag" -lt "$esent" ] || fail "eager RDMA: $efrag of $esent from fragments (want some, not all)"
ok "eager RDMA: 2 rings, $esent messages written and taken ($efrag from fragments)"
# 2 x 2 x 16 MiB alone is 65536 packets at rxe's 1 KiB MTU
[ "$pkts" -ge 65536 ] || fail "only $pkts packets left $OPENIB_TEST_DEVICE"
ok "$pkts packets went through $OPENIB_TEST_DEVICE"

# Without RDMA (btl_openib_flags send,inplace) large messages go as send
# fragments; contiguous ones are sent in place (user buffer as a second SGE,
# no copy): the same verification must hold and the in-place path must run.
out=$OPENIB_TEST_TMP/pp-send.out
"${MPIRUN[@]}" "${MPI_OPENIB_ARGS[@]}" --mca btl_openib_flags send,inplace --mca btl_openib_verbose 10 \
	"$pp" -n 1 -m 4194304 >"$out" 2>&1
rc=$?
show "$out"
[ "$rc" = 0 ] || fail "mpirun (send-only) exited with status $rc"
assert_grep '^pingpong: verification PASSED: [0-9]+ sizes \(0\.\.4194304 B\), 1 iterations, [1-9][0-9]* messages, [1-9][0-9]* bytes verified, 0 errors$' "$out" "send-only verification up to 4 MiB"
inplace=$(grep -E 'openib: [^ ]+ statistics:' "$out" | sed -E 's/.* ([0-9]+) in place.*/\1/' | awk '{ s += $1 } END { print s + 0 }')
[ "$inplace" -gt 0 ] || fail "no fragment was sent in place"
[ "$(openib_stats_sum "$out" gets)" = 0 ] || fail "RDMA was used although btl_openib_flags excluded it"
ok "$inplace fragments sent in place (zero-copy), data verified"

# Eager RDMA under pressure: 2-slot rings from the first message, so the
# ring wraps every other message and the sender waits for slot credits or
# falls back to the queues; the data must still verify. And with rings off
# (eager_rdma_num 0) no message may take one.
out=$OPENIB_TEST_TMP/pp-ring.out
"${MPIRUN[@]}" "${MPI_OPENIB_ARGS[@]}" --mca btl_openib_eager_rdma_slots 2 --mca btl_openib_eager_rdma_threshold 1 \
	--mca btl_openib_verbose 10 "$pp" -n 8 -m 65536 >"$out" 2>&1
rc=$?
show "$out"
[ "$rc" = 0 ] || fail "mpirun (2-slot rings) exited with status $rc"
assert_grep '^pingpong: verification PASSED: .* 8 iterations, .* 0 errors$' "$out" "2-slot rings: verification"
esent=$(openib_stats_sum "$out" eager_rdma_sent)
[ "$esent" -gt 100 ] && [ "$esent" = "$(openib_stats_sum "$out" eager_rdma_received)" ] ||
	fail "2-slot rings: $esent written, $(openib_stats_sum "$out" eager_rdma_received) taken"
ok "2-slot rings: $esent messages through wrapping rings, data verified"
out=$OPENIB_TEST_TMP/pp-noring.out
"${MPIRUN[@]}" "${MPI_OPENIB_ARGS[@]}" --mca btl_openib_eager_rdma_num 0 --mca btl_openib_verbose 10 \
	"$pp" -n 1 -m 65536 >"$out" 2>&1
rc=$?
show "$out"
[ "$rc" = 0 ] || fail "mpirun (no rings) exited with status $rc"
assert_grep '^pingpong: verification PASSED' "$out" "no rings: verification"
[ "$(openib_stats_sum "$out" eager_rdma_sent)" = 0 ] && [ "$(openib_stats_sum "$out" eager_rdma_rings)" = 0 ] ||
	fail "eager_rdma_num 0 still used a ring"
ok "eager_rdma_num 0: no ring, data verified"

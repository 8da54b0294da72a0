#!/bin/bash
# rdma_cm when the peer does not answer from MPI (rank 1 connects to rank 0
# right after MPI_Init, cpc_slow_peer.c):
#  - busy: rank 0 computes 7 s outside MPI, longer than a step (3.3 s of a
#    20 s timeout): its listener thread answers each request "busy", rank 1
#    asks again (no failed attempt, no deadline while answered), and once
#    rank 0 is in MPI it accepts a request and the data arrives both ways;
#  - stopped: rank 0 is stopped (SIGSTOP), alive for its kernel but silent
#    for everything else: rank 1 gives up when the 6 s timeout of silence
#    runs out, with the message naming it, and the job ends;
#  - exited: rank 0 exits without MPI_Finalize (the job goes on, by
#    orte_allowed_exit_without_sync): its listener is gone, the kernel
#    refuses the request, and rank 1 fails at once, saying the peer exited.
# t-cpc-busy-peer.sh has the long (120 s) busy peer.
# timeout: 300
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
. "$OPENIB_SRCDIR/tests/integration/cpc_lib.sh"
need_cmd mpirun mpicc
use_our_component

RCM=(--mca btl_openib_cpc_include rdma_cm --mca btl_openib_verbose 100)
brief() { grep -E 'rdma_cm rank|PASS|FAIL|connected to|Reason|rror' "$RUN_OUT" | cut -c1-240; }

slow_peer busy 7 65536 "${RCM[@]}" --mca btl_openib_connect_rdma_cm_timeout 20
brief
[ "$RUN_RC" = 0 ] || fail "busy peer: mpirun exited with status $RUN_RC"
assert_grep '^PASS slow-peer \(rank 0 slept 7 s, 65536 bytes verified\)' "$RUN_OUT" \
	"rank 0 got every byte"
assert_grep '^PASS slow-peer reply \(65536 bytes verified\)' "$RUN_OUT" "rank 1 got every byte back"
assert_grep 'openib: rdma_cm rank 0 .*: attempt [0-9]+: the peer is alive but its process is not in MPI \(busy answer 1 from its listener thread\)' \
	"$RUN_OUT" "rank 0's listener thread answered busy"
assert_grep 'openib: rdma_cm rank 0 .*: connected \(initiator, [2-9][0-9]* attempt' "$RUN_OUT" \
	"connected on a later attempt"
if grep -Eq 'failed: |gave up' "$RUN_OUT"; then
	fail "busy peer: a connection failed or gave up"
fi
assert_openib_carried "$RUN_OUT" 2 2 rdma_cm
ok "busy: connected after $(grep -Eo 'initiator, [0-9]+ attempt' "$RUN_OUT" | grep -Eo '[0-9]+') attempts, the first ones answered busy; 64 KiB verified both ways"

slow_peer stopped stop 4 "${RCM[@]}" --mca btl_openib_connect_rdma_cm_timeout 6
brief
assert_peer_failed "$RUN_OUT" rdma_cm \
	'no answer at all within 6 s \(btl_openib_connect_rdma_cm_timeout\)' "stopped peer"
assert_grep 'attempt [0-9]+: no answer within 1000 ms while request sent; retrying' "$RUN_OUT" \
	"1 s steps retried"
ok "stopped: rank 1 gave up after 6 s of silence; the job ended in $RUN_SECS s (status $RUN_RC)"

slow_peer exited exit 4 "${RCM[@]}" --mca orte_allowed_exit_without_sync 1
brief
assert_peer_failed "$RUN_OUT" rdma_cm \
	"nothing listens at the peer's rdma_cm address any more \(IB CM reject reason 8, invalid service ID\): the peer process has exited" \
	"exited peer"
if grep -q 'no answer at all within' "$RUN_OUT"; then
	fail "exited peer: reported as a timeout, not as gone"
fi
ok "exited: rank 1 failed at once, the peer's listener gone; the job ended in $RUN_SECS s (status $RUN_RC)"

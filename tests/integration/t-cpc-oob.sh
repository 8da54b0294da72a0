#!/bin/bash
# The oob CPC alone (btl_openib_cpc_include=oob): a 16 MiB verified
# ping-pong with no verbs object left at exit, then four ranks' crossing-
# connect storm and all-to-all; the verbose log shows oob made every
# connection, exactly one per endpoint. Then a peer that never answers
# (cpc_slow_peer.c, rank 1 connecting to rank 0 right after MPI_Init):
#  - stopped (SIGSTOP: its kernel accepts the TCP connection, its
#    side-channel thread answers nothing): rank 1 gives up when the 6 s
#    timeout of silence runs out, with the message naming it;
#  - exited without MPI_Finalize (the job goes on, by
#    orte_allowed_exit_without_sync): every published address refuses the
#    connection and rank 1 fails at once, saying the peer exited.
# (t-cpc-busy-peer.sh: a peer computing outside MPI is waited for.)
# timeout: 600
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
. "$OPENIB_SRCDIR/tests/integration/cpc_lib.sh"
need_cmd mpirun mpicc gcc
use_our_component
cpc_carries_everything oob
ok "oob alone carried the 16 MiB ping-pong and the 4-rank storm and all-to-all"

OOB=(--mca btl_openib_cpc_include oob --mca btl_openib_verbose 100)
brief() { grep -E 'oob rank|PASS|FAIL|connected to|Reason|rror' "$RUN_OUT" | cut -c1-240; }

slow_peer oob-stopped stop 4 "${OOB[@]}" --mca btl_openib_connect_oob_timeout 6
brief
assert_peer_failed "$RUN_OUT" oob \
	"no answer at all within 6 s \(btl_openib_connect_oob_timeout\), not even from the peer's side-channel thread" \
	"stopped peer"
ok "stopped: rank 1 gave up after 6 s of silence; the job ended in $RUN_SECS s (status $RUN_RC)"

slow_peer oob-exited exit 4 "${OOB[@]}" --mca orte_allowed_exit_without_sync 1
brief
assert_peer_failed "$RUN_OUT" oob \
	'connection refused at every address the peer published: the peer process has exited' \
	"exited peer"
if grep -q 'no answer at all within' "$RUN_OUT"; then
	fail "exited peer: reported as a timeout, not as gone"
fi
ok "exited: rank 1 failed at once, the peer's listener gone; the job ended in $RUN_SECS s (status $RUN_RC)"

#!/bin/bash
# The rdma_cm CPC alone: a 16 MiB verified ping-pong (btl_openib_cpc_include
# =rdma_cm) with no verbs object, cm_id or event channel left at exit, then
# four ranks' crossing-connect storm and all-to-all (named by its alias,
# rdmacm). The verbose log shows rdma_cm made every connection, and its
# handshake lines show crossing connects ended in exactly one handshake per
# pair: of the 12 endpoints, 6 completed as initiator and 6 as responder.
# Last, eight shared receive queues and no per-peer one: the initiator's QP
# data no longer fits two REQs and goes in three (each chunk carries a nonce
# and a MAC: wire/rdma_cm_wire.c). No honest request or reply is refused.
# timeout: 500
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
. "$OPENIB_SRCDIR/tests/integration/cpc_lib.sh"
need_cmd mpirun mpicc gcc
use_our_component
CPC_VERBOSE=100 cpc_carries_everything rdma_cm rdmacm
ini=$(count_lines 'openib: rdma_cm rank [0-9]+ .*: connected \(initiator' "$STORM_LOG")
rsp=$(count_lines 'openib: rdma_cm rank [0-9]+ .*: connected \(responder' "$STORM_LOG")
[ "$ini" = 6 ] && [ "$rsp" = 6 ] ||
	fail "handshakes: $ini completed as initiator, $rsp as responder (want 6 and 6: one per pair)"
cross=$(count_lines 'openib: rdma_cm .*crossing connects: we keep initiating' "$STORM_LOG")
retries=$(count_lines 'openib: rdma_cm .*: attempt [0-9]+: .*; retrying' "$STORM_LOG")
ok "one handshake per pair: 6 initiators, 6 responders ($cross request(s) refused as crossing, $retries attempt(s) retried)"

rq=S,128,64:S,256,64:S,512,64:S,1024,64:S,2048,64:S,4096,64:S,16384,32:S,65536,16
RUN_VERBOSE=100 run_select eight-srq --mca btl_openib_cpc_include rdma_cm \
	--mca btl_openib_receive_queues "$rq"
[ "$RUN_RC" = 0 ] || fail "eight shared receive queues: mpirun exited with status $RUN_RC"
assert_small_pingpong "$RUN_OUT"
assert_openib_carried "$RUN_OUT" 2 2 rdma_cm
assert_grep 'with CPC rdma_cm \(8 QPs\)' "$RUN_OUT" "eight QPs per connection"
assert_grep 'openib: rdma_cm .*: REQ chunk 3/3 sent' "$RUN_OUT" "the last REQ chunk"
assert_grep 'openib: rdma_cm .*: REQ chunk 3/3 received' "$RUN_OUT" "the last chunk at the responder"
ok "eight shared receive queues: QP data in three REQs, verified ping-pong"
n=$(cat "$STORM_LOG" "$RUN_OUT" | grep -Ec 'openib: rdma_cm: refused' || true)
[ "$n" = 0 ] || fail "$n honest request(s) or reply(ies) refused: $(grep -h 'rdma_cm: refused' "$STORM_LOG" "$RUN_OUT" | head -n 3)"
ok "no honest request or reply refused"

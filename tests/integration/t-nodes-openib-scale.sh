#!/bin/bash
# Many peers across two nodes over OUR openib (btl openib,self: every peer,
# on the same node too, is an openib connection), every byte checked
# (scale_alltoall.c: receive-first, every other round from MPI_ANY_SOURCE,
# 1 B-200 KiB):
#  1. 32 ranks, 16 per node (oversubscribed), the defaults, a pairwise
#     all-to-all (one partner each way at a time): each rank ends
#     with 31 peers on 31 QPs (one QP per peer), and the host memory a peer
#     costs (btl_openib_host_bytes_per_peer, added up from what was
#     allocated) is at most 64 KiB; the handshakes went over the oob CPC's
#     UD side channel (side_channel_ud_sessions, at least one per
#     connection) and none opened a TCP connection
#     (side_channel_tcp_connections 0).
#  2. 16 ranks with the smallest CQ and send queues (btl_openib_cq_size 1,
#     max_send_wr 16), 4 small messages to every peer at once: the port's
#     send budget runs out and sends wait for
#     it (credit_stalls), nothing is lost, the CQ is never overrun.
#  3. 16 ranks with btl_openib_max_peers 4, pairwise: every rank talks to 15 peers
#     each round, so idle connections are closed and reopened again and
#     again; every byte still arrives, and the counters show it
#     (connections made beyond the 15 peers, connections_closed_idle).
# nodes: 2
# timeout: 1200
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
need_nodes 2
node1=${BED_NODES[0]} node2=${BED_NODES[1]}
need_cmd mpirun gcc timeout
use_our_component
prog=$OPENIB_TEST_TMP/scale_alltoall
build_mpi_program "$OPENIB_SRCDIR/tests/integration/scale_alltoall.c" "$prog"

# run_scale NAME RANKS ROUNDS "PROGRAM-ARGS" MPIRUN-ARGS...: the all-to-all
# (scale_alltoall ROUNDS PROGRAM-ARGS) on RANKS ranks, half on each node;
# checks where each rank ran and that every byte arrived.
# Up to 16 ranks share each node's one emulated CPU with rxe, which does
# the transport's work in the kernel: ranks that spin in MPI_Waitall starve
# it, its ACKs come later than the 1 s ACK timeout, and the retransmissions
# that follow meet rxe's own bugs (seen: thousands of duplicate requests,
# "remote operation error", RDMA reads returning wrong data; the same with
# the earlier three-queue defaults). So the ranks yield when idle, as Open
# MPI makes them do on a node it knows is oversubscribed, and the large
# exchanges go pairwise (one partner each way at a time, every connection
# still made), which keeps rxe's bursts small; the counters below say how
# much the transport retransmitted.
run_scale() {
	local name=$1 n=$2 rounds=$3 half=$(($2 / 2)) r want pargs nd c
	read -r -a pargs <<<"$4"
	shift 4
	out=$OPENIB_TEST_TMP/$name.out
	timeout -k 10 900 mpirun --allow-run-as-root --oversubscribe -np "$n" \
		--host "$node1:$half,$node2:$half" "${MPI_OPENIB_ARGS[@]}" --mca mpi_yield_when_idle 1 \
		"$@" "$prog" "$rounds" "${pargs[@]}" >"$out" 2>&1
	rc=$?
	show "$out"
	note_rxe_retries "$node1" "$node2"
	[ "$rc" = 0 ] || fail "$name: mpirun exited with status $rc"
	for ((r = 0; r < n; ++r)); do
		want=$([ "$r" -lt "$half" ] && echo "$node1" || echo "$node2")
		assert_grep "^rank $r of $n on $want\$" "$out" "$name: rank $r on $want"
	done
	assert_grep "^scale: PASSED ranks=$n rounds=$rounds bytes=[1-9][0-9]* errors=0\$" "$out" \
		"$name: every byte of the all-to-all"
}

# scale_field LOG RANK FIELD: FIELD's value in RANK's "scale:" line
scale_field() { sed -nE "s/^scale: rank $2( .*)? $3 ([0-9]+)( .*)?\$/\\2/p" "$1"; }

run_scale defaults 32 3 pairwise
max=0 ud=0
for ((r = 0; r < 32; ++r)); do
	peers=$(scale_field "$out" "$r" peers) qps=$(scale_field "$out" "$r" qps)
	b=$(scale_field "$out" "$r" host_bytes_per_peer) f=$(scale_field "$out" "$r" failures)
	u=$(scale_field "$out" "$r" ud_sessions) t=$(scale_field "$out" "$r" tcp_connections)
	[ "$t" = 0 ] || fail "defaults: rank $r opened or accepted ${t:-?} side-channel TCP connections (want none: UD)"
	[ -n "$u" ] && [ "$u" -gt 0 ] || fail "defaults: rank $r had no UD side-channel session"
	ud=$((ud + u))
	[ "$peers" = 31 ] || fail "defaults: rank $r has ${peers:-no} connected peers, not 31"
	[ "$qps" = 31 ] || fail "defaults: rank $r has ${qps:-no} QPs for its 31 peers, not one each"
	[ -n "$b" ] && [ "$b" -gt 0 ] || fail "defaults: rank $r reports no host_bytes_per_peer"
	[ "$b" -le 65536 ] || fail "defaults: a peer costs rank $r $b bytes of host memory, more than 64 KiB"
	[ "$f" = 0 ] || fail "defaults: rank $r had $f connection failures"
	[ "$b" -gt "$max" ] && max=$b
done
# Each of the 496 connections was opened over UD by a rank that had its
# counters by then (a session a rank accepted before it opened them is not
# counted: MPI_T counters count from their handle's allocation).
[ "$ud" -ge 496 ] || fail "defaults: $ud UD side-channel sessions for 496 connections"
ok "32 ranks across $node1 and $node2 (16 each), all-to-all verified; every rank: 31 peers on 31 QPs, at most $max bytes of host memory per peer (target 65536); $ud handshake sessions over UD, no TCP connection"

# 4 messages of up to 4000 B to each of 15 peers at once: more sends than
# the budget allows (96 WRs, 64 of them kept for credits and markers)
run_scale budget 16 3 "all 4000 4" --mca btl_openib_cq_size 1 --mca btl_openib_max_send_wr 16 \
	--mca btl_openib_verbose 10
assert_grep "openib: [^ ]+:1: CQ of [0-9]+ entries: [0-9]+ for the shared queues' receives, a send budget of [0-9]+ work requests for the port" \
	"$out" "budget: the CQ's size and send budget said at verbose 10"
if grep -Eq 'completion error|CQ_ERR|lost its connection|overrun' "$out"; then
	fail "budget: a completion error or a lost connection"
fi
stalls=$(openib_stats_sum "$out" "waits for credits")
[ "${stalls:-0}" -gt 0 ] || fail "budget: no send ever waited (the budget was never spent; the test proves nothing)"
ok "16 ranks with the smallest CQ and 16 send WRs per QP: all-to-all verified, $stalls sends waited for the send budget or a WQE, no completion error"

run_scale lru 16 4 pairwise --mca btl_openib_max_peers 4 --mca btl_openib_verbose 10
reopened=0 closed=0
for ((r = 0; r < 16; ++r)); do
	c=$(scale_field "$out" "$r" connections) i=$(scale_field "$out" "$r" closed_idle)
	f=$(scale_field "$out" "$r" failures)
	[ "$f" = 0 ] || fail "lru: rank $r had ${f:-?} connection failures"
	[ -n "$c" ] && [ "$c" -gt 15 ] || fail "lru: rank $r made ${c:-no} connections for its 15 peers: none was reopened"
	[ -n "$i" ] && [ "$i" -gt 0 ] || fail "lru: rank $r closed no idle connection"
	reopened=$((reopened + c - 15)) closed=$((closed + i))
done
assert_grep "openib: rank [0-9]+ \\([^)]*\\) port [^ ]+: closed the idle connection \\(.*btl_openib_max_peers 4\\)" "$out" \
	"lru: the closes said at verbose 10"
if grep -Eq 'could not connect|lost its connection|completion error' "$out"; then
	fail "lru: a connection failed or was lost"
fi
ok "16 ranks with btl_openib_max_peers 4: all-to-all verified over 4 rounds; $closed idle connections closed, $reopened connections beyond the first to each peer"

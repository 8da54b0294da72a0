#!/bin/bash
# Two nodes, raw verbs: ib_send_lat and ib_write_bw servers on node2, clients
# on node1 (RoCE v2, GID index 1).  Both complete with plausible figures, and
# both nodes' rxe0 counted the packets (hw_counters sent_pkts/rcvd_pkts).
# nodes: 2
# timeout: 300
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
need_nodes 2
node1=${BED_NODES[0]} node2=${BED_NODES[1]}
need_cmd ib_send_lat ib_write_bw
dev=$OPENIB_TEST_DEVICE

# perf_pair NAME PORT FWD BACK CMD ARGS...: CMD's server on node2, its client
# on node1 (to node2).  Node1's device must send and node2's receive >= FWD
# packets; node2's device must send and node1's receive >= BACK.
perf_pair() {
	local name=$1 port=$2 fwd=$3 back=$4 srv=$OPENIB_TEST_TMP/$1.server cli=$OPENIB_TEST_TMP/$1.client
	local n crc src i
	shift 4
	declare -A s0 r0 ds dr
	for n in "$node1" "$node2"; do
		s0[$n]=$(node_counter "$n" "$dev" sent_pkts)
		r0[$n]=$(node_counter "$n" "$dev" rcvd_pkts)
	done
	# The server says when it listens, so that the client does not race it.
	ssh -n "$node2" "$(declare -f wait_tcp_listen)
		out=\$(mktemp)
		timeout 90 $* -d $dev -x 1 -p $port >\"\$out\" 2>&1 &
		pid=\$!
		wait_tcp_listen $port 30 && echo '# server listening'
		wait \$pid; rc=\$?; cat \"\$out\"; rm -f \"\$out\"; exit \$rc" >"$srv" 2>&1 &
	local spid=$!
	for ((i = 0; i < 600; i++)); do
		grep -q '^# server listening' "$srv" && break
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.1
	done
	grep -q '^# server listening' "$srv" || { wait "$spid"; show "$srv"; fail "$name server on $node2 did not listen on port $port"; }
	timeout 90 "$@" -d "$dev" -x 1 -p "$port" "$node2" >"$cli" 2>&1
	crc=$?
	wait "$spid"
	src=$?
	show "$cli"
	show "$srv"
	# perftest_timed runs it again
	perftest_untimed "$cli" >/dev/null && return 0
	[ "$crc" = 0 ] || fail "$name client ($node1) exited with status $crc"
	[ "$src" = 0 ] || fail "$name server ($node2) exited with status $src"
	for n in "$node1" "$node2"; do
		ds[$n]=$(($(node_counter "$n" "$dev" sent_pkts) - s0[$n]))
		dr[$n]=$(($(node_counter "$n" "$dev" rcvd_pkts) - r0[$n]))
		note "$name: $n $dev sent ${ds[$n]} packets, received ${dr[$n]}"
	done
	[ "${ds[$node1]}" -ge "$fwd" ] || fail "$name: $node1 $dev sent only ${ds[$node1]} packets (want >= $fwd)"
	[ "${dr[$node2]}" -ge "$fwd" ] || fail "$name: $node2 $dev received only ${dr[$node2]} packets (want >= $fwd)"
	[ "${ds[$node2]}" -ge "$back" ] || fail "$name: $node2 $dev sent only ${ds[$node2]} packets (want >= $back)"
	[ "${dr[$node1]}" -ge "$back" ] || fail "$name: $node1 $dev received only ${dr[$node1]} packets (want >= $back)"
	ok "$name: RDMA packets crossed the wire ($node1 -> $node2 >= $fwd, $node2 -> $node1 >= $back)"
}

# perf_timed NAME PORT FWD BACK CMD ARGS...: perf_pair until perftest timed
# itself (perftest_timed), each try on a port of its own.
perf_timed() {
	perftest_timed "$OPENIB_TEST_TMP/$1.client" perf_try "$@"
}
perf_try() {
	local try=${*: -1}
	perf_pair "$1" $(($2 + 10 * (try - 1))) "${@:3:$#-3}"
}

# Latency: 500 round trips of 8 B, one packet each way per round trip.
perf_timed send_lat 18515 500 500 ib_send_lat -n 500 -s 8
# Result row: #bytes #iterations t_min t_max t_typical t_avg t_stdev p99 p99.9
row=$(awk '$1 == 8 && $2 == 500 && NF >= 6 { print; exit }' "$OPENIB_TEST_TMP/send_lat.client")
[ -n "$row" ] || fail "no ib_send_lat result row for 8 bytes / 500 iterations"
typical=$(awk '{ print $5 }' <<<"$row")
is_positive_number "$typical" || fail "t_typical is not a positive number: '$typical'"
ok "ib_send_lat $node1 <-> $node2, 8 B: typical $typical us"

# Bandwidth: 200 RDMA writes of 64 KiB from node1 to node2, in packets of at
# most 4 KiB (>= 16 each); node2 acknowledges each write (>= 1 packet each).
perf_timed write_bw 18516 3200 200 ib_write_bw -n 200 -s 65536
# Result row: #bytes #iterations BW_peak BW_average MsgRate
row=$(awk '$1 == 65536 && $2 == 200 && NF >= 4 { print; exit }' "$OPENIB_TEST_TMP/write_bw.client")
[ -n "$row" ] || fail "no ib_write_bw result row for 65536 bytes / 200 iterations"
bw=$(awk '{ print $4 }' <<<"$row")
is_positive_number "$bw" || fail "BW average is not a positive number: '$bw'"
ok "ib_write_bw $node1 -> $node2, 64 KiB: $bw MB/s average"

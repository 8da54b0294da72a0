#!/bin/bash
# Across two nodes over OUR openib: a verified ping-pong at every size from
# 0 B to 16 MiB with rank 0 on node1 and rank 1 on node2, with oob and with
# rdma_cm, rank 0 sending first and then rank 1 sending first (-r: rank 0
# waits in MPI_Recv). Open MPI adds the remote peer lazily, so the side that
# receives first meets its peer through the connect request: its log must
# say the endpoint was made on demand. RoCE packets must cross the wire on
# both nodes. Then the traffic class: with btl_openib_traffic_class 104
# (DSCP 26) the RoCE v2 packets on the wire carry IP TOS 0x68, and 0 by
# default (captured with tcpdump on node1's wire interface).
# nodes: 2
# timeout: 600
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
need_nodes 2
node1=${BED_NODES[0]} node2=${BED_NODES[1]}
need_cmd mpirun tcpdump timeout
use_our_component
pp=$(pingpong_bin) || exit 1
dev=$OPENIB_TEST_DEVICE

for cpc in oob rdma_cm; do
	for first in 0 1; do
		name=$cpc-first$first
		out=$OPENIB_TEST_TMP/$name.out
		flag=()
		[ "$first" = 0 ] || flag=(-r)
		p1=$(node_counter "$node1" "$dev" sent_pkts)
		p2=$(node_counter "$node2" "$dev" sent_pkts)
		run_watched 300 "$pp" "${MPIRUN_NODES[@]}" "${MPI_OPENIB_ARGS[@]}" --mca btl_openib_cpc_include "$cpc" \
			--mca btl_openib_verbose 10 "$pp" -H -n 1 -m 16777216 "${flag[@]}" >"$out" 2>&1
		rc=$?
		show "$out"
		[ "$rc" = 0 ] || fail "$name: mpirun exited with status $rc"
		assert_ranks_on_nodes "$out"
		assert_grep '^pingpong: verification PASSED: [0-9]+ sizes \(0\.\.16777216 B\), 1 iterations, [1-9][0-9]* messages, [1-9][0-9]* bytes verified, 0 errors$' \
			"$out" "$name: verification"
		assert_openib_carried "$out" 2 2 "$cpc"
		# the receiving side met its peer through the connect request
		passive=$([ "$first" = 0 ] && echo "$node2" || echo "$node1")
		peer=$([ "$first" = 0 ] && echo "rank 0 \\($node1\\)" || echo "rank 1 \\($node2\\)")
		assert_grep "^\\[$passive:[0-9]+\\] openib: $peer port [^ ]+ contacted us first: endpoint made on demand" \
			"$out" "$name: $passive made its endpoint on demand"
		s1=$(($(node_counter "$node1" "$dev" sent_pkts) - p1))
		s2=$(($(node_counter "$node2" "$dev" sent_pkts) - p2))
		# 16 MiB each way alone is 16384 packets at rxe's 1 KiB MTU
		[ "$s1" -ge 16384 ] && [ "$s2" -ge 16384 ] || fail "$name: only $s1 / $s2 RoCE packets left $node1 / $node2"
		ok "$name: 0 B-16 MiB verified across $node1 and $node2 with $cpc; $s1 and $s2 RoCE packets sent"
	done
done

# The traffic class reaches the wire (rxe puts it in the IPv4 TOS byte).
netdev=$(on_node "$node1" "$(declare -f dev_netdev); dev_netdev $dev")
for tc in 104 0; do
	cap=$OPENIB_TEST_TMP/tc-$tc.pcap.txt
	timeout 120 tcpdump -i "$netdev" -nn -v -c 40 udp dst port 4791 >"$cap" 2>&1 &
	tpid=$!
	sleep 2 # tcpdump is listening
	out=$OPENIB_TEST_TMP/tc-$tc.out
	timeout -k 10 200 "${MPIRUN_NODES[@]}" "${MPI_OPENIB_ARGS[@]}" --mca btl_openib_traffic_class "$tc" \
		"$pp" -H -n 2 -m 65536 >"$out" 2>&1
	rc=$?
	wait "$tpid"
	[ "$rc" = 0 ] || { show "$out"; fail "traffic class $tc: mpirun exited with status $rc"; }
	head -20 "$cap"
	want=$(printf '0x%x' "$tc")
	n=$(grep -c "tos $want," "$cap")
	other=$(grep -E 'IP \(tos' "$cap" | grep -vc "tos $want,")
	[ "$n" -ge 20 ] || fail "traffic class $tc: only $n captured RoCE v2 packets with tos $want"
	[ "$other" = 0 ] || fail "traffic class $tc: $other RoCE v2 packets with another tos"
	ok "traffic class $tc: $n RoCE v2 packets on $netdev carried IP tos $want"
done

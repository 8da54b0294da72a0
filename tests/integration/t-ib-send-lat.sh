#!/bin/bash
# Raw verbs: ib_send_lat server and client in loopback over the rxe device
# (RoCE v2 GID index 1) complete and report a latency figure.
# timeout: 300
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
need_cmd ib_send_lat

dev=$OPENIB_TEST_DEVICE
ip4=$(dev_ipv4 "$dev")
[ -n "$ip4" ] || fail "no IPv4 address on the netdev of $dev"
port=18515
srv=$OPENIB_TEST_TMP/server.out
cli=$OPENIB_TEST_TMP/client.out

# run_pair TRY: one server and one client (on a port of the try's own);
# sets crc and src.
run_pair() {
	local spid p=$((port + $1 - 1))
	timeout 90 ib_send_lat -d "$dev" -x 1 -n 500 -s 8 -p "$p" >"$srv" 2>&1 &
	spid=$!
	wait_tcp_listen "$p" 30 || { show "$srv"; fail "ib_send_lat server did not listen on port $p"; }
	timeout 90 ib_send_lat -d "$dev" -x 1 -n 500 -s 8 -p "$p" "$ip4" >"$cli" 2>&1
	crc=$?
	wait "$spid"
	src=$?
}
perftest_timed "$cli" run_pair
show "$cli"
show "$srv"
[ "$crc" = 0 ] || fail "ib_send_lat client exited with status $crc"
[ "$src" = 0 ] || fail "ib_send_lat server exited with status $src"

# Result row: #bytes #iterations t_min t_max t_typical t_avg t_stdev p99 p99.9
row=$(awk '$1 == 8 && $2 == 500 && NF >= 6 { print; exit }' "$cli")
[ -n "$row" ] || fail "no result row for 8 bytes / 500 iterations in the client output"
typical=$(awk '{ print $5 }' <<<"$row")
avg=$(awk '{ print $6 }' <<<"$row")
is_positive_number "$typical" || fail "t_typical is not a positive number: '$typical'"
is_positive_number "$avg" || fail "t_avg is not a positive number: '$avg'"
awk -v t="$typical" 'BEGIN { exit !(t < 100000) }' || fail "implausible latency $typical us"
ok "ib_send_lat 8 B over $dev: typical $typical us, average $avg us"

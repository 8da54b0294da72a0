#!/bin/bash
# rdma_cm: rping server and client in loopback over the rxe device's IPv4
# address; the client verifies every ping (-V) and prints the data (-v).
# timeout: 120
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
need_cmd rping

dev=$OPENIB_TEST_DEVICE
ip4=$(dev_ipv4 "$dev")
[ -n "$ip4" ] || fail "no IPv4 address on the netdev of $dev"
count=20
srv=$OPENIB_TEST_TMP/server.out
cli=$OPENIB_TEST_TMP/client.out

timeout 90 rping -s -a "$ip4" -p 7174 -C "$count" -V -v >"$srv" 2>&1 &
spid=$!
# rdma_cm listens without a TCP socket: retry the client until the server is up.
crc=1
for attempt in 1 2 3 4 5 6 7 8 9 10; do
	sleep 0.5
	kill -0 "$spid" 2>/dev/null || break
	timeout 60 rping -c -a "$ip4" -p 7174 -C "$count" -S 64 -V -v >"$cli" 2>&1
	crc=$?
	[ "$crc" = 0 ] && break
	note "client attempt $attempt failed (status $crc): $(tail -n 1 "$cli")"
	grep -q 'ping data' "$cli" && break # connected: a real failure, no retry
done
wait "$spid"
src=$?
assert_rping_verified "$cli" "$srv" "$crc" "$src" "$count" "over $dev"
ok "rping: $count pings of 64 B over $dev ($ip4), verified by client and seen by server"

#!/bin/bash
# The Soft-iWARP device exists next to the Soft-RoCE one: siw0 is an iWARP
# device, port 1 ACTIVE, without atomics, on a network interface of its own;
# rxe0 is still there.  An rdma_cm ping (rping, every ping verified by the
# client) runs over siw0: its listener is bound to siw0, and rxe0 sent nothing.
# devices: rxe,siw
# timeout: 120
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
need_cmd ibv_devices ibv_devinfo rdma rping

siw=$OPENIB_TEST_SIW_DEVICE
rxe=$OPENIB_TEST_DEVICE
need_device "$siw" rxe,siw
T=$OPENIB_TEST_TMP

ibv_devices >"$T/devices" 2>&1 || { show "$T/devices"; fail "ibv_devices failed"; }
show "$T/devices"
assert_grep "^[[:space:]]+${siw}[[:space:]]" "$T/devices" "ibv_devices lists $siw"
assert_grep "^[[:space:]]+${rxe}[[:space:]]" "$T/devices" "ibv_devices still lists $rxe"

ibv_devinfo -d "$siw" -i 1 -v >"$T/siw.devinfo" 2>&1 || { show "$T/siw.devinfo"; fail "ibv_devinfo -d $siw failed"; }
show "$T/siw.devinfo"
assert_grep "^hca_id:[[:space:]]+$siw\$" "$T/siw.devinfo" "device name"
assert_grep 'transport:[[:space:]]+iWARP \(1\)' "$T/siw.devinfo" "$siw transport"
assert_grep 'state:[[:space:]]+PORT_ACTIVE \(4\)' "$T/siw.devinfo" "$siw port 1 state"
assert_grep 'atomic_cap:[[:space:]]+ATOMIC_NONE \(0\)' "$T/siw.devinfo" "$siw atomic_cap"

ibv_devinfo -d "$rxe" -i 1 >"$T/rxe.devinfo" 2>&1 || { show "$T/rxe.devinfo"; fail "ibv_devinfo -d $rxe failed"; }
assert_grep 'transport:[[:space:]]+InfiniBand \(0\)' "$T/rxe.devinfo" "$rxe transport"
assert_grep 'state:[[:space:]]+PORT_ACTIVE \(4\)' "$T/rxe.devinfo" "$rxe port 1 state"

rdma link show >"$T/links" 2>&1 || { show "$T/links"; fail "rdma link show failed"; }
show "$T/links"
assert_grep "^link $siw/1 state ACTIVE .*netdev " "$T/links" "rdma link: $siw port 1"
assert_grep "^link $rxe/1 state ACTIVE .*netdev " "$T/links" "rdma link: $rxe port 1"

# rdma_cm picks the device by the netdev of the address; on a netdev that
# rxe0 shares it would pick rxe0, and the ping below would not test siw.
snd=$(dev_netdev "$siw") rnd=$(dev_netdev "$rxe")
[ -n "$snd" ] || fail "no netdev found for $siw"
[ "$snd" != "$rnd" ] || fail "$siw and $rxe share the netdev $snd: rdma_cm would use $rxe"
ip4=$(dev_ipv4 "$siw")
[ -n "$ip4" ] || fail "no IPv4 address on $snd, the netdev of $siw"
ok "$siw: iWARP, port 1 ACTIVE, ATOMIC_NONE, on $snd ($ip4); $rxe on $rnd, ACTIVE"

# --- an rdma_cm ping over siw0 ----------------------------------------------------
count=10 port=7176
srv=$T/server.out cli=$T/client.out
rxe_tx0=$(dev_counter "$rxe" sent_pkts)
timeout 90 rping -s -a "$ip4" -p "$port" -C "$count" -V -v >"$srv" 2>&1 &
spid=$!
# The listener shows up as a cm_id; it names the device rdma_cm bound it to.
listen=
for ((i = 0; i < 300; i++)); do
	listen=$(rdma res show cm_id 2>/dev/null | grep -E "state LISTEN .*src-addr $ip4:$port ")
	[ -n "$listen" ] && break
	kill -0 "$spid" 2>/dev/null || break
	sleep 0.1
done
[ -n "$listen" ] || { show "$srv"; fail "rping server: no listening cm_id on $ip4:$port after 30 s"; }
note "listener: $listen"
[[ $listen == "link $siw/1 "* ]] || fail "the rping listener on $ip4 is not on $siw: $listen"

timeout 60 rping -c -a "$ip4" -p "$port" -C "$count" -S 64 -V -v >"$cli" 2>&1
crc=$?
wait "$spid"
src=$?
assert_rping_verified "$cli" "$srv" "$crc" "$src" "$count" "over $siw"
rxe_tx=$(($(dev_counter "$rxe" sent_pkts) - rxe_tx0))
[ "$rxe_tx" = 0 ] || fail "$rxe sent $rxe_tx packets during the ping: it did not (only) go over $siw"
ok "rping: $count pings of 64 B over $siw ($ip4), verified by the client, seen by the server; $rxe sent nothing"

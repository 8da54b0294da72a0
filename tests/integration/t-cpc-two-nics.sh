#!/bin/bash
# Two rxe devices (rxe0 on 10.0.2.15, rxe1 on 10.0.3.15): each rank opens a
# module on both ports, and with either CPC (oob, rdma_cm: one listener per
# port) both ports connect and carry traffic (per-port statistics at
# finalize: sends > 0 on rxe0 and rxe1 in both ranks). btl_openib_if_include
# =rxe0 restricts openib to one port: no rxe1 module, no rxe1 statistics.
# Last, rxe1's interface loses its IPv4 address: rdma_cm declines that port
# saying so, oob still connects both (the address is put back after).
# nics: 2
# timeout: 400
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
. "$OPENIB_SRCDIR/tests/integration/cpc_lib.sh"
need_cmd mpirun
use_our_component
[ -d /sys/class/infiniband/rxe1 ] || fail "no rxe1: this test needs a guest with 2 NICs (# nics: 2)"

# both_ports_carry LOG CPC
both_ports_carry() {
	local d n
	for d in rxe0 rxe1; do
		n=$(count_lines "openib: .*module [0-9]+ opened on $d port 1" "$1")
		[ "$n" = 2 ] || fail "$n ranks opened a module on $d (want 2)"
		n=$(count_lines "openib: connected to rank [0-9]+ .* port $d:1 with CPC $2 " "$1")
		[ "$n" = 2 ] || fail "$n connections on $d with CPC $2 (want 2)"
		n=$(count_lines "openib: $d:1 statistics: sends [1-9]" "$1")
		[ "$n" = 2 ] || fail "$n ranks sent over $d (want 2)"
	done
	ok "$2: both ranks opened rxe0 and rxe1, connected on both, and sent on both"
}

for cpc in oob rdma_cm; do
	run_select "two-$cpc" --mca btl_openib_cpc_include "$cpc"
	[ "$RUN_RC" = 0 ] || fail "two ports, $cpc: mpirun exited with status $RUN_RC"
	assert_small_pingpong "$RUN_OUT"
	both_ports_carry "$RUN_OUT" "$cpc"
done

run_select only-rxe0 --mca btl_openib_if_include rxe0
[ "$RUN_RC" = 0 ] || fail "if_include=rxe0: mpirun exited with status $RUN_RC"
assert_small_pingpong "$RUN_OUT"
n=$(count_lines 'openib: .*module [0-9]+ opened on rxe0 port 1' "$RUN_OUT")
[ "$n" = 2 ] || fail "if_include=rxe0: $n ranks opened rxe0 (want 2)"
grep -E 'openib: .*opened on rxe1|openib: rxe1:1 statistics|port rxe1:1' "$RUN_OUT" &&
	fail "if_include=rxe0: rxe1 was used (above)"
n=$(count_lines 'openib: rxe0:1 statistics: sends [1-9]' "$RUN_OUT")
[ "$n" = 2 ] || fail "if_include=rxe0: $n ranks sent over rxe0 (want 2)"
ok "btl_openib_if_include=rxe0: rxe0 only"

nd=$(dev_netdev rxe1)
ip4=$(dev_ipv4 rxe1)
[ -n "$nd" ] && [ -n "$ip4" ] || fail "cannot find rxe1's interface and address"
ip addr del "$ip4/24" dev "$nd" || fail "ip addr del $ip4/24 dev $nd"
run_select no-ipv4
ip addr add "$ip4/24" dev "$nd" || fail "could not give $nd its address $ip4 back"
[ "$RUN_RC" = 0 ] || fail "rxe1 without IPv4: mpirun exited with status $RUN_RC"
assert_small_pingpong "$RUN_OUT"
n=$(count_lines "port rxe1:1 CPCs usable: oob\\(50\\); declined: rdma_cm \\(port rxe1:1 has no IPv4 address \\(its interface $nd has none\\)\\)" "$RUN_OUT")
[ "$n" = 2 ] || fail "rxe1 without IPv4: $n ranks said why rdma_cm declined it (want 2)"
n=$(count_lines "port rxe0:1 CPCs usable: oob\\(50\\), rdma_cm\\(40\\)" "$RUN_OUT")
[ "$n" = 2 ] || fail "rxe1 without IPv4: rdma_cm usable on rxe0 in $n ranks (want 2)"
both_ports_carry "$RUN_OUT" oob
ok "rxe1 without IPv4: rdma_cm declined it with the reason, oob connected both ports"

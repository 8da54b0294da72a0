#!/bin/bash
# One node, two transports: rxe0 (RoCE, eth0) and siw0 (iWARP, eth1).
#  - Both ranks have both ports: each peer pair gets two connections, rxe0
#    with rxe0 (oob, the default CPC) and siw0 with siw0 (rdma_cm, the only
#    CPC iWARP allows), never rxe0 with siw0 (the modex carries the
#    transport and ports pair only with their own kind). A ping-pong up to
#    4 MiB is verified, and both ports carried bytes.
#  - Rank 0 has only siw0, rank 1 only rxe0: nothing pairs, openib says so
#    at verbose 10 and makes no connection, and with openib,tcp,self the
#    job still runs (tcp carries it), verified.
# devices: rxe,siw
# timeout: 900
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
. "$OPENIB_SRCDIR/tests/integration/cpc_lib.sh"
need_cmd mpirun
use_our_component
. "$OPENIB_SRCDIR/tests/integration/siw_lib.sh"
pp=$(pingpong_bin) || exit 1

out=$OPENIB_TEST_TMP/mixed.out
rxe_tx0=$(dev_counter "$rxe" sent_pkts)
timeout 600 "${MPIRUN[@]}" "${MPI_OPENIB_ARGS[@]}" --mca btl_openib_verbose 10 \
	"$pp" -n 2 -m 4194304 >"$out" 2>&1
rc=$?
rxe_tx=$(($(dev_counter "$rxe" sent_pkts) - rxe_tx0))
show "$out"
[ "$rc" = 0 ] || fail "ping-pong over $rxe and $siw: mpirun exited with status $rc"
check_pingpong "$out" 2
for dev in "$rxe" "$siw"; do
	n=$(count_lines "openib: .* module [0-9]+ opened on $dev port 1" "$out")
	[ "$n" = 2 ] || fail "$dev opened by $n processes (want 2)"
done
n=$(count_lines "openib: connected to rank [0-9]+ .* port $rxe:1 with CPC oob " "$out")
[ "$n" = 2 ] || fail "$n ends of an oob connection on $rxe (want 2: one connection)"
n=$(count_lines "openib: connected to rank [0-9]+ .* port $siw:1 with CPC rdma_cm " "$out")
[ "$n" = 2 ] || fail "$n ends of an rdma_cm connection on $siw (want 2: one connection)"
n=$(count_lines "openib: connected to rank" "$out")
[ "$n" = 4 ] || fail "$n connection ends in all (want 4: one connection per port kind)"
grep -Eq "openib: connecting to rank [0-9]+ .* port $siw:1 with CPC oob|port $rxe:1 .*iWARP" "$out" &&
	fail "a connection mixed the two transports"
[ "$rxe_tx" -gt 0 ] || fail "$rxe sent nothing"
siw_bytes=$(grep -E "openib: $siw:1 statistics:" "$out" | sed -E 's/.*sends [0-9]+ \(([0-9]+) bytes.*puts ([0-9]+), gets ([0-9]+).*/\1 \2 \3/' |
	awk '{ s += $1 + $2 + $3 } END { print s + 0 }')
[ "$siw_bytes" -gt 0 ] || fail "$siw carried nothing (sent bytes + puts + gets = 0)"
ok "two transports on one node: $rxe with $rxe (oob), $siw with $siw (rdma_cm); both carried traffic ($rxe sent $rxe_tx packets)"

# Rank 0 sees only siw0, rank 1 only rxe0 (each process reads its own
# btl_openib_if_include from the environment).
wrap=$OPENIB_TEST_TMP/one-port.sh
cat >"$wrap" <<WRAP
#!/bin/sh
if [ "\$OMPI_COMM_WORLD_RANK" = 0 ]; then dev=$siw; else dev=$rxe; fi
OMPI_MCA_btl_openib_if_include=\$dev exec "$pp" "\$@"
WRAP
chmod +x "$wrap"
out=$OPENIB_TEST_TMP/apart.out
timeout 600 "${MPIRUN[@]}" --mca pml ob1 --mca btl openib,tcp,self --mca btl_openib_verbose 10 \
	"$wrap" -n 2 -m 1048576 >"$out" 2>&1
rc=$?
show "$out"
[ "$rc" = 0 ] || fail "$siw-only against $rxe-only with openib,tcp: mpirun exited with status $rc"
assert_grep '^pingpong: verification PASSED: [0-9]+ sizes \(0\.\.1048576 B\), 2 iterations, [1-9][0-9]* messages, [1-9][0-9]* bytes verified, 0 errors$' \
	"$out" "verified ping-pong over tcp"
assert_grep "openib: $siw:1 cannot reach rank 1: none of rank 1's 1 port\\(s\\) pairs with $siw:1 \\(different link layer, transport or InfiniBand subnet\\)" \
	"$out" "rank 0's siw0 does not pair with rank 1's rxe0"
assert_grep "openib: $rxe:1 cannot reach rank 0: none of rank 0's 1 port\\(s\\) pairs with $rxe:1" \
	"$out" "rank 1's rxe0 does not pair with rank 0's siw0"
grep -q "openib: connecting to rank" "$out" && fail "openib tried to connect ports of different transports"
ok "$siw-only and $rxe-only ranks: openib pairs nothing, tcp carries the verified ping-pong"

#!/bin/bash
# openib's counters through MPI_T: an application reads the btl_openib_*
# performance variables around each thing it does and checks them against
# it (mpit_counters.c): a connection by oob (count, set-up time, peers,
# QPs, registered bytes per peer, its handshake over the UD side channel), 10 inline sends, a ring offered and
# taken, 10 messages through the ring, a 1 MiB RDMA get with its
# registration, a put and an atomic, credit returns; then that
# ompi_info lists the variables.
# timeout: 300
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
need_cmd mpirun ompi_info timeout
use_our_component
prog=$OPENIB_TEST_TMP/mpit_counters
build_mpi_program "$OPENIB_SRCDIR/tests/integration/mpit_counters.c" "$prog"
out=$OPENIB_TEST_TMP/mpit.out
# The earlier three-queue layout: its per-peer queue is what returns
# credits (the default, one shared queue, has none to return).
# rank 1 says through this file that its MPI_T handles exist before rank 0
# connects (mpit_counters.c, handles_ready)
rm -f "$OPENIB_TEST_TMP/mpit.ready"
timeout -k 10 200 "${MPIRUN[@]}" "${MPI_OPENIB_ARGS[@]}" --mca osc rdma --mca btl_openib_cpc_include oob \
	-x MPIT_READY="$OPENIB_TEST_TMP/mpit.ready" \
	--mca btl_openib_receive_queues P,256,64,32,16:S,4096,256,64:S,65536,64,16 \
	"$prog" >"$out" 2>&1
rc=$?
show "$out"
[ "$rc" = 0 ] || fail "mpirun exited with status $rc"
assert_grep '^mpit: PASSED [1-9][0-9]* checks$' "$out" "every MPI_T check"
n=$(grep -c '^mpit: rank [01]: ok ' "$out")
[ "$n" -ge 25 ] || fail "only $n checks reported"
ok "$(grep '^mpit: PASSED' "$out") ($n lines from both ranks)"

info=$OPENIB_TEST_TMP/info.out
ompi_info --param btl openib --level 9 >"$info" 2>&1
for v in sent_inline_messages sent_ring_bytes rdma_get_bytes atomics credit_stalls \
	receive_buffer_stalls connections_rdma_cm connect_usec_max_oob reg_cache_hits \
	registered_bytes_per_peer side_channel_ud_sessions side_channel_tcp_connections; do
	assert_grep "performance \"btl_openib_$v\"" "$info" "ompi_info lists btl_openib_$v"
done
ok "ompi_info --level 9 lists the performance variables"

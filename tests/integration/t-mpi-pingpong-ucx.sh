#!/bin/bash
# MPI ping-pong (0 B .. 4 MiB, every byte verified) with pml ucx over the rxe
# device (rc_verbs/ud_verbs only: no shared memory path between the ranks).
# timeout: 300
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
need_cmd mpirun
pp=$(pingpong_bin) || exit 1
iters=3
out=$OPENIB_TEST_TMP/pingpong.out
sent0=$(dev_counter "$OPENIB_TEST_DEVICE" sent_pkts)
"${MPIRUN[@]}" "${MPI_UCX_ARGS[@]}" "$pp" -n "$iters" >"$out" 2>&1
rc=$?
show "$out"
[ "$rc" = 0 ] || fail "mpirun exited with status $rc"
check_pingpong "$out" "$iters"
# ~70 MB went through the device: at <= 4 KiB per packet, >= 17000 packets.
sent=$(($(dev_counter "$OPENIB_TEST_DEVICE" sent_pkts) - sent0))
note "$OPENIB_TEST_DEVICE sent_pkts grew by $sent"
[ "$sent" -ge 17000 ] || fail "only $sent packets went through $OPENIB_TEST_DEVICE: the data did not travel over verbs"
ok "the traffic went over $OPENIB_TEST_DEVICE ($sent packets)"

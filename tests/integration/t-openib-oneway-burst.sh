#!/bin/bash
# One-way bursts right after connect: rank 0's first send starts the
# connection and it then sends 1,000 small messages; rank 1 only receives,
# so credits come back only as explicit returns (the credit mailbox). In
# "poll" mode rank 1 looks for messages with MPI_Iprobe and sleeps 10 ms
# between looks, so it receives much of the burst before its side of the
# handshake ends: the credits it owes for those must still reach the
# sender when the connection completes. Cases:
# per-peer (P) queue with and without eager-RDMA rings, a tiny P queue
# (4 buffers), the shared (S) queue, the default (one shared queue), two
# send WRs per QP, and rdma_cm.
# Each job is bounded by a timeout: a lost credit shows as a hang.
# timeout: 600
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
need_cmd mpirun timeout
use_our_component
prog=$OPENIB_TEST_TMP/oneway_burst
build_mpi_program "$OPENIB_SRCDIR/tests/integration/oneway_burst.c" "$prog"

# burst NAME COUNT SIZE MODE CPC [MCA ARGS...]: run one case and check it
# (MODE: poll, or "" for a rank 1 that waits in MPI_Recv).
burst() {
	local name=$1 count=$2 size=$3 mode=$4 cpc=$5 out rc
	shift 5
	out=$OPENIB_TEST_TMP/$name.out
	timeout -k 10 120 "${MPIRUN[@]}" "${MPI_OPENIB_ARGS[@]}" --mca btl_openib_cpc_include "$cpc" \
		--mca btl_openib_verbose 10 "$@" "$prog" "$count" "$size" ${mode:+"$mode"} >"$out" 2>&1
	rc=$?
	show "$out"
	[ "$rc" != 124 ] && [ "$rc" != 137 ] || fail "$name: the burst hung (timeout)"
	[ "$rc" = 0 ] || fail "$name: mpirun exited with status $rc"
	assert_grep "^oneway: PASSED $count messages of $size B, [0-9]+ bytes verified, 0 errors$" "$out" "$name"
	assert_openib_carried "$out" 1 1 "$cpc"
	ok "$name: $count one-way messages of $size B verified"
}

# The earlier three-queue default (the default is now one shared queue):
# its per-peer queue is what needs credit returns.
PQ=(--mca btl_openib_receive_queues "P,256,64,32,16:S,4096,256,64:S,65536,64,16")
# P queue (64 buffers): after 64 messages the sender needs returned credits.
burst p-noring 1000 8 poll oob --mca btl_openib_eager_rdma_num 0 "${PQ[@]}"
cw=$(openib_stats_sum "$OPENIB_TEST_TMP/p-noring.out" "credit writes")
[ "$cw" -ge $((1000 / 32 - 2)) ] || fail "p-noring: only $cw credit writes for 1000 one-way messages"
ok "p-noring: $cw credit returns through the mailbox"

# The same with a ring offered after 16 messages (slot credits also one way).
burst p-ring 1000 8 "" oob "${PQ[@]}"
# 4 buffers, credits returned after every 2
burst p-tiny 1000 8 poll oob --mca btl_openib_eager_rdma_num 0 --mca btl_openib_receive_queues P,128,4:S,65536,64
# 3000 B: the 4 KiB shared queue (no per-peer credits; send WQEs and RNR)
burst s-queue 1000 3000 "" oob --mca btl_openib_eager_rdma_num 0 "${PQ[@]}"
# the default: one shared queue of 64 KiB buffers, small messages from small send buffers
burst default 1000 8 poll oob --mca btl_openib_eager_rdma_num 0
# two send WRs per QP: one for data, one held back for credit writes
burst wr2 1000 8 "" oob --mca btl_openib_max_send_wr 2
burst rdmacm 1000 8 poll rdma_cm
# A shared queue of 16 buffers (limit event at 4) that a slowly polling
# receiver drains: the limit event must grow it (up to 4x), and the burst
# still arrives intact.
burst s-grow 1000 3000 poll oob --mca btl_openib_eager_rdma_num 0 \
	--mca btl_openib_receive_queues P,256,64,32,16:S,4096,16,4:S,65536,64,16
assert_grep 'shared receive queue 1 ran low; grew it from 16 to 32 buffers' "$OPENIB_TEST_TMP/s-grow.out" "SRQ growth on its limit event"
ok "s-grow: the SRQ limit event grew the shared queue"

#!/bin/bash
# One-sided communication on dynamic windows over OUR openib (osc rdma):
# put/flush/get into attached memory, a strided (vector) type, attach /
# detach / re-attach of new and of the same memory 24 times, and a linked
# list built with MPI_Fetch_and_op, a 32-bit MPI_Compare_and_swap and MPI_Put
# among 4 ranks, every value checked by the program (osc_dynamic.c).
#
# Then the same lists with elements attached while the other ranks use the
# window. On one node Open MPI 4.1's osc/rdma can hand openib the wrong
# region's registration there, or a copy of one torn by the table's move
# (see osc_dynamic.c); openib must then refuse the operation and report it
# to osc (and end the job if osc retries it forever), never lose the
# connection and never hang, so the job either passes or ends with
# openib's "refused ..." line. Last, every
# test through osc/pt2pt over openib, where all must pass (the remedy the
# README gives for dynamic windows with Open MPI 4.1.4).
# timeout: 500
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
need_cmd mpirun timeout
use_our_component
prog=$OPENIB_TEST_TMP/osc_dynamic
build_mpi_program "$OPENIB_SRCDIR/tests/integration/osc_dynamic.c" "$prog"
OSC=(--mca osc rdma --mca btl_openib_verbose 10)

out=$OPENIB_TEST_TMP/dyn.out
timeout -k 10 300 mpirun --allow-run-as-root --oversubscribe -np 4 "${MPI_OPENIB_ARGS[@]}" "${OSC[@]}" \
	"$prog" flushget dtype reattach llist chase >"$out" 2>&1
rc=$?
show "$out"
[ "$rc" = 0 ] || fail "mpirun (dynamic windows) exited with status $rc"
for t in flushget dtype reattach llist chase; do
	assert_grep "^PASS $t \\(4 ranks\\)$" "$out" "$t"
done
for f in gets puts atomics; do
	n=$(openib_stats_sum "$out" "$f")
	[ "$n" -gt 0 ] || fail "no RDMA $f went through openib"
done
ok "dynamic windows: put/get, strided, 24 re-attaches, two linked lists; $(openib_stats_sum "$out" atomics) atomics, $(openib_stats_sum "$out" gets) gets, $(openib_stats_sum "$out" puts) puts over openib"
if grep -q "refused an" "$out"; then
	fail "openib refused an operation although nothing attached concurrently"
fi

out=$OPENIB_TEST_TMP/live.out
timeout -k 10 300 mpirun --allow-run-as-root --oversubscribe --tag-output -np 4 "${MPI_OPENIB_ARGS[@]}" \
	"${OSC[@]}" "$prog" llist-live chase-live >"$out" 2>&1
rc=$?
show "$out"
[ "$rc" != 124 ] && [ "$rc" != 137 ] || fail "live attach: the job hung"
if grep -Eq "lost its connection|completion error" "$out"; then
	# (--tag-output names the rank of each line) only a rank that refused
	# an operation, and so ends the job, may be lost, as it exits
	if [ "$rc" = 0 ] || ! losses_follow_refusals "$out"; then
		fail "live attach: a connection was lost (an RDMA operation was posted with a handle that does not cover it)"
	fi
	note "live attach: connections to a rank that refused an operation failed as that rank ended the job"
fi
tag='(\[[0-9]+,[0-9]+\]<stdout>: ?)?'
if [ "$rc" = 0 ]; then
	assert_grep "^${tag}PASS llist-live \\(4 ranks\\)$" "$out" "llist-live"
	assert_grep "^${tag}PASS chase-live \\(4 ranks\\)$" "$out" "chase-live"
	ok "live attach: both lists complete and verified"
else
	assert_grep "openib: refused an (RDMA read|RDMA write|atomic) of [0-9]+ bytes at 0x[0-9a-f]+ on rank [0-9]+ .*: the remote handle (\\(rkey 0x[0-9a-f]+\\) registers 0x[0-9a-f]+-0x[0-9a-f]+ only|changed while it was read \\(its check word does not match)" \
		"$out" "live attach failed: it must be osc/rdma's wrong handle, refused by openib"
	if grep -q "The caller then retried the very same" "$out"; then
		note "osc/rdma retried the refused operation unchanged; openib ended the job (refused-retried)"
	fi
	ok "live attach: osc/rdma passed a handle of the wrong region; openib refused it and kept the connection"
fi

out=$OPENIB_TEST_TMP/pt2pt.out
timeout -k 10 300 mpirun --allow-run-as-root --oversubscribe -np 4 "${MPI_OPENIB_ARGS[@]}" --mca osc pt2pt \
	--mca btl_openib_verbose 10 "$prog" flushget dtype reattach llist chase llist-live chase-live >"$out" 2>&1
rc=$?
show "$out"
[ "$rc" = 0 ] || fail "mpirun (dynamic windows, osc/pt2pt) exited with status $rc"
for t in flushget dtype reattach llist chase llist-live chase-live; do
	assert_grep "^PASS $t \\(4 ranks\\)$" "$out" "osc/pt2pt: $t"
done
[ "$(openib_stats_sum "$out" sends)" -gt 1000 ] || fail "osc/pt2pt's messages did not go over openib"
ok "dynamic windows through osc/pt2pt over openib: all seven tests, live attach included"

#!/bin/bash
# Released memory is never reached through a registration of its old pages
# (reg_release.c): a buffer's pages are released (munmap and a new mapping
# at the same address, or madvise(MADV_DONTNEED)) between messages that go
# by RDMA read, on the sending and on the receiving side, and every byte is
# checked. First as Open MPI runs it, then with grdma's own memory hook
# removed, so that every invalidation of the cache is missed, as the race
# in btl_openib/btl_openib_release_log.h misses some: openib's own log of
# released ranges must still keep the old pages out of reach.
# timeout: 300
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
need_cmd mpirun mpicc
use_our_component
prog=$OPENIB_TEST_TMP/reg_release
# -lopen-pal: the program removes grdma's hook through Open MPI's own calls
mpicc -O2 -Wall -o "$prog" "$OPENIB_SRCDIR/tests/integration/reg_release.c" -lopen-pal ||
	fail "mpicc reg_release.c failed"

for mode in with-grdma-hook no-grdma-hook; do
	out=$OPENIB_TEST_TMP/reg-release-$mode.out
	args=()
	[ "$mode" = no-grdma-hook ] && args=(--no-grdma-hook)
	"${MPIRUN[@]}" "${MPI_OPENIB_ARGS[@]}" --mca btl_openib_verbose 10 --mca mpi_leave_pinned 1 \
		"$prog" "${args[@]}" >"$out" 2>&1
	rc=$?
	show "$out"
	[ "$rc" = 0 ] || fail "$mode: mpirun exited with status $rc"
	if [ "$mode" = no-grdma-hook ]; then
		assert_grep "^reg_release: grdma's memory hook removed$" "$out" "$mode: grdma's hook removed"
	fi
	assert_grep '^reg_release: PASSED cases=4 bytes=3145728$' "$out" "$mode: every byte of 12 messages"
	assert_openib_carried "$out" 2 2 oob
	gets=$(openib_stats_sum "$out" gets)
	# 4 cases x 3 rounds, each one RDMA read; the receiver's side posts them
	[ "$gets" -ge 12 ] || fail "$mode: $gets RDMA reads through openib (want >= 12: the messages did not go by RDMA read)"
	ok "$mode: all bytes right after every release; $gets RDMA reads"
done

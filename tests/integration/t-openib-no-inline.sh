#!/bin/bash
# btl_openib_max_inline_data 0 (a valid setting: no inline data in any
# work request) on siw0 and on rxe0, 4 ranks each: the connection storm
# and the all-to-all (every byte checked by the program) pass, every rank
# reports 0 inline bytes, and the job ends with status 0, with no endpoint
# failure logged. Before the goodbye write went from a registered word when
# there is no inline room, it was skipped; on siw the peer then took the
# flush's reset for a lost connection and the job exited with 255.
# devices: rxe,siw
# timeout: 900
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
. "$OPENIB_SRCDIR/tests/integration/cpc_lib.sh"
need_cmd mpirun
use_our_component
. "$OPENIB_SRCDIR/tests/integration/siw_lib.sh"
prog=$OPENIB_TEST_TMP/mpi_patterns
build_mpi_program "$OPENIB_SRCDIR/tests/integration/mpi_patterns.c" "$prog"

for dev in "$siw" "$rxe"; do
	out=$OPENIB_TEST_TMP/no-inline-$dev.out
	timeout 600 mpirun --allow-run-as-root --oversubscribe -np 4 "${MPI_OPENIB_ARGS[@]}" \
		--mca btl_openib_if_include "$dev" --mca btl_openib_verbose 10 \
		--mca btl_openib_max_inline_data 0 "$prog" storm alltoall >"$out" 2>&1
	rc=$?
	[ "$rc" = 0 ] || { show "$out"; fail "4 ranks on $dev without inline data: mpirun exited with status $rc"; }
	assert_grep '^PASS storm \(4 ranks\)' "$out" "storm on $dev"
	assert_grep '^PASS alltoall \(4 ranks\)' "$out" "all-to-all on $dev"
	n=$(count_lines "openib: $dev:1: up to 0 bytes inline in a work request" "$out")
	[ "$n" = 4 ] || { show "$out"; fail "$n of 4 ranks report 0 inline bytes on $dev"; }
	if grep -Eq "openib: endpoint .* failed:" "$out"; then
		show "$out"
		fail "an endpoint failed on $dev without inline data"
	fi
	nconn=$(grep -Ec "openib: connected to rank [0-9]+ .* port $dev:1 with CPC" "$out")
	[ "$nconn" -ge 12 ] || { show "$out"; fail "only $nconn connections on $dev (want 12)"; }
	ok "$dev, btl_openib_max_inline_data 0: storm and all-to-all verified, $nconn connections, clean exit"
done

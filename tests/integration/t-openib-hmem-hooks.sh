#!/bin/bash
# The HMEM copy hooks in the fragment path: with the counting override
# plug-in loaded through btl_openib_hmem_override, every payload byte the
# BTL copied into send fragments (contiguous and strided eager messages,
# and a strided ~100 KB message whose pipelined fragments start inside its
# blocks) went through the hook (its byte count equals what the program
# sent) and all data verifies; with only copy_to overridden, the copy_from
# path uses the default (the plug-in sees no copy_from call) and data
# still verifies.
# timeout: 300
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
need_cmd mpirun
use_our_component
plugin=$OPENIB_BUILDDIR/hmem/examples/.libs/openib_hmem_counting.so
[ -f "$plugin" ] || fail "the counting plug-in is not built: $plugin"
prog=$OPENIB_TEST_TMP/hmem_traffic
build_mpi_program "$OPENIB_SRCDIR/tests/integration/hmem_traffic.c" "$prog"

run_counted() { # OPS OUT
	"${MPIRUN[@]}" "${MPI_OPENIB_ARGS[@]}" --mca btl_openib_verbose 10 \
		--mca btl_openib_hmem_override "$plugin" \
		-x OPENIB_HMEM_COUNT_OPS="$1" -x OPENIB_HMEM_COUNT_FILE="$OPENIB_TEST_TMP/count.$1.%r" \
		"$prog" >"$2" 2>&1
}

out=$OPENIB_TEST_TMP/both.out
run_counted both "$out"
rc=$?
show "$out"
cat "$OPENIB_TEST_TMP"/count.both.* 2>/dev/null
[ "$rc" = 0 ] || fail "mpirun exited with status $rc"
assert_openib_carried "$out" 2 2 oob
for r in 0 1; do
	want=$(sed -nE "s/^hmem-expect rank=$r bytes=([0-9]+) errors=0$/\\1/p" "$out")
	[ -n "$want" ] || fail "rank $r did not verify its data"
	got=$(sed -nE 's/.* from_hmem_bytes=([0-9]+).*/\1/p' "$OPENIB_TEST_TMP/count.both.$r" 2>/dev/null)
	[ -n "$got" ] || fail "no count from the plug-in for rank $r"
	[ "$got" = "$want" ] || fail "rank $r: the hook copied $got bytes, the program sent $want"
	ok "rank $r: every payload byte ($got) went through the copy_from hook"
done

out=$OPENIB_TEST_TMP/to.out
run_counted to "$out"
rc=$?
show "$out"
cat "$OPENIB_TEST_TMP"/count.to.* 2>/dev/null
[ "$rc" = 0 ] || fail "mpirun (copy_to only) exited with status $rc"
for r in 0 1; do
	grep -Eq "^hmem-expect rank=$r bytes=[1-9][0-9]* errors=0$" "$out" || fail "rank $r: data did not verify with copy_to only"
	got=$(sed -nE 's/.* from_hmem_calls=([0-9]+).*/\1/p' "$OPENIB_TEST_TMP/count.to.$r" 2>/dev/null)
	[ "$got" = 0 ] || fail "rank $r: copy_from was not overridden, yet the plug-in saw $got calls"
done
ok "with only copy_to overridden, copy_from used the default and data verified"

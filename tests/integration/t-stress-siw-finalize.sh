#!/bin/bash
# The CI bench's 4-pair 8 B message rate over siw0 with rdma_cm (8 ranks:
# ranks 0-3 send to ranks 4-7, bench/measure.sh's PAIR_ARGS), 12 runs. The
# job's last collective makes new connections, and a rank that has its
# messages before its side of a connection is up then finalizes with the
# connection still being made. Before openib_endpoints_settle
# (btl_openib_teardown.c) it closed that endpoint without a goodbye and
# the initiator, still in MPI_Finalize, reported a lost connection: 5 of
# 39 runs. Each run must exit 0 with the bench's verification PASSED and
# no lost connection. Run times are noted: runs took about 40 s instead
# of 10 while teardown waited out its budget for work siw completes only
# at QP destruction (README, the fix of 2026-12-04).
# devices: rxe,siw
# stress: yes
# timeout: 1800
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
need_cmd mpirun
use_our_component
. "$OPENIB_SRCDIR/tests/integration/siw_lib.sh"
bin=$OPENIB_TEST_TMP/openib_bench
mpicc -O2 -Wall -o "$bin" "$OPENIB_SRCDIR"/bench/openib_bench*.c || fail "building openib_bench failed"
bad=0
for i in $(seq 1 12); do
	out=$OPENIB_TEST_TMP/pairs-$i.out
	t0=$(date +%s)
	timeout 300 mpirun --allow-run-as-root --oversubscribe -np 8 "${MPI_OPENIB_ARGS[@]}" "${SIW_ARGS[@]}" \
		--mca btl_openib_cpc_include rdma_cm --mca btl_openib_verbose 1 \
		"$bin" --csv --tests rate -m 8 -M 8 -n 5 -r 10 >"$out" 2>&1
	rc=$?
	note "run $i: status $rc in $(($(date +%s) - t0)) s"
	if [ "$rc" != 0 ] || grep -q 'lost its connection' "$out" ||
		! grep -q '^# verification: .* 0 errors: PASSED$' "$out"; then
		bad=$((bad + 1))
		show "$out"
	fi
done
[ "$bad" = 0 ] || fail "$bad of 12 runs failed, lost a connection or did not verify"
ok "12 runs of the 4-pair rate over siw0 with rdma_cm: each verified, no connection lost"

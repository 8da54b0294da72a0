#!/bin/bash
# The leak check: every verbs object openib creates (contexts, PDs, CQs,
# SRQs, QPs, MRs, registration-cache MRs included) is gone at exit, after a
# run that used eager sends, eager-RDMA rings (one per direction, from the
# first message), the RDMA rendezvous and the loopback endpoint.
# timeout: 300
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
need_cmd mpirun gcc
use_our_component
shim=$OPENIB_TEST_TMP/verbs_leakcheck.so
gcc -O2 -Wall -shared -fPIC -o "$shim" "$OPENIB_SRCDIR/tests/integration/verbs_leakcheck.c" -ldl -libverbs ||
	fail "building the leak check"
pp=$(pingpong_bin) || exit 1
out=$OPENIB_TEST_TMP/leak.out
"${MPIRUN[@]}" "${MPI_OPENIB_ARGS[@]}" --mca btl_openib_verbose 10 --mca btl_openib_eager_rdma_threshold 1 \
	-x LD_PRELOAD="$shim" \
	"$pp" -n 1 -m 4194304 >"$out" 2>&1
rc=$?
show "$out"
[ "$rc" = 0 ] || fail "mpirun exited with status $rc"
assert_openib_carried "$out" 2 2 oob
[ "$(openib_stats_sum "$out" eager_rdma_rings)" = 2 ] || fail "no eager-RDMA ring in the checked run"
n=$(grep -c '^verbs-leakcheck ' "$out")
[ "$n" -ge 2 ] || fail "the leak check reported for $n processes (want 2)"
if grep '^verbs-leakcheck ' "$out" | grep -Ev 'ctx=0 pd=0 cq=0 srq=0 qp=0 mr=0 created=[1-9]'; then
	fail "verbs objects left at exit (above)"
fi
ok "no verbs object left at exit in $n processes"

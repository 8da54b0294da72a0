#!/bin/bash
# RDMA on local memory the NIC cannot register: one-sided get and put whose
# origin buffer is device memory of the fake CUDA driver (no GPU here) are
# staged through registered host bounce buffers; the get's data reaches the
# device through the driver's host-to-device copy, the put's leaves it
# through the device-to-host copy. Data verified on both sides.
# timeout: 200
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
need_cmd mpirun
use_our_component
fake=$OPENIB_BUILDDIR/tests/unit/hmem/.libs/hmem_fake_cuda.so
[ -f "$fake" ] || fail "the fake CUDA driver is not built (make check builds it): $fake"
prog=$OPENIB_TEST_TMP/hmem_osc
mpicc -O2 -Wall -o "$prog" "$OPENIB_SRCDIR/tests/integration/hmem_osc.c" -ldl || fail "mpicc"
out=$OPENIB_TEST_TMP/osc.out
"${MPIRUN[@]}" "${MPI_OPENIB_ARGS[@]}" --mca osc rdma --mca btl_openib_verbose 10 \
	-x OPENIB_HMEM_CUDA_LIBRARY="$fake" "$prog" >"$out" 2>&1
rc=$?
show "$out"
[ "$rc" = 0 ] || fail "mpirun exited with status $rc"
assert_grep '^hmem-osc rank=0 .* errors=0$' "$out" "rank 0's window holds what rank 1 put from device memory"
assert_grep '^hmem-osc rank=1 htod=[1-9][0-9]* dtoh=[1-9][0-9]* errors=0$' "$out" \
	"rank 1's get reached device memory (host-to-device copy) and its put left it (device-to-host copy)"
bounced=$(openib_stats_sum "$out" bounced)
[ "$bounced" -ge 2 ] || fail "only $bounced RDMA operations were staged through a bounce buffer"
ok "$bounced RDMA operations staged through host bounce buffers, data verified"

#!/bin/bash
# Device memory over openib, with the fake CUDA driver of the unit tests
# standing in for libcuda (no GPU here): the component detects the CUDA
# interface, refuses to register device memory for remote access (no
# peer-direct), so the PML falls back to send fragments, and the BTL copies
# the device payload into them through the HMEM hook (the driver's
# device-to-host copy). Data verifies both ways. The application loads the
# driver after MPI_Init: CUDA is not started at init, but on first use.
# timeout: 200
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
need_cmd mpirun
use_our_component
fake=$OPENIB_BUILDDIR/tests/unit/hmem/.libs/hmem_fake_cuda.so
[ -f "$fake" ] || fail "the fake CUDA driver is not built (make check builds it): $fake"
prog=$OPENIB_TEST_TMP/hmem_device
mpicc -O2 -Wall -o "$prog" "$OPENIB_SRCDIR/tests/integration/hmem_device.c" -ldl || fail "mpicc"
out=$OPENIB_TEST_TMP/dev.out
"${MPIRUN[@]}" "${MPI_OPENIB_ARGS[@]}" --mca btl_openib_verbose 100 \
	-x OPENIB_HMEM_CUDA_LIBRARY="$fake" "$prog" >"$out" 2>&1
rc=$?
show "$out"
[ "$rc" = 0 ] || fail "mpirun exited with status $rc"
assert_grep 'openib: HMEM: cuda: not started: ' "$out" "CUDA not started at init: the application had not loaded the driver yet"
assert_grep 'openib: HMEM: cuda: available: .*started on first use' "$out" "the component started the (fake) CUDA driver once the application had loaded it"
assert_grep '^hmem-device rank=0 .* errors=0$' "$out" "rank 0 got back what rank 1 sent from device memory"
assert_grep '^hmem-device rank=1 .* errors=0$' "$out" "rank 1 received into device memory"
assert_grep 'cuda memory\) cannot be registered for remote access' "$out" "device memory refused for remote RDMA"
dtoh=$(sed -nE 's/^hmem-device rank=1 htod=[0-9]+ dtoh=([0-9]+) .*/\1/p' "$out")
[ "${dtoh:-0}" -gt 0 ] || fail "the device payload was not copied with the driver's device-to-host copy"
ok "rank 1's device payload went through the CUDA copy hook ($dtoh copies)"

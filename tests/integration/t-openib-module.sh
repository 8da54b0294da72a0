#!/bin/bash
# OUR openib component (not Debian's) is loaded by Open MPI, reports its
# version, opens a module on the rxe device port 1, and carries a verified
# MPI ping-pong (pml ob1, btl openib,self,vader).
# timeout: 300
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
need_cmd mpirun
: "${OPENIB_MODULE_REGEX:=openib: .*module.*${OPENIB_TEST_DEVICE}.*port 1}"
: "${OPENIB_VERSION_REGEX:=openib-ng}"

use_our_component
note "component: $(openib_component_so)"
note "OMPI_MCA_mca_base_component_path=$OMPI_MCA_mca_base_component_path"
pp=$(pingpong_bin) || exit 1
out=$OPENIB_TEST_TMP/openib.out
"${MPIRUN[@]}" --mca pml ob1 --mca btl openib,self,vader --mca btl_base_verbose 100 \
	"$pp" -n 1 >"$out" 2>&1
rc=$?
show "$out"
assert_grep "$OPENIB_VERSION_REGEX" "$out" "our component's version (OPENIB_VERSION_REGEX)"
assert_grep "$OPENIB_MODULE_REGEX" "$out" "a module on $OPENIB_TEST_DEVICE port 1 (OPENIB_MODULE_REGEX)"
[ "$rc" = 0 ] || fail "mpirun exited with status $rc"
check_pingpong "$out" 1
ok "our openib component loaded and opened $OPENIB_TEST_DEVICE port 1"

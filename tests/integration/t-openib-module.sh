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

# btl_bandwidth (ob1's rail weight) comes from the port's active speed and
# width (the rate table itself: tests/unit/test_port_speed.c); a value the
# user sets stays.
speed=$(ibv_devinfo -v -d "$OPENIB_TEST_DEVICE" -i 1 | sed -n 's/.*active_speed:.*(\([0-9]*\)).*/\1/p')
width=$(ibv_devinfo -v -d "$OPENIB_TEST_DEVICE" -i 1 | sed -n 's/.*active_width:.*(\([0-9]*\)).*/\1/p')
[ -n "$speed" ] && [ -n "$width" ] || fail "ibv_devinfo -v gave no active_speed/active_width codes"
for bw in port 12345; do
	out=$OPENIB_TEST_TMP/bandwidth-$bw.out
	set -- --mca btl_openib_verbose 10
	[ "$bw" = port ] || set -- "$@" --mca btl_openib_bandwidth "$bw"
	"${MPIRUN[@]}" --mca pml ob1 --mca btl openib,self "$@" "$pp" -n 1 >"$out" 2>&1
	rc=$?
	[ "$rc" = 0 ] || { show "$out"; fail "bandwidth $bw: mpirun exited with status $rc"; }
	if [ "$bw" = port ]; then
		assert_grep "openib: $OPENIB_TEST_DEVICE:1: btl_openib_bandwidth [1-9][0-9]* Mb/s from the port \\(speed $speed, width $width\\)" \
			"$out" "btl_bandwidth from the port (speed $speed, width $width)"
	else
		assert_grep "openib: $OPENIB_TEST_DEVICE:1: btl_openib_bandwidth 12345 Mb/s as set" "$out" \
			"a btl_openib_bandwidth the user set stays"
	fi
done
ok "btl_bandwidth: the port's rate (speed $speed, width $width), or the user's"

# btl_latency (ob1 sends first fragments on the rails of the lowest) comes
# from the port's kind of link: Soft-RoCE is RoCE, transport IB (0) on an
# Ethernet link layer (2), ranked 2 us; a value the user sets stays.
out=$OPENIB_TEST_TMP/bandwidth-port.out
assert_grep "openib: $OPENIB_TEST_DEVICE:1: btl_openib_latency 2 us from the port \\(transport 0, link layer 2\\)" \
	"$out" "btl_latency 2 from the port (RoCE)"
out=$OPENIB_TEST_TMP/latency-set.out
"${MPIRUN[@]}" --mca pml ob1 --mca btl openib,self --mca btl_openib_verbose 10 \
	--mca btl_openib_latency 7 "$pp" -n 1 >"$out" 2>&1
rc=$?
[ "$rc" = 0 ] || { show "$out"; fail "latency 7: mpirun exited with status $rc"; }
assert_grep "openib: $OPENIB_TEST_DEVICE:1: btl_openib_latency 7 us as set \\(the port: 2 us\\)" "$out" \
	"a btl_openib_latency the user set stays"
ok "btl_latency: the port's class (RoCE: 2 us), or the user's"

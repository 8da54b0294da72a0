#!/bin/bash
# The Soft-RoCE device exists and its port 1 is active on the Ethernet link
# layer, with an IPv4 (RoCE v2) GID at index 1.
# timeout: 60
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
need_cmd ibv_devices ibv_devinfo

dev=$OPENIB_TEST_DEVICE
ibv_devices >"$OPENIB_TEST_TMP/devices" 2>&1 || { show "$OPENIB_TEST_TMP/devices"; fail "ibv_devices failed"; }
show "$OPENIB_TEST_TMP/devices"
assert_grep "^[[:space:]]+${dev}[[:space:]]" "$OPENIB_TEST_TMP/devices" "ibv_devices lists $dev"

ibv_devinfo -d "$dev" -i 1 -v >"$OPENIB_TEST_TMP/devinfo" 2>&1 || { show "$OPENIB_TEST_TMP/devinfo"; fail "ibv_devinfo -d $dev failed"; }
show "$OPENIB_TEST_TMP/devinfo"
assert_grep "^hca_id:[[:space:]]+$dev\$" "$OPENIB_TEST_TMP/devinfo" "device name"
assert_grep 'state:[[:space:]]+PORT_ACTIVE \(4\)' "$OPENIB_TEST_TMP/devinfo" "port 1 state"
assert_grep 'link_layer:[[:space:]]+Ethernet' "$OPENIB_TEST_TMP/devinfo" "link layer"
assert_grep 'active_mtu:[[:space:]]+(256|512|1024|2048|4096) ' "$OPENIB_TEST_TMP/devinfo" "active MTU"
# GID[1] is the IPv4-mapped address of the interface: ::ffff:a.b.c.d
ip4=$(dev_ipv4 "$dev") || fail "no IPv4 address on the netdev of $dev"
[ -n "$ip4" ] || fail "no IPv4 address on the netdev of $dev"
assert_grep "GID\[ *1\]:[[:space:]]+::ffff:$ip4, RoCE v2" "$OPENIB_TEST_TMP/devinfo" "GID index 1 (RoCE v2, $ip4)"
ok "$dev port 1 PORT_ACTIVE, Ethernet, GID[1] ::ffff:$ip4 RoCE v2"

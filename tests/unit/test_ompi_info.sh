#!/bin/sh
# ompi_info loads OUR openib (by its version) and lists its parameters with
# help texts, including the CPC parameters with their valid values.
HERE=$(dirname "$0")
. "$HERE/lib.sh"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
ompi_info --param btl openib --level 9 >"$out" 2>&1 || fail "ompi_info exited $?"
expect_grep "$out" 'MCA btl: openib \(MCA v2\.1\.0, API v3\.1\.0, Component v0\.1\.0\)' "component line shows our version"
expect_grep "$out" 'btl_openib_version" \(current value: "openib-ng 0\.1\.0' "version string says openib-ng"
for p in verbose if_include if_exclude receive_queues cpc_include cpc_exclude \
         connect_oob_priority connect_rdma_cm_priority connect_xoob_priority \
         eager_limit max_send_size exclusivity flags cq_size gid_index; do
    expect_grep "$out" "parameter \"btl_openib_$p\"" "parameter btl_openib_$p listed"
done
expect_grep "$out" 'btl_openib_cpc_include.*' "cpc_include listed"
expect_grep "$out" 'Valid CPCs: oob, rdma_cm \(alias: rdmacm\), xoob' "CPC help lists valid names"
# the build tree's component (uninstalled) reads help texts from the source tree
expect_grep "$out" "btl_openib_help_dir\" \\(current value: \"$OPENIB_SRCDIR/mca\"" "uninstalled component reads help texts from the source tree"
# every parameter has a one-line help text right below it
awk '/parameter "btl_openib_/{getline h; if (h !~ /^ +[A-Za-z(]/) {print "no help for " $0; bad=1}} END{exit bad}' "$out" \
    && pass "every parameter has a help line" || fail "a parameter lacks help"
# ompi_info loads no CPC plug-in (they load at BTL init): a path it tried
# would show "cpc plugin failed", and a plug-in it loaded would register
# its priority parameter (the v1 test plug-in's CPC is "v1mock").
plugin=$OPENIB_BUILDDIR/tests/abi/.libs/cpc_plugin_v1.so
[ -f "$plugin" ] || fail "the v1 CPC plug-in is not built: $plugin"
for p in /nonexistent/cpc_plugin.so "$plugin"; do
    OMPI_MCA_btl_openib_cpc_plugins=$p ompi_info --param btl openib --level 9 >"$out" 2>&1 \
        || fail "ompi_info with a plug-in exited $?"
    expect_grep "$out" 'btl_openib_cpc_plugins" \(current value: "'"$p"'"' "ompi_info shows cpc_plugins=$p"
    if grep -E 'CPC\) plug-in|Plug-in: |connect_v1mock_priority' "$out"; then
        fail "ompi_info loaded (or tried to load) the CPC plug-in $p"
    else
        pass "ompi_info did not load the CPC plug-in $p"
    fi
done
# Debian's openib (Component v4.1.4) must not be what loaded
if grep -q 'Component v4\.1\.4' "$out"; then fail "Debian's openib loaded instead of ours"; else pass "not Debian's openib"; fi
finish

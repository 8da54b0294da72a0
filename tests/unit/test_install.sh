#!/bin/sh
# make install: the component lands in $prefix/lib/openmpi (or
# --with-component-dir), help texts and headers beside it, and the installed
# openib-ng-env.sh makes ompi_info load OUR openib from there.
HERE=$(dirname "$0")
. "$HERE/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$(sed -n "s/^prefix = //p" "$OPENIB_BUILDDIR/Makefile")
make -C "$OPENIB_BUILDDIR" install DESTDIR="$tmp" >"$tmp/install.log" 2>&1 || { fail "make install"; cat "$tmp/install.log"; finish; exit 1; }
root=$tmp$prefix
[ -f "$root/lib/openmpi/mca_btl_openib.so" ] && pass "component in \$prefix/lib/openmpi" || fail "no $root/lib/openmpi/mca_btl_openib.so"
[ ! -e "$root/lib/openmpi/mca_btl_openib.la" ] && pass "no stray .la" || fail "libtool archive installed"
for f in share/openib-ng/help-btl-openib.txt share/openib-ng/help-btl-openib-cpc.txt \
         include/openib/openib_abi.h include/openib/openib_cpc.h include/openib/openib_hmem.h \
         share/openib-ng/openib-ng-env.sh; do
    [ -f "$root/$f" ] && pass "installed $f" || fail "missing $f"
done
env_file=$root/share/openib-ng/openib-ng-env.sh
expect_grep "$env_file" "^OMPI_MCA_mca_base_component_path=\"$prefix/lib/openmpi:/" "env script puts our directory first"
# Use it (rewritten to the DESTDIR location) and check ompi_info loads ours
sed "s|$prefix|$root|g" "$env_file" >"$tmp/env.sh"
( unset OMPI_MCA_mca_base_component_path; . "$tmp/env.sh"; ompi_info --param btl openib --level 9 ) >"$tmp/info" 2>&1
expect_grep "$tmp/info" 'MCA btl: openib \(MCA v2\.1\.0, API v3\.1\.0, Component v0\.1\.0\)' "ompi_info loads the installed component"
# Help texts (printf formats) of an installed component come from the
# installed directory alone, never from the source tree.
expect_grep "$tmp/info" "btl_openib_help_dir\" \\(current value: \"$prefix/share/openib-ng\"" "installed component reads help texts from \$pkgdatadir"
if grep -F "$OPENIB_SRCDIR/mca" "$tmp/info"; then fail "installed component searches the source tree"; else pass "installed component does not search the source tree"; fi
finish

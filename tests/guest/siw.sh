# siw.sh: the Soft-iWARP (siw) kernel module for the guest kernel, built once
# into the cache next to that kernel.  Debian 12's kernel package does not ship
# siw, so it is built from Debian's own packages of the same kernel version:
# linux-source-6.1 (the siw sources), linux-headers-KVER,
# linux-headers-KVER-common and linux-kbuild-6.1 (what an out-of-tree module
# build needs; 6.1 is the kernel's series, taken from KVER).
# Sourced by openib-guest (bash), which defines msg, die_setup, ensure_pkgs,
# APT_UPDATED, CACHE, KVER and VMLINUX (prepare_cache has run).
# prepare_siw sets SIW_DIR: a directory with the .ko files and "load-order"
# (file names in insmod order) that stage2.sh loads in the guest.
# shellcheck shell=bash

SIW_DIR=''
# Bump to rebuild the cached module when the recipe below changes.
SIW_RECIPE=1

# siw_download DIR VERSION PKG...: apt-get download PKG=VERSION into DIR.
siw_download() {
	local dir=$1 ver=$2 p pins=()
	shift 2
	for p in "$@"; do pins+=("$p=$ver"); done
	# As in kernel.sh: as root, apt's _apt sandbox user may not be able to
	# write into the cache, so try without the sandbox first.
	(cd "$dir" && timeout 900 apt-get download -o APT::Sandbox::User=root "${pins[@]}" >&2) && return 0
	(cd "$dir" && timeout 900 apt-get download "${pins[@]}" >&2) && return 0
	# A fresh machine may have no (or stale) package lists.
	if [ "$(id -u)" = 0 ] && [ "$APT_UPDATED" = 0 ]; then
		msg "apt-get download failed; running apt-get update and trying again"
		DEBIAN_FRONTEND=noninteractive timeout 600 apt-get -o DPkg::Lock::Timeout=300 update -q >&2 && APT_UPDATED=1
		(cd "$dir" && timeout 900 apt-get download -o APT::Sandbox::User=root "${pins[@]}" >&2) && return 0
	fi
	return 1
}

# siw_series_version PKG VERSION: VERSION when the archive has PKG at it,
# else the newest PKG of the same upstream version (VERSION without its
# Debian revision), else VERSION. For linux-source-X.Y and linux-kbuild-X.Y
# only: they come from the kernel's source package, which the archive may
# already carry at the next Debian revision while the signed kernel image
# (and its headers) are still at this one (seen: image and headers 6.1.192-2,
# kbuild only 6.1.192-3). The headers must match exactly (modversions); the
# build tools and the siw sources of the same upstream version do not
# change the module the headers describe.
siw_series_version() {
	local ver=$2 v
	v=$(apt-cache madison "$1" 2>/dev/null |
		awk -F'|' -v up="${ver%-*}-" '{ gsub(/ /, "", $2) } index($2, up) == 1 { print $2 }' | sort -V)
	if [ -z "$v" ] || grep -qxF -- "$ver" <<<"$v"; then
		echo "$ver"
	else
		tail -n 1 <<<"$v"
	fi
}

# siw_fail MESSAGE: remove prepare_siw's build directory ($tmp), then fail
# the setup with MESSAGE.
siw_fail() {
	rm -rf "$tmp"
	die_setup "$@"
}

prepare_siw() {
	local kdir debs kdeb ver sdir tmp src hdr common log t0 f mm
	kdir=$(dirname "$VMLINUX")
	debs=("$kdir"/linux-image-*.deb)
	[ ${#debs[@]} -gt 0 ] || die_setup "siw: no kernel .deb in $kdir (needed for the kernel version and crc32c modules); remove $kdir to re-fetch it"
	kdeb=${debs[${#debs[@]} - 1]}
	ver=$(dpkg-deb -f "$kdeb" Version) || die_setup "siw: dpkg-deb -f $kdeb Version failed"
	# Keyed by the kernel's release and Debian version (headers of another
	# upload would give a module the kernel may refuse: modversions) and
	# by the recipe.
	sdir=$kdir/siw-$KVER-$ver-r$SIW_RECIPE
	# shellcheck disable=SC2034 # read by openib-guest, which sources this file
	SIW_DIR=$sdir

	exec 9>"$CACHE/lock" || die_setup "cannot open $CACHE/lock"
	if ! flock -w 900 9; then die_setup "timed out waiting for the cache lock $CACHE/lock"; fi
	if [ -s "$sdir/load-order" ]; then
		flock -u 9
		exec 9>&-
		return 0
	fi

	t0=$EPOCHREALTIME
	msg "building the siw module for $KVER ($ver) into $sdir (once)"
	# gcc-12: the compiler the Debian kernel was built with (its headers'
	# Makefile calls gcc-12); make and libc6-dev for kbuild; xz-utils for the
	# source tarball; binutils for strip; kmod for modinfo (and insmod in the
	# guest).
	ensure_pkgs gcc-12 make libc6-dev binutils xz-utils kmod
	tmp=$kdir/siw-build.$$
	# What an interrupted build left (we hold the lock: nobody else builds).
	rm -rf "$kdir"/siw-build.[0-9]*
	mkdir -p "$tmp/debs" "$tmp/root" "$tmp/out" || die_setup "cannot create $tmp"
	# linux-source-X.Y and linux-kbuild-X.Y are named by the upstream
	# series (6.1 for 6.1.0-56-amd64).
	mm=$(cut -d. -f1,2 <<<"$KVER")
	local pkgs=("linux-headers-$KVER" "linux-headers-${KVER%-*}-common") sver kver
	siw_download "$tmp/debs" "$ver" "${pkgs[@]}" ||
		siw_fail "siw: apt-get download ${pkgs[*]/%/=$ver} failed (they must be the cached guest kernel's version, $ver; if the archive no longer has it, remove $kdir to fetch the current kernel)"
	# after siw_download: it may have refreshed the package lists
	sver=$(siw_series_version "linux-source-$mm" "$ver")
	kver=$(siw_series_version "linux-kbuild-$mm" "$ver")
	[ "$sver" = "$ver" ] && [ "$kver" = "$ver" ] ||
		msg "siw: the archive has linux-source-$mm $sver and linux-kbuild-$mm $kver beside the kernel's $ver (same upstream version; the headers are $ver)"
	siw_download "$tmp/debs" "$sver" "linux-source-$mm" && siw_download "$tmp/debs" "$kver" "linux-kbuild-$mm" ||
		siw_fail "siw: apt-get download linux-source-$mm=$sver linux-kbuild-$mm=$kver failed (the kernel is $ver; if the archive has no $mm source or kbuild of its upstream version any more, remove $kdir to fetch the current kernel)"

	# The header packages are unpacked into the build directory instead of
	# installed with dpkg -i: nothing changes on the host system, no root
	# is needed for it, and an installed different version cannot clash.
	for f in "linux-headers-${KVER}_$ver" "linux-headers-${KVER%-*}-common_$ver" "linux-kbuild-${mm}_$kver"; do
		dpkg-deb -x "$tmp/debs/${f}_"*.deb "$tmp/root" ||
			siw_fail "siw: dpkg-deb -x of ${f%_*} failed"
	done
	hdr=$tmp/root/usr/src/linux-headers-$KVER
	common=$tmp/root/usr/src/linux-headers-${KVER%-*}-common
	[ -f "$hdr/Makefile" ] && [ -f "$common/Makefile" ] ||
		siw_fail "siw: $hdr/Makefile or $common/Makefile missing after unpacking the headers"
	# Its one line includes the -common Makefile by its absolute /usr/src
	# path; point it at the unpacked copy (the scripts and tools links are
	# relative and already resolve inside $tmp/root).
	echo "include $common/Makefile" >"$hdr/Makefile"

	# Only drivers/infiniband/sw/siw/ out of the 138 MB tarball, streamed.
	dpkg-deb --fsys-tarfile "$tmp/debs/linux-source-${mm}_${sver}_all.deb" |
		tar -xOf - "./usr/src/linux-source-$mm.tar.xz" |
		tar -xJf - -C "$tmp" --wildcards "linux-source-$mm/drivers/infiniband/sw/siw/*" ||
		siw_fail "siw: extracting drivers/infiniband/sw/siw/ from linux-source-${mm}_$sver failed"
	src=$tmp/linux-source-$mm/drivers/infiniband/sw/siw
	[ -f "$src/siw_main.c" ] || siw_fail "siw: no siw_main.c in linux-source-${mm}_$sver"

	log=$kdir/siw-build.log
	if ! timeout 900 make -C "$hdr" M="$src" CONFIG_RDMA_SIW=m -j"$(nproc)" modules >"$log" 2>&1; then
		tail -n 30 "$log" >&2
		siw_fail "siw: 'make -C linux-headers-$KVER M=.../siw CONFIG_RDMA_SIW=m modules' failed (full log: $log)"
	fi
	[ "$(modinfo -F vermagic "$src/siw.ko" 2>/dev/null | cut -d' ' -f1)" = "$KVER" ] ||
		siw_fail "siw: the built siw.ko is not for kernel $KVER (modinfo -F vermagic)"

	# siw needs libcrc32c, which needs a crc32c implementation: the generic
	# one, taken from the same kernel package (the cached module tree holds
	# only the initramfs modules).
	dpkg-deb --fsys-tarfile "$kdeb" |
		tar -xf - -C "$tmp/out" --strip-components=6 --wildcards \
			"./lib/modules/$KVER/kernel/crypto/crc32c_generic.ko*" "./lib/modules/$KVER/kernel/lib/libcrc32c.ko*" ||
		siw_fail "siw: crc32c_generic/libcrc32c not found in $kdeb"
	# Without debug information: 5 MB less to copy into every run directory.
	strip --strip-debug -o "$tmp/out/siw.ko" "$src/siw.ko" || siw_fail "siw: strip --strip-debug siw.ko failed"
	(
		cd "$tmp/out" || exit 1
		ls crc32c_generic.ko* && ls libcrc32c.ko* && echo siw.ko
	) >"$tmp/out/load-order" || siw_fail "siw: crc32c_generic/libcrc32c missing from $kdeb"
	rm -rf "$sdir"
	mv "$tmp/out" "$sdir" || die_setup "cannot move the siw modules to $sdir"
	# The 150 MB of packages are not kept: the three modules are all a guest needs.
	rm -rf "$tmp"
	msg "siw module built in $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }') s"
	flock -u 9
	exec 9>&-
}

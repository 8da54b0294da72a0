# kernel.sh: the guest kernel and initramfs, prepared once into the cache.
# Sourced by openib-guest (bash), which defines msg, die_setup, ensure_pkgs,
# APT_UPDATED, CACHE, BUSYBOX, MODULES, BUILDER_VERSION and GUEST_DIR.
# prepare_cache sets KVER, VMLINUX and INITRD.
# shellcheck shell=bash

# --- kernel: the linux-image-6.1.*-amd64 package linux-image-amd64 depends on

apt_cache_depends_kernel() {
	apt-cache depends linux-image-amd64 2>/dev/null |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9].*-amd64$/ { print $2; exit }'
}

resolve_kernel_pkg() {
	local pkg=${OPENIB_GUEST_KERNEL_PKG:-}
	if [ -z "$pkg" ]; then
		pkg=$(apt_cache_depends_kernel)
		if [ -z "$pkg" ] && [ "$(id -u)" = 0 ] && [ "$APT_UPDATED" = 0 ]; then
			msg "apt-cache knows no linux-image-amd64; running apt-get update"
			DEBIAN_FRONTEND=noninteractive timeout 600 apt-get -o DPkg::Lock::Timeout=300 update -q >&2 && APT_UPDATED=1
			pkg=$(apt_cache_depends_kernel)
		fi
	fi
	echo "$pkg"
}

# extract_vmlinux BZIMAGE OUT: find the compressed payload of a bzImage,
# decompress it and check the result is an ELF file.
hexbytes() { od -An -tx1 -v -j "$2" -N "$3" "$1" | tr -d ' \n'; }
uint_le() { od -An -tu"$3" -j "$2" -N "$3" "$1" | tr -d ' \n'; }

payload_format() { # FILE OFFSET -> format name or nothing
	local h
	h=$(hexbytes "$1" "$2" 6)
	case $h in
	fd377a585a00*) echo xz ;;
	1f8b08*) echo gzip ;;
	28b52ffd*) echo zstd ;;
	02214c18*) echo lz4 ;;
	425a68*) echo bzip2 ;;
	5d000000*) echo lzma ;;
	894c5a4f*) echo lzo ;;
	esac
}

decompressor_pkg() {
	case $1 in
	xz | lzma) echo xz-utils ;; gzip) echo gzip ;; zstd) echo zstd ;;
	lz4) echo lz4 ;; bzip2) echo bzip2 ;; lzo) echo lzop ;;
	esac
}

decompress() { # FORMAT: stdin -> stdout
	case $1 in
	xz) xz -dc --single-stream ;;
	lzma) xz -dc --format=lzma ;;
	gzip) gzip -dc ;;
	zstd) zstd -dcq ;;
	lz4) lz4 -dc ;;
	bzip2) bzip2 -dc ;;
	lzo) lzop -dc ;;
	esac
}

try_decompress_at() { # IMG OFFSET LENGTH(or empty) FORMAT OUT
	local img=$1 off=$2 len=$3 fmt=$4 out=$5
	ensure_pkgs "$(decompressor_pkg "$fmt")"
	if [ -n "$len" ]; then
		tail -c +"$((off + 1))" "$img" | head -c "$len" | decompress "$fmt" >"$out" 2>/dev/null
	else
		tail -c +"$((off + 1))" "$img" | decompress "$fmt" >"$out" 2>/dev/null
	fi
	# Trailing bytes (the kernel appends the decompressed size) make some
	# decompressors complain; judge by the output instead.
	[ "$(hexbytes "$out" 0 4)" = 7f454c46 ] && [ "$(stat -c %s "$out")" -gt 1000000 ]
}

extract_vmlinux() {
	local img=$1 out=$2 setup_sects version poff plen start fmt magic off
	if [ "$(hexbytes "$img" 514 4)" = 48647253 ]; then # "HdrS" at 0x202
		setup_sects=$(uint_le "$img" 497 1)             # 0x1f1
		[ "$setup_sects" = 0 ] && setup_sects=4
		version=$(uint_le "$img" 518 2) # 0x206
		if [ "$version" -ge $((0x208)) ]; then
			poff=$(uint_le "$img" 584 4) # 0x248 payload_offset
			plen=$(uint_le "$img" 588 4) # 0x24c payload_length
			start=$(((setup_sects + 1) * 512 + poff))
			fmt=$(payload_format "$img" "$start")
			if [ -n "$fmt" ] && try_decompress_at "$img" "$start" "$plen" "$fmt" "$out"; then
				msg "extracted vmlinux ($fmt payload at byte $start)"
				return 0
			fi
		fi
	fi
	# Fallback: scan for a known compressed-stream magic.
	for magic in '\xfd7zXZ\x00' '\x1f\x8b\x08' '\x28\xb5\x2f\xfd' '\x02\x21\x4c\x18' 'BZh9' '\x5d\x00\x00\x00'; do
		for off in $(LC_ALL=C grep -obUaP "$magic" "$img" | cut -d: -f1 | head -20); do
			fmt=$(payload_format "$img" "$off")
			[ -n "$fmt" ] || continue
			if try_decompress_at "$img" "$off" "" "$fmt" "$out"; then
				msg "extracted vmlinux ($fmt payload found by scanning, at byte $off)"
				return 0
			fi
		done
	done
	rm -f "$out"
	return 1
}

# module_closure MODDIR NAMES...: module files (relative to MODDIR) in load order
module_closure() {
	local moddir=$1
	shift
	awk -v want="$*" '
	function norm(s) { gsub(/-/, "_", s); return s }
	function base(p,   b) { b = p; sub(/.*\//, "", b); sub(/\.ko(\.[a-z]+)?$/, "", b); return norm(b) }
	FILENAME ~ /modules\.builtin$/ { builtin[base($1)] = 1; next }
	{
		f = $1; sub(/:$/, "", f)
		path[base(f)] = f
		deps[base(f)] = ""
		for (i = 2; i <= NF; i++) deps[base(f)] = deps[base(f)] " " base($i)
	}
	function visit(m,   n, d, i) {
		if (m in done) return
		done[m] = 1
		if (!(m in path)) {
			if (m in builtin) return
			printf "missing module: %s\n", m > "/dev/stderr"; bad = 1; return
		}
		n = split(deps[m], d, " ")
		for (i = n; i >= 1; i--) visit(d[i])
		print path[m]
	}
	END {
		n = split(want, w, " ")
		for (i = 1; i <= n; i++) visit(norm(w[i]))
		exit bad
	}' "$moddir/modules.builtin" "$moddir/modules.dep"
}

KVER='' VMLINUX='' INITRD=''

prepare_cache() {
	mkdir -p "$CACHE" || die_setup "cannot create cache directory $CACHE"
	exec 9>"$CACHE/lock" || die_setup "cannot open $CACHE/lock"
	if ! flock -w 900 9; then die_setup "timed out waiting for the cache lock $CACHE/lock"; fi

	local pkg kdir deb x
	pkg=$(resolve_kernel_pkg)
	if [ -z "$pkg" ]; then
		# Offline with a warm cache: take the newest cached kernel.
		kdir=$(printf '%s\n' "$CACHE"/linux-image-*/kver | sort -V | tail -1)
		kdir=${kdir%/kver}
		[ -n "$kdir" ] || die_setup "cannot find the kernel package linux-image-amd64 depends on (apt-cache depends linux-image-amd64)"
		kdir=${kdir%/}
		pkg=${kdir##*/}
		msg "apt-cache gave no kernel; using cached $pkg"
	fi
	kdir=$CACHE/$pkg
	mkdir -p "$kdir"

	if [ ! -s "$kdir/vmlinux" ] || [ ! -s "$kdir/kver" ] || [ ! -d "$kdir/modules" ]; then
		msg "preparing kernel $pkg in $kdir"
		rm -rf "$kdir/tmp" && mkdir -p "$kdir/tmp" || die_setup "cannot write $kdir"
		local debs=("$kdir"/"$pkg"_*.deb)
		deb=
		[ ${#debs[@]} -gt 0 ] && deb=${debs[${#debs[@]} - 1]}
		if [ -z "$deb" ]; then
			(cd "$kdir/tmp" && timeout 900 apt-get download -o APT::Sandbox::User=root "$pkg" >&2) ||
				(cd "$kdir/tmp" && timeout 900 apt-get download "$pkg" >&2) ||
				die_setup "apt-get download $pkg failed"
			debs=("$kdir"/tmp/"$pkg"_*.deb)
			[ ${#debs[@]} = 1 ] || die_setup "apt-get download produced no .deb"
			mv "${debs[0]}" "$kdir/" || die_setup "cannot move ${debs[0]}"
			deb=$kdir/${debs[0]##*/}
		fi
		dpkg-deb -x "$deb" "$kdir/tmp/x" || die_setup "dpkg-deb -x $deb failed"
		x=$kdir/tmp/x
		local bzs=("$x"/boot/vmlinuz-*) bz
		bz=${bzs[0]:-}
		[ -n "$bz" ] || die_setup "no /boot/vmlinuz-* in $deb"
		KVER=${bz##*/vmlinuz-}
		[ -d "$x/lib/modules/$KVER" ] || die_setup "no lib/modules/$KVER in $deb"
		"$BUSYBOX" depmod -b "$x" "$KVER" || die_setup "busybox depmod failed"
		if grep -q '^CONFIG_PVH=y' "$x/boot/config-$KVER" 2>/dev/null; then
			extract_vmlinux "$bz" "$kdir/tmp/vmlinux" || die_setup "could not extract vmlinux from $bz"
		else
			msg "kernel lacks CONFIG_PVH; booting the bzImage"
			cp "$bz" "$kdir/tmp/vmlinux"
		fi
		# Keep only the modules the guest needs (and the index files).
		local list
		list=$(module_closure "$x/lib/modules/$KVER" $MODULES) || die_setup "module dependency closure failed"
		rm -rf "$kdir/modules"
		mkdir -p "$kdir/tmp/modules"
		(cd "$x/lib/modules/$KVER" && cp --parents modules.dep modules.builtin $list "$kdir/tmp/modules/") ||
			die_setup "copying modules failed"
		echo "$list" >"$kdir/tmp/modules/load-order"
		mv "$kdir/tmp/modules" "$kdir/modules"
		mv "$kdir/tmp/vmlinux" "$kdir/vmlinux"
		echo "$KVER" >"$kdir/kver"
		rm -rf "$kdir/tmp"
		# Keep the .deb: the initramfs can be rebuilt from the kept modules,
		# the .deb is only needed if the module list changes.
	fi
	KVER=$(cat "$kdir/kver")
	# shellcheck disable=SC2034 # read by openib-guest, which sources this file
	VMLINUX=$kdir/vmlinux

	# The module list may have changed since the kernel was prepared.
	local list
	list=$(module_closure "$kdir/modules" $MODULES 2>/dev/null)
	if [ $? -ne 0 ] || [ "$list" != "$(cat "$kdir/modules/load-order")" ]; then
		msg "module list changed; re-preparing the kernel"
		rm -f "$kdir/kver"
		flock -u 9
		prepare_cache
		return
	fi

	local hash
	hash=$( {
		echo "builder $BUILDER_VERSION kernel $pkg $KVER"
		echo "$list"
		cat "$GUEST_DIR/init"
		sha256sum "$BUSYBOX"
	} | sha256sum | cut -c1-16)
	INITRD=$kdir/initrd-$hash.gz
	if [ ! -s "$INITRD" ]; then
		msg "building initramfs $INITRD"
		local root=$kdir/initrd-root.$$
		rm -rf "$root"
		mkdir -p "$root/bin" "$root/lib/modules" || die_setup "cannot create $root"
		cp "$BUSYBOX" "$root/bin/busybox"
		cp "$GUEST_DIR/init" "$root/init"
		chmod 755 "$root/init" "$root/bin/busybox"
		(cd "$kdir/modules" && cp --parents $list "$root/lib/modules/") || die_setup "copying modules failed"
		echo "$list" >"$root/modules.load"
		(cd "$root" && find . | "$BUSYBOX" cpio -o -H newc 2>/dev/null | gzip -1 >"$INITRD.tmp") ||
			die_setup "packing the initramfs failed"
		mv "$INITRD.tmp" "$INITRD"
		rm -rf "$root"
		# Drop initramfs images of older init scripts (a week unused).
		find "$kdir" -maxdepth 1 -name 'initrd-*.gz' ! -newer "$INITRD" -mtime +7 -delete 2>/dev/null
	fi
	flock -u 9
	exec 9>&-
}

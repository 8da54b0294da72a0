#!/bin/sh
# sanitizer-build.sh address|thread SRCDIR OUTDIR: build a copy of the
# component instrumented by a sanitizer (OUTDIR/.libs/mca_btl_openib.so) for
# the tests that load it into MPI processes (LD_PRELOAD of libasan or
# libtsan; Open MPI itself stays Debian's uninstrumented build). Sources are
# copied with their times, so a second run rebuilds only what changed.
# Called through asan-build.sh and tsan-build.sh.
set -e
kind=$1
src=$2
out=$3
case $kind in
address) lib=libasan ;;
# -Wno-tsan: GCC warns that TSan does not model atomic_thread_fence, which
# Open MPI's opal_atomic_mb/wmb (inline in its headers) use; tests/tsan.supp
# says what that means for the reports.
thread) lib=libtsan ;;
*) kind= ;;
esac
[ -n "$kind" ] && [ -n "$src" ] && [ -n "$out" ] ||
	{ echo "usage: sanitizer-build.sh address|thread SRCDIR OUTDIR" >&2; exit 2; }
flags="-O1 -g -fno-omit-frame-pointer -fsanitize=$kind"
[ "$kind" = address ] || flags="$flags -Wno-tsan"
mkdir -p "$out"
out=$(cd "$out" && pwd -P)
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
	# tracked files plus the new ones not ignored (a working tree under edit)
	(cd "$src" && git ls-files -co --exclude-standard) >"$out/.files"
else
	(cd "$src" && find . -name '*.[ch]' -o -name '*.am' -o -name '*.inc' -o -name '*.ac' \
		-o -name '*.m4' -o -name '*.in' -o -name '*.sh' -o -name '*.txt' |
		grep -Ev '^\./(asan|tsan)/') >"$out/.files"
fi
(cd "$src" && tar -cf - -T "$out/.files") | (cd "$out" && tar -xpf -)
cd "$out"
[ -x configure ] || ./autogen.sh >/dev/null
if [ ! -f Makefile ]; then
	./configure -q CFLAGS="$flags" LDFLAGS="-fsanitize=$kind" >/dev/null
fi
make -j"$(nproc)" mca_btl_openib.la >/dev/null
so=$out/.libs/mca_btl_openib.so
ldd "$so" | grep -q "$lib" || { echo "sanitizer-build.sh: $so is not linked with $lib" >&2; exit 1; }
echo "$kind sanitizer build: $so"

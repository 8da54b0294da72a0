#!/bin/sh
# asan-build.sh SRCDIR OUTDIR: build an AddressSanitizer copy of the
# component (OUTDIR/.libs/mca_btl_openib.so) for the tests that load it
# into MPI processes (LD_PRELOAD of libasan). Sources are copied with their
# times, so a second run rebuilds only what changed.
set -e
src=$1
out=$2
[ -n "$src" ] && [ -n "$out" ] || { echo "usage: asan-build.sh SRCDIR OUTDIR" >&2; exit 2; }
mkdir -p "$out"
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
	# tracked files plus the new ones not ignored (a working tree under edit)
	(cd "$src" && git ls-files -co --exclude-standard) >"$out/.files"
else
	(cd "$src" && find . -name '*.[ch]' -o -name '*.am' -o -name '*.inc' -o -name '*.ac' \
		-o -name '*.m4' -o -name '*.in' -o -name '*.sh' -o -name '*.txt' | grep -v '^\./asan') >"$out/.files"
fi
(cd "$src" && tar -cf - -T "$out/.files") | (cd "$out" && tar -xpf -)
cd "$out"
[ -x configure ] || ./autogen.sh >/dev/null
if [ ! -f Makefile ]; then
	./configure -q CFLAGS="-O1 -g -fno-omit-frame-pointer -fsanitize=address" \
		LDFLAGS="-fsanitize=address" >/dev/null
fi
make -j"$(nproc)" mca_btl_openib.la >/dev/null
so=$out/.libs/mca_btl_openib.so
ldd "$so" | grep -q libasan || { echo "asan-build.sh: $so is not linked with libasan" >&2; exit 1; }
echo "asan-build: $so"

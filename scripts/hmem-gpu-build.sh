#!/bin/sh
# Flag lists are split on purpose (paths without spaces); TESTDEF's quotes
# are the C string's.
# shellcheck disable=SC2086,SC2089,SC2090
# hmem-gpu-build.sh: build the HMEM code, its unit tests and
# bench/hmem_copy_bench with a C compiler alone, for a machine that has a
# GPU but no Open MPI and no autotools (e.g. a lent GPU machine). The build
# system proper (scripts/build.sh) needs Open MPI's headers to configure.
#
# Usage: sh scripts/hmem-gpu-build.sh BUILDDIR [OMPI_DIR]
#   BUILDDIR  where the objects go, laid out as the automake build tree
#             (tests find their modules as BUILDDIR/<dir>/.libs/<name>.so;
#             run them with OPENIB_BUILDDIR=BUILDDIR OPENIB_SRCDIR=<source>)
#   OMPI_DIR  Open MPI 4.1, default Debian's /usr/lib/x86_64-linux-gnu/openmpi
#             where it exists. Its include/ (as Debian's .../openmpi/include,
#             opal_config.h under include/openmpi) is needed: the HMEM code
#             speaks OPAL error codes (opal/constants.h, and
#             common/openib_errno.c, the one conversion). A GPU machine
#             without Open MPI can use a copy of those headers alone. Its lib/
#             with libopen-pal.so.40 is needed only by the two tests that
#             call into Open MPI (test_hmem_plugin: the parameter's error
#             path and help text; test_hmem_params: the MCA variables and
#             memory hooks) and hmem/hmem_params.c; without it those two are
#             not built, and are listed as such.
# Nothing else calls into Open MPI: hmem/*.c but hmem_params.c load the CUDA
# driver with dlopen at run time and use only the C library.
# Environment: CC (default gcc), CFLAGS (default -g -O2).
set -eu

SRC=$(cd "$(dirname "$0")/.." && pwd -P)
B=${1:?usage: sh scripts/hmem-gpu-build.sh BUILDDIR [OMPI_DIR]}
OMPI=${2:-}
[ -n "$OMPI" ] || [ ! -d /usr/lib/x86_64-linux-gnu/openmpi/include ] ||
	OMPI=/usr/lib/x86_64-linux-gnu/openmpi
if [ -z "$OMPI" ] || [ ! -f "$OMPI/include/openmpi/opal/constants.h" ]; then
	echo "hmem-gpu-build: needs Open MPI 4.1's headers (OMPI_DIR/include/openmpi/opal/constants.h):" \
		"give OMPI_DIR" >&2
	exit 2
fi
OMPI=$(cd "$OMPI" && pwd -P)
OINC="-I$OMPI/include -I$OMPI/include/openmpi"
CC=${CC:-gcc}
CFLAGS=${CFLAGS:--g -O2}
# The warnings and code-generation flags configure gives every file.
WARN="-mcx16 -fno-strict-aliasing -DNDEBUG -Wall -Wextra -Wno-unused-parameter \
-Wno-missing-field-initializers -Wno-sign-compare"
mkdir -p "$B"
B=$(cd "$B" && pwd -P)
INC="-I$SRC/include -I$SRC $OINC"
TESTDEF="-DHMEM_TEST_BUILDDIR=\"$B\" -DHMEM_TEST_SRCDIR=\"$SRC\""
H=tests/unit/hmem
mkdir -p "$B/hmem" "$B/$H/.libs" "$B/hmem/examples/.libs" "$B/bench"

cc() {
	echo "  CC $*" | sed "s|$SRC/||g; s|$B/||g" | cut -c1-160
	$CC $CFLAGS $WARN "$@"
}

# The core (libopenib_core's HMEM part): hidden by default, as in the
# component, so a module that links it exports only what it marks.
CORE="hmem_object hmem_copy hmem_iface hmem_cuda hmem_mtcache hmem_plugin"
objs=
for f in $CORE; do
	cc -fPIC -fvisibility=hidden $INC -c "$SRC/hmem/$f.c" -o "$B/hmem/$f.o"
	objs="$objs $B/hmem/$f.o"
done
# and what it shares with the rest of the component: the error convention
# and the plug-in path check
mkdir -p "$B/mca"
mkdir -p "$B/common"
for f in common/openib_errno mca/btl_openib_path_check; do
	cc -fPIC -fvisibility=hidden $INC -c "$SRC/$f.c" -o "$B/$f.o"
	objs="$objs $B/$f.o"
done
rm -f "$B/hmem/libhmem_core.a"
# shellcheck disable=SC2086
ar rcs "$B/hmem/libhmem_core.a" $objs
CORELIB="$B/hmem/libhmem_core.a"

# Modules the tests load.
so() { # so OUT SRC [FLAGS...]
	out=$1 src=$2
	shift 2
	# -soname as libtool sets it: RTLD_NOLOAD lookups match it. Flags after
	# the source: an archive among them must follow what uses it.
	cc -fPIC -shared -Wl,-soname,"$(basename "$out")" -o "$out" "$src" "$@"
}
so "$B/$H/.libs/hmem_fake_cuda.so" "$SRC/$H/hmem_fake_cuda.c"
so "$B/$H/.libs/hmem_fake_cuda_old.so" "$SRC/$H/hmem_fake_cuda.c" -DFAKE_CUDA_OMIT_HTOD
so "$B/hmem/examples/.libs/openib_hmem_counting.so" "$SRC/hmem/examples/openib_hmem_counting.c" $INC
# Test plug-ins: built against the frozen v1 header only.
V1="-I$SRC/tests/abi/hmem_v1"
so "$B/$H/.libs/hmem_tp_v1.so" "$SRC/$H/hmem_test_plugin.c" $V1
so "$B/$H/.libs/hmem_tp_setops.so" "$SRC/$H/hmem_test_plugin.c" $V1 -DTP_SET_OPS
so "$B/$H/.libs/hmem_tp_abi99.so" "$SRC/$H/hmem_test_plugin.c" $V1 -DTP_ABI=99
so "$B/$H/.libs/hmem_tp_abi0.so" "$SRC/$H/hmem_test_plugin.c" $V1 -DTP_ABI=0
so "$B/$H/.libs/hmem_tp_noinfo.so" "$SRC/$H/hmem_test_plugin.c" $V1 -DTP_NO_INFO
so "$B/$H/.libs/hmem_tp_initfail.so" "$SRC/$H/hmem_test_plugin.c" $V1 -DTP_INIT_FAILS
so "$B/$H/.libs/hmem_tp_biginfo.so" "$SRC/$H/hmem_test_plugin.c" $V1 -DTP_BIG_INFO
so "$B/$H/.libs/hmem_tp_smallinfo.so" "$SRC/$H/hmem_test_plugin.c" $V1 -DTP_SMALL_INFO
so "$B/$H/.libs/hmem_fake_component.so" "$SRC/$H/hmem_fake_component.c" $INC "$CORELIB" -ldl
cc -fPIC $V1 -c "$SRC/$H/hmem_v1_layout.c" -o "$B/$H/hmem_v1_layout.o"

prog() { # prog NAME SRC [FLAGS...]: a test or bench program linking the core
	out=$1 src=$2
	shift 2
	cc $INC $TESTDEF "$@" -o "$B/$out" "$SRC/$src" "$CORELIB" -ldl -lpthread
}
for t in ops iov counting cuda cuda_fake cache app; do
	prog "$H/test_hmem_$t" "$H/test_hmem_$t.c"
done
prog "$H/test_hmem_cuda_on_fake" "$H/test_hmem_cuda.c" -DHMEM_TEST_ON_FAKE_CUDA
prog "$H/test_hmem_abi" "$H/test_hmem_abi.c" "$B/$H/hmem_v1_layout.o"
prog "$H/test_hmem_app_posix" "$H/test_hmem_app.c" -DOPENIB_HMEM_FIND_ROOT_NO_RTLD_DEFAULT
prog "$H/hmem_detect_bench" "$H/hmem_detect_bench.c"
prog bench/hmem_copy_bench bench/hmem_copy_bench.c

if [ -e "$OMPI/lib/libopen-pal.so.40" ]; then
	[ -e "$OMPI/lib/libopen-pal.so" ] || ln -sf libopen-pal.so.40 "$OMPI/lib/libopen-pal.so"
	cc -fPIC -fvisibility=hidden $INC -c "$SRC/hmem/hmem_params.c" -o "$B/hmem/hmem_params.o"
	for t in plugin params; do
		cc $INC $TESTDEF -o "$B/$H/test_hmem_$t" "$SRC/$H/test_hmem_$t.c" \
			"$B/hmem/hmem_params.o" "$CORELIB" -L"$OMPI/lib" -lopen-pal \
			-Wl,-rpath,"$OMPI/lib" -Wl,-rpath-link,"$OMPI/lib" -ldl -lpthread
	done
	echo "hmem-gpu-build: built everything, with Open MPI from $OMPI"
else
	echo "hmem-gpu-build: built everything but test_hmem_plugin and test_hmem_params" \
		"(they need Open MPI's libopen-pal: give an OMPI_DIR with lib/)"
fi

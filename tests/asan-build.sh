#!/bin/sh
# asan-build.sh SRCDIR OUTDIR: build an AddressSanitizer copy of the
# component (OUTDIR/.libs/mca_btl_openib.so) for the tests that load it
# into MPI processes (LD_PRELOAD of libasan); incremental.
exec sh "$(dirname "$0")/sanitizer-build.sh" address "$@"

#!/bin/sh
# tsan-build.sh SRCDIR OUTDIR: build a ThreadSanitizer copy of the component
# (OUTDIR/.libs/mca_btl_openib.so, -O1 -g) for the tests that load it into
# MPI processes (LD_PRELOAD of libtsan; see tests/integration/t-tsan-*.sh
# and tests/tsan.supp); incremental.
exec sh "$(dirname "$0")/sanitizer-build.sh" thread "$@"

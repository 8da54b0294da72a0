#!/bin/sh
# The README's main job: build, then run the side-by-side benchmark (raw
# verbs, openib, UCX, TCP) in one boot of the Soft-RoCE guest.
set -e
cd "$(dirname "$0")/.."
sh scripts/install-deps.sh
sh scripts/build.sh
OPENIB_BUILDDIR=$(pwd) exec sh bench/run-bench.sh "$@"

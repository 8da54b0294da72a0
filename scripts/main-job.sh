#!/bin/sh
# The README's main job: install what is missing, build, then run the
# side-by-side benchmark (raw verbs, openib with each CPC, UCX, TCP) on one
# node (one boot of the Soft-RoCE guest) and across two nodes (one boot of
# the two-node bed), and print both tables; each results directory also gets
# a plot (bench.png).  Arguments go to bench/run-bench.sh (a bash script):
#   sh scripts/main-job.sh --quick    one round, few samples (what CI runs)
#   sh scripts/main-job.sh --help     every option
# Exit status 0 only when every configuration ran fine, openib included.
set -e
cd "$(dirname "$0")/.."

# phase LABEL CMD...: run CMD with a line every 20 s while it runs and one
# with its elapsed time when it ends (installing and building can take
# minutes on a fresh machine).
phase() {
    label=$1
    shift
    t0=$(date +%s)
    echo "main-job: $label ..."
    (
        while sleep 20 >/dev/null 2>&1; do
            echo "main-job: $label: still running, $(($(date +%s) - t0)) s"
        done
    ) &
    ticker=$!
    rc=0
    "$@" || rc=$?
    kill "$ticker" 2>/dev/null || :
    wait "$ticker" 2>/dev/null || :
    if [ "$rc" = 0 ]; then
        echo "main-job: $label: ok ($(($(date +%s) - t0)) s)"
    else
        echo "main-job: $label: FAILED, status $rc ($(($(date +%s) - t0)) s)"
    fi
    return "$rc"
}

phase "installing missing packages" sh scripts/install-deps.sh
phase "building" sh scripts/build.sh
OPENIB_BUILDDIR=$(pwd) OPENIB_BENCH_COMMAND="sh scripts/main-job.sh" exec bash bench/run-bench.sh "$@"

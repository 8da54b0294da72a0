# driver-prelude.sh: how every benchmark driver starts (bash; sourced by
# run-bench.sh and mt-bench.sh first): strict shell options, HERE (bench/)
# and SRCDIR (the source tree), and the libraries the drivers share.  Set
# PROG before sourcing: the libraries name the driver by it.
# shellcheck shell=bash
# shellcheck source-path=SCRIPTDIR

set -u -o pipefail
shopt -s nullglob

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck disable=SC2034 # SRCDIR: the driver's
SRCDIR=$(cd "$HERE/.." && pwd -P)
# shellcheck source=progress.sh
. "$HERE/progress.sh"
# shellcheck source=guest-checks.sh
. "$HERE/guest-checks.sh"
# shellcheck source=driver-args.sh
. "$HERE/driver-args.sh"

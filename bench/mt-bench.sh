#!/bin/bash
# mt-bench.sh: the thread-support benchmark, in ONE boot of the Soft-RoCE
# guest (both ranks in one guest):
#   - N threads x 8 B message rate (bench/mt_msgrate; N = 1, 2, 4 threads
#     per rank, MPI_THREAD_MULTIPLE) over openib (pml ob1, btl openib,self),
#     UCX (pml ucx) and TCP (pml ob1, btl tcp,self), side by side;
#   - the single-thread 8 B latency and message rate of openib BEFORE and
#     AFTER a change (MPI_THREAD_SINGLE, and MPI_THREAD_MULTIPLE with one
#     thread), back to back in every round, with ob1 over TCP at both
#     levels as a control (what MULTIPLE costs in Open MPI's own layers).
# No figure is asserted: the exit status says whether everything ran and
# every message was verified, not how fast.
#
# Usage: bash bench/mt-bench.sh [options]
#   --before REV|DIR  openib before the change: a build directory (holding
#                     .libs/mca_btl_openib.so) or a git revision of this
#                     repository, unpacked (git archive) into
#                     .scratch/build-REV and built there (scripts/build.sh);
#                     default $OPENIB_MT_BEFORE; none: no before/after rows.
#                     "nolock": this repository's HEAD built with
#                     -DOPENIB_BENCH_NO_LOCKS in .scratch/build-nolock-REV,
#                     labelled "without locks": what openib's own locks
#                     cost one thread under MPI_THREAD_MULTIPLE (that
#                     build is unsafe with more threads)
#   --after DIR       openib after the change: a build directory (default
#                     $OPENIB_BUILDDIR, else this source tree, built)
#   --threads LIST    threads per rank of the threaded table (default 1,2,4)
#   --only LIST       subset of openib,ucx,tcp for the threaded table
#                     (without tcp, no TCP control either)
#   --out DIR         results directory (default
#                     bench/results/mt-YYYYmmdd-HHMMSS)
#   --quick           one round, 2 samples, short samples: checks that
#                     everything runs; the figures are not worth comparing
#   --report DIR      only make the tables of an earlier results directory
#   -h, --help
# Environment:
#   OPENIB_MT_ROUNDS      rounds, each running every configuration once
#                         (default 2: before and after each go first once;
#                         --quick: 1)
#   OPENIB_MT_SAMPLES     samples per run (default 8; --quick: 2).  Starting
#                         Open MPI takes 10-25 s in the emulated guest, a
#                         sample well under one: more samples per run, not
#                         more runs, keep the whole under 15 minutes
#   OPENIB_MT_ITERS       windows of 64 messages per rate sample, shared
#                         among the threads (default 60; --quick: 8)
#   OPENIB_MT_LAT_ITERS   round trips per latency sample (default 300;
#                         --quick: 100)
#   OPENIB_MT_WARMUP      untimed windows per thread, and round trips
#                         (default 10)
#   OPENIB_MT_STEP_TIMEOUT  limit of each mpirun, seconds (default 300)
#   OPENIB_MT_TIMEOUT     limit of the guest boot, seconds (default 3600)
#   OPENIB_GUEST_OPTS     extra options for openib-guest
#
# Results: DIR/ holds every run's output (mt-measure.sh lists the files),
# the settings, the revisions of both builds, guest.log, and what
# mt-report.sh makes of them: samples.csv (every sample), summary.csv and
# table.md (the tables, also printed).

# shellcheck source-path=SCRIPTDIR
PROG=mt-bench
# shellcheck source=driver-prelude.sh
. "$(dirname "${BASH_SOURCE[0]}")/driver-prelude.sh"

OUT='' ONLY=openib,ucx,tcp THREADS=1,2,4 QUICK=0 REPORT_ONLY=0
BEFORE=${OPENIB_MT_BEFORE:-} AFTER=${OPENIB_BUILDDIR:-}
COMMAND=$(command_line OPENIB_MT_ROUNDS OPENIB_MT_SAMPLES OPENIB_MT_ITERS OPENIB_MT_LAT_ITERS \
	OPENIB_MT_WARMUP OPENIB_GUEST_OPTS -- "bash bench/mt-bench.sh" "$@")
while [ $# -gt 0 ]; do
	case $1 in
	--before) BEFORE=$2; shift ;;
	--before=*) BEFORE=${1#*=} ;;
	--after) AFTER=$2; shift ;;
	--after=*) AFTER=${1#*=} ;;
	--threads) THREADS=$2; shift ;;
	--threads=*) THREADS=${1#*=} ;;
	*) driver_option "$@"; shift $? ;;
	esac
	shift
done
check_list --only "$ONLY" openib ucx tcp
for x in ${THREADS//,/ }; do
	[[ $x =~ ^[1-9][0-9]?$ ]] || { echo "$PROG: --threads: not a thread count: '$x'" >&2; exit 2; }
done

if [ "$REPORT_ONLY" = 1 ]; then
	exec bash "$HERE/mt-report.sh" "$OUT"
fi

# revision_of DIR: the git revision a build directory was built from
revision_of() {
	if [ -s "$1/.openib-revision" ]; then
		cat "$1/.openib-revision"
	elif git -C "$1" rev-parse --show-toplevel >/dev/null 2>&1; then
		local extra=''
		[ -n "$(git -C "$1" status --porcelain --untracked-files=no -- btl_openib common connect include hmem mca wire 2>/dev/null)" ] &&
			extra=' + uncommitted changes'
		echo "$(git -C "$1" rev-parse HEAD)$extra"
	else
		echo unknown
	fi
}

# build_in DIR: scripts/build.sh of DIR, its output into DIR/build.log
build_in() { sh "$1/scripts/build.sh" >"$1/build.log" 2>&1; }

# build_revision REV [nolock]: unpack REV of this repository into
# .scratch/build-REV and build our component there (once); prints the
# directory.  With "nolock": into .scratch/build-nolock-REV, with both
# locks compiled out (-DOPENIB_BENCH_NO_LOCKS).
build_revision() {
	local sha dir kind='' what='' cppflags=''
	sha=$(git -C "$SRCDIR" rev-parse --verify -q "$1^{commit}") || {
		echo "$PROG: --before: neither a build directory nor a git revision: $1" >&2
		return 1
	}
	if [ "${2:-}" = nolock ]; then
		kind=nolock- what=' (locks compiled out)' cppflags=-DOPENIB_BENCH_NO_LOCKS
	fi
	dir=$SRCDIR/.scratch/build-$kind${sha:0:12}
	if [ ! -f "$dir/.libs/mca_btl_openib.so" ]; then
		rm -rf "$dir"
		mkdir -p "$dir" || return 1
		git -C "$SRCDIR" archive "$sha" | tar -x -C "$dir" || return 1
		echo "$sha$what" >"$dir/.openib-revision"
		CPPFLAGS=${cppflags:-${CPPFLAGS:-}} timed "building openib at ${sha:0:12}$what in $dir" build_in "$dir" || {
			tail -n 20 "$dir/build.log" >&2
			return 1
		}
	fi
	echo "$dir"
}

# component_dir WHAT DIR: DIR, absolute, if it holds a built component
component_dir() {
	local d
	d=$(cd "$2" 2>/dev/null && pwd -P) && [ -f "$d/.libs/mca_btl_openib.so" ] || {
		echo "$PROG: $1: no built component in '$2' ($2/.libs/mca_btl_openib.so; build it with sh scripts/build.sh)" >&2
		return 1
	}
	echo "$d"
}

if [ -z "$AFTER" ]; then
	AFTER=$SRCDIR
	[ -f "$AFTER/.libs/mca_btl_openib.so" ] || timed "building openib in $AFTER" sh "$SRCDIR/scripts/build.sh" || exit 1
fi
AFTER=$(component_dir --after "$AFTER") || exit 2
BEFORE_LABEL=before
if [ "$BEFORE" = nolock ]; then
	BEFORE=$(build_revision HEAD nolock) || exit 2
	BEFORE_LABEL='without locks'
elif [ -n "$BEFORE" ]; then
	if [ -d "$BEFORE" ]; then
		BEFORE=$(component_dir --before "$BEFORE") || exit 2
	else
		BEFORE=$(build_revision "$BEFORE") || exit 2
	fi
fi

export OPENIB_SRCDIR=$SRCDIR OPENIB_BUILDDIR=$AFTER OPENIB_LIB_NO_TMP=1
# shellcheck source=../tests/integration/lib.sh
. "$SRCDIR/tests/integration/lib.sh"
unset OPENIB_LIB_NO_TMP
ensure_host_packages "${OPENIB_TEST_PACKAGES[@]}" || echo "$PROG: warning: packages missing" >&2

[ -n "$OUT" ] || OUT=$SRCDIR/bench/results/mt-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd -P)
rm -f "$OUT"/st_* "$OUT"/mt_* "$OUT"/failures "$OUT"/clock-problem "$OUT"/guest-elapsed
if [ "$QUICK" = 1 ]; then
	: "${OPENIB_MT_ROUNDS:=1}" "${OPENIB_MT_SAMPLES:=2}" "${OPENIB_MT_ITERS:=8}" "${OPENIB_MT_LAT_ITERS:=100}"
else
	: "${OPENIB_MT_ROUNDS:=2}" "${OPENIB_MT_SAMPLES:=8}" "${OPENIB_MT_ITERS:=60}" "${OPENIB_MT_LAT_ITERS:=300}"
fi
: "${OPENIB_MT_WARMUP:=10}" "${OPENIB_MT_STEP_TIMEOUT:=300}"
export OPENIB_MT_ROUNDS OPENIB_MT_SAMPLES OPENIB_MT_ITERS OPENIB_MT_LAT_ITERS OPENIB_MT_WARMUP \
	OPENIB_MT_STEP_TIMEOUT OPENIB_MT_ONLY=$ONLY OPENIB_MT_THREADS=$THREADS \
	OPENIB_MT_BEFORE=$BEFORE OPENIB_MT_AFTER=$AFTER

# The benchmark program, built with this machine's mpicc.
OPENIB_MT_BIN=$SRCDIR/bench/mt_msgrate
if ! [ -x "$OPENIB_MT_BIN" ] || [ "$HERE/mt_msgrate.c" -nt "$OPENIB_MT_BIN" ] ||
	[ "$HERE/bench_stats.h" -nt "$OPENIB_MT_BIN" ]; then
	timed "building mt_msgrate" mpicc -O2 -Wall -o "$OPENIB_MT_BIN" "$HERE/mt_msgrate.c" -lpthread || exit 1
fi
export OPENIB_MT_BIN

echo "$COMMAND" >"$OUT/command"
echo "$BEFORE_LABEL" >"$OUT/before-label"
date -u '+%Y-%m-%d %H:%M UTC' >"$OUT/date"
echo "start $(cut -d' ' -f1 /proc/loadavg)" >"$OUT/load"
{
	echo "rounds=$OPENIB_MT_ROUNDS samples=$OPENIB_MT_SAMPLES windows_per_sample=$OPENIB_MT_ITERS (shared among the threads) lat_iters=$OPENIB_MT_LAT_ITERS warmup=$OPENIB_MT_WARMUP window=64"
	echo "threads=$THREADS only=$ONLY quick=$QUICK"
} >"$OUT/settings"
{
	echo "after: $(revision_of "$AFTER") ($AFTER)"
	if [ -n "$BEFORE" ]; then
		echo "before: $(revision_of "$BEFORE") ($BEFORE)"
		b=$(revision_of "$BEFORE") a=$(revision_of "$AFTER")
		if git -C "$SRCDIR" cat-file -e "${b%% *}^{commit}" 2>/dev/null &&
			git -C "$SRCDIR" cat-file -e "${a%% *}^{commit}" 2>/dev/null; then
			echo "component commits from before to after:"
			git -C "$SRCDIR" log --oneline "${b%% *}..${a%% *}" -- btl_openib common connect include hmem mca wire | sed 's/^/  /'
		fi
	fi
} >"$OUT/revisions"
echo "$PROG: results in $OUT ($OPENIB_MT_ROUNDS round(s), $OPENIB_MT_SAMPLES samples per run)"
sed 's/^/  /' "$OUT/revisions"

# Both builds must be visible in the guest: the repository root is shared.
shares=(--share "$OUT") builds=("$AFTER")
[ -n "$BEFORE" ] && builds+=("$BEFORE")
for d in "${builds[@]}"; do
	case $d/ in "$SRCDIR"/*) ;; *) shares+=(--share "$d") ;; esac
done
t0=$EPOCHREALTIME
# shellcheck disable=SC2086
"$SRCDIR/tests/guest/openib-guest" --timeout "${OPENIB_MT_TIMEOUT:-3600}" "${shares[@]}" ${OPENIB_GUEST_OPTS:-} \
	-- bash "$HERE/mt-measure.sh" "$OUT" </dev/null 2>&1 | watch_silence "guest" | tee "$OUT/guest.log"
rc=${PIPESTATUS[0]}
phase_end "measurements in one guest boot" "$t0" "$rc"
echo "end $(cut -d' ' -f1 /proc/loadavg)" >>"$OUT/load"
guest_kind "$OUT/guest.log" >"$OUT/accel"
clock_check "$OUT"

echo
bash "$HERE/mt-report.sh" "$OUT" || rc=1
exit "$rc"

#!/bin/bash
# run-bench.sh: compare our openib BTL with raw verbs, UCX and btl tcp on
# Soft-RoCE, on one node (one boot of the emulated guest) and across two
# nodes (one boot of the two-node bed), and on Soft-iWARP (one boot of a
# guest with siw0 on a NIC of its own), and print the three tables.
#
# Usage: bash bench/run-bench.sh [options]    (the README's main job runs it)
#   --quick            one round, few samples: checks that everything runs
#                      (CI); the figures are not worth comparing
#   --tables LIST      any of single, cross, iwarp (default all three)
#   --only LIST        subset of raw,openib,ucx,tcp (default all four)
#   --conn-only        the cross-node table's connection rows only (connection
#                      setup at 8, 16 and 32 ranks, memory per peer), without
#                      the latency and bandwidth curves
#   --out DIR          results directory (default
#                      $OPENIB_BUILDDIR/bench/results/YYYYmmdd-HHMMSS)
#   --host             the single-node table on this machine instead of in a
#                      guest (needs a verbs device: OPENIB_TEST_DEVICE)
#   --report DIR       only make the tables and plots of an earlier results
#                      directory again
#   -h, --help
# Environment:
#   OPENIB_BUILDDIR    where our component was built
#                      ($OPENIB_BUILDDIR/.libs/mca_btl_openib.so)
#   OPENIB_BENCH_ROUNDS  rounds of every measurement (default 5; --quick: 1)
#   OPENIB_BENCH_CONN_ROUNDS  the cross-node table's connection rows in the
#                      first N rounds only (default every round; each takes
#                      about 10 minutes on the emulated bed; 0: none)
#   OPENIB_BENCH_QUICK=1 the same as --quick
#   OPENIB_BENCH_ARGS  extra options for openib_bench (see openib_bench -h)
#   OPENIB_GUEST_OPTS  extra options for openib-guest (e.g. "--mtu 4200")
#   OPENIB_BENCH_STEP_TIMEOUT  limit for each mpirun, seconds (default 1800;
#                      --quick: 600)
#   OPENIB_BENCH_TIMEOUT  limit for each guest or bed boot, seconds (default
#                      14400; --quick: 900 single node, 1200 cross node)
#
# Results: DIR/single-node, DIR/cross-node and DIR/iwarp, each with per-round CSVs,
# curves.csv (every size), summary.csv (the table), ratios.csv, table.txt
# and bench.png (the plot); DIR/tables.txt holds the tables.  Exit status
# 0 only when every table was made and every configuration (openib with
# each CPC included) ran fine in every round; on iWARP, UCX that cannot use
# the device at all is reported as such (with its error), not as a failure.

# shellcheck source-path=SCRIPTDIR
PROG=run-bench
# shellcheck source=driver-prelude.sh
. "$(dirname "${BASH_SOURCE[0]}")/driver-prelude.sh"

OUT='' ONLY=raw,openib,ucx,tcp TABLES=single,cross,iwarp HOST=0 REPORT_ONLY=0 CONN_ONLY=0
QUICK=${OPENIB_BENCH_QUICK:-0}
# The command line, as the tables and plots will say: the settings from the
# environment, then the command (main-job.sh names itself) and its arguments.
COMMAND=$(command_line OPENIB_BENCH_ROUNDS OPENIB_BENCH_CONN_ROUNDS OPENIB_BENCH_QUICK OPENIB_BENCH_ARGS \
	OPENIB_GUEST_OPTS -- "${OPENIB_BENCH_COMMAND:-bash bench/run-bench.sh}" "$@")
while [ $# -gt 0 ]; do
	case $1 in
	--tables) TABLES=$2; shift ;;
	--tables=*) TABLES=${1#*=} ;;
	--host) HOST=1 ;;
	--conn-only) CONN_ONLY=1 ;;
	*) driver_option "$@"; shift $? ;;
	esac
	shift
done
check_list --only "$ONLY" raw openib ucx tcp
check_list --tables "$TABLES" single cross iwarp
[ "$HOST" = 0 ] || TABLES=single
if [ "$CONN_ONLY" = 1 ]; then
	[ "$HOST" = 0 ] || { echo "$PROG: --conn-only needs the two-node bed, not --host" >&2; exit 2; }
	TABLES=cross
fi

# table_dir TABLE: the results directory of one table
table_dir() { if [ "$1" = iwarp ]; then echo "$OUT/iwarp"; else echo "$OUT/$1-node"; fi; }

if [ "$REPORT_ONLY" = 1 ]; then
	OUT=$(cd "$OUT" 2>/dev/null && pwd -P) || { echo "$PROG: --report: no such directory" >&2; exit 2; }
	bad=0
	: >"$OUT/tables.txt"
	for t in single cross iwarp; do
		d=$(table_dir "$t")
		[ -d "$d" ] || continue
		bash "$HERE/report.sh" "$d" | tee -a "$OUT/tables.txt" || bad=1
		echo | tee -a "$OUT/tables.txt"
	done
	exit $bad
fi

export OPENIB_SRCDIR=$SRCDIR
: "${OPENIB_BUILDDIR:=$SRCDIR}"
OPENIB_BUILDDIR=$(cd "$OPENIB_BUILDDIR" && pwd -P) || exit 2
export OPENIB_BUILDDIR
export OPENIB_LIB_NO_TMP=1
# shellcheck source=../tests/integration/lib.sh
. "$SRCDIR/tests/integration/lib.sh"
unset OPENIB_LIB_NO_TMP

ensure_host_packages "${OPENIB_TEST_PACKAGES[@]}" gnuplot-nox || echo "$PROG: warning: packages missing" >&2

[ -n "$OUT" ] || OUT=$OPENIB_BUILDDIR/bench/results/$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd -P)
if [ "$QUICK" = 1 ]; then
	: "${OPENIB_BENCH_ROUNDS:=1}" "${OPENIB_BENCH_STEP_TIMEOUT:=600}"
else
	: "${OPENIB_BENCH_ROUNDS:=5}" "${OPENIB_BENCH_STEP_TIMEOUT:=1800}"
fi
export OPENIB_BENCH_ROUNDS OPENIB_BENCH_STEP_TIMEOUT OPENIB_BENCH_QUICK=$QUICK OPENIB_BENCH_ONLY=$ONLY
export OPENIB_BENCH_CONN_ONLY=$CONN_ONLY
echo "$PROG: results in $OUT ($([ "$QUICK" = 1 ] && echo "quick: ")$OPENIB_BENCH_ROUNDS round(s); tables: $TABLES)"

# up_to_date BIN SOURCE...: BIN is there and newer than every SOURCE
up_to_date() {
	local s
	[ -x "$1" ] || return 1
	for s in "${@:2}"; do [ "$1" -nt "$s" ] || return 1; done
}
# The benchmark program (its files: bench/openib_bench*.c and .h): prebuilt
# by the build system, or built here.
if up_to_date "$OPENIB_BUILDDIR/bench/openib_bench" "$HERE"/openib_bench*.[ch] "$HERE/bench_stats.h"; then
	OPENIB_BENCH_BIN=$OPENIB_BUILDDIR/bench/openib_bench
else
	OPENIB_BENCH_BIN=$OUT/openib_bench
	timed "building openib_bench" mpicc -O2 -Wall -o "$OPENIB_BENCH_BIN" "$HERE"/openib_bench*.c || exit 1
fi
# conn_setup (connection setup and memory per peer, the cross-node table)
OPENIB_CONN_BIN=$OUT/conn_setup
timed "building conn_setup" mpicc -O2 -Wall -o "$OPENIB_CONN_BIN" "$HERE/conn_setup.c" || exit 1
export OPENIB_BENCH_BIN OPENIB_CONN_BIN

# run_table TABLE: measure one table (single: one guest; cross: the bed)
run_table() {
	local t=$1 d rc nodes=1 limit devices
	d=$(table_dir "$t")
	mkdir -p "$d" || return 1
	rm -f "$d"/mpi_* "$d"/scale_* "$d"/raw* "$d"/failures "$d"/clock-problem "$d"/guest-elapsed
	echo "$t" >"$d/mode"
	echo "$ONLY" >"$d/only"
	echo "$OPENIB_BENCH_ROUNDS" >"$d/rounds"
	echo "$COMMAND" >"$d/command"
	date -u '+%Y-%m-%d %H:%M UTC' >"$d/date"
	echo "start $(cut -d' ' -f1 /proc/loadavg)" >"$d/load"
	if [ "$HOST" = 1 ]; then
		echo "no guest: this machine, $(hostname)" >"$d/accel"
		bash "$HERE/measure.sh" single "$d" 2>&1 | tee "$d/guest.log"
		rc=${PIPESTATUS[0]}
	else
		[ "$t" = cross ] && nodes=2
		devices=rxe
		[ "$t" = iwarp ] && devices=rxe,siw # siw0 on a NIC of its own
		if [ "$QUICK" = 1 ]; then limit=$((600 + 300 * nodes)); else limit=14400; fi
		echo "$PROG: $t: booting $([ "$nodes" = 1 ] && echo "the guest ($devices)" || echo "the two-node bed")"
		# shellcheck disable=SC2086
		"$SRCDIR/tests/guest/openib-guest" --nodes "$nodes" --devices "$devices" \
			--timeout "${OPENIB_BENCH_TIMEOUT:-$limit}" \
			--share "$OPENIB_BUILDDIR" --share "$OUT" ${OPENIB_GUEST_OPTS:-} \
			-- bash "$HERE/measure.sh" "$t" "$d" </dev/null 2>&1 | watch_silence "$t node" | tee "$d/guest.log"
		rc=${PIPESTATUS[0]}
		guest_kind "$d/guest.log" >"$d/accel"
		clock_check "$d"
	fi
	echo "end $(cut -d' ' -f1 /proc/loadavg)" >>"$d/load"
	[ "$rc" = 0 ] || echo "$PROG: $t node: the guest run ended with status $rc; the table shows what was measured" >&2
	return "$rc"
}

bad=0
for t in ${TABLES//,/ }; do
	# no ticker: watch_silence speaks when the guest is silent
	t0=$EPOCHREALTIME
	run_table "$t"
	phase_end "$t table: measurements" "$t0" $? || bad=1
done

: >"$OUT/tables.txt"
for t in ${TABLES//,/ }; do
	echo
	if [ "$CONN_ONLY" = 1 ]; then
		timed "$t table: connection rows" bash "$HERE/scale-report.sh" "$(table_dir "$t")" |
			tee -a "$OUT/tables.txt" || bad=1
		continue
	fi
	timed "$t table and plot" bash "$HERE/report.sh" "$(table_dir "$t")" | tee -a "$OUT/tables.txt" || bad=1
	echo "plot: $(table_dir "$t")/bench.png" | tee -a "$OUT/tables.txt"
	echo >>"$OUT/tables.txt"
done
echo "$PROG: the tables: $OUT/tables.txt"
[ "$bad" = 0 ] || echo "$PROG: FAILED: see the failures above" >&2
exit $bad

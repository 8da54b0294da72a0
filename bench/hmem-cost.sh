#!/bin/bash
# hmem-cost.sh: what looking up a buffer's memory type (openib_hmem_detect,
# on every prepare_src, pack and registration) costs, with the CUDA driver
# in reach and without it. The fake driver of the unit tests
# (tests/unit/hmem/.libs/hmem_fake_cuda.so) stands in for libcuda.so.1: no
# GPU is needed, and none was used.
#
# Usage: bash bench/hmem-cost.sh [--rounds N] [--iters N] [--out DIR]
#                                [--no-guest] [--no-callgrind]
#        bash bench/hmem-cost.sh --rounds N --iters N --report DIR  (the table
#                                of an earlier run's results only)
#   1. callgrind (this machine, deterministic): instructions per lookup of
#      one buffer, tests/unit/hmem/hmem_detect_bench in each case (see its
#      header): the difference between N and 2N lookups, divided by N, so
#      the warm-up's first classification does not count.
#   2. openib_bench, 8-byte ping-pong latency, in ONE boot of the emulated
#      guest (tests/guest/openib-guest), N rounds (default 5), each running
#      three configurations in turn:
#        none     no libcuda.so.1 anywhere (the machine has none)
#        present  the fake as libcuda.so.1 on LD_LIBRARY_PATH, default
#                 btl_openib_hmem_cuda=auto (the application never loads it)
#        always   the same with btl_openib_hmem_cuda=always: the driver is
#                 loaded and started, and classifies every cache miss
#      and prints the median and the minimum of each over the rounds side by
#      side (on a shared, emulated machine whole runs get slowed down by
#      other guests; the minimum is the least disturbed run), with the fake
#      driver's call counts (a process that never loaded it has none).
# Environment: OPENIB_BUILDDIR (default: the source tree), built with
# `sh scripts/build.sh` and the unit tests' programs (`make check`).
# Exit status: 0 when every measurement ran and verified its data.

set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
SRCDIR=$(cd "$HERE/.." && pwd -P)
PROG=hmem-cost
ROUNDS=5 ITERS=2000 OUT='' GUEST=1 CALLGRIND=1
CONFIGS=(none present always)

# ---------------------------------------------------------------------------
# In the guest: every round runs every configuration once.
# ---------------------------------------------------------------------------
in_guest() {
	local res=$1 fakedir=$1/fakecuda r cfg args rc=0
	export OPENIB_LIB_NO_TMP=1
	# shellcheck source=../tests/integration/lib.sh
	. "$SRCDIR/tests/integration/lib.sh"
	use_our_component
	mkdir -p "$fakedir"
	ln -sf "$OPENIB_BUILDDIR/tests/unit/hmem/.libs/hmem_fake_cuda.so" "$fakedir/libcuda.so.1"
	for ((r = 1; r <= ROUNDS; r++)); do
		for cfg in "${CONFIGS[@]}"; do
			args=(--mca btl_openib_verbose 10)
			case $cfg in
			present) args+=(-x "LD_LIBRARY_PATH=$fakedir:${LD_LIBRARY_PATH:-}") ;;
			always) args+=(-x "LD_LIBRARY_PATH=$fakedir:${LD_LIBRARY_PATH:-}"
				--mca btl_openib_hmem_cuda always) ;;
			esac
			timeout -k 10 300 "${MPIRUN[@]}" "${MPI_OPENIB_ARGS[@]}" "${args[@]}" \
				-x "FAKE_CUDA_REPORT=$res/fake.$cfg" \
				"$res/openib_bench" -t lat -m 8 -M 8 -i "$ITERS" -x 100 --csv \
				>"$res/$cfg.r$r.csv" 2>"$res/$cfg.r$r.err"
			echo "$?" >"$res/$cfg.r$r.status"
			printf '%s: round %d %-8s status %s\n' "$PROG" "$r" "$cfg" "$(cat "$res/$cfg.r$r.status")"
			[ "$(cat "$res/$cfg.r$r.status")" = 0 ] || rc=1
		done
	done
	return $rc
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

report_guest() {
	local res=$1 cfg r v m line
	echo
	echo "== openib_bench 8 B ping-pong latency (us, median iteration of $ITERS), $ROUNDS rounds"
	printf '%-9s' config
	for ((r = 1; r <= ROUNDS; r++)); do printf ' %8s' "r$r"; done
	printf ' %8s %8s  %s\n' median min "fake driver calls (all ranks, all rounds)"
	for cfg in "${CONFIGS[@]}"; do
		printf '%-9s' "$cfg"
		for ((r = 1; r <= ROUNDS; r++)); do
			v=$(awk -F, '$1 == 8 && $15 == 0 { print $2 }' "$res/$cfg.r$r.csv" 2>/dev/null)
			printf ' %8s' "${v:-failed}"
		done
		v=$(for ((r = 1; r <= ROUNDS; r++)); do awk -F, '$1 == 8 && $15 == 0 { print $2 }' "$res/$cfg.r$r.csv" 2>/dev/null; done | median)
		m=$(for ((r = 1; r <= ROUNDS; r++)); do awk -F, '$1 == 8 && $15 == 0 { print $2 }' "$res/$cfg.r$r.csv" 2>/dev/null; done | sort -g | head -n 1)
		if [ -f "$res/fake.$cfg" ]; then
			line=$(awk '{ for (i = 3; i <= NF; i++) { split($i, kv, "="); s[kv[1]] += kv[2] } n++ }
				END { printf "%d processes loaded it: init=%d attr=%d uninit_calls=%d", n, s["init"], s["attr"], s["uninit_calls"] }' "$res/fake.$cfg")
		else
			line="never loaded (no cuInit, no call)"
		fi
		printf ' %8s %8s  %s\n' "$v" "${m:--}" "$line"
	done
	echo "HMEM lines of the component's log (round 1, rank 0/1):"
	for cfg in "${CONFIGS[@]}"; do
		grep -h 'HMEM:' "$res/$cfg.r1.err" 2>/dev/null | sort -u | sed "s/^/  $cfg: /"
	done
}

report_callgrind() {
	local bin=$OPENIB_BUILDDIR/tests/unit/hmem/hmem_detect_bench c n1=10000 n2=20000 i1 i2
	echo "== instructions per openib_hmem_detect (callgrind, bench_loop only; ($n2 - $n1 lookups) / $n1)"
	if ! command -v valgrind >/dev/null; then
		echo "$PROG: valgrind not installed; skipped"
		return 0
	fi
	[ -x "$bin" ] || { echo "$PROG: $bin not built (make check builds it)" >&2; return 1; }
	for c in never absent present started device uncached; do
		i1=$(cg "$bin" "$c" $n1) && i2=$(cg "$bin" "$c" $n2) || { echo "$PROG: callgrind failed ($c)" >&2; return 1; }
		awk -v c="$c" -v a="$i1" -v b="$i2" -v n=$((n2 - n1)) 'BEGIN { printf "  %-9s %6.1f\n", c, (b - a) / n }'
	done
}

# cg BIN CASE N: callgrind's instruction total inside bench_loop
cg() {
	local f
	f=$(mktemp) || return 1
	valgrind --tool=callgrind --toggle-collect=bench_loop --callgrind-out-file="$f" "$1" "$2" "$3" \
		>/dev/null 2>&1 || { rm -f "$f"; return 1; }
	awk '/^(summary|totals):/ { print $2; exit }' "$f"
	rm -f "$f"
}

# ---------------------------------------------------------------------------
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) ROUNDS=$2; shift ;;
	--iters) ITERS=$2; shift ;;
	--out) OUT=$2; shift ;;
	--no-guest) GUEST=0 ;;
	--no-callgrind) CALLGRIND=0 ;;
	--in-guest) in_guest "$2"; exit $? ;;
	--report) report_guest "$2"; exit 0 ;;
	-h | --help) sed -n '2,/^$/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "$PROG: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done

: "${OPENIB_BUILDDIR:=$SRCDIR}"
OPENIB_BUILDDIR=$(cd "$OPENIB_BUILDDIR" && pwd -P) || exit 2
export OPENIB_BUILDDIR
status=0
if [ "$CALLGRIND" = 1 ]; then
	report_callgrind || status=1
fi
if [ "$GUEST" = 1 ]; then
	[ -n "$OUT" ] || OUT=$OPENIB_BUILDDIR/bench/results/hmem-cost-$(date +%Y%m%d-%H%M%S)
	mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd -P) || exit 2
	[ -f "$OPENIB_BUILDDIR/tests/unit/hmem/.libs/hmem_fake_cuda.so" ] ||
		{ echo "$PROG: the fake CUDA driver is not built (make check builds it)" >&2; exit 1; }
	mpicc -O2 -Wall -o "$OUT/openib_bench" "$HERE"/openib_bench*.c ||
		{ echo "$PROG: cannot build openib_bench" >&2; exit 1; }
	echo "$PROG: results in $OUT"
	"$SRCDIR/tests/guest/openib-guest" --timeout $((ROUNDS * 3 * 320 + 300)) \
		--share "$OPENIB_BUILDDIR" --share "$OUT" \
		-- bash "$HERE/hmem-cost.sh" --rounds "$ROUNDS" --iters "$ITERS" --in-guest "$OUT" || status=1
	report_guest "$OUT"
fi
exit $status

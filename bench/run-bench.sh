#!/bin/bash
# run-bench.sh: compare our openib BTL with raw verbs, UCX and btl tcp on the
# same Soft-RoCE device, in ONE boot of the emulated guest (openib-guest).
#
# Usage: bench/run-bench.sh [options]
#   --out DIR          results directory (default
#                      $OPENIB_BUILDDIR/bench/results/YYYYmmdd-HHMMSS)
#   --csv FILE         also write the summary CSV to FILE
#   --only LIST        subset of raw,openib,ucx,tcp (default all four)
#   --host             run on this machine instead of in a guest (needs a
#                      verbs device: OPENIB_TEST_DEVICE, default rxe0)
#   --report DIR       only print the table (and rewrite summary.csv) of an
#                      earlier run's results directory
#   -h, --help
# Environment:
#   OPENIB_BUILDDIR    where our component was built
#                      ($OPENIB_BUILDDIR/.libs/mca_btl_openib.so)
#   OPENIB_BENCH_ARGS  extra options for openib_bench (e.g. "-i 100 -b 10")
#   OPENIB_GUEST_OPTS  extra options for openib-guest (e.g. "--mtu 4200")
#   OPENIB_BENCH_STEP_TIMEOUT  limit for each MPI run, seconds (default 300)
#   OPENIB_BENCH_ROUNDS  rounds of every measurement; the table shows medians
#                      over rounds (default 3)
#
# Columns: raw verbs (perftest on the device: ib_send_lat, ib_write_bw,
# ib_write_bw -b, ib_send_bw; ib_read_bw is reported too), openib (pml ob1,
# btl openib,self with our component), UCX (pml ucx, rc_verbs/ud_verbs), TCP
# (pml ob1, btl tcp,self).  A configuration that fails shows "failed" and the
# rest of the benchmark still runs; the exit status is 0 when the table was
# produced and the baselines (raw, UCX, TCP) ran; the openib column may fail.

set -u -o pipefail
shopt -s nullglob

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
SRCDIR=$(cd "$HERE/.." && pwd -P)
PROG=run-bench

# ============================================================================
# In-guest part: run every measurement, write raw outputs into $RES.
# ============================================================================
in_guest() {
	RES=$1
	export OPENIB_LIB_NO_TMP=1
	# shellcheck source=../tests/integration/lib.sh
	. "$SRCDIR/tests/integration/lib.sh"
	local dev=$OPENIB_TEST_DEVICE ip4 only=${OPENIB_BENCH_ONLY:-raw,openib,ucx,tcp}
	local step_to=${OPENIB_BENCH_STEP_TIMEOUT:-300}
	ip4=$(dev_ipv4 "$dev")
	echo "$PROG: device $dev ($ip4), results in $RES"
	[ -n "$ip4" ] || { echo "$PROG: no IPv4 address for $dev" >&2; return 1; }

	local port=18600
	# perftest NAME ARGS...: loopback server + client; client output in NAME.out
	perftest() {
		local name=$1.r$ROUND s
		shift
		port=$((port + 1))
		timeout 120 "$@" -d "$dev" -x 1 -p "$port" >"$RES/$name.server" 2>&1 &
		s=$!
		if ! wait_tcp_listen "$port" 30; then
			echo "server did not listen" >"$RES/$name.out"
			kill "$s" 2>/dev/null
			wait "$s"
			echo 1 >"$RES/$name.status"
			return
		fi
		timeout 120 "$@" -d "$dev" -x 1 -p "$port" "$ip4" >"$RES/$name.out" 2>&1
		local c=$? sv
		wait "$s"
		sv=$?
		[ "$c" = 0 ] && c=$sv
		echo "$c" >"$RES/$name.status"
		printf '%s: %-22s status %s\n' "$PROG" "$name" "$c"
	}

	# mpi NAME MPIRUN-ARGS...: openib_bench --csv under mpirun
	mpi() {
		local name=$1.r$ROUND t0 c
		shift
		t0=$EPOCHREALTIME
		# shellcheck disable=SC2086
		timeout -k 10 "$step_to" "${MPIRUN[@]}" "$@" "$OPENIB_BENCH_BIN" --csv ${OPENIB_BENCH_ARGS:-} \
			>"$RES/mpi_$name.csv" 2>"$RES/mpi_$name.err"
		c=$?
		echo "$c" >"$RES/mpi_$name.status"
		printf '%s: %-22s status %s (%s s)\n' "$PROG" "mpi $name" "$c" \
			"$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')"
		if [ "$c" != 0 ]; then
			echo "$PROG: ---- last lines of mpi_$name.err ----"
			tail -n 15 "$RES/mpi_$name.err"
			echo "$PROG: ----"
		fi
	}

	# Rounds, each running every configuration once: one mpirun is one draw
	# of how the emulated CPUs get scheduled, so the table takes the median
	# over rounds (OPENIB_BENCH_ROUNDS, default 3).
	local rounds=${OPENIB_BENCH_ROUNDS:-3}
	for ((ROUND = 1; ROUND <= rounds; ROUND++)); do
		echo "$PROG: round $ROUND of $rounds"
		if [[ ,$only, == *,raw,* ]]; then
			perftest send_lat_8 ib_send_lat -s 8 -n 1000
			perftest send_lat_4k ib_send_lat -s 4096 -n 500
			perftest send_lat_1m ib_send_lat -s 1048576 -n 20
			perftest write_bw_8 ib_write_bw -s 8 -n 5000
			perftest write_bw_1m ib_write_bw -s 1048576 -n 40
			perftest write_bibw_1m ib_write_bw -b -s 1048576 -n 40
			perftest read_bw_8 ib_read_bw -s 8 -n 5000
			perftest read_bw_1m ib_read_bw -s 1048576 -n 40
			perftest send_bw_8 ib_send_bw -s 8 -n 5000
		fi

		if [[ ,$only, == *,ucx,* ]]; then mpi ucx "${MPI_UCX_ARGS[@]}"; fi
		if [[ ,$only, == *,tcp,* ]]; then mpi tcp "${MPI_TCP_ARGS[@]}"; fi
		if [[ ,$only, == *,openib,* ]]; then
			if [ -f "$(openib_component_so)" ]; then
				# openib twice: with the default CPC (oob) and with rdma_cm
				(
					export OMPI_MCA_mca_base_component_path="$OPENIB_BUILDDIR/.libs:$OMPI_SYSTEM_COMPONENT_DIR"
					mpi openib "${MPI_OPENIB_ARGS[@]}" --mca btl_openib_cpc_include oob
					mpi rdmacm "${MPI_OPENIB_ARGS[@]}" --mca btl_openib_cpc_include rdma_cm
				)
			else
				echo "component not built: $(openib_component_so)" >"$RES/mpi_openib.r$ROUND.err"
				echo 1 >"$RES/mpi_openib.r$ROUND.status"
				echo "$PROG: openib: component not built ($(openib_component_so))"
			fi
		fi
	done
	return 0
}

if [ "${1:-}" = --in-guest ]; then
	in_guest "$2"
	exit $?
fi

# ============================================================================
# Host part
# ============================================================================
OUT='' CSV_COPY='' MODE=guest ONLY=raw,openib,ucx,tcp REPORT_ONLY=0
while [ $# -gt 0 ]; do
	case $1 in
	--out) OUT=$2; shift ;;
	--out=*) OUT=${1#*=} ;;
	--csv) CSV_COPY=$2; shift ;;
	--csv=*) CSV_COPY=${1#*=} ;;
	--only) ONLY=$2; shift ;;
	--only=*) ONLY=${1#*=} ;;
	--host) MODE=host ;;
	--report) OUT=$2; REPORT_ONLY=1; shift ;;
	--report=*) OUT=${1#*=}; REPORT_ONLY=1 ;;
	-h | --help)
		sed -n '2,/^$/{s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
		exit 0
		;;
	*)
		echo "$PROG: unknown argument: $1 (see --help)" >&2
		exit 2
		;;
	esac
	shift
done
for x in ${ONLY//,/ }; do
	case $x in raw | openib | ucx | tcp) ;; *) echo "$PROG: --only: unknown '$x'" >&2; exit 2 ;; esac
done

if [ "$REPORT_ONLY" = 1 ]; then
	[ -d "$OUT" ] || { echo "$PROG: --report: no such directory: $OUT" >&2; exit 2; }
	OUT=$(cd "$OUT" && pwd -P)
	[ -s "$OUT/mode" ] && MODE=$(cat "$OUT/mode")
	[ -s "$OUT/only" ] && ONLY=$(cat "$OUT/only")
	grc=$(cat "$OUT/guest-status" 2>/dev/null || echo 0)
else
	export OPENIB_SRCDIR=$SRCDIR
	: "${OPENIB_BUILDDIR:=$SRCDIR}"
	OPENIB_BUILDDIR=$(cd "$OPENIB_BUILDDIR" && pwd -P) || exit 2
	export OPENIB_BUILDDIR
	export OPENIB_LIB_NO_TMP=1
	# shellcheck source=../tests/integration/lib.sh
	. "$SRCDIR/tests/integration/lib.sh"
	unset OPENIB_LIB_NO_TMP

	ensure_host_packages "${OPENIB_TEST_PACKAGES[@]}" || echo "$PROG: warning: packages missing" >&2

	[ -n "$OUT" ] || OUT=$OPENIB_BUILDDIR/bench/results/$(date +%Y%m%d-%H%M%S)
	mkdir -p "$OUT" || exit 2
	OUT=$(cd "$OUT" && pwd -P)

	# The benchmark program: prebuilt by the build system, or built here.
	if [ -x "$OPENIB_BUILDDIR/bench/openib_bench" ] && [ "$OPENIB_BUILDDIR/bench/openib_bench" -nt "$HERE/openib_bench.c" ]; then
		OPENIB_BENCH_BIN=$OPENIB_BUILDDIR/bench/openib_bench
	else
		OPENIB_BENCH_BIN=$OUT/openib_bench
		mpicc -O2 -Wall -o "$OPENIB_BENCH_BIN" "$HERE/openib_bench.c" || {
			echo "$PROG: cannot build openib_bench" >&2
			exit 1
		}
	fi
	export OPENIB_BENCH_BIN OPENIB_BENCH_ONLY=$ONLY

	echo "$PROG: results in $OUT"
	if [ "$MODE" = host ]; then
		"$HERE/run-bench.sh" --in-guest "$OUT"
		grc=$?
	else
		# shellcheck disable=SC2086
		"$SRCDIR/tests/guest/openib-guest" --timeout "${OPENIB_BENCH_TIMEOUT:-1800}" \
			--share "$OPENIB_BUILDDIR" --share "$OUT" ${OPENIB_GUEST_OPTS:-} \
			-- "$HERE/run-bench.sh" --in-guest "$OUT"
		grc=$?
	fi
	[ "$grc" = 0 ] || echo "$PROG: warning: the guest run ended with status $grc; the table shows what was measured"

	echo "$MODE" >"$OUT/mode"
	echo "$ONLY" >"$OUT/only"
	echo "$grc" >"$OUT/guest-status"
fi

# ---------------------------------------------------------------------------
# Table
ok_status() { [ -s "$OUT/$1.status" ] && [ "$(cat "$OUT/$1.status")" = 0 ]; }

# rounds NAME: the result names of NAME, one per round (NAME.r1, NAME.r2,
# ...; plain NAME in the results of an older, single-round run)
rounds() {
	local f
	for f in "$OUT/$1".r*.status "$OUT/$1.status"; do
		[ -e "$f" ] || continue
		f=${f%.status}
		echo "${f##*/}"
	done
}
ok_all() { # NAME: every round ran fine (and there was one)
	local r n=0
	for r in $(rounds "$1"); do ok_status "$r" || return 1; n=$((n + 1)); done
	[ "$n" -gt 0 ]
}

# median VALUES...: of the numeric ones; "failed" when there are none
median() {
	printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -g |
		awk '{ v[NR] = $1 } END { if (!NR) print "failed"; else if (NR % 2) print v[(NR + 1) / 2];
			else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# perf_col NAME COLUMN: a value from the perftest result row of NAME.out (median over rounds)
perf_col() {
	local r vals=()
	for r in $(rounds "$1"); do
		ok_status "$r" || continue
		vals+=("$(awk -v c="$2" '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 5 { print $c; exit }' "$OUT/$r.out")")
	done
	median "${vals[@]}"
}

# mpi_col NAME SIZE FIELD: a value from openib_bench's CSV (median over rounds)
mpi_col() {
	local r vals=()
	for r in $(rounds "mpi_$1"); do
		ok_status "$r" || continue
		vals+=("$(awk -F, -v s="$2" -v f="$3" '
			NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
			$1 == s { print $(col[f]); exit }' "$OUT/$r.csv")")
	done
	median "${vals[@]}"
}

col_or_skip() { # TRANSPORT VALUE (rdmacm is the openib column's second run)
	local t=$1
	[ "$t" = rdmacm ] && t=openib
	[[ ,$ONLY, == *,$t,* ]] && echo "$2" || echo "-"
}

ratio() {
	[[ $1 =~ ^[0-9.]+$ && $2 =~ ^[0-9.]+$ ]] || { echo "-"; return; }
	awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'
}

# kilo VALUE: millions -> thousands (k msg/s), "failed" passes through
kilo() {
	[[ $1 =~ ^[0-9.]+$ ]] || { echo "$1"; return; }
	awk -v v="$1" 'BEGIN { printf "%.1f", v * 1000 }'
}

# MiB/s from perftest (its MB/sec is 2^20 B/s); msgs/s in millions.
declare -A V
V[lat8,raw]=$(perf_col send_lat_8 5)
V[lat4k,raw]=$(perf_col send_lat_4k 5)
V[lat1m,raw]=$(perf_col send_lat_1m 5)
V[uni1m,raw]=$(perf_col write_bw_1m 4)
V[bi1m,raw]=$(perf_col write_bibw_1m 4)
V[rate8,raw]=$(kilo "$(perf_col send_bw_8 5)")
for t in openib rdmacm ucx tcp; do
	V[lat8,$t]=$(mpi_col "$t" 8 lat_us)
	V[lat4k,$t]=$(mpi_col "$t" 4096 lat_us)
	V[lat1m,$t]=$(mpi_col "$t" 1048576 lat_us)
	V[uni1m,$t]=$(mpi_col "$t" 1048576 uni_MiBps)
	V[bi1m,$t]=$(mpi_col "$t" 1048576 bi_MiBps)
	V[rate8,$t]=$(kilo "$(mpi_col "$t" 8 rate_Mmsgps)")
done
for k in "${!V[@]}"; do
	t=${k#*,}
	V[$k]=$(col_or_skip "$t" "${V[$k]}")
done

ROWS=(lat8 lat4k lat1m uni1m bi1m rate8)
declare -A LABEL=([lat8]="8 B latency (us)" [lat4k]="4 KiB latency (us)" [lat1m]="1 MiB latency (us)"
	[uni1m]="1 MiB uni bandwidth (MiB/s)" [bi1m]="1 MiB bi bandwidth (MiB/s)"
	[rate8]="8 B message rate (k msg/s)")
declare -A RAWSRC=([lat8]="ib_send_lat t_typical" [lat4k]="ib_send_lat t_typical" [lat1m]="ib_send_lat t_typical"
	[uni1m]="ib_write_bw" [bi1m]="ib_write_bw -b" [rate8]="ib_send_bw MsgRate")

CSV=$OUT/summary.csv
{
	echo "metric,unit,raw_verbs,openib_oob,openib_rdma_cm,ucx,tcp,openib_over_raw,openib_over_ucx,raw_source"
	for r in "${ROWS[@]}"; do
		unit=$(sed -E 's/.*\((.*)\)$/\1/' <<<"${LABEL[$r]}")
		echo "$r,$unit,${V[$r,raw]},${V[$r,openib]},${V[$r,rdmacm]},${V[$r,ucx]},${V[$r,tcp]},$(ratio "${V[$r,openib]}" "${V[$r,raw]}"),$(ratio "${V[$r,openib]}" "${V[$r,ucx]}"),${RAWSRC[$r]}"
	done
} >"$CSV"
[ -n "$CSV_COPY" ] && cp "$CSV" "$CSV_COPY"

echo
echo "== openib benchmark: Soft-RoCE (rdma_rxe) $( [ "$MODE" = guest ] && echo "in an EMULATED QEMU guest" || echo "on $(hostname)")"
if [ "$MODE" = guest ]; then
	echo "== The guest is emulated (TCG unless KVM is usable) and rxe is software: absolute numbers"
	echo "== mean little; compare the ratios (openib/raw, openib/UCX), measured in the same boot."
fi
echo "== Every figure: the median over $(rounds mpi_ucx | wc -l) round(s), each running every configuration once."
echo "== MPI figures: median iteration of openib_bench (averages in the per-size CSVs); raw latency:"
echo "== perftest t_typical.  Latency: lower is better (ratio > 1: openib slower); bandwidth, rate: higher is better."
echo "== openib(oob) and openib(rdma_cm): our BTL with each connection method; ratios use openib(oob)."
printf '%-28s %10s %12s %15s %10s %10s %12s %12s\n' metric "raw verbs" "openib(oob)" "openib(rdma_cm)" UCX TCP openib/raw openib/UCX
for r in "${ROWS[@]}"; do
	printf '%-28s %10s %12s %15s %10s %10s %12s %12s\n' "${LABEL[$r]}" "${V[$r,raw]}" "${V[$r,openib]}" \
		"${V[$r,rdmacm]}" "${V[$r,ucx]}" "${V[$r,tcp]}" "$(ratio "${V[$r,openib]}" "${V[$r,raw]}")" \
		"$(ratio "${V[$r,openib]}" "${V[$r,ucx]}")"
done
if [[ ,$ONLY, == *,raw,* ]]; then
	echo "raw verbs detail: ib_read_bw 1 MiB $(perf_col read_bw_1m 4) MiB/s, 8 B $(kilo "$(perf_col read_bw_8 5)") k msg/s;" \
		"ib_write_bw 8 B $(kilo "$(perf_col write_bw_8 5)") k msg/s; ib_send_lat 8 B average $(perf_col send_lat_8 6) us"
fi
for t in openib rdmacm ucx tcp; do
	[[ ,$ONLY, == *,${t/rdmacm/openib},* ]] || continue
	for r in $(rounds "mpi_$t"); do
		if ok_status "$r"; then
			echo "${r#mpi_}: $(grep -h '^# verification' "$OUT/$r.csv" | sed 's/^# //')"
		else
			echo "${r#mpi_}: failed (status $(cat "$OUT/$r.status" 2>/dev/null || echo "not run")): $(grep -v '^\s*$' "$OUT/$r.err" 2>/dev/null | grep -v -- '^---' | head -n 2 | tr '\n' ' ')"
		fi
	done
done
echo "per-size results: $OUT/mpi_<transport>.r<round>.csv; perftest outputs: $OUT/*.out"
echo "summary CSV: $CSV"

# Exit status: the run must have produced the baselines.
bad=0
[ "$grc" = 0 ] || bad=1
for t in ucx tcp; do
	[[ ,$ONLY, == *,$t,* ]] && ! ok_all "mpi_$t" && bad=1
done
if [[ ,$ONLY, == *,raw,* ]]; then
	for n in send_lat_8 send_lat_1m write_bw_1m write_bibw_1m send_bw_8; do ok_all "$n" || bad=1; done
fi
exit $bad

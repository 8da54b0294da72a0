#!/bin/bash
# report.sh DIR: the tables, summary.csv and plot of one results directory
# that measure.sh filled (RESULTS/single-node, RESULTS/cross-node or
# RESULTS/iwarp).
# Writes DIR/curves.csv and DIR/ratios.csv (aggregate.awk), DIR/summary.csv
# (the table's rows), DIR/table.txt (what it prints), DIR/table.md (its two
# tables in markdown, as the README shows them) and DIR/bench.png
# (plot.sh).  Exit status 0 only when every configuration that was asked for
# ran fine in every round: exit status 0, every message verified, and across
# nodes the two ranks on two different hosts.

set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
PROG=run-bench
DIR=$(cd "$1" && pwd -P) || exit 2
mode=$(cat "$DIR/mode")
only=,$(cat "$DIR/only" 2>/dev/null || echo raw,openib,ucx,tcp),
bad=0
: >"$DIR/failures"

# asked CONFIG: was CONFIG part of this run (run-bench.sh --only; on
# iWARP, oob declines the port, so openib runs with rdma_cm only)?
asked() { [[ $only == *,${1%%_*},* ]] && { [ "$mode" != iwarp ] || [ "$1" != openib_oob ]; }; }
# unavailable CONFIG: the configuration could not use the device at all
# (UCX on iWARP), said by measure.sh; not a failure
unavailable() { ls "$DIR/mpi_$1".r*.unavailable >/dev/null 2>&1; }

# mpi_problem BASE: why the openib_bench run BASE.{status,csv,err} does not
# count (nothing when it counts)
mpi_problem() {
	local st h0='' h1=''
	st=$(cat "$1.status" 2>/dev/null)
	if [ "$st" != 0 ]; then
		echo "exit status ${st:-missing}: $(grep -v -e '^[[:space:]]*$' -e '^---' "$1.err" 2>/dev/null | head -n 2 | tr '\n' ' ')"
		return
	fi
	# one line per openib_bench run in the CSV (the pair's sweep, the pairs'
	# rate): there is one, and every one passed
	local v
	v=$(grep '^# verification: ' "$1.csv")
	if [ -z "$v" ] || grep -qv ' 0 errors: PASSED$' <<<"$v"; then
		echo "verification did not pass"
		return
	fi
	read -r h0 h1 < <(sed -n 's/^# openib_bench [0-9.]*: rank 0 on \(.*\), rank 1 on \(.*\)$/\1 \2/p' "$1.csv")
	[ -n "$h1" ] || { echo "no line saying where the ranks ran"; return; }
	[ "$mode" != cross ] || [ "$h0" != "$h1" ] || echo "both ranks ran on $h0, not on two nodes"
}

fail_note() { echo "$*" >>"$DIR/failures"; bad=1; }
[ -s "$DIR/clock-problem" ] && fail_note "$(cat "$DIR/clock-problem")"

# The rounds that count, per configuration.
GOOD=()
for c in openib_oob openib_rdma_cm ucx tcp; do
	asked "$c" || continue
	n=0
	for s in "$DIR/mpi_$c".r*.status; do
		[ -e "$s" ] || continue
		b=${s%.status}
		[ -e "$b.unavailable" ] && continue
		why=$(mpi_problem "$b")
		if [ -z "$why" ]; then
			GOOD+=("$b.csv")
			n=$((n + 1))
		else
			fail_note "$c round ${b##*.r}: $why"
		fi
	done
	[ "$n" -gt 0 ] || unavailable "$c" || fail_note "$c: no round ran fine"
done
if asked raw; then
	ls "$DIR"/raw_*.r*.status >/dev/null 2>&1 || fail_note "raw verbs: no perftest run"
	for s in "$DIR"/raw_*.r*.status; do
		[ -e "$s" ] || continue
		[ "$(cat "$s")" = 0 ] ||
			fail_note "raw verbs ${s##*/raw_}: status $(cat "$s"): $(grep -m 3 -iE 'error|fail|unable|couldn|did not' "${s%.status}.out" 2>/dev/null | tr -s ' \n' ' ')"
	done
	for f in "$DIR"/raw.r*.csv; do [ -e "$f" ] && GOOD+=("$f"); done
fi

awk -v out="$DIR" -f "$HERE/aggregate.awk" /dev/null "${GOOD[@]}"

# The table: rows (metric, size, test, perftest source) and columns.
ROWS="lat8|8 B latency (us)|8|lat|ib_send_lat
lat4k|4 KiB latency (us)|4096|lat|ib_send_lat
lat64k|64 KiB latency (us)|65536|lat|ib_send_lat
lat1m|1 MiB latency (us)|1048576|lat|ib_send_lat
uni1m|1 MiB uni bandwidth (MiB/s)|1048576|uni|ib_write_bw
bi1m|1 MiB bi bandwidth (MiB/s)|1048576|bi|ib_write_bw -b
rate8|8 B message rate (k msg/s)|8|rate|ib_send_bw
rate8x4|8 B rate, 4 pairs (k msg/s)|8|ratex4|"
cols=""
na=""
for c in raw openib_oob openib_rdma_cm ucx tcp; do
	asked "$c" && cols+="$c "
	asked "$c" && unavailable "$c" && na+="$c "
done

{
	case $mode in
	cross) where="CROSS NODE: two guests (node1, node2), one bed boot; Soft-RoCE (rdma_rxe)" ;;
	iwarp) where="iWARP: both processes in one guest, one boot; Soft-iWARP (siw) on a NIC of its own" ;;
	*) where="SINGLE NODE: both processes in one guest, one boot; Soft-RoCE (rdma_rxe)" ;;
	esac
	echo "== openib benchmark, $where, $(cat "$DIR/accel" 2>/dev/null)"
	echo "== results: $DIR ($(cat "$DIR/date" 2>/dev/null))"
	[ -s "$DIR/load" ] && echo "== host load average (1 min): $(paste -sd ' ' "$DIR/load")"
	echo "== $(cat "$DIR/rounds" 2>/dev/null || echo "?") round(s), each running every configuration once, back to back."
	echo "== cell: median [q1-q3]: the median over rounds of each round's median, and of its"
	echo "== quartiles (the interquartile range of the samples within one mpirun); cells"
	echo "== with (lo-hi) are perftest bandwidth and rate, one figure per run: lowest-highest"
	echo "== round.  n: samples per round, MPI / raw.  Latency: lower is better."
	awk -F, -v cols="$cols" -v na="$na" -v rows="$ROWS" -v csv="$DIR/summary.csv" -v md="$DIR/table.md" '
		BEGIN { nn = split(na, T, " "); for (i = 1; i <= nn; i++) NA[T[i]] = 1 }
		function num(x) { return x >= 100 ? sprintf("%.0f", x) : x >= 10 ? sprintf("%.1f", x) : sprintf("%.2f", x) }
		function cell(c, k) {
			if (!((c, k) in M)) return (c in NA) ? "n/a (see below)" : "failed"
			if (Q1[c, k] != "") return num(M[c, k]) " [" num(Q1[c, k]) "-" num(Q3[c, k]) "]"
			if (RD[c, k] < 2) return num(M[c, k])
			return num(M[c, k]) " (" num(LO[c, k]) "-" num(HI[c, k]) ")"
		}
		# a row no configuration measured in this mode (the quick job runs
		# no pairs across the bed): left out, not shown as failed
		function measured(k,  i) {
			for (i = 1; i <= nc; i++) if ((C[i], k) in M) return 1
			return 0
		}
		function rcell(p, k) {
			if (!((p, k) in R)) return "-"
			if (RN[p, k] < 2) return sprintf("%.2f", R[p, k])
			return sprintf("%.2f (%.2f-%.2f)", R[p, k], RLO[p, k], RHI[p, k])
		}
		FNR == 1 { file++; next }
		file == 1 {
			k = $2 SUBSEP $3
			M[$1, k] = $7; Q1[$1, k] = $8; Q3[$1, k] = $9; LO[$1, k] = $10; HI[$1, k] = $11
			N[$1, k] = $6; U[$1, k] = $4; RD[$1, k] = $5
		}
		file == 2 { k = $1 SUBSEP $2; R[$3, k] = $4; RLO[$3, k] = $5; RHI[$3, k] = $6; RN[$3, k] = $7 }
		END {
			nc = split(cols, C, " ")
			name["raw"] = "raw verbs"; name["openib_oob"] = "openib(oob)"
			name["openib_rdma_cm"] = "openib(rdma_cm)"; name["ucx"] = "UCX"; name["tcp"] = "TCP"
			nr = split(rows, RW, "\n")
			printf "%-28s", "metric"
			printf "| metric |" >md
			for (i = 1; i <= nc; i++) { printf " %-22s", name[C[i]]; printf " %s |", name[C[i]] >md }
			printf " %s\n", "n"
			printf " samples per round, MPI/raw |\n|---|" >md
			for (i = 0; i <= nc; i++) printf "---|" >md
			printf "\n" >md
			print "metric,unit,config,median,q1,q3,round_min,round_max,rounds,samples_per_round,source" >csv
			for (r = 1; r <= nr; r++) {
				split(RW[r], f, "|")
				k = f[3] SUBSEP f[4]
				if (!measured(k)) continue
				printf "%-28s", f[2]
				printf "| %s |", f[2] >md
				nm = nraw = "-"
				for (i = 1; i <= nc; i++) {
					c = C[i]
					if (c == "raw" && f[5] == "") { printf " %-22s", "-"; printf " - |" >md; continue }
					cv = cell(c, k)
					printf " %-22s", cv
					printf " %s |", cv >md
					if ((c, k) in M) {
						if (c == "raw") nraw = N[c, k]; else nm = N[c, k]
						printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", f[1], U[c, k], c, M[c, k],
							Q1[c, k], Q3[c, k], LO[c, k], HI[c, k], RD[c, k], N[c, k],
							c == "raw" ? f[5] : "openib_bench" >csv
					}
				}
				printf " %s/%s\n", nm, nraw
				printf " %s/%s |\n", nm, nraw >md
			}
			printf "\n%-28s", "ratio (lowest-highest round)"
			printf "\n| ratio: median (lowest-highest round) |" >md
			np = 0 # the pairs whose two configurations are columns here
			split("openib_oob/raw openib_oob/ucx openib_rdma_cm/raw openib_rdma_cm/ucx", AP, " ")
			for (i = 1; i <= 4; i++) {
				split(AP[i], ab, "/")
				if ((" " cols) ~ (" " ab[1] " ") && (" " cols) ~ (" " ab[2] " ")) P[++np] = AP[i]
			}
			for (i = 1; i <= np; i++) {
				split(P[i], ab, "/")
				printf " %-26s", name[ab[1]] "/" name[ab[2]]
				printf " %s |", name[ab[1]] "/" name[ab[2]] >md
			}
			printf "\n"
			printf "\n|---|" >md
			for (i = 1; i <= np; i++) printf "---|" >md
			printf "\n" >md
			for (r = 1; r <= nr; r++) {
				split(RW[r], f, "|")
				if (!measured(f[3] SUBSEP f[4])) continue
				sub(/ \(.*\)$/, "", f[2])
				printf "%-28s", f[2]
				printf "| %s |", f[2] >md
				for (i = 1; i <= np; i++) {
					cv = rcell(P[i], f[3] SUBSEP f[4])
					printf " %-26s", cv
					printf " %s |", cv >md
				}
				printf "\n"
				printf "\n" >md
			}
		}' "$DIR/curves.csv" "$DIR/ratios.csv"
	# Every size of the sweep against UCX, then each performance target
	# (README, "Performance"): met, or how far off.
	awk -f "$HERE/targets.awk" "$DIR/ratios.csv" "$DIR/curves.csv"
	# Where the MPI figures came from: hosts and rxe packets of round 1.
	for c in openib_oob openib_rdma_cm ucx tcp; do
		b=$DIR/mpi_$c.r1
		[ -s "$b.csv" ] || continue
		echo "$c: $(sed -n 's/^# openib_bench [0-9.]*: //p' "$b.csv"); round 1: $(cat "$b.pkts" 2>/dev/null)"
	done
	for c in $na; do
		echo "$c: n/a: it could not run over this device; its error (round 1): $(tr -s ' \n' ' ' <"$(ls "$DIR/mpi_$c".r*.unavailable | head -n 1)")"
	done
	# across nodes: connection setup and memory per peer (conn_setup);
	# its problems go to DIR/failures, read after this subshell
	[ "$mode" != cross ] || bash "$HERE/scale-report.sh" "$DIR"
	if [ -s "$DIR/failures" ]; then
		echo "FAILED (not in the figures above):"
		sed 's/^/  /' "$DIR/failures"
	fi
} | tee "$DIR/table.txt"
[ -s "$DIR/failures" ] && bad=1

if ! bash "$HERE/plot.sh" "$DIR"; then
	echo "$PROG: the plot of $DIR could not be made" >&2
	bad=1
fi
exit $bad

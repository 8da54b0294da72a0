#!/bin/bash
# mt-report.sh DIR: the tables of a results directory that mt-measure.sh
# filled (mt-bench.sh runs it; mt-bench.sh --report DIR runs it again).
# Writes DIR/samples.csv (every sample of every run that counts),
# DIR/summary.csv (per configuration and figure: samples, median, lowest
# and highest sample, lowest and highest round median), DIR/failures and
# DIR/table.md (markdown, also printed).
# A run counts when it exited 0, its verification PASSED and it got the
# thread level it asked for.  The one exception is openib "before" under
# MPI_THREAD_MULTIPLE, which is run to record what that build does: a
# component that declines makes it fail, and the table says so.
# Exit status 0 only when every other run counted.  No timing is judged.

set -u
shopt -s nullglob
PROG=mt-bench
SRCDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
DIR=$(cd "${1:?usage: mt-report.sh DIR}" && pwd -P) || exit 2
bad=0
: >"$DIR/failures"
fail_note() { echo "$*" >>"$DIR/failures"; bad=1; }
[ -s "$DIR/clock-problem" ] && fail_note "$(cat "$DIR/clock-problem")"

# run_problem BASE: why the run BASE.{status,csv,err} does not count
run_problem() {
	local st
	st=$(cat "$1.status" 2>/dev/null)
	if [ "$st" != 0 ]; then
		echo "exit status ${st:-missing}: $(grep -v -e '^[[:space:]]*$' -e '^---' -e '^\*\*\*' "$1.err" 2>/dev/null | head -n 3 | tr -s ' \n' ' ')"
		return
	fi
	grep -q '^# verification: .* 0 errors: PASSED$' "$1.csv" || { echo "verification did not pass"; return; }
	grep -Eq '^# threads [0-9]+ per rank, thread level asked ([a-z]+), provided \1$' "$1.csv" ||
		echo "thread level: $(sed -n 's/^# threads //p' "$1.csv")"
}

echo "kind,config,threads,level,round,sample,test,value,unit" >"$DIR/samples.csv"
before_multiple=''
for s in "$DIR"/st_*.status "$DIR"/mt_*.status; do
	b=${s%.status}
	name=${b##*/}
	round=${name##*.r}
	name=${name%.r*}
	why=$(run_problem "$b")
	if [ -n "$why" ]; then
		if [ "$name" = st_before_multiple ]; then
			before_multiple="round $round: $why"
		else
			fail_note "${name#*_} round $round: $why"
		fi
		continue
	fi
	kind=${name%%_*}
	config=${name#*_}
	config=${config%%_*}
	awk -F, -v k="$kind" -v c="$config" -v r="$round" '
		!/^#/ && $1 != "test" && NF == 6 { print k "," c "," $2 "," $3 "," r "," $4 "," $1 "," $5 "," $6 }' \
		"$b.csv" >>"$DIR/samples.csv"
done
if ! ls "$DIR"/mt_*.status >/dev/null 2>&1; then fail_note "no run of the threaded table"; fi

cmd=$(cat "$DIR/command" 2>/dev/null || echo "?")
{
	echo "## Thread support benchmark: $(cat "$DIR/accel" 2>/dev/null || echo guest), Soft-RoCE (rdma_rxe), both ranks in one guest, one boot"
	echo
	echo "- command: \`$cmd\`"
	echo "- results: \`${DIR#"$SRCDIR"/}\` ($(cat "$DIR/date" 2>/dev/null))"
	echo "- settings: $(paste -sd ' ' "$DIR/settings" 2>/dev/null)"
	[ -s "$DIR/load" ] && echo "- host load average (1 min): $(paste -sd ' ' "$DIR/load")"
	sed -n 's/^\(after\|before\): /- openib \1: /p' "$DIR/revisions" 2>/dev/null
	echo "- cell: median (lowest-highest sample) over every sample of every round; n: samples."
	echo "  Ratio: of the medians (lowest-highest ratio of the two round medians within one round)."
	echo
	awk -F, -v csv="$DIR/summary.csv" -v bm="$before_multiple" '
		function num(x) { return x >= 100 ? sprintf("%.0f", x) : x >= 10 ? sprintf("%.1f", x) : sprintf("%.2f", x) }
		function med(a, m, i, j, x) {
			for (i = 2; i <= m; i++) {
				x = a[i]
				for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]
				a[j + 1] = x
			}
			return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
		}
		NR == 1 { next }
		{
			k = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4 SUBSEP $7
			if (!(k in n)) { keys[++nk] = k; unit[k] = $9 }
			v[k, ++n[k]] = $8
			kr = k SUBSEP $5
			if (!(kr in rn)) { rounds[k, ++nr[k]] = $5 }
			rv[kr, ++rn[kr]] = $8
		}
		function stats(k,   a, i, r, kr, lo, hi, x) {
			delete a
			for (i = 1; i <= n[k]; i++) a[i] = v[k, i]
			M[k] = med(a, n[k]); LO[k] = a[1]; HI[k] = a[n[k]]
			lo = hi = ""
			for (r = 1; r <= nr[k]; r++) {
				kr = k SUBSEP rounds[k, r]
				delete a
				for (i = 1; i <= rn[kr]; i++) a[i] = rv[kr, i]
				x = med(a, rn[kr]); RM[kr] = x
				if (lo == "" || x < lo) lo = x
				if (hi == "" || x > hi) hi = x
			}
			RLO[k] = lo; RHI[k] = hi
		}
		function cell(k) { return (k in M) ? num(M[k]) " (" num(LO[k]) "-" num(HI[k]) ")" : "-" }
		# ratio a/b of the medians, and its range over the rounds both ran in
		function ratio(a, b, fmt,   r, kb, lo, hi, q) {
			if (!(a in M) || !(b in M) || M[b] == 0) return "-"
			lo = hi = ""
			for (r = 1; r <= nr[a]; r++) {
				kb = b SUBSEP rounds[a, r]
				if (!(kb in RM) || RM[kb] == 0) continue
				q = RM[a SUBSEP rounds[a, r]] / RM[kb]
				if (lo == "" || q < lo) lo = q
				if (hi == "" || q > hi) hi = q
			}
			return sprintf(fmt, M[a] / M[b]) (lo == "" ? "" : sprintf(" (" fmt "-" fmt ")", lo, hi))
		}
		function K(kind, cfg, th, lvl, test) { return kind SUBSEP cfg SUBSEP th SUBSEP lvl SUBSEP test }
		END {
			print "kind,config,threads,level,test,unit,samples,median,min,max,round_median_min,round_median_max" >csv
			for (x = 1; x <= nk; x++) {
				k = keys[x]
				stats(k)
				split(k, p, SUBSEP)
				printf "%s,%s,%s,%s,%s,%s,%d,%.6g,%.6g,%.6g,%.6g,%.6g\n", p[1], p[2], p[3], p[4], p[5],
					unit[k], n[k], M[k], LO[k], HI[k], RLO[k], RHI[k] >csv
				if (p[1] == "mt") th[p[3]] = 1
			}
			nth = 0
			for (t in th) T[++nth] = t + 0
			for (i = 2; i <= nth; i++) for (j = i; j > 1 && T[j - 1] > T[j]; j--) { x = T[j]; T[j] = T[j - 1]; T[j - 1] = x }
			split("rate rate_win", tests, " ")
			title["rate"] = "aggregate: all threads'"'"' messages over the wall time of the sample"
			title["rate_win"] = "sum over threads of 64 / each thread'"'"'s median window time"
			for (ti = 1; ti <= 2; ti++) {
				t = tests[ti]
				printf "### N threads x 8 B message rate, k msg/s (%s)\n\n", title[t]
				print "| threads per rank | openib | UCX | TCP | openib/UCX | openib/TCP | n |"
				print "|---|---|---|---|---|---|---|"
				for (i = 1; i <= nth; i++) {
					o = K("mt", "openib", T[i], "multiple", t); u = K("mt", "ucx", T[i], "multiple", t)
					c = K("mt", "tcp", T[i], "multiple", t)
					printf "| %d | %s | %s | %s | %s | %s | %s |\n", T[i], cell(o), cell(u), cell(c),
						ratio(o, u, "%.2f"), ratio(o, c, "%.2f"), (o in n) ? n[o] : ((u in n) ? n[u] : n[c])
				}
				print ""
			}
			if (!(K("st", "after", 1, "single", "lat") in n)) exit
			print "### Single thread: openib before and after the change (8 B)\n"
			print "| figure | before, SINGLE | after, SINGLE | after/before, SINGLE | before, MULTIPLE | after, MULTIPLE | after MULTIPLE / after SINGLE | n |"
			print "|---|---|---|---|---|---|---|---|"
			nrow = split("lat_p10|latency, 10th percentile round trip / 2 (us)|lat|latency, median round trip / 2 (us)|lat_mean|latency, mean (us)|rate_p90|message rate, 10th percentile window time (k msg/s)|rate_win|message rate, median window time (k msg/s)|rate|message rate, aggregate (k msg/s)", R, "|")
			for (i = 1; i < nrow; i += 2) {
				t = R[i]
				bs = K("st", "before", 1, "single", t); as = K("st", "after", 1, "single", t)
				bm_ = K("st", "before", 1, "multiple", t); am = K("st", "after", 1, "multiple", t)
				printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", R[i + 1], cell(bs), cell(as),
					ratio(as, bs, "%.3f"), (bm_ in M) ? cell(bm_) : (bm ~ /MPI_THREAD_MULTIPLE/ ? "declined (below)" : bm != "" ? "failed (below)" : "-"),
					cell(am), ratio(am, as, "%.3f"), (as in n) ? n[as] : "-"
			}
			print ""
			if (bm != "") print "before, MULTIPLE: " bm "\n"
		}' "$DIR/samples.csv"
	for f in "$DIR"/mt_openib_n*.r1.pkts "$DIR"/st_after_single.r1.pkts; do
		n=${f##*/}
		echo "- rxe packets, ${n%.r1.pkts} round 1: $(cat "$f")"
	done
	if [ -s "$DIR/failures" ]; then
		echo
		echo "FAILED (not in the figures above):"
		sed 's/^/  /' "$DIR/failures"
	fi
} | tee "$DIR/table.md"
[ "$bad" = 0 ] || echo "$PROG: FAILED: see $DIR/failures" >&2
exit $bad

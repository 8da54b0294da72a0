#!/bin/bash
# scale-report.sh DIR: the cross-node table's connection rows, from the
# conn_setup runs measure.sh made (DIR/scale_CONFIG.nN.rR.*): the first
# all-to-all of N ranks (every connection made on demand) against the
# second (all connected), and the resident memory each process grew per
# peer while connecting (and openib's own count of what a peer costs).
# Cells: median over rounds (lowest-highest round). Prints the rows,
# appends them to DIR/summary.csv, and problems to DIR/failures; exit
# status 1 when a run that was asked for failed.
set -u
DIR=$1
only=,$(cat "$DIR/only" 2>/dev/null || echo raw,openib,ucx,tcp),
bad=0
cols=()
for c in openib_oob openib_oob_tcp openib_rdma_cm ucx tcp; do
	# (oob over TCP joined the table later: older directories have none)
	[ "$c" = openib_oob_tcp ] && ! ls "$DIR"/scale_openib_oob_tcp.* >/dev/null 2>&1 && continue
	[[ $only == *,${c%%_*},* ]] && cols+=("$c")
done
# (results from before conn_setup joined the table have none)
ls "$DIR"/scale_*.status >/dev/null 2>&1 || {
	echo
	echo "== connections: not measured in this results directory"
	exit 0
}
# the runs that count: exit status 0, verification PASSED
good=()
for s in "$DIR"/scale_*.status; do
	b=${s%.status}
	if [ "$(cat "$s")" = 0 ] && grep -q '^# verification: 0 wrong messages: PASSED$' "$b.csv"; then
		good+=("$b.csv")
	else
		echo "connection setup ${b##*/scale_}: status $(cat "$s"): $(grep -v -e '^[[:space:]]*$' -e '^---' "$b.err" 2>/dev/null | head -n 2 | tr '\n' ' ')" >>"$DIR/failures"
		bad=1
	fi
done
for c in "${cols[@]}"; do
	ls "$DIR/scale_$c".n*.csv >/dev/null 2>&1 || { echo "connection setup: $c did not run" >>"$DIR/failures"; bad=1; }
done
echo
echo "== connections: conn_setup on N ranks, half on each node (all-to-all of 1 B, receive-first);"
echo "== the slowest rank's time from MPI_Init to the end of the first all-to-all (connections"
echo "== made on demand) and of the second (all connected); memory: each process's resident"
echo "== set growth during the first, per peer (median over ranks). median (lowest-highest round)."
awk -F, -v cols="${cols[*]}" -v csv="$DIR/summary.csv" '
	function med(a, m, i, j, x) {
		for (i = 2; i <= m; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
		return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
	}
	function num(x) { return x >= 100 ? sprintf("%.0f", x) : x >= 10 ? sprintf("%.1f", x) : sprintf("%.2f", x) }
	FNR == 1 { f = FILENAME; sub(/.*\/scale_/, "", f); split(f, P, "."); c = P[1]; n = substr(P[2], 2) }
	/^[0-9]/ {
		N[n] = 1; k = c SUBSEP n
		cnt[k]++; V[k, 1, cnt[k]] = $2; V[k, 2, cnt[k]] = $3; V[k, 3, cnt[k]] = $4 / 1024; V[k, 4, cnt[k]] = $5 / 1024
	}
	function cell(c, n, v, i, m, lo, hi, a) {
		k = c SUBSEP n; m = cnt[k]
		if (!m) return "failed"
		if (v == 4 && c !~ /^openib/) return "-"
		for (i = 1; i <= m; i++) { a[i] = V[k, v, i]; if (i == 1 || a[i] < lo) lo = a[i]; if (i == 1 || a[i] > hi) hi = a[i] }
		x = med(a, m)
		printf "%s,%s,%s,%s,,,%s,%s,%s,%d,conn_setup\n", metric[v] "_" n, unit[v], c, x, lo, hi, m, n >>csv
		return m < 2 ? num(x) : num(x) " (" num(lo) "-" num(hi) ")"
	}
	END {
		nc = split(cols, C, " ")
		name["openib_oob"] = "openib(oob)"; name["openib_oob_tcp"] = "openib(oob over TCP)"
		name["openib_rdma_cm"] = "openib(rdma_cm)"; name["ucx"] = "UCX"; name["tcp"] = "TCP"
		label[1] = "first all-to-all (ms)"; label[2] = "connected all-to-all (ms)"
		label[3] = "memory per peer (KiB)"; label[4] = "openib count per peer (KiB)"
		metric[1] = "conn_first"; metric[2] = "conn_connected"; metric[3] = "mem_rss_per_peer"; metric[4] = "mem_openib_per_peer"
		unit[1] = unit[2] = "ms"; unit[3] = unit[4] = "KiB"
		ns = 0; for (n in N) S[++ns] = n + 0
		for (i = 2; i <= ns; i++) { x = S[i]; for (j = i - 1; j >= 1 && S[j] > x; j--) S[j + 1] = S[j]; S[j + 1] = x }
		printf "%-40s", "metric"
		for (i = 1; i <= nc; i++) printf " %-22s", name[C[i]]
		printf "\n"
		for (v = 1; v <= 4; v++)
			for (s = 1; s <= ns; s++) {
				printf "%-40s", sprintf("%s, %d ranks", label[v], S[s])
				for (i = 1; i <= nc; i++) printf " %-22s", cell(C[i], S[s], v)
				printf "\n"
			}
	}' "${good[@]}"
exit $bad

#!/bin/bash
# plot.sh DIR: DIR/bench.png from DIR/curves.csv (report.sh): latency and
# uni-directional bandwidth against message size, one line per configuration
# (raw verbs, openib with each CPC, UCX, TCP), with error bars: the
# interquartile range of the samples (median over rounds of each round's
# quartiles); perftest's bandwidth, one figure per run: the lowest and
# highest round.  The gnuplot script stays next to it (DIR/bench.gp).

set -u
DIR=$(cd "$1" && pwd -P) || exit 2
command -v gnuplot >/dev/null || { echo "plot.sh: gnuplot not found (Debian package gnuplot-nox)" >&2; exit 1; }
awk -F, '$2 > 0 && ($3 == "lat" || $3 == "uni") { found = 1 } END { exit !found }' "$DIR/curves.csv" 2>/dev/null ||
	{ echo "plot.sh: nothing to plot: no latency or bandwidth figures in $DIR/curves.csv" >&2; exit 1; }

mode=$(cat "$DIR/mode")
case $mode in
cross) where="cross node: rank 0 on node1, rank 1 on node2 (two guests), Soft-RoCE (rxe)" ;;
iwarp) where="iWARP: both ranks in one guest, Soft-iWARP (siw)" ;;
*) where="single node: both ranks in one guest, Soft-RoCE (rxe)" ;;
esac
# gnuplot strings in double quotes: no double quotes or backslashes inside
# shellcheck disable=SC1003 # tr's set: a double quote and a backslash
clean() { tr -d '"\\' | paste -sd ' ' | sed 's/ *$//'; }
title="openib-ng benchmark, $where, $(clean <"$DIR/accel" 2>/dev/null)"
sub="$(clean <"$DIR/date" 2>/dev/null), $(clean <"$DIR/rounds" 2>/dev/null) round(s), host load $(clean <"$DIR/load" 2>/dev/null)"
cmd="$(clean <"$DIR/command" 2>/dev/null); results: $DIR"

# datablocks: the curves as gnuplot data blocks, $CONFIG_TEST, rows "size
# median low high" (low/high: the quartiles, or the round range where there
# are none); size 0 is left out (logarithmic axis).  Rows in size order:
# perftest's come in the order its runs were made, and a line drawn
# through them unsorted goes back and forth.
datablocks() {
	tail -n +2 "$DIR/curves.csv" | sort -t, -k2,2n | awk -F, '$2 > 0 {
		k = $1 "_" $3
		if (!(k in seen)) { seen[k] = 1; order[++n] = k }
		rows[k] = rows[k] sprintf("%s %s %s %s\n", $2, $7, $8 == "" ? $10 : $8, $9 == "" ? $11 : $9)
	}
	END { for (i = 1; i <= n; i++) printf "$%s << EOD\n%sEOD\n", order[i], rows[order[i]] }'
}
# the x axis reaches past the largest size measured (the sweep goes to 16 MiB)
xmax=$(awk -F, 'NR > 1 && $2 + 0 > m { m = $2 + 0 } END { print (m > 0 ? m : 1048576) * 1.5 }' "$DIR/curves.csv")
# plots TEST: the plot command's list for TEST, one entry per configuration
plots() {
	local c sep='' i=0
	for c in raw openib_oob openib_rdma_cm ucx tcp; do
		i=$((i + 1))
		grep -q "^$c,[1-9][0-9]*,$1," "$DIR/curves.csv" || continue
		printf '%s$%s_%s using 1:2:3:4 with yerrorlines ls %d title "%s"' "$sep" "$c" "$1" "$i" "$(label "$c")"
		sep=', '
	done
	echo
}
label() {
	case $1 in
	raw) echo "raw verbs (perftest)" ;;
	openib_oob) echo "openib (oob)" ;;
	openib_rdma_cm) echo "openib (rdma_cm)" ;;
	ucx) echo "UCX (pml ucx)" ;;
	tcp) echo "TCP (btl tcp)" ;;
	esac
}

if gnuplot -e 'set terminal' 2>&1 | grep -q pngcairo; then
	term='pngcairo size 1500,650 font "sans,10"'
else
	term='png size 1500,650'
fi

cat >"$DIR/bench.gp" <<EOF
# made by bench/plot.sh from curves.csv; gnuplot bench.gp rewrites bench.png
set terminal $term
set output "$DIR/bench.png"
set termoption noenhanced
set datafile separator whitespace
set style line 1 lc rgb "#000000" lw 2 pt 7 ps 0.8
set style line 2 lc rgb "#d62728" lw 2 pt 5 ps 0.8
set style line 3 lc rgb "#ff7f0e" lw 2 pt 13 ps 0.8 dt 2
set style line 4 lc rgb "#1f77b4" lw 2 pt 9 ps 0.8
set style line 5 lc rgb "#2ca02c" lw 2 pt 11 ps 0.8
set logscale xy 2
set format x "%.0b%B"
set xrange [0.7:$xmax]
set grid
set key top left
set bars small
$(datablocks)
set multiplot layout 1,2 title "$title\n$sub\n$cmd\nerror bars: interquartile range of the samples (perftest bandwidth: lowest-highest round)" font ",10"
set logscale y 10
set title "latency (half round trip), lower is better"
set xlabel "message size (bytes)"
set ylabel "microseconds"
plot $(plots lat)
set title "uni-directional bandwidth, higher is better"
set ylabel "MiB/s"
set key top left
plot $(plots uni)
unset multiplot
EOF
gnuplot "$DIR/bench.gp" || exit 1
[ -s "$DIR/bench.png" ]

#!/bin/bash
# mt-report.sh DIR: the tables of a results directory that mt-measure.sh
# filled (mt-bench.sh runs it; mt-bench.sh --report DIR runs it again).
# Writes DIR/samples.csv (every sample of every run that counts),
# DIR/summary.csv (per configuration and figure: samples, median, lowest
# and highest sample), DIR/failures and DIR/table.md (the tables of
# mt-tables.awk in markdown, also printed).
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
label=$(cat "$DIR/before-label" 2>/dev/null || echo before)
{
	echo "## Thread support benchmark: $(cat "$DIR/accel" 2>/dev/null || echo guest), Soft-RoCE (rdma_rxe), both ranks in one guest, one boot"
	echo
	echo "- command: \`$cmd\`"
	echo "- results: \`${DIR#"$SRCDIR"/}\` ($(cat "$DIR/date" 2>/dev/null))"
	echo "- settings: $(paste -sd ' ' "$DIR/settings" 2>/dev/null)"
	[ -s "$DIR/load" ] && echo "- host load average (1 min): $(paste -sd ' ' "$DIR/load")"
	sed -n -e 's/^after: /- openib after: /p' -e "s/^before: /- openib $label: /p" "$DIR/revisions" 2>/dev/null
	echo "- cell: median (lowest-highest sample) over every sample of every round; n: samples per"
	echo "  configuration.  Ratio: of the medians [of the round medians, within each round]; best:"
	echo "  of the best samples (lowest latency, highest rate)."
	echo
	awk -v csv="$DIR/summary.csv" -v before_multiple="$before_multiple" -v label="$label" -f "$SRCDIR/bench/mt-tables.awk" "$DIR/samples.csv"
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

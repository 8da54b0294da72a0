# progress.sh: progress lines for the benchmark's long phases (bash; sourced
# by run-bench.sh, mt-bench.sh and their measuring scripts).  The rule: a
# phase that can take longer than a few seconds prints one line when it
# ends, with its elapsed time, and nothing stays silent for more than 30 s;
# a measuring step that failed shows why.  Set PROG before sourcing.
# shellcheck shell=bash

PROGRESS_TICK=20 # timed's "still running" lines
SILENCE_TICK=27  # watch_silence: longer, so that it speaks only when nothing else does

# secs_since T0: seconds (one decimal) since T0, an $EPOCHREALTIME value
secs_since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

# timed LABEL CMD...: run CMD (its output goes where the caller sends it);
# every PROGRESS_TICK seconds print "PROG: LABEL: still running, N s", and at
# the end "PROG: LABEL: ok (N s)" or "PROG: LABEL: FAILED, status S (N s)".
# Returns CMD's status.
timed() {
	local label=$1 t0=$EPOCHREALTIME ticker rc
	shift
	(
		# sleep's own output is not the terminal: an orphaned sleep must
		# not hold a pipe open after this phase.
		while sleep "$PROGRESS_TICK" >/dev/null 2>&1; do
			echo "$PROG: $label: still running, $(secs_since "$t0") s" >&2
		done
	) &
	ticker=$!
	"$@"
	rc=$?
	kill "$ticker" 2>/dev/null
	wait "$ticker" 2>/dev/null
	phase_end "$label" "$t0" "$rc"
}

# phase_end LABEL T0 STATUS: "PROG: LABEL: ok (N s)" or "... FAILED, status
# S (N s)" on stderr; returns STATUS.
phase_end() {
	if [ "$3" = 0 ]; then
		echo "$PROG: $1: ok ($(secs_since "$2") s)" >&2
	else
		echo "$PROG: $1: FAILED, status $3 ($(secs_since "$2") s)" >&2
	fi
	return "$3"
}

# step_result DIR NAME STATUS LINES: the end of one measuring step whose
# output went to DIR/NAME.*: STATUS into DIR/NAME.status and, when it is not
# 0, the last LINES lines of DIR/NAME.err on stdout; returns STATUS.
step_result() {
	echo "$3" >"$1/$2.status"
	if [ "$3" != 0 ]; then
		echo "$PROG: ---- last lines of $2.err ----"
		tail -n "$4" "$1/$2.err"
		echo "$PROG: ----"
	fi
	return "$3"
}

# watch_silence LABEL: copy stdin to stdout line by line; when no line came
# for SILENCE_TICK seconds, say so ("PROG: LABEL: N s, no output for M s").
# For commands whose own progress lines may be far apart (booting a guest).
watch_silence() {
	local label=$1 t0=$EPOCHREALTIME last=$EPOCHREALTIME line='' part rc
	while :; do
		IFS= read -r -t "$SILENCE_TICK" part
		rc=$?
		line+=$part
		if [ "$rc" = 0 ]; then
			printf '%s\n' "$line"
			line=''
			last=$EPOCHREALTIME
		elif [ "$rc" -gt 128 ]; then
			echo "$PROG: $label: $(secs_since "$t0") s, no output for $(secs_since "$last") s"
		else
			[ -n "$line" ] && printf '%s\n' "$line"
			return 0
		fi
	done
}

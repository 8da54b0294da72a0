# driver-args.sh: the command line the benchmark drivers share (bash;
# sourced by driver-prelude.sh).  Set PROG before sourcing.
# shellcheck shell=bash

# command_line VAR... -- COMMAND ARG...: the command line as the results
# will say: the VARs that are set in the environment (quoted), then COMMAND
# and its ARGs
command_line() {
	local line=''
	while [ "$1" != -- ]; do
		[ -n "${!1:-}" ] && line+="$1=$(printf %q "${!1}") "
		shift
	done
	line+=$2
	shift 2
	printf '%s\n' "$line${*:+ $*}"
}

# driver_option ARG...: the option at the head of ARG... that every driver
# takes: --only LIST, --out DIR, --quick, --report DIR (sets OUT and
# REPORT_ONLY=1), -h/--help (prints the driver's header comment and
# exits 0); anything else is an unknown argument (exit 2).  Returns how
# many arguments it took after the option (its value: 1, else 0), for the
# caller's loop to shift.
# shellcheck disable=SC2034 # ONLY, OUT, QUICK, REPORT_ONLY: the driver's
driver_option() {
	case $1 in
	--only) ONLY=$2; return 1 ;;
	--only=*) ONLY=${1#*=} ;;
	--out) OUT=$2; return 1 ;;
	--out=*) OUT=${1#*=} ;;
	--quick) QUICK=1 ;;
	--report) OUT=$2; REPORT_ONLY=1; return 1 ;;
	--report=*) OUT=${1#*=}; REPORT_ONLY=1 ;;
	-h | --help)
		sed -n '2,/^$/{s/^# \{0,1\}//;p}' "${BASH_SOURCE[-1]}"
		exit 0
		;;
	*)
		echo "$PROG: unknown argument: $1 (see --help)" >&2
		exit 2
		;;
	esac
	return 0
}

# check_list OPTION LIST WORD...: every item of the comma-separated LIST
# is one of the WORDs, or exit 2 naming the first that is not
check_list() {
	local opt=$1 list=$2 x w
	shift 2
	for x in ${list//,/ }; do
		for w; do [ "$x" = "$w" ] && continue 2; done
		echo "$PROG: $opt: unknown '$x'" >&2
		exit 2
	done
}

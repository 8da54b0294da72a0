#!/bin/bash
# profile-lat.sh [--iters N] [--size B] [--out DIR | --report DIR]: where a small message's
# round trip spends its instructions, openib (pml ob1, btl openib,self)
# against UCX (pml ucx), in one boot of the Soft-RoCE guest.
#
# Both ranks run openib_bench's ping-pong (one size, no other test) under
# callgrind, counting only inside the timed loop (run_lat), once with N and
# once with 2N iterations: (instructions of 2N - of N) / N is what one round
# trip costs each rank in user space, without start-up and warm-up.
# callgrind counts instructions, not time: the figures repeat from run to
# run, and the emulated guest's clock plays no part. The kernel's share
# (rxe does the transport in the kernel) is not counted: these are the
# instructions the two stacks themselves execute.
#
# Prints the per-rank instructions per round trip of each stack and the
# functions that take most of them (callgrind_annotate, the 2N run); the
# callgrind files stay in DIR (default bench/results/profile-lat-DATE).
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
SRCDIR=$(cd "$HERE/.." && pwd -P)
PROG=profile-lat
ITERS=200 SIZE=8 OUT='' IN_GUEST=0 REPORT_ONLY=0
while [ $# -gt 0 ]; do
	case $1 in
	--iters) ITERS=$2; shift ;;
	--size) SIZE=$2; shift ;;
	--out) OUT=$2; shift ;;
	--in-guest) IN_GUEST=1; OUT=$2; shift ;;
	--report) REPORT_ONLY=1; OUT=$2; shift ;; # again, from DIR's callgrind files
	*) echo "usage: $PROG [--iters N] [--size B] [--out DIR]" >&2; exit 2 ;;
	esac
	shift
done

# inside the guest: the four runs
in_guest() {
	export OPENIB_LIB_NO_TMP=1
	# shellcheck source=../tests/integration/lib.sh
	. "$SRCDIR/tests/integration/lib.sh"
	local cfg n args rc=0
	for cfg in openib ucx; do
		case $cfg in
		openib)
			use_our_component
			args=("${MPI_OPENIB_ARGS[@]}")
			;;
		ucx) args=("${MPI_UCX_ARGS[@]}") ;;
		esac
		for n in "$ITERS" $((2 * ITERS)); do
			timeout 1800 "${MPIRUN[@]}" "${args[@]}" \
				valgrind --tool=callgrind --toggle-collect=run_lat \
				--callgrind-out-file="$OUT/cg.$cfg.$n.%q{OMPI_COMM_WORLD_RANK}" \
				"$OUT/openib_bench" -t lat -m "$SIZE" -M "$SIZE" -i "$n" -n "$n" -x 20 --csv \
				>"$OUT/$cfg.$n.csv" 2>"$OUT/$cfg.$n.err"
			echo "$?" >"$OUT/$cfg.$n.status"
			echo "$PROG: $cfg, $n round trips: status $(cat "$OUT/$cfg.$n.status")"
			[ "$(cat "$OUT/$cfg.$n.status")" = 0 ] || rc=1
		done
		unset OMPI_MCA_mca_base_component_path
	done
	return $rc
}

# instructions (Ir) a callgrind file counted
total_ir() { sed -n 's/^summary: \([0-9]*\).*/\1/p' "$1"; }

# incl_ir FILE FUNCTION: the instructions FUNCTION and what it called
# executed (the first entry of that name with a source file, else any)
incl_ir() {
	callgrind_annotate --inclusive=yes --threshold=100 "$1" 2>/dev/null |
		awk -v f="$2" '{
				gsub(",", "", $1)
				if ($1 !~ /^[0-9]+$/) next # callgrind writes "." for none
				for (i = 2; i <= NF; ++i) {
					if ($i !~ (":" f "$")) continue
					if ($i !~ /^\?\?\?:/ && !src) src = $1
					if (!any) any = $1
				}
			}
			END { print (src ? src : any) }'
}

# Per call, inclusive: (2N run - N run) / N for functions called once per
# round trip on rank 1 (it receives, then sends). Unlike the totals above
# these do not count the polling while the peer answers.
PER_CALL_openib="PMPI_Send locked_sendi openib_eager_rdma_sendi locked_prepare_src locked_send openib_qp_post openib_hmem_is_plain_host openib_deliver openib_recv_deliver opal_hash_table_get_value_uint32"
PER_CALL_ucx="PMPI_Send mca_pml_ucx_send ucp_tag_send_nbx"

report() {
	local cfg r a b
	echo
	echo "== user-space instructions per $SIZE B round trip (callgrind, inside openib_bench's timed loop,"
	echo "== ($((2 * ITERS)) - $ITERS round trips) / $ITERS), per rank"
	for cfg in openib ucx; do
		for r in 0 1; do
			a=$(total_ir "$OUT/cg.$cfg.$ITERS.$r" 2>/dev/null)
			b=$(total_ir "$OUT/cg.$cfg.$((2 * ITERS)).$r" 2>/dev/null)
			if [ -n "$a" ] && [ -n "$b" ]; then
				printf '%-7s rank %d: %8d\n' "$cfg" "$r" $(((b - a) / ITERS))
			else
				printf '%-7s rank %d: failed (see %s)\n' "$cfg" "$r" "$OUT/$cfg.*.err"
			fi
		done
	done
	echo
	echo "== per call on rank 1, inclusive (what the function and its callees executed):"
	echo "== (instructions in the $((2 * ITERS))-round-trip run - in the $ITERS one) / $ITERS"
	for cfg in openib ucx; do
		case $cfg in
		openib) fns=$PER_CALL_openib ;;
		*) fns=$PER_CALL_ucx ;;
		esac
		for fn in $fns; do
			a=$(incl_ir "$OUT/cg.$cfg.$ITERS.1" "$fn")
			b=$(incl_ir "$OUT/cg.$cfg.$((2 * ITERS)).1" "$fn")
			if [ -n "$a" ] && [ -n "$b" ]; then
				printf '%-7s %-28s %8d\n' "$cfg" "$fn" $(((b - a) / ITERS))
			fi
		done
	done
	for cfg in openib ucx; do
		echo
		echo "== $cfg, rank 1, $((2 * ITERS)) round trips: the functions with the most instructions (self)"
		callgrind_annotate --threshold=90 "$OUT/cg.$cfg.$((2 * ITERS)).1" 2>/dev/null |
			sed -n '/^Ir/,$p' | head -n 30
	done
}

if [ "$REPORT_ONLY" = 1 ]; then
	report
	exit 0
fi
if [ "$IN_GUEST" = 1 ]; then
	in_guest
	exit $?
fi
: "${OPENIB_BUILDDIR:=$SRCDIR}"
OPENIB_BUILDDIR=$(cd "$OPENIB_BUILDDIR" && pwd -P) || exit 2
export OPENIB_BUILDDIR
[ -n "$OUT" ] || OUT=$OPENIB_BUILDDIR/bench/results/profile-lat-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd -P) || exit 2
mpicc -O2 -g -Wall -o "$OUT/openib_bench" "$HERE"/openib_bench*.c ||
	{ echo "$PROG: cannot build openib_bench" >&2; exit 1; }
echo "$PROG: results in $OUT"
status=0
"$SRCDIR/tests/guest/openib-guest" --timeout 7500 --share "$OPENIB_BUILDDIR" --share "$OUT" \
	-- bash "$HERE/profile-lat.sh" --iters "$ITERS" --size "$SIZE" --in-guest "$OUT" || status=1
report | tee "$OUT/report.txt"
exit $status

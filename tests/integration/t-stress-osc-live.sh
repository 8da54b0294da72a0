#!/bin/bash
# t-openib-osc-dynamic.sh's live-attach job (osc/rdma, elements attached
# while the other ranks use the window) 60 times: half with btl_latency from
# the port, half with btl_openib_latency 10. On one node Open MPI 4.1's
# osc/rdma hands openib handles straight from a peer's region table while a
# concurrent attach moves it; openib must refuse a wrong or torn handle and
# never post it (a remote access error takes the connection down), and
# end the job when osc/rdma retries a refused put or get forever (it once
# hung here). Notes how each job ended; fails on a hang, a failed job
# without openib's refusal, or a lost connection other than to a rank that
# refused an operation and so ends the job (see losses_follow_refusals).
# stress: yes
# timeout: 1500
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
need_cmd mpirun timeout
use_our_component
prog=$OPENIB_TEST_TMP/osc_dynamic
build_mpi_program "$OPENIB_SRCDIR/tests/integration/osc_dynamic.c" "$prog"

declare -A ended
jobs=60
for i in $(seq 1 $jobs); do
	lat=()
	how=port
	if [ $((i % 2)) = 0 ]; then
		lat=(--mca btl_openib_latency 10)
		how=10
	fi
	out=$OPENIB_TEST_TMP/live-$i.out
	timeout -k 10 300 mpirun --allow-run-as-root --oversubscribe --tag-output -np 4 "${MPI_OPENIB_ARGS[@]}" \
		--mca osc rdma --mca btl_openib_verbose 10 "${lat[@]}" "$prog" llist-live chase-live >"$out" 2>&1
	rc=$?
	[ "$rc" != 124 ] && [ "$rc" != 137 ] || { show "$out"; fail "job $i (latency $how): hung"; }
	if grep -Eq "lost its connection|completion error" "$out" &&
		{ [ "$rc" = 0 ] || ! losses_follow_refusals "$out"; }; then
		show "$out" # the whole output: which rank lost whom, and after what
		e=lost
	elif [ "$rc" = 0 ]; then
		assert_grep "^(\\[[0-9]+,[0-9]+\\]<stdout>: ?)?PASS chase-live \\(4 ranks\\)$" "$out" "job $i: chase-live"
		e=passed
	elif grep -Eq "lost its connection|completion error" "$out"; then
		e=exit-loss # peers of the refusing rank lost it as it ended the job
	elif grep -q "The caller then retried the very same" "$out"; then
		e=looped # osc/rdma's retry loop, ended by openib (help text refused-retried)
	elif grep -q "the remote handle changed while it was read" "$out"; then
		e=torn
	elif grep -Eq "the remote handle \\(rkey 0x[0-9a-f]+\\) registers 0x[0-9a-f]+-0x[0-9a-f]+ only" "$out"; then
		e=range
	else
		show "$out"
		fail "job $i (latency $how): exited with status $rc without openib's refusal"
	fi
	ended[$how.$e]=$((${ended[$how.$e]:-0} + 1))
	note "job $i, btl_latency $how ($(grep -Eo 'btl_openib_latency [0-9]+ us (from the port|as set)' "$out" | sort -u | head -n 1)): $e"
done
summary=
for k in $(printf '%s\n' "${!ended[@]}" | sort); do
	summary="$summary $k=${ended[$k]}"
done
note "latency.outcome counts:$summary"
[ -z "${ended[port.lost]}${ended[10.lost]}" ] || fail "a connection was lost in ${ended[port.lost]:-0} job(s) with the port's latency and ${ended[10.lost]:-0} with 10"
ok "$jobs live-attach jobs, no connection lost:$summary"

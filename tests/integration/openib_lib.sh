# shellcheck shell=bash
# Helpers for the tests that run MPI over our openib (source after lib.sh).

# openib_stats_sum LOG FIELD: sum of one statistics field over every rank's
# "openib: <dev>:<port> statistics:" line (printed at btl_openib_verbose 10).
openib_stats_sum() {
	grep -E 'openib: [^ ]+ statistics:' "$1" |
		sed -E "s/.* $2 ([0-9]+).*/\\1/" | awk '{ s += $1 } END { print s + 0 }'
}

# assert_side_channel LOG ud|tcp NRANKS: oob's handshakes went over that
# side channel only: NRANKS ranks report sessions over it and none over
# the other (the "oob side channel:" line at btl_openib_verbose 10).
assert_side_channel() {
	local n
	if [ "$2" = ud ]; then
		n=$(grep -Ec 'oob side channel: [1-9][0-9]* sessions over UD .*\), 0 TCP connections' "$1")
	else
		n=$(grep -Ec 'oob side channel: 0 sessions over UD .*\), [1-9][0-9]* TCP connections' "$1")
	fi
	[ "$n" -ge "$3" ] || fail "only $n ranks made their oob handshakes over $2 alone (want $3)"
	ok "$n ranks made their oob handshakes over $2 alone"
}

# assert_openib_carried LOG NCONN NRANKS CPC: NCONN connections completed,
# all with CPC, and NRANKS ranks sent bytes over openib (not tcp or vader:
# the job ran with openib,self).
assert_openib_carried() {
	local nconn nranks others
	nconn=$(grep -Ec "openib: connected to rank [0-9]+ .* with CPC $4 " "$1")
	[ "$nconn" -ge "$2" ] || fail "only $nconn connections made with CPC $4 (want >= $2)"
	nranks=$(grep -Ec 'openib: [^ ]+ statistics: sends [1-9]' "$1")
	[ "$nranks" -ge "$3" ] || fail "only $nranks ranks report sends over openib (want $3)"
	others=$(echo oob rdma_cm xoob | tr ' ' '\n' | grep -vx "$4" | paste -sd'|')
	if grep -Eq "connected to rank .* with CPC ($others) " "$1"; then
		fail "a connection used another CPC than $4"
	fi
	ok "openib carried the traffic of $nranks ranks; $nconn connections, every one by CPC $4"
}

# losses_follow_refusals FILE: in the output of an `mpirun --tag-output`
# job at btl_openib_verbose >= 1, every connection that failed ("endpoint
# rank M ... failed", tagged with the rank that lost it; the help text
# that says so is printed by mpirun, untagged and folded) went to a rank M
# that had refused an operation (openib's "refused an ..." line), and there
# was at least one. Such a rank ends the job (MPI's fatal error handler);
# while it exits its memory registrations go, and a peer's RDMA to it then
# fails with a remote access error. A failure towards any other rank, or a
# completion error with no endpoint failure, is a real loss.
losses_follow_refusals() {
	local out=$1 refusers lost m
	refusers=$(sed -nE 's/^\[[0-9]+,([0-9]+)\]<std(out|err)>:.*openib: refused an .*/\1/p' "$out" | sort -u)
	lost=$(sed -nE 's/^\[[0-9]+,[0-9]+\]<std(out|err)>:.*openib: endpoint rank ([0-9]+) .* failed: .*/\2/p' "$out" | sort -u)
	[ -n "$lost" ] || return 1
	for m in $lost; do
		printf '%s\n' $refusers | grep -qx "$m" || return 1
	done
	return 0
}

# Helpers for the tests that run MPI over our openib (source after lib.sh).

# openib_stats_sum LOG FIELD: sum of one statistics field over every rank's
# "openib: <dev>:<port> statistics:" line (printed at btl_openib_verbose 10).
openib_stats_sum() {
	grep -E 'openib: [^ ]+ statistics:' "$1" |
		sed -E "s/.* $2 ([0-9]+).*/\\1/" | awk '{ s += $1 } END { print s + 0 }'
}

# assert_openib_carried LOG NRANKS CPC: every rank connected with CPC and
# sent bytes over openib (not tcp or vader: the job ran with openib,self).
assert_openib_carried() {
	local n
	n=$(grep -Ec "openib: connected to rank [0-9]+ .* with CPC $3 " "$1")
	[ "$n" -ge "$2" ] || fail "only $n connections made with CPC $3 (want >= $2)"
	n=$(grep -Ec 'openib: [^ ]+ statistics: sends [1-9]' "$1")
	[ "$n" -ge "$2" ] || fail "only $n ranks report sends over openib (want $2)"
	if grep -Eq "with CPC ($(echo oob rdma_cm xoob | tr ' ' '\n' | grep -vx "$3" | paste -sd'|'))" "$1"; then
		fail "a connection used another CPC than $3"
	fi
	ok "openib carried the traffic of $2 ranks, every connection by CPC $3"
}

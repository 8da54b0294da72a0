#!/bin/bash
# A stranger attacks the oob side channel of a running job (issue 15).
# Four ranks run a verified all-to-all (verified_alltoall.c, every byte
# checked, rounds until we say stop) over our openib with the oob CPC, at
# btl_openib_verbose 10 (refusals are logged at 1, connections at 10).
# Meanwhile openib_hostile (tests/integration/hostile), no part of the job:
#  - sniffs the job's connection requests off the wire while it connects;
#  - finds each rank's side channel (its listening ports, the one that
#    answers a keepalive) and its process name;
#  - against every rank: garbage, truncated and malformed frames, and
#    forged requests (a non-member's name, a member's name without or with
#    a guessed MAC, a wrong destination);
#  - replays the captured requests;
#  - against rank 1: 2,000 idle connections from an address of its own (an
#    alias added here), then a flood of frames on many connections.
# Then: the job exits 0 with every byte checked, exactly the 12 connections
# between its members were made, nobody answered the stranger with a REP (a
# hijacked connection), nothing aborted; and each attack is in the verbose
# log as a refusal with its reason.
# timeout: 900
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
need_cmd mpirun mpicc gcc ss ip timeout
use_our_component
[ "$(id -u)" = 0 ] || fail "needs root (AF_PACKET capture, an alias address): run it in the guest"

T=$OPENIB_TEST_TMP
hostile=$OPENIB_BUILDDIR/tests/integration/hostile/openib_hostile
if [ ! -x "$hostile" ]; then
	make -C "$OPENIB_BUILDDIR" tests/integration/hostile/openib_hostile >"$T/make.out" 2>&1 ||
		{ show "$T/make.out"; fail "cannot build openib_hostile"; }
fi
prog=$T/verified_alltoall
build_mpi_program "$OPENIB_SRCDIR/tests/integration/verified_alltoall.c" "$prog"

nd=$(dev_netdev "$OPENIB_TEST_DEVICE") || fail "no network interface behind $OPENIB_TEST_DEVICE"
myip=$(dev_ipv4 "$OPENIB_TEST_DEVICE") || fail "no IPv4 address on $nd"
[ -n "$myip" ] || fail "no IPv4 address on $nd"
# The stranger's own address: same subnet, never published by the job
# (added after the ranks took their addresses).
alias_ip=${myip%.*}.99
stop=$T/stop
out=$T/job.out
H=$T/hostile.out
: >"$H"

cleanup() {
	touch "$stop"
	ip addr del "$alias_ip/24" dev "$nd" 2>/dev/null
	[ -n "${cap_pid:-}" ] && kill "$cap_pid" 2>/dev/null
	[ -n "${job_pid:-}" ] && kill "$job_pid" 2>/dev/null
	rm -rf "$OPENIB_TEST_TMP"
}
trap cleanup EXIT

# 1. Sniff the job's requests while it connects.
"$hostile" capture --file "$T/captured" --count 6 --secs 240 --stop-file "$T/capture-stop" \
	--timeout 300 >"$T/capture.out" 2>&1 &
cap_pid=$!
for _ in $(seq 100); do grep -q listening "$T/capture.out" && break; sleep 0.1; done
grep -q listening "$T/capture.out" || { show "$T/capture.out"; fail "capture did not start"; }

# 2. The job.
timeout 600 mpirun --allow-run-as-root --oversubscribe -np 4 "${MPI_OPENIB_ARGS[@]}" \
	--mca btl_openib_cpc_include oob --mca btl_openib_verbose 10 \
	"$prog" "$stop" 400 >"$out" 2>&1 &
job_pid=$!
for _ in $(seq 600); do
	[ "$(grep -c '^verified_alltoall: rank [0-9] pid' "$out")" = 4 ] && break
	kill -0 "$job_pid" 2>/dev/null || break
	sleep 0.2
done
[ "$(grep -c '^verified_alltoall: rank [0-9] pid' "$out")" = 4 ] ||
	{ show "$out"; fail "the job did not start its 4 ranks"; }

# 3. Each rank's side channel: its listening TCP port that answers a PING.
declare -A PORT NAME
for r in 0 1 2 3; do
	line=$(grep "^verified_alltoall: rank $r pid" "$out")
	pid=$(sed -E 's/.* pid ([0-9]+) .*/\1/' <<<"$line")
	NAME[$r]=$(sed -E 's/.* name ([0-9]+\.[0-9]+)$/\1/' <<<"$line")
	[[ ${NAME[$r]} =~ ^[0-9]+\.[0-9]+$ ]] || fail "rank $r: no process name in '$line'"
	for p in $(ss -ltnpH | grep "pid=$pid," | awk '{ n = split($4, a, ":"); print a[n] }'); do
		if "$hostile" probe --target "$myip:$p" --timeout 20 >>"$H" 2>&1; then
			PORT[$r]=$p
			break
		fi
	done
	[ -n "${PORT[$r]:-}" ] || { ss -ltnp; show "$H"; fail "rank $r (pid $pid): no side channel found"; }
	note "rank $r: name ${NAME[$r]}, side channel $myip:${PORT[$r]}"
done
ip addr add "$alias_ip/24" dev "$nd" || fail "cannot add the stranger's address $alias_ip"

# 4. The attacks.
for r in 0 1 2 3; do
	m=$(((r + 1) % 4))
	common=(--target "$myip:${PORT[$r]}" --name "${NAME[$r]}" --member "${NAME[$m]}" --timeout 240)
	"$hostile" garbage "${common[@]}" --count 20 --seed $((r + 1)) >>"$H" 2>&1
	"$hostile" forged "${common[@]}" --count 2 --seed $((r + 11)) >>"$H" 2>&1
done
# the capture has what it wanted by now (the job connected in its first round)
touch "$T/capture-stop"
kill "$cap_pid" 2>/dev/null
wait "$cap_pid"
show "$T/capture.out"
[ -s "$T/captured" ] || fail "no request of the job was captured off the wire"
"$hostile" replay --file "$T/captured" --timeout 240 >>"$H" 2>&1
common=(--target "$myip:${PORT[1]}" --name "${NAME[1]}" --member "${NAME[2]}" --timeout 240)
"$hostile" idle "${common[@]}" --count 2000 --hold 20 --bind "$alias_ip" >>"$H" 2>&1
"$hostile" flood "${common[@]}" --conns 64 --frames 200 --bind "$alias_ip" >>"$H" 2>&1
show "$H"

# 5. The job finishes.
touch "$stop"
wait "$job_pid"
rc=$?
job_pid=
show "$out"
[ "$rc" = 0 ] || fail "the job exited with status $rc under attack"
assert_grep '^verified_alltoall: PASSED rounds=[0-9]+ bytes=[1-9][0-9]* errors=0$' "$out" \
	"every byte of the all-to-all checked"
rounds=$(sed -nE 's/^verified_alltoall: PASSED rounds=([0-9]+) .*/\1/p' "$out")
[ "$rounds" -ge 12 ] || fail "only $rounds rounds: the all-to-all did not run through the attacks"
ok "the all-to-all ran $rounds rounds through the attacks, every byte right"
if grep -Eiq 'MPI_ABORT|abort|Segmentation|core dumped|SIGSEGV' "$out"; then
	fail "something aborted"
fi

# Nobody connected to the stranger: the 12 connections are between members.
nconn=$(grep -c 'openib: connected to ' "$out")
nmember=$(grep -Ec 'openib: connected to rank [0-3] ' "$out")
[ "$nconn" = 12 ] && [ "$nmember" = 12 ] ||
	fail "$nconn connections made, $nmember of them to ranks 0-3 (want 12 and 12)"
assert_openib_carried "$out" 12 4 oob
for mode in garbage forged replay idle flood; do
	assert_grep "^hostile: $mode: sent=" "$H" "the $mode attack ran"
done
if grep -E '^hostile: [a-z]+: sent=' "$H" | grep -Eqv ' rep=0 '; then
	fail "a rank answered the stranger with a REP (a connection handed over)"
fi
conns=$(sed -nE 's/^hostile: idle: .* conns=([0-9]+) .*/\1/p' "$H")
ok "no REP to the stranger; the idle attack got $conns of 2000 connections"

# 6. Each attack is in the verbose log, as a refusal with its reason (the
# channel and the CPCs log these at level 1; the reason words may be
# written with a space or a hyphen).
missing=()
refusal() { # WHAT ERE: a "refused" line naming the reason
	if grep -Ei 'refus' "$out" | grep -Eiq -- "$2"; then
		ok "refusal logged: $1"
	else
		missing+=("$1")
	fi
}
refusal "garbage (malformed)" 'malformed'
refusal "forged: a non-member's name (not-member)" 'not[- ](a[- ])?(job[- ])?member'
refusal "forged: a guessed or absent MAC (bad-mac)" 'bad[- ]mac'
refusal "forged: a wrong destination (wrong-dst)" 'wrong[- ](dst|destination)'
refusal "replay" 'replay'
refusal "idle sessions (idle)" 'idle'
refusal "too many sessions (per-source-cap / session-cap)" 'per[- ]source|session[- ]cap|too many'
# Strangers get no answer at all (no REJ either): the session is closed.
if grep -E '^hostile: (forged|replay|flood): sent=' "$H" | grep -Eqv ' rej=0 other=0 '; then
	missing+=("no answer to strangers (a REJ or other frame came back)")
fi
[ ${#missing[@]} = 0 ] || fail "attacks without a logged refusal and reason: ${missing[*]}"
ok "every attack was refused with its reason in the verbose log"

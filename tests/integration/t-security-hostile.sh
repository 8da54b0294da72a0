#!/bin/bash
# A stranger attacks the oob side channel of a running job (issue 15).
# Four ranks run a verified all-to-all (verified_alltoall.c, every byte
# checked, rounds until we say stop) over our openib with the oob CPC, at
# btl_openib_verbose 10 (refusals are logged at 1, connections at 10),
# its handshakes over the TCP side channel (btl_openib_oob_side_channel
# tcp; t-security-hostile-ud.sh attacks the UD one).
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
. "$OPENIB_SRCDIR/tests/integration/hostile_lib.sh"
need_cmd mpirun mpicc gcc ss ip timeout
use_our_component
hostile_setup openib_hostile 99

# 1. Sniff the job's requests while it connects.
hostile_capture_start

# 2. The job.
hostile_job_start --mca btl_openib_oob_side_channel tcp

# 3. Each rank's side channel: its listening TCP port that answers a PING.
declare -A PORT
for r in 0 1 2 3; do
	for p in $(ss -ltnpH | grep "pid=${PID[$r]}," | awk '{ n = split($4, a, ":"); print a[n] }'); do
		if "$HOSTILE" probe --target "$MY_IP:$p" --timeout 20 >>"$H" 2>&1; then
			PORT[$r]=$p
			break
		fi
	done
	[ -n "${PORT[$r]:-}" ] || { ss -ltnp; show "$H"; fail "rank $r (pid ${PID[$r]}): no side channel found"; }
	note "rank $r: name ${NAME[$r]}, side channel $MY_IP:${PORT[$r]}"
done
hostile_add_alias

# 4. The attacks.
for r in 0 1 2 3; do
	m=$(((r + 1) % 4))
	common=(--target "$MY_IP:${PORT[$r]}" --name "${NAME[$r]}" --member "${NAME[$m]}" --timeout 240)
	"$HOSTILE" garbage "${common[@]}" --count 20 --seed $((r + 1)) >>"$H" 2>&1
	"$HOSTILE" forged "${common[@]}" --count 2 --seed $((r + 11)) >>"$H" 2>&1
done
# the capture has what it wanted by now (the job connected in its first round)
hostile_capture_stop
"$HOSTILE" replay --file "$T/captured" --timeout 240 >>"$H" 2>&1
common=(--target "$MY_IP:${PORT[1]}" --name "${NAME[1]}" --member "${NAME[2]}" --timeout 240)
"$HOSTILE" idle "${common[@]}" --count 2000 --hold 20 --bind "$ALIAS_IP" >>"$H" 2>&1
"$HOSTILE" flood "${common[@]}" --conns 64 --frames 200 --bind "$ALIAS_IP" >>"$H" 2>&1
show "$H"

# 5. The job finishes, unharmed.
hostile_job_finish
assert_side_channel "$JOB_OUT" tcp 4
for mode in garbage forged replay idle flood; do
	assert_grep "^hostile: $mode: sent=" "$H" "the $mode attack ran"
done
if grep -E '^hostile: [a-z]+: sent=' "$H" | grep -Eqv ' rep=0 '; then
	fail "a rank answered the stranger with a REP (a connection handed over)"
fi
conns=$(sed -nE 's/^hostile: idle: .* conns=([0-9]+) .*/\1/p' "$H")
ok "no REP to the stranger; the idle attack got $conns of 2000 connections"

# 6. Each attack is in the verbose log, as a refusal with its reason.
refusal "garbage (malformed)" 'malformed'
refusal "forged: a non-member's name (not-member)" 'not[- ](a[- ])?(job[- ])?member'
refusal "forged: a guessed or absent MAC (bad-mac)" 'bad[- ]mac'
refusal "forged: a wrong destination (wrong-dst)" 'wrong[- ](dst|destination)'
refusal "replay" 'replay'
refusal "idle sessions (idle)" 'idle'
refusal "too many sessions (per-source-cap / session-cap)" 'per[- ]source|session[- ]cap|too many'
# Strangers get no answer at all (no REJ either): the session is closed.
if grep -E '^hostile: (forged|replay|flood): sent=' "$H" | grep -Eqv ' rej=0 other=0 '; then
	MISSING+=("no answer to strangers (a REJ or other frame came back)")
fi
[ ${#MISSING[@]} = 0 ] || fail "attacks without a logged refusal and reason: ${MISSING[*]}"
ok "every attack was refused with its reason in the verbose log"

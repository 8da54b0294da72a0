#!/bin/bash
# A stranger attacks the oob CPC's UD side channel of a running job, across
# the two-node bed. Four ranks, two on each node, run a verified all-to-all
# (verified_alltoall.c, every byte checked, rounds until we say stop) over
# our openib with the oob CPC and its default side channel (UD), at
# btl_openib_verbose 10 (refusals are logged at 1, the UD QP at 5,
# connections at 10). Meanwhile openib_hostile_ud (tests/integration/
# hostile), no part of the job, on this node with a UD QP of its own on
# rxe0 and a GID of its own (an alias address added here):
#  - sniffs the job's OPEN frames off the wire while it connects (those
#    that cross from the other node: rxe delivers a node's own traffic
#    without the wire);
#  - against every rank's UD QP, here and on the other node: random
#    datagrams, sessions opened with frames oob's decoder refuses, and
#    forged requests (from another job, from a rank the job does not have,
#    a member's name without or with a guessed MAC, a wrong destination, an
#    RTU nobody asked for);
#  - replays the captured OPENs;
#  - against rank 1: 100 strangers' requests, then 100 sessions that only
#    send keepalives (more than btl_openib_oob_unverified_per_source allows
#    from one source: the oldest go at once, the others once idle).
# Then: the job exits 0 with every byte checked, exactly the 12 connections
# between its members were made, every one by oob over UD, the stranger
# got no CPC answer at all (no REP, no REJ), nothing aborted; and each
# attack is in the verbose log as a refusal with its reason.
# nodes: 2
# timeout: 900
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
. "$OPENIB_SRCDIR/tests/integration/hostile_lib.sh"
need_cmd mpirun mpicc gcc ip timeout
need_nodes 2
use_our_component
hostile_setup openib_hostile_ud 98
# each node's address on the RDMA device's interface (its RoCE v2 GID)
declare -A NODE_IP
for n in "${BED_NODES[@]}"; do
	NODE_IP[$n]=$(on_node "$n" "$(declare -f dev_netdev dev_ipv4); dev_ipv4 $OPENIB_TEST_DEVICE")
	[ -n "${NODE_IP[$n]}" ] || fail "$n: no IPv4 address behind $OPENIB_TEST_DEVICE"
done

# 1. Sniff the job's OPENs while it connects.
hostile_capture_start --count 2

# 2. The job, two ranks on each node, its handshakes over UD (the default).
# Two ranks share each node's one emulated CPU with rxe and the stranger:
# they yield when idle, or spinning ranks starve rxe (t-nodes-openib-scale.sh).
hostile_job_start --host "${BED_NODES[0]}:2,${BED_NODES[1]}:2" --mca mpi_yield_when_idle 1

# 3. Each rank's UD side channel, from its verbose line (level 5).
declare -A QPN
for r in 0 1 2 3; do
	QPN[$r]=$(sed -nE "s/^\\[${HOST[$r]}:0*${PID[$r]}\\] openib: oob UD side channel on [^ ]+ QP (0x[0-9a-f]+)\$/\\1/p" "$JOB_OUT" | head -1)
	[ -n "${QPN[$r]}" ] || { show "$JOB_OUT"; fail "rank $r (${HOST[$r]} pid ${PID[$r]}): no UD side channel line"; }
	note "rank $r on ${HOST[$r]}: name ${NAME[$r]}, UD side channel QP ${QPN[$r]}"
done
hostile_add_alias
sleep 1 # rxe's GID table follows the address

# 4. The attacks, from the stranger's own QP and GID.
me=(--src "$ALIAS_IP" --dev "$OPENIB_TEST_DEVICE" --timeout 240)
for r in 0 1 2 3; do
	m=$(((r + 1) % 4))
	common=("${me[@]}" --target "${NODE_IP[${HOST[$r]}]}" --qpn "${QPN[$r]}" --name "${NAME[$r]}"
		--member "${NAME[$m]}")
	"$HOSTILE" garbage "${common[@]}" --count 12 --seed $((r + 1)) >>"$H" 2>&1
	"$HOSTILE" forged "${common[@]}" --count 2 --seed $((r + 11)) >>"$H" 2>&1
done
hostile_capture_stop
"$HOSTILE" replay "${me[@]}" --file "$T/captured" >>"$H" 2>&1
"$HOSTILE" flood "${me[@]}" --target "${NODE_IP[${HOST[1]}]}" --qpn "${QPN[1]}" --name "${NAME[1]}" \
	--member "${NAME[2]}" --count 100 >>"$H" 2>&1
show "$H"
sleep 12 # past btl_openib_oob_unverified_idle: the silent sessions go

# 5. The job finishes, unharmed, every handshake over UD.
hostile_job_finish
assert_side_channel "$JOB_OUT" ud 4
for mode in garbage forged replay flood; do
	assert_grep "^hostile: $mode: sent=" "$H" "the $mode attack ran"
done
# Strangers get no CPC answer at all: no REP (a connection handed over),
# no REJ; only the channel's acknowledgements and closes.
if grep -E '^hostile: [a-z]+: sent=' "$H" | grep -Eqv ' rep=0 rej=0 other=0 '; then
	fail "a rank answered the stranger (a REP, a REJ or another frame)"
fi
ok "no answer to the stranger beyond acknowledgements and closes"

# 6. Each attack is in the verbose log, as a refusal with its reason.
refusal "frames oob cannot decode (malformed)" 'malformed'
refusal "a rank the job does not have (not-member)" 'not[- ]member'
refusal "a guessed or absent MAC (bad-mac)" 'bad[- ]mac'
refusal "a wrong destination (wrong-dst)" 'wrong[- ]dst'
refusal "replay" 'replay'
refusal "silent sessions over UD (idle)" 'over UD: idle'
refusal "too many sessions from one source over UD (per-source-cap)" 'over UD: per-source-cap'
assert_grep "refused .* from [0-9a-f:.]+ \\(LID [0-9]+\\) UD QP 0x" "$JOB_OUT" "a refusal names the UD source"
[ ${#MISSING[@]} = 0 ] || fail "attacks without a logged refusal and reason: ${MISSING[*]}"
ok "every attack was refused with its reason in the verbose log"

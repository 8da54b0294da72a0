# shellcheck shell=bash
# What the two security tests share (source after lib.sh and
# openib_lib.sh): a stranger (tests/integration/hostile) attacks the oob
# side channel of a running 4-rank job, over TCP (t-security-hostile.sh)
# or UD (t-security-hostile-ud.sh).

# hostile_setup PROGRAM LAST-OCTET: builds the stranger PROGRAM and the
# job's program; sets T, HOSTILE (its path), NET_DEV, MY_IP, ALIAS_IP (the
# stranger's own address in our subnet, never published by the job: added
# by hostile_add_alias), JOB_OUT, H (the stranger's output); cleans up at
# exit.
hostile_setup() {
	[ "$(id -u)" = 0 ] || fail "needs root (AF_PACKET capture, an alias address): run it in the guest"
	T=$OPENIB_TEST_TMP
	HOSTILE=$OPENIB_BUILDDIR/tests/integration/hostile/$1
	if [ ! -x "$HOSTILE" ]; then
		make -C "$OPENIB_BUILDDIR" "tests/integration/hostile/$1" >"$T/make.out" 2>&1 ||
			{ show "$T/make.out"; fail "cannot build $1"; }
	fi
	JOB_PROG=$T/verified_alltoall
	build_mpi_program "$OPENIB_SRCDIR/tests/integration/verified_alltoall.c" "$JOB_PROG"
	NET_DEV=$(dev_netdev "$OPENIB_TEST_DEVICE") || fail "no network interface behind $OPENIB_TEST_DEVICE"
	MY_IP=$(dev_ipv4 "$OPENIB_TEST_DEVICE") || fail "no IPv4 address on $NET_DEV"
	[ -n "$MY_IP" ] || fail "no IPv4 address on $NET_DEV"
	ALIAS_IP=${MY_IP%.*}.$2
	JOB_OUT=$T/job.out
	H=$T/hostile.out
	: >"$H"
	trap hostile_cleanup EXIT
}

hostile_cleanup() {
	touch "$T/stop"
	ip addr del "$ALIAS_IP/24" dev "$NET_DEV" 2>/dev/null
	[ -n "${CAP_PID:-}" ] && kill "$CAP_PID" 2>/dev/null
	[ -n "${JOB_PID:-}" ] && kill "$JOB_PID" 2>/dev/null
	rm -rf "$OPENIB_TEST_TMP"
}

# hostile_capture_start ARGS...: the stranger sniffs the job's requests
# (HOSTILE capture ARGS) into $T/captured until hostile_capture_stop.
hostile_capture_start() {
	"$HOSTILE" capture --file "$T/captured" --count 6 --secs 240 --stop-file "$T/capture-stop" \
		--timeout 300 "$@" >"$T/capture.out" 2>&1 &
	CAP_PID=$!
	for _ in $(seq 100); do grep -q listening "$T/capture.out" && break; sleep 0.1; done
	grep -q listening "$T/capture.out" || { show "$T/capture.out"; fail "capture did not start"; }
}

hostile_capture_stop() {
	touch "$T/capture-stop"
	kill "$CAP_PID" 2>/dev/null
	wait "$CAP_PID"
	CAP_PID=
	show "$T/capture.out"
	[ -s "$T/captured" ] || fail "no request of the job was captured off the wire"
}

# hostile_job_start MPIRUN-ARGS...: the verified all-to-all on 4 ranks with
# the oob CPC at btl_openib_verbose 10, rounds until hostile_job_finish;
# sets PID[r], NAME[r] (JOBID.VPID) and HOST[r] of each rank.
hostile_job_start() {
	timeout 600 mpirun --allow-run-as-root --oversubscribe -np 4 "${MPI_OPENIB_ARGS[@]}" \
		--mca btl_openib_cpc_include oob --mca btl_openib_verbose 10 "$@" \
		"$JOB_PROG" "$T/stop" 400 >"$JOB_OUT" 2>&1 &
	JOB_PID=$!
	for _ in $(seq 600); do
		[ "$(grep -c '^verified_alltoall: rank [0-9] pid' "$JOB_OUT")" = 4 ] && break
		kill -0 "$JOB_PID" 2>/dev/null || break
		sleep 0.2
	done
	[ "$(grep -c '^verified_alltoall: rank [0-9] pid' "$JOB_OUT")" = 4 ] ||
		{ show "$JOB_OUT"; fail "the job did not start its 4 ranks"; }
	declare -g -A PID NAME HOST
	local r line
	for r in 0 1 2 3; do
		line=$(grep "^verified_alltoall: rank $r pid" "$JOB_OUT")
		# shellcheck disable=SC2034 # read by the tests
		PID[$r]=$(sed -E 's/.* pid ([0-9]+) .*/\1/' <<<"$line")
		# shellcheck disable=SC2034 # read by the tests
		HOST[$r]=$(sed -E 's/.* host ([^ ]+)$/\1/' <<<"$line")
		NAME[$r]=$(sed -E 's/.* name ([0-9]+\.[0-9]+) host .*/\1/' <<<"$line")
		[[ ${NAME[$r]} =~ ^[0-9]+\.[0-9]+$ ]] || fail "rank $r: no process name in '$line'"
	done
}

hostile_add_alias() {
	ip addr add "$ALIAS_IP/24" dev "$NET_DEV" || fail "cannot add the stranger's address $ALIAS_IP"
}

# hostile_job_finish: stop the job; it exits 0 with every byte checked
# through the attacks, nothing aborted, and exactly the 12 connections
# between its members were made, by oob.
hostile_job_finish() {
	local rc rounds nconn nmember
	touch "$T/stop"
	wait "$JOB_PID"
	rc=$?
	JOB_PID=
	show "$JOB_OUT"
	[ "$rc" = 0 ] || fail "the job exited with status $rc under attack"
	assert_grep '^verified_alltoall: PASSED rounds=[0-9]+ bytes=[1-9][0-9]* errors=0$' "$JOB_OUT" \
		"every byte of the all-to-all checked"
	rounds=$(sed -nE 's/^verified_alltoall: PASSED rounds=([0-9]+) .*/\1/p' "$JOB_OUT")
	[ "$rounds" -ge 12 ] || fail "only $rounds rounds: the all-to-all did not run through the attacks"
	ok "the all-to-all ran $rounds rounds through the attacks, every byte right"
	if grep -Eiq 'MPI_ABORT|abort|Segmentation|core dumped|SIGSEGV' "$JOB_OUT"; then
		fail "something aborted"
	fi
	# nobody connected to the stranger: the 12 connections are between members
	nconn=$(grep -c 'openib: connected to ' "$JOB_OUT")
	nmember=$(grep -Ec 'openib: connected to rank [0-3] ' "$JOB_OUT")
	[ "$nconn" = 12 ] && [ "$nmember" = 12 ] ||
		fail "$nconn connections made, $nmember of them to ranks 0-3 (want 12 and 12)"
	assert_openib_carried "$JOB_OUT" 12 4 oob
}

# refusal WHAT ERE: a "refused" line of the job naming the reason (the
# channel and the CPCs log these at level 1; the reason words may be
# written with a space or a hyphen); else WHAT joins MISSING.
MISSING=()
refusal() {
	if grep -Ei 'refus' "$JOB_OUT" | grep -Eiq -- "$2"; then
		ok "refusal logged: $1"
	else
		MISSING+=("$1")
	fi
}

#!/bin/bash
# iWARP connections over the host's TCP (siw, no iWARP port mapper): the
# rdma_cm picks local ports in its own port space, and siw then binds real
# TCP sockets to them, which fails when the host's TCP holds the port. Here
# the host's TCP holds one port in three of a narrowed ephemeral range (a
# listener on each), so most jobs meet it: a listener whose port is taken
# and connections (the handshake's and each QP's) whose rdma_connect fails
# with "Address already in use" must each try another port (so must those
# that meet a TIME_WAIT socket of an earlier connection, many of them in a
# range this narrow: CI once saw one QP meet 8 taken ports in a row), and
# the 4-rank storm and all-to-all (every byte checked by the program) pass
# on siw with all 12 connections made by rdma_cm. A job that happened to
# meet no taken port proves nothing and is run again (3 times at most; one
# in three ports taken, that is ~1e-4 a job).
# devices: rxe,siw
# timeout: 900
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
. "$OPENIB_SRCDIR/tests/integration/cpc_lib.sh"
need_cmd mpirun python3
use_our_component
. "$OPENIB_SRCDIR/tests/integration/siw_lib.sh"
prog=$OPENIB_TEST_TMP/mpi_patterns
build_mpi_program "$OPENIB_SRCDIR/tests/integration/mpi_patterns.c" "$prog"

range=/proc/sys/net/ipv4/ip_local_port_range
saved=$(cat "$range")
lo=40000 hi=40239
blocker=
cleanup() {
	[ -n "$blocker" ] && kill "$blocker" 2>/dev/null
	echo "$saved" >"$range"
}
trap cleanup EXIT
echo "$lo $hi" >"$range" || fail "cannot narrow $range"
ready=$OPENIB_TEST_TMP/blocker.ready
python3 - "$lo" "$hi" "$ready" <<'PY' &
import socket, sys, time
lo, hi, ready = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
held, busy = [], 0
for port in range(lo, hi + 1, 3):
    # SO_REUSEADDR: a socket in TIME_WAIT on the port (an earlier test's
    # connection) must not stop the listener; a listening one still
    # blocks the binds of siw, which sets it too. A port an active socket
    # holds is left to it (counted; it may block siw's binds or not).
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("0.0.0.0", port))
        s.listen(1)
        held.append(s)
    except OSError:
        s.close()
        busy += 1
open(ready, "w").write("%d listening, %d in use already\n" % (len(held), busy))
time.sleep(3600)
PY
blocker=$!
for _ in $(seq 50); do [ -s "$ready" ] && break; sleep 0.2; done
[ -s "$ready" ] || fail "the port blocker did not start"
grep -q '^[1-9][0-9]* listening' "$ready" || fail "the port blocker holds no port: $(cat "$ready")"
note "of every third port of $lo-$hi, the host's TCP holds: $(cat "$ready")"

# One job, every byte and all 12 connections checked; sets qp, hs and ls.
one_job() {
	out=$OPENIB_TEST_TMP/ports-$1.out
	timeout 700 mpirun --allow-run-as-root --oversubscribe -np 4 "${MPI_OPENIB_ARGS[@]}" "${SIW_ARGS[@]}" \
		--mca btl_openib_verbose 100 "$prog" storm alltoall >"$out" 2>&1
	rc=$?
	[ "$rc" = 0 ] || { show "$out"; fail "mpirun (4 ranks on $siw, one port in three taken) exited with status $rc"; }
	assert_grep '^PASS storm \(4 ranks\)' "$out" "storm"
	assert_grep '^PASS alltoall \(4 ranks\)' "$out" "all-to-all"
	assert_openib_carried "$out" 12 4 rdma_cm
	moved="local port [0-9]+ is in use in the host's TCP \\((Address already in use|Cannot assign requested address)\\); connecting from another"
	qp=$(count_lines "QP [0-9]: $moved" "$out")
	hs=$(count_lines "handshake: $moved" "$out")
	ls=$(count_lines "rdma_cm: listener port [0-9]+ on [0-9.]+ is in use in the host's TCP; trying another" "$out")
	tw=$(python3 - "$lo" "$hi" <<'PY'
import sys
lo, hi = int(sys.argv[1]), int(sys.argv[2])
rows = [l.split() for l in open("/proc/net/tcp").readlines()[1:]]
print(sum(1 for r in rows if r[3] == "06" and lo <= int(r[1].split(":")[1], 16) <= hi))
PY
)
	most=$(grep -oE "connecting from another \(try [0-9]+ of" "$out" | grep -oE "[0-9]+" | sort -n | tail -1)
	note "job $1: $tw socket(s) of the range in TIME_WAIT after the job; one connection needed ${most:-1} tries at most"
	note "job $1: $qp QP connection(s), $hs handshake(s) and $ls listener(s) met a taken port"
}

for try in 1 2 3; do
	one_job "$try"
	[ $((qp + hs + ls)) -gt 0 ] && break
	[ "$try" = 3 ] && fail "3 jobs met no taken port: the test proves nothing"
done
# t-stress-siw-ports.sh: more jobs in the same range, each must pass.
for extra in $(seq 1 "${ports_extra_jobs:-0}"); do
	one_job "extra-$extra"
done
ok "4 ranks on $siw with one local port in three taken by the host's TCP: $qp QP connection(s), $hs handshake(s) and $ls listener(s) moved to another port, storm and all-to-all verified, 12 connections by rdma_cm"

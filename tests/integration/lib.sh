# shellcheck shell=bash disable=SC2034,SC2054 # globals are read by the sourcing scripts; mpirun option values keep their commas
# Shared helpers for the openib integration tests (tests/integration/t-*.sh)
# and the benchmark driver (bench/run-bench.sh).  Source it:
#   . "$OPENIB_SRCDIR/tests/integration/lib.sh"
#
# Environment (set by run-all; defaults for running a test by hand):
#   OPENIB_SRCDIR        repository root
#   OPENIB_BUILDDIR      build directory; our component is
#                        $OPENIB_BUILDDIR/.libs/mca_btl_openib.so
#   OPENIB_TEST_DEVICE   verbs device to test (default rxe0)
#   OPENIB_TEST_SIW_DEVICE  Soft-iWARP device, in guests of tests with a
#                        "# devices: siw" or "rxe,siw" header (default siw0)
#   OPENIB_PINGPONG      prebuilt pingpong binary (else compiled on the fly)
#   OPENIB_TEST_TMP      scratch directory of this test (default: mktemp)

: "${OPENIB_SRCDIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)}"
: "${OPENIB_BUILDDIR:=$OPENIB_SRCDIR}"
: "${OPENIB_TEST_DEVICE:=rxe0}"
: "${OPENIB_TEST_SIW_DEVICE:=siw0}"
export OPENIB_SRCDIR OPENIB_BUILDDIR OPENIB_TEST_DEVICE OPENIB_TEST_SIW_DEVICE

OMPI_SYSTEM_COMPONENT_DIR=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3

if [ -z "${OPENIB_TEST_TMP:-}" ] && [ "${OPENIB_LIB_NO_TMP:-0}" != 1 ]; then
	OPENIB_TEST_TMP=$(mktemp -d "${TMPDIR:-/tmp}/openib-test.XXXXXX")
	# shellcheck disable=SC2064
	trap "rm -rf '$OPENIB_TEST_TMP'" EXIT
fi
export OPENIB_TEST_TMP

# --- reporting -------------------------------------------------------------
note() { echo "# $*"; }
ok() { echo "ok: $*"; }
fail() {
	echo "FAIL: $*" >&2
	report_cores
	exit 1
}

# --- crash reports ---------------------------------------------------------
# In the guest (a throw-away VM, so its core_pattern is ours to set) a
# process killed by a signal leaves a core here, and fail() prints each
# one's backtrace: a crash seen once, in CI say, can then be read from the
# log instead of having to be reproduced (Open MPI's own handler prints no
# frames of a component it has loaded). Cores are capped at 256 MiB, as the
# guest's /tmp is in its memory, and removed once reported.
OPENIB_CORE_DIR=/tmp/openib-cores
if [ -n "${OPENIB_GUEST_DEVICES:-}" ] && [ -w /proc/sys/kernel/core_pattern ]; then
	mkdir -p "$OPENIB_CORE_DIR" && rm -f "$OPENIB_CORE_DIR"/core.*
	# %E: the executable's path, '/' written as '!'
	echo "$OPENIB_CORE_DIR/core.%E.%p" >/proc/sys/kernel/core_pattern 2>/dev/null &&
		ulimit -c 262144 2>/dev/null
fi

# report_cores: the backtrace of every thread of each core left since this
# test began, on stderr; the cores are removed.
report_cores() {
	local c exe
	for c in "$OPENIB_CORE_DIR"/core.*; do
		[ -e "$c" ] || continue
		exe=${c##*/core.}
		exe=${exe%.*}
		exe=${exe//!//}
		echo "---- core of $exe (${c##*.}) ----" >&2
		if command -v gdb >/dev/null 2>&1 && [ -x "$exe" ]; then
			timeout 120 gdb -batch -nx -ex 'thread apply all bt' "$exe" "$c" 2>&1 |
				grep -v -E '^\[(New LWP|Thread debugging|Using host libthread)' | tail -n 150 >&2
		else
			echo "(no gdb, or $exe is gone: core not read)" >&2
		fi
		rm -f "$c"
	done
}

need_cmd() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || fail "command not found: $c"
	done
}

# assert_grep REGEX FILE WHAT: FILE must contain a line matching the ERE.
assert_grep() {
	grep -Eq -- "$1" "$2" || {
		echo "---- $2 ----" >&2
		tail -n 60 "$2" >&2
		echo "----" >&2
		fail "$3: no line matching /$1/ in $(basename "$2")"
	}
}

# show FILE: print a command's captured output into the test log.
show() {
	echo "---- $(basename "$1") ----"
	cat "$1"
	echo "----"
}

# is_number STRING: a positive decimal number
is_positive_number() { [[ $1 =~ ^[0-9]*\.?[0-9]+$ ]] && awk -v x="$1" 'BEGIN { exit !(x > 0) }'; }

# --- the device --------------------------------------------------------------
# dev_netdev DEV: the network interface behind GID index 1 of port 1 (rxe/RoCE),
# or for iWARP (siw), whose GIDs have no interface, the one rdma link names
dev_netdev() {
	local d=/sys/class/infiniband/$1/ports/1/gid_attrs/ndevs nd
	cat "$d/1" 2>/dev/null || cat "$d/0" 2>/dev/null && return 0
	nd=$(rdma link show "$1/1" 2>/dev/null | sed -nE 's/.* netdev ([^ ]+).*/\1/p')
	[ -n "$nd" ] && echo "$nd"
}

# assert_rping_verified CLI SRV CRC SRC COUNT WHERE: an rping client (output
# CLI, exit status CRC) and server (SRV, SRC) both ended well, the client
# verified COUNT pings (-V -v) and the server saw them; WHERE (e.g. "over
# rxe0") goes into the messages.
assert_rping_verified() {
	local cli=$1 srv=$2 crc=$3 src=$4 count=$5 where=$6 n ns
	show "$cli"
	show "$srv"
	[ "$crc" = 0 ] || fail "rping client $where exited with status $crc"
	[ "$src" = 0 ] || fail "rping server $where exited with status $src"
	n=$(grep -c '^ping data: rdma-ping-[0-9]*: ' "$cli")
	[ "$n" = "$count" ] || fail "client printed $n verified pings, expected $count"
	ns=$(grep -c '^server ping data: rdma-ping-[0-9]*: ' "$srv")
	[ "$ns" = "$count" ] || fail "server printed $ns pings, expected $count"
	if grep -Eqi 'data mismatch|error|fail' "$cli"; then fail "rping client reported an error"; fi
}

# help_lost LOG: Open MPI 4.1.4's relay of help texts to mpirun lost one in
# the run that wrote LOG ("ORTE_ERROR_LOG ... show_help.c"); a test that
# needs the text runs the job again (3 times at most).
help_lost() { grep -q 'ORTE_ERROR_LOG: .*show_help.c' "$1"; }

# relay_crashed LOG: in the run that wrote LOG, mpirun itself (the HNP,
# "[host:PID] [[J,0],0]") logged that unpack error in show_help.c and then
# died of a signal. That is Open MPI 4.1's help relay failing in mpirun
# (seen with the old openib's help too: open-mpi/ompi#8356), not a crash of
# a rank: mpirun never loads a BTL. A rank's crash reads "mpirun noticed
# that process rank N ... exited on signal" instead.
relay_crashed() {
	local hnp
	hnp=$(grep -oE '^\[[^]]+\] \[\[[0-9]+,0\],0\] ORTE_ERROR_LOG: .*show_help\.c' "$1" | head -1 | cut -d' ' -f1)
	[ -n "$hnp" ] && grep -qF "$hnp Signal: " "$1" && ! grep -q 'mpirun noticed that process rank' "$1"
}

# need_device DEV HEADER: fail unless verbs device DEV exists, naming the
# test header that asks run-all for it.
need_device() {
	[ -e "/sys/class/infiniband/$1" ] ||
		fail "no verbs device $1 (this test needs a '# devices: $2' header; run it with tests/integration/run-all)"
}

# dev_ipv4 DEV: the IPv4 address of that interface
dev_ipv4() {
	local nd
	nd=$(dev_netdev "$1") || return 1
	ip -4 -o addr show dev "$nd" | awk '{ sub(/\/.*/, "", $4); print $4; exit }'
}

# dev_counter DEV NAME: a port 1 hardware counter (rxe: sent_pkts, rcvd_pkts, ...)
dev_counter() {
	local f=/sys/class/infiniband/$1/ports/1/hw_counters/$2
	[ -r "$f" ] || f=/sys/class/infiniband/$1/ports/1/counters/$2
	cat "$f" 2>/dev/null || echo 0
}

# wait_tcp_listen PORT SECONDS: wait until something listens on TCP PORT.
wait_tcp_listen() {
	local hex i
	hex=$(printf '%04X' "$1")
	for ((i = 0; i < $2 * 10; i++)); do
		# state 0A = LISTEN
		if awk -v p=":$hex" '$2 ~ p"$" && $4 == "0A" { f = 1 } END { exit !f }' \
			/proc/net/tcp /proc/net/tcp6 2>/dev/null; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# perftest_timed CLIENT_OUT CMD...: run CMD (one perftest server and
# client, the client's output in CLIENT_OUT; CMD gets the try, 1-3, as its
# last argument) again, at most twice more and each said, while perftest
# could not time itself: it checks its cycle counter against the clock and,
# when they correlate poorly (r^2 < 0.9, which the emulated guest's clock
# does now and then), prints inf or no figures, at times with exit 0. The
# caller's checks of the last run's figures then pass or fail as usual.
perftest_untimed() {
	grep -m1 -e "Correlation coefficient r^2: .* < 0.9" -e "Can't produce a report" "$1"
}
perftest_timed() {
	local out=$1 try why
	shift
	for try in 1 2 3; do
		"$@" "$try"
		why=$(perftest_untimed "$out") || return 0
		[ "$try" = 3 ] || note "$(basename "$out"): perftest could not time itself ($why); once more"
	done
}

# --- Open MPI ------------------------------------------------------------------
MPIRUN=(mpirun --allow-run-as-root --oversubscribe -np 2)
MPI_UCX_ARGS=(--mca pml ucx -x "UCX_NET_DEVICES=$OPENIB_TEST_DEVICE:1"
	-x UCX_TLS=rc_verbs,ud_verbs,self -x UCX_UD_VERBS_ETH_DGID_CHECK=n)
MPI_TCP_ARGS=(--mca pml ob1 --mca btl tcp,self)
MPI_OPENIB_ARGS=(--mca pml ob1 --mca btl openib,self)

openib_component_so() { echo "$OPENIB_BUILDDIR/.libs/mca_btl_openib.so"; }

# use_our_component: make Open MPI load our openib (first in the path).
use_our_component() {
	local so
	so=$(openib_component_so)
	[ -f "$so" ] || fail "our component is not built: $so does not exist (build it, or set OPENIB_BUILDDIR)"
	export OMPI_MCA_mca_base_component_path="$OPENIB_BUILDDIR/.libs:$OMPI_SYSTEM_COMPONENT_DIR"
}

# build_mpi_program SRC OUT: compile an MPI C program with mpicc.
build_mpi_program() {
	need_cmd mpicc
	mpicc -O2 -Wall -o "$2" "$1" || fail "mpicc $1 failed"
}

# pingpong_bin: path of the pingpong program (prebuilt or compiled now).
pingpong_bin() {
	if [ -n "${OPENIB_PINGPONG:-}" ] && [ -x "$OPENIB_PINGPONG" ]; then
		echo "$OPENIB_PINGPONG"
		return
	fi
	local out=$OPENIB_TEST_TMP/pingpong
	[ -x "$out" ] || build_mpi_program "$OPENIB_SRCDIR/tests/integration/pingpong.c" "$out" >&2
	echo "$out"
}

# check_pingpong LOG ITERS: assert a full, clean verification summary.
check_pingpong() {
	assert_grep '^pingpong: verification PASSED: [0-9]+ sizes \(0\.\.4194304 B\), '"$2"' iterations, [1-9][0-9]* messages, [1-9][0-9]* bytes verified, 0 errors$' \
		"$1" "pingpong verification"
	local line nsizes msgs
	line=$(grep -E '^pingpong: verification PASSED' "$1")
	nsizes=$(sed -E 's/.*PASSED: ([0-9]+) sizes.*/\1/' <<<"$line")
	msgs=$(sed -E 's/.* ([0-9]+) messages.*/\1/' <<<"$line")
	[ "$msgs" -eq $((2 * nsizes * $2)) ] || fail "pingpong: $msgs messages, expected $((2 * nsizes * $2))"
	[ "$nsizes" -ge 30 ] || fail "pingpong: only $nsizes sizes"
	ok "$line"
}

# --- a bed of several nodes (openib-guest --nodes 2; "# nodes: 2" tests) ------------
# The test runs on the first node of OPENIB_HOSTS ("node1,node2" in the bed);
# the others are reached with ssh (in the bed: same environment and working
# directory there).  MPIRUN_NODES puts rank 0 on the first, rank 1 on the second.
MPIRUN_NODES=(mpirun --allow-run-as-root -np 2 --host "${OPENIB_HOSTS:-}")

# need_nodes N: fail unless this test runs on N nodes; sets BED_NODES (names).
need_nodes() {
	IFS=, read -r -a BED_NODES <<<"${OPENIB_HOSTS:-}"
	[ "${#BED_NODES[@]}" -ge "$1" ] ||
		fail "this test needs $1 nodes (a '# nodes: $1' header; run it with tests/integration/run-all)"
	[ "$(printf '%s\n' "${BED_NODES[@]}" | sort -u | wc -l)" = "${#BED_NODES[@]}" ] ||
		fail "OPENIB_HOSTS names a node twice: $OPENIB_HOSTS"
	need_cmd ssh
}

# assert_ranks_on_nodes LOG: pingpong -H said rank 0 ran on the first node and
# rank 1 on the second, and those are two different hosts.
assert_ranks_on_nodes() {
	local h0 h1
	h0=$(sed -n 's/^pingpong: rank 0 of 2 on //p' "$1")
	h1=$(sed -n 's/^pingpong: rank 1 of 2 on //p' "$1")
	[ "$h0" = "${BED_NODES[0]}" ] || fail "rank 0 ran on '$h0', not on ${BED_NODES[0]}"
	[ "$h1" = "${BED_NODES[1]}" ] || fail "rank 1 ran on '$h1', not on ${BED_NODES[1]}"
	[ "$h0" != "$h1" ] || fail "both ranks ran on $h0"
	ok "rank 0 ran on $h0, rank 1 on $h1"
}

# on_node NODE SHELL-CODE: run SHELL-CODE on NODE (locally on this node).
on_node() {
	if [ "$1" = "$(hostname)" ]; then
		bash -c "$2" </dev/null
	else
		ssh -n "$1" "$2"
	fi
}

# node_counter NODE DEV NAME: dev_counter on NODE.
node_counter() { on_node "$1" "$(declare -f dev_counter); dev_counter $2 $3"; }

# note_rxe_retries [NODE...]: the transport's retransmissions so far on
# each NODE (default: this one), for a failure's diagnosis: rxe under a
# starved emulated CPU retransmits, and its retransmission has bugs of its
# own (t-nodes-openib-scale.sh says more).
note_rxe_retries() {
	local nd c line
	for nd in "${@:-$(hostname)}"; do
		line=
		for c in duplicate_request out_of_seq_request rcvd_seq_err retry_exceeded_err \
			completer_retry_err rcvd_rnr_err; do
			line+="$c $(node_counter "$nd" "$OPENIB_TEST_DEVICE" "$c") "
		done
		note "$nd: rxe counters: $line"
	done
}

# run_watched SECS PROG CMD...: CMD under `timeout -k 10 SECS`; if it is
# still running 20 s before that, every process named PROG on each node of
# the bed (this one when there is none) has its threads' backtraces printed
# (gdb) with the rxe retransmission counters, on this function's output, so
# that a rare hang in CI says where each rank waited. CMD's status returns.
run_watched() {
	local secs=$1 prog=$2 pid t0=$SECONDS nd
	shift 2
	timeout -k 10 "$secs" "$@" &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		if [ $((SECONDS - t0)) -ge $((secs - 20)) ]; then
			echo "run_watched: still running after $((SECONDS - t0)) s: backtraces of $prog"
			for nd in "${BED_NODES[@]:-$(hostname)}"; do
				# shellcheck disable=SC2016 # expands on the node
				on_node "$nd" 'command -v gdb >/dev/null || { echo "$(hostname): no gdb"; exit 0; }
					for p in $(pgrep -x '"${prog##*/}"'); do
						echo "== $(hostname) pid $p"
						gdb -p "$p" -batch -ex "thread apply all bt" 2>&1 | grep -E "^(Thread|#)"
					done'
			done
			note_rxe_retries "${BED_NODES[@]:-$(hostname)}"
			break
		fi
		sleep 1
	done
	wait "$pid"
}

# node_netdev_bytes NODE DEV rx|tx: bytes through the interface behind DEV.
node_netdev_bytes() {
	on_node "$1" "$(declare -f dev_netdev); cat /sys/class/net/\$(dev_netdev $2)/statistics/$3_bytes"
}

# --- host packages ---------------------------------------------------------------
openib_pkg_installed() { [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]; }

# ensure_host_packages PKG...: apt-get install the missing ones (root only).
ensure_host_packages() {
	local p missing=()
	command -v dpkg-query >/dev/null || return 0
	for p in "$@"; do openib_pkg_installed "$p" || missing+=("$p"); done
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "${OPENIB_GUEST_NO_INSTALL:-0}" = 1 ] || [ "$(id -u)" != 0 ]; then
		echo "missing packages: ${missing[*]} (apt-get install ${missing[*]})" >&2
		return 1
	fi
	echo "installing: ${missing[*]}" >&2
	if ! DEBIAN_FRONTEND=noninteractive timeout 1200 apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends "${missing[@]}" >&2; then
		DEBIAN_FRONTEND=noninteractive timeout 600 apt-get -o DPkg::Lock::Timeout=300 update -q >&2 || return 1
		DEBIAN_FRONTEND=noninteractive timeout 1200 apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends "${missing[@]}" >&2 || return 1
	fi
}

# What the tests and the benchmark run (besides openib-guest's own needs).
OPENIB_TEST_PACKAGES=(ibverbs-utils ibverbs-providers rdmacm-utils perftest rdma-core iproute2
	openmpi-bin libopenmpi-dev gcc make tcpdump)

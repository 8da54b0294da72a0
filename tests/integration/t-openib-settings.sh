#!/bin/bash
# Settings and failures that must say why (issue 12): with openib named in
# --mca btl (openib,self), each bad setting, missing device or port, low
# locked-memory limit and taken rdma_cm port ends the
# 2-rank job promptly with ONE help text at the default verbosity naming the
# parameter, its value and the valid range (or the limit and what to do),
# never a hang; a few settings (MPI_THREAD_MULTIPLE among them) must
# instead give a working, verified job.
# Without openib named (an exclusion list), openib stays quiet.
# Each job runs under a 180 s hang guard; failing ones end in seconds.
# timeout: 900
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
need_cmd mpirun setpriv rping
use_our_component
dev=$OPENIB_TEST_DEVICE
pp=$(pingpong_bin) || exit 1
tl=$OPENIB_TEST_TMP/thread_level
build_mpi_program "$OPENIB_SRCDIR/tests/integration/thread_level.c" "$tl"
PROG=("$pp" -n 1 -m 65536)
WRAP=()

# run_job NAME ARGS...: 2 ranks of "${PROG[@]}" (pml ob1, btl $BTL),
# output in $OUT, status in $RC.
BTL=openib,self
run_job() {
	local name=$1
	shift
	OUT=$OPENIB_TEST_TMP/$name.out
	timeout -k 5 180 "${WRAP[@]}" "${MPIRUN[@]}" --mca pml ob1 --mca btl "$BTL" "$@" \
		"${PROG[@]}" >"$OUT" 2>&1
	RC=$?
}

# run_shown NAME WANT REGEX... -- ARGS...: run_job NAME ARGS until its output
# shows every REGEX (EREs, one per line of output). WANT is "fail" (the job
# must fail, not by the hang guard) or "pass" (it must exit 0), checked on
# every run. Open MPI 4.1.4's relay of help texts to mpirun sometimes loses
# one ("ORTE_ERROR_LOG ... show_help.c"), and once in a while mpirun itself
# then dies of a signal (lib.sh relay_crashed): a run where either visibly
# happened is repeated, 3 times at most.
run_shown() {
	local name=$1 want=$2 try re missing
	local res=()
	shift 2
	while [ "$1" != -- ]; do
		res+=("$1")
		shift
	done
	shift
	for try in 1 2 3; do
		run_job "$name" "$@"
		if relay_crashed "$OUT"; then
			note "$name: mpirun died in Open MPI's help relay (try $try); again"
			continue
		fi
		if [ "$want" = fail ]; then
			[ "$RC" != 124 ] && [ "$RC" != 137 ] || { show "$OUT"; fail "$name: hung (killed by the guard)"; }
			[ "$RC" != 0 ] || { show "$OUT"; fail "$name: the job succeeded"; }
		else
			[ "$RC" = 0 ] || { show "$OUT"; fail "$name: mpirun exited with status $RC"; }
		fi
		missing=
		for re in "${res[@]}"; do
			grep -Eq -- "$re" "$OUT" || missing=$re
		done
		[ -z "$missing" ] && return 0
		grep -q 'ORTE_ERROR_LOG: .*show_help.c' "$OUT" || {
			show "$OUT"
			fail "$name: no line matching /$missing/"
		}
		note "$name: no /$missing/, and Open MPI lost a help text (try $try); again"
	done
	show "$OUT"
	fail "$name: Open MPI's help relay failed 3 times"
}

# expect_help NAME REGEX... -- ARGS...: the job fails (not by the hang
# guard), shows every REGEX (run_shown) and no sign of a missing help file
# or a crash.
expect_help() {
	local name=$1
	shift
	run_shown "$name" fail "$@"
	if grep -Eq "Sorry! +You were supposed to get help|Segmentation|signal 11|core dumped" "$OUT"; then
		show "$OUT"
		fail "$name: a missing help file or a crash"
	fi
	ok "$name: failed promptly (status $RC) with the help text"
}

# expect_range NAME PARAM VALUE RANGE ARGS...: the out-of-range help.
expect_range() {
	local name=$1 param=$2 value=$3 range=$4
	shift 4
	expect_help "$name" "^The value of $param on [^ ]+ is out of range\\.\$" \
		"^ +Value: +$value\$" "^ +Valid range: +$range\$" -- "$@"
}

# expect_device_limit NAME PARAM VALUE RANGE ARGS...: the device-limit help.
expect_device_limit() {
	local name=$1 param=$2 value=$3 range=$4
	shift 4
	expect_help "$name" "^The value of $param on [^ ]+ is more than device $dev port 1 allows\\.\$" \
		"^ +Value: +$value\$" "^ +Valid range: +$range\$" -- "$@"
}

# expect_works NAME [REGEX...] -- ARGS...: a verified ping-pong carried by
# openib (btl_openib_verbose 10) whose output shows every REGEX (run_shown:
# a notice that Open MPI visibly lost is asked for again).
expect_works() {
	local name=$1
	local res=()
	shift
	while [ "$1" != -- ]; do
		res+=("$1")
		shift
	done
	shift
	run_shown "$name" pass "${res[@]}" -- --mca btl_openib_verbose 10 "$@"
	assert_grep '^pingpong: verification PASSED: .* 0 errors$' "$OUT" "$name: verified ping-pong"
	assert_openib_carried "$OUT" 2 2 oob
	ok "$name: verified job over openib"
}

# --- settings that used to hang ------------------------------------------------
WHY_WR='one send work request per QP is held back for credit returns so flow control can always make progress; data needs at least one more'
expect_range max-send-wr-0 btl_openib_max_send_wr 0 '2 to 1048576' --mca btl_openib_max_send_wr 0
assert_grep "Why: +.*$WHY_WR" "$OUT" "max_send_wr: the reason"
expect_range max-send-wr-1 btl_openib_max_send_wr 1 '2 to 1048576' --mca btl_openib_max_send_wr 1
expect_range free-list-0-0 btl_openib_free_list_inc 0 '1 to 2147483647' \
	--mca btl_openib_free_list_num 0 --mca btl_openib_free_list_inc 0
assert_grep 'could never grow' "$OUT" "free_list_inc 0: the reason"
expect_help free-list-max-10 '^The value of btl_openib_free_list_max on [^ ]+ is out of range\.$' \
	'^ +Value: +10$' '^ +Valid range: +-1 \(unlimited\), or 256 to 2147483647$' \
	'S queue of [0-9]+-byte buffers in btl_openib_receive_queues posts 256 buffers' -- \
	--mca btl_openib_free_list_max 10

# --- numbers outside their range -----------------------------------------------------------
expect_range cq-size-0 btl_openib_cq_size 0 '1 to 2147483647' --mca btl_openib_cq_size 0
expect_range cq-size-neg btl_openib_cq_size -1 '1 to 2147483647' --mca btl_openib_cq_size -1
expect_range ib-timeout btl_openib_ib_timeout 99 '1 to 31' --mca btl_openib_ib_timeout 99
expect_range ib-retry btl_openib_ib_retry_count 99 '0 to 7' --mca btl_openib_ib_retry_count 99
expect_range gid-index btl_openib_gid_index 999 '-1 to 255' --mca btl_openib_gid_index 999
expect_range poll-batch btl_openib_poll_batch 0 '1 to 64' --mca btl_openib_poll_batch 0
expect_range max-send-size btl_openib_max_send_size 1 '128 or more' --mca btl_openib_max_send_size 1
expect_range get-limit btl_openib_get_limit 4294967296 '1 to 4294967295' \
	--mca btl_openib_get_limit 4294967296
# and limits of this device and port, checked when the port opens
gids=$(ls /sys/class/infiniband/"$dev"/ports/1/gids | wc -l)
expect_device_limit gid-index-port btl_openib_gid_index 200 "-1 \\(automatic\\), or 0 to $((gids - 1))" \
	--mca btl_openib_gid_index 200
expect_device_limit cq-size-device btl_openib_cq_size 2000000000 '1 to [0-9]+' \
	--mca btl_openib_cq_size 2000000000
maxmsg=$(ibv_devinfo -d "$dev" -v | awk '/max_msg_sz/ { print $2; exit }')
maxmsg=$((${maxmsg:-0}))
if [ "$maxmsg" -gt 0 ] && [ "$maxmsg" -lt 4294967295 ]; then
	expect_device_limit get-limit-port btl_openib_get_limit $((maxmsg + 1)) "1 to $maxmsg" \
		--mca btl_openib_get_limit $((maxmsg + 1))
else
	note "get-limit-port: $dev's max_msg_sz ($maxmsg) is not below 2^32-1; not testable here"
fi

# --- receive_queues ------------------------------------------------------------------------
expect_help rq-p-count '^ +Problem: P,256,32768$' \
	'<count> 32768 is out of range: a P queue holds at most 32767 buffers' -- \
	--mca btl_openib_receive_queues P,256,32768
expect_help rq-s-huge '^ +Problem: S,4294967296$' \
	'<size> 4294967296 is out of range: buffer size must be between 64 and 1073741824 bytes' -- \
	--mca btl_openib_receive_queues S,4294967296
grep -q 'not a non-negative integer' "$OUT" && fail "S,4294967296 still called not an integer"
# valid for the parser, but no fragment could carry ob1's rendezvous header (it hung)
expect_range rq-small btl_openib_receive_queues "largest buffer 64 B" "a largest queue of at least 136 bytes" \
	--mca btl_openib_receive_queues P,64,4
def_rq=$(sed -nE 's/^#define OPENIB_DEFAULT_RECEIVE_QUEUES "(.*)"$/\1/p' "$OPENIB_SRCDIR/mca/btl_openib_params.h")
[ -n "$def_rq" ] || fail "OPENIB_DEFAULT_RECEIVE_QUEUES not found in mca/btl_openib_params.h"
expect_help rq-empty '^btl_openib_receive_queues is set to an empty value on ' \
	"^ +$def_rq\$" -- --mca btl_openib_receive_queues ''
grep -q '(null)' "$OUT" && fail "empty receive_queues still prints (null)"
expect_help rq-1gib '^\(pinned\) memory than this node has\.$' \
	'^ +btl_openib_receive_queues: +S,1073741824,4$' '^ +Needed at start-up, per port: +about 68 GiB$' -- \
	--mca btl_openib_receive_queues S,1073741824,4

# --- devices and ports ---------------------------------------------------------------------
expect_help no-device 'names a device or port that does not exist' \
	'^ +Not found: +nosuchdev0$' "^ +$dev:1 +active, " -- --mca btl_openib_if_include nosuchdev0
expect_help no-port 'names a device or port that does not exist' \
	"^ +Not found: +$dev:2\$" "^ +$dev:1 +active, " -- --mca btl_openib_if_include "$dev:2"

# --- the node: locked memory, thread level ----------------------------------------------------
# (as root CAP_IPC_LOCK lifts RLIMIT_MEMLOCK: drop it, as for a normal user)
WRAP=(setpriv --bounding-set -ipc_lock -- bash -c 'ulimit -l 64 && exec "$@"' memlock)
expect_help ulimit-64 'cannot register \(pin\) the memory it needs: the$' \
	'^ +Locked-memory limit \(ulimit -l\): +64 KiB \(ulimit -l: 64\)$' \
	'^ +Needed at start-up, per port: +about [0-9.]+ MiB$' --
WRAP=()
# MPI_THREAD_MULTIPLE is supported (issue 16): openib,self alone carries it
PROG=("$tl" multiple)
run_job thread-multiple --mca btl_openib_verbose 10
[ "$RC" = 0 ] || { show "$OUT"; fail "thread-multiple: status $RC"; }
assert_grep 'asked multiple, provided multiple, exchange PASSED' "$OUT" "thread-multiple: the exchange"
[ "$(grep -Ec 'openib: [^ ]+ statistics: sends [1-9]' "$OUT")" = 2 ] ||
	{ show "$OUT"; fail "thread-multiple: both ranks should have sent over openib"; }
ok "thread-multiple: MPI_THREAD_MULTIPLE provided, 1 KiB each way verified over openib,self"
PROG=("$pp" -n 1 -m 65536)

# --- connection methods --------------------------------------------------------------------
ip=$(dev_ipv4 "$dev") || fail "no IPv4 address on $dev"
rping -s -a "$ip" -p 7471 >/dev/null 2>&1 &
rping_pid=$!
for _ in $(seq 1 100); do
	rdma resource show cm_id 2>/dev/null | grep -q "LISTEN.*$ip:7471" && break
	kill -0 "$rping_pid" 2>/dev/null || break
	sleep 0.2
done
rdma resource show cm_id 2>/dev/null | grep -q "LISTEN.*$ip:7471" ||
	fail "rping -s did not listen on $ip:7471 through rdma_cm"
expect_help rdma-cm-port 'No connection method \(CPC\) can be used on a port' \
	"rdma_cm: btl_openib_connect_rdma_cm_port 7471 is taken on $ip \\(Address already in use\\); use 0 \\(any free port\\) or a free port" -- \
	--mca btl_openib_cpc_include rdma_cm --mca btl_openib_connect_rdma_cm_port 7471
kill "$rping_pid" 2>/dev/null
wait "$rping_pid" 2>/dev/null

# a side channel that does not exist: named with the valid values, and oob
# (the only CPC asked for) has nothing to connect with
expect_help oob-side-channel '^btl_openib_oob_side_channel names no transport of the oob side channel\.$' \
	'^ +Value: +bogus$' '^ +Valid values: +auto, ud, tcp$' \
	'No connection method \(CPC\) can be used on a port' -- \
	--mca btl_openib_cpc_include oob --mca btl_openib_oob_side_channel bogus

# a bad plug-in path: its own help text is found, and the built-in CPCs work
expect_works bad-cpc-plugin 'A connection method \(CPC\) plug-in could not be loaded' \
	'^ +Plug-in: +/nonexistent/cpc_plugin.so$' -- --mca btl_openib_cpc_plugins /nonexistent/cpc_plugin.so
grep -q "You were supposed to get help" "$OUT" && fail "the CPC help file was not found"
ok "bad cpc_plugins: its help text shown, the job ran"

# --- settings that must work -----------------------------------------------------------------
expect_works fork-support 'openib: fork support enabled \(ibv_fork_init\)' -- \
	--mca btl_openib_want_fork_support 1

# --- the old openib's parameters: accepted, never silently ignored ----------------------------
expect_works old-use-eager-rdma \
	'^btl_openib_use_eager_rdma \(set on [^ ]+ to "0"\) is a parameter of Open MPI.s own openib$' -- \
	--mca btl_openib_use_eager_rdma 0
[ "$(openib_stats_sum "$OUT" eager_rdma_rings)" = 0 ] || fail "use_eager_rdma 0 did not turn the rings off"
ok "old-use-eager-rdma: the notice, and 0 applied as eager_rdma_num 0"
expect_works old-allow-ib \
	'BTL\. openib-ng accepts it: not needed: openib-ng uses InfiniBand ports like any other\.$' -- \
	--mca btl_openib_allow_ib 1
ok "old-allow-ib: the notice"
expect_works old-synonym -- --mca btl_openib_max_eager_rdma 0
[ "$(openib_stats_sum "$OUT" eager_rdma_rings)" = 0 ] || fail "btl_openib_max_eager_rdma 0 (synonym of eager_rdma_num) was not applied"
ok "old-synonym: btl_openib_max_eager_rdma 0 set btl_openib_eager_rdma_num"
expect_works rq-ignored-fields 'btl_openib_receive_queues on [^ ]+ gives fields that openib-ng has no use for' -- \
	--mca btl_openib_receive_queues P,256,64,32,16,4:S,65536,64,16,8
for f in 'P <low>' 'P <reserve>' 'S/X <max_pending>'; do
	assert_grep "^ +$f: " "$OUT" "ignored field $f named"
done
ok "rq-ignored-fields: the fields openib-ng does not use are named, the job ran"

# --- openib not named: quiet ------------------------------------------------------------------
# "^tcp" excludes; it names no component, so openib is not asked for
BTL=^tcp
PROG=("$tl" multiple)
run_job quiet-thread-multiple
[ "$RC" = 0 ] || { show "$OUT"; fail "quiet-thread-multiple: status $RC"; }
assert_grep 'exchange PASSED' "$OUT" "quiet-thread-multiple: the job ran over the other BTLs"
if grep -qi 'openib' "$OUT"; then show "$OUT"; fail "openib not named, yet it spoke"; fi
ok "openib not named (--mca btl ^tcp), MPI_THREAD_MULTIPLE: quiet, the job ran"
PROG=("$pp" -n 1 -m 65536)
run_job quiet-no-device --mca btl_openib_if_include nosuchdev0
[ "$RC" = 0 ] || { show "$OUT"; fail "quiet-no-device: status $RC"; }
assert_grep '^pingpong: verification PASSED' "$OUT" "quiet-no-device: verified job"
if grep -qi 'openib' "$OUT"; then show "$OUT"; fail "openib not named, yet it spoke"; fi
ok "openib not named, nonexistent if_include: quiet, the job ran"

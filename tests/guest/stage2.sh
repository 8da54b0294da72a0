#!/bin/bash
# Stage 2 of the openib-guest boot: runs inside the guest, chrooted into the
# overlay root (the host's / read-only + tmpfs), with the host's bash.
# openib-guest copies this file into the per-run directory, which the guest
# sees at /.openib-run.  It is not part of the initramfs, so editing it does
# not trigger an initramfs rebuild.
#
# Roles (ROLE in config): "single" is the one guest of a plain run; in a
# multi-node bed (--nodes N) node1 is "cmd" (runs CMD once every node is
# ready) and the others are "serve" (run sshd until the host says stop).
#
# Files in the run directory:
#   config   (written by the host)  ROLE NICS MTU GUEST_HOSTNAME GUEST_CWD
#                                   NIC_MACS NIC_ADDRS GATEWAY SSHD WAIT_LIMIT
#                                   NIC_DEVS DEV_SIW
#   siw/     (written by the host)  DEV_SIW=1: siw.ko and the modules it
#                                   needs, "load-order" lists them
#   hosts    (written by the host)  the guest's /etc/hosts
#   env      (written by the host)  "export NAME=value" lines (bash %q quoting)
#   argv     (written by the host)  "declare -a OPENIB_GUEST_ARGV=(...)"
#   ssh/     (written by the host)  sshd and ssh configuration and keys (SSHD=1)
#   ready    (written here)         multi-node: this node is set up
#   go       (written by the host)  multi-node, cmd node: every node is ready
#   stop     (written by the host)  multi-node, serve node: CMD is over
#   booted   (written here)         guest is ready, the command starts now
#   status   (written here)         "EXIT_STATUS SECONDS"
#   setup-failed (written here)     reason, when the guest setup failed

RUN=/.openib-run
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export LC_ALL=C

log() { echo "openib-guest-stage2: $*" >/dev/console; }
setup_fail() {
	log "FATAL: $*"
	echo "stage2: $*" >"$RUN/setup-failed"
	exit 1
}

# shellcheck source=/dev/null
. "$RUN/config" || setup_fail "cannot read $RUN/config"

# wait_file FILE SECONDS: wait until FILE exists (written by the host).
wait_file() {
	local i
	for ((i = 0; i < $2 * 5; i++)); do
		[ -e "$1" ] && return 0
		sleep 0.2
	done
	return 1
}

# --- hostname, /etc/hosts --------------------------------------------------
echo "$GUEST_HOSTNAME" >/proc/sys/kernel/hostname || setup_fail "cannot set hostname"
cp "$RUN/hosts" /etc/hosts || setup_fail "cannot write /etc/hosts"
echo "$GUEST_HOSTNAME" >/etc/hostname 2>/dev/null

ip link set lo up || setup_fail "cannot bring up lo"

# --- Soft-iWARP: siw.ko is not in the initramfs (Debian's kernel lacks it;
# the host built it, tests/guest/siw.sh), so it is loaded here, only when asked.
if [ "$DEV_SIW" = 1 ]; then
	[ -s "$RUN/siw/load-order" ] || setup_fail "no $RUN/siw/load-order (siw modules)"
	while read -r ko; do
		[ -n "$ko" ] || continue
		name=${ko%%.ko*}
		# One of them may already be loaded (or built in) by then.
		[ -d "/sys/module/$name" ] && continue
		insmod "$RUN/siw/$ko" || setup_fail "insmod $ko failed"
	done <"$RUN/siw/load-order"
fi

# --- network interfaces and rxe/siw devices ----------------------------------
# NIC k has MAC NIC_MACS[k] (set by the host), address NIC_ADDRS[k] and
# gets the RDMA device NIC_DEVS[k] (rxeJ or siwJ).
ifname_for_mac() {
	local want=$1 d
	for d in /sys/class/net/*; do
		[ "$(cat "$d/address" 2>/dev/null)" = "$want" ] && { basename "$d"; return 0; }
	done
	return 1
}

for ((k = 0; k < NICS; k++)); do
	mac=${NIC_MACS[k]}
	ifname=
	for ((i = 0; i < 100; i++)); do
		ifname=$(ifname_for_mac "$mac") && break
		sleep 0.1
	done
	[ -n "$ifname" ] || setup_fail "no network interface with MAC $mac"
	if [ -n "$MTU" ]; then
		ip link set dev "$ifname" mtu "$MTU" || setup_fail "cannot set MTU $MTU on $ifname"
	fi
	ip addr add "${NIC_ADDRS[k]}" dev "$ifname" || setup_fail "cannot set address on $ifname"
	ip link set dev "$ifname" up || setup_fail "cannot bring up $ifname"
	# A plain FIFO instead of the default fq_codel: under TCG a packet waits
	# in the queue far longer than CoDel's 5 ms target, so CoDel drops
	# Soft-RoCE packets that no real NIC's queue would, and rxe in Debian 12's
	# kernel fails retransmitted multi-packet operations
	# (tests/guest/rxe-loss-repro.sh). The limit stays above what rxe keeps
	# in flight (64 packets per queue pair).
	tc qdisc replace dev "$ifname" root pfifo limit 10000 ||
		setup_fail "cannot set a pfifo qdisc on $ifname"
	if [ "$k" = 0 ] && [ -n "$GATEWAY" ]; then
		ip route add default via "$GATEWAY" dev "$ifname" 2>/dev/null
	fi
	dev=${NIC_DEVS[k]}
	rdma link add "$dev" type "${dev%%[0-9]*}" netdev "$ifname" ||
		setup_fail "rdma link add $dev type ${dev%%[0-9]*} netdev $ifname failed"
done

# Wait (bounded) until every port is ACTIVE, and an rxe port also has its
# IPv4 GID (index 1); iWARP (siw) has no IP-based GIDs to wait for.
for dev in "${NIC_DEVS[@]}"; do
	port=/sys/class/infiniband/$dev/ports/1
	want=''
	[[ $dev == rxe* ]] && want=' with an IPv4 GID'
	ok=0 gid1=-
	for ((i = 0; i < 200; i++)); do
		state=$(cat "$port/state" 2>/dev/null)
		[ -z "$want" ] || gid1=$(cat "$port/gids/1" 2>/dev/null)
		if [[ $state == *ACTIVE* && -n $gid1 && $gid1 != 0000:0000:0000:0000:0000:0000:0000:0000 ]]; then
			ok=1
			break
		fi
		sleep 0.1
	done
	[ "$ok" = 1 ] || setup_fail "$dev port 1 not ACTIVE$want after 20 s (state '$state'${want:+, gid[1] '$gid1'})"
done

# Before sshd starts: what it runs (mpirun's daemons, their ranks) inherits
# the limits, and verbs pin memory.
ulimit -l unlimited 2>/dev/null
ulimit -c 0 2>/dev/null

# --- multi-node bed: sshd, then wait for the others ----------------------------
if [ "$SSHD" = 1 ]; then
	# shellcheck source=node-ssh.sh
	. "$RUN/node-ssh.sh" || setup_fail "cannot read $RUN/node-ssh.sh"
	start_sshd
fi

if [ "$ROLE" = serve ]; then
	echo "$EPOCHREALTIME" >"$RUN/ready"
	log "node ready, serving until the host says stop"
	wait_file "$RUN/stop" "$WAIT_LIMIT"
	log "stopping"
	sync
	exit 0
fi

# --- output ports ------------------------------------------------------------
out='' err=''
for ((i = 0; i < 100; i++)); do
	for d in /sys/class/virtio-ports/*; do
		[ -e "$d/name" ] || continue
		case $(cat "$d/name") in
		openib.stdout) out=/dev/${d##*/} ;;
		openib.stderr) err=/dev/${d##*/} ;;
		esac
	done
	[ -n "$out" ] && [ -n "$err" ] && [ -c "$out" ] && [ -c "$err" ] && break
	sleep 0.1
done
[ -c "$out" ] && [ -c "$err" ] || setup_fail "virtio-serial ports openib.stdout/openib.stderr not found"

if [ "$ROLE" = cmd ]; then
	echo "$EPOCHREALTIME" >"$RUN/ready"
	wait_file "$RUN/go" "$WAIT_LIMIT" || setup_fail "the other nodes were not ready after $WAIT_LIMIT s"
	check_peers
fi

echo "$EPOCHREALTIME" >"$RUN/booted"
log "guest ready, running the command"

# --- the command ---------------------------------------------------------------
__og_env=$RUN/env
__og_argv=$RUN/argv
__og_cwd=$GUEST_CWD
t0=$EPOCHREALTIME
(
	# Start from an empty environment, then take the host's exactly.  The
	# host environment may define any name; only __og_* are used below.
	for __og_v in $(compgen -e); do unset "$__og_v"; done
	unset __og_v
	# shellcheck source=/dev/null
	. "$__og_env"
	# shellcheck source=/dev/null
	. "$__og_argv"
	if [ -n "${TMPDIR:-}" ]; then mkdir -p "$TMPDIR" 2>/dev/null; fi
	cd "$__og_cwd" || { echo "openib-guest: cannot cd to $__og_cwd in the guest" >&2; exit 126; }
	exec "${OPENIB_GUEST_ARGV[@]}"
) </dev/null >"$out" 2>"$err"
st=$?
t1=$EPOCHREALTIME
secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
sync
echo "$st $secs" >"$RUN/status.tmp" && mv "$RUN/status.tmp" "$RUN/status"
log "command exited with status $st after $secs s"
exit 0

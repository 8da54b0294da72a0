# nodes.sh: the host side of a multi-node openib-guest bed (--nodes N).
# Sourced by openib-guest (bash), which defines msg, die_setup, NODES, NICS,
# CPUS, RUN and GUEST_DIR.
#
# The wire: NIC k of every node is on one virtual Ethernet segment, a QEMU
# "stream" netdev over a Unix socket in the run directory ($RUN/wireK.sock):
# node1 listens, node2 connects.  Nothing leaves this machine, no TCP port is
# taken (so beds never collide), and only this user can reach the socket.
# Node n has MAC 52:54:00:4f:(50+n):0k and address 10.1.k.n/24 on NIC k.
#
# The launcher: OpenSSH.  Each node runs the host's /usr/sbin/sshd on its wire
# addresses only, root login by key only, with host and client keys made for
# this run; ssh in the guests trusts exactly those keys.
# shellcheck shell=bash

node_name() { echo "node$1"; }
node_mac() { printf '52:54:00:4f:%02x:%02x' $((0x50 + $1)) "$2"; } # NODE NIC
node_addr() { echo "10.1.$2.$1"; }                                  # NODE NIC

# node_hosts: /etc/hosts of every node (the names resolve to NIC 0).
node_hosts() {
	local n
	echo "127.0.0.1	localhost"
	echo "::1	localhost ip6-localhost ip6-loopback"
	for ((n = 1; n <= NODES; n++)); do
		printf '%s\t%s\n' "$(node_addr "$n" 0)" "$(node_name "$n")"
	done
}

# node_hostfile: an Open MPI hostfile naming every node, one slot per vCPU.
node_hostfile() {
	local n
	for ((n = 1; n <= NODES; n++)); do
		echo "$(node_name "$n") slots=$CPUS"
	done
}

# node_wire_args NODE: QEMU options of the node's NICs (paths relative to $RUN,
# QEMU's working directory, to stay far below the 108-byte socket path limit).
node_wire_args() {
	local n=$1 k server=off
	[ "$n" = 1 ] && server=on
	for ((k = 0; k < NICS; k++)); do
		printf '%s\n' -netdev "stream,id=net$k,server=$server,addr.type=unix,addr.path=wire$k.sock" \
			-device "virtio-net-pci,netdev=net$k,mac=$(node_mac "$n" "$k"),romfile="
	done
}

# wait_wire_sockets QPID: wait (bounded) until node1's QEMU listens on every
# wire socket, so that the other nodes can connect.
wait_wire_sockets() {
	local i k missing
	for ((i = 0; i < 300; i++)); do
		missing=0
		for ((k = 0; k < NICS; k++)); do
			[ -S "$RUN/wire$k.sock" ] || missing=1
		done
		[ "$missing" = 0 ] && return 0
		kill -0 "$1" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# --- OpenSSH ---------------------------------------------------------------

# ssh_make_keys DIR: the client key and one host key per node, for this run.
ssh_make_keys() {
	local dir=$1 n k addrs
	mkdir -p "$dir" && chmod 700 "$dir" || die_setup "cannot create $dir"
	ssh-keygen -q -t ed25519 -N '' -C openib-guest-client -f "$dir/id_ed25519" </dev/null ||
		die_setup "ssh-keygen failed"
	: >"$dir/known_hosts"
	for ((n = 1; n <= NODES; n++)); do
		ssh-keygen -q -t ed25519 -N '' -C "openib-guest-$(node_name "$n")" \
			-f "$dir/$(node_name "$n")_host_key" </dev/null || die_setup "ssh-keygen failed"
		addrs=$(node_name "$n")
		for ((k = 0; k < NICS; k++)); do addrs+=,$(node_addr "$n" "$k"); done
		echo "$addrs $(cut -d' ' -f1,2 "$dir/$(node_name "$n")_host_key.pub")" >>"$dir/known_hosts"
	done
}

# ssh_node_files KEYDIR NODE DEST: what node NODE needs in its run directory
# (DEST/ssh; node-ssh.sh installs it in the guest).
ssh_node_files() {
	local keys=$1 n=$2 dest=$3/ssh k
	mkdir -p "$dest" || die_setup "cannot create $dest"
	cp "$keys/id_ed25519" "$keys/id_ed25519.pub" "$keys/known_hosts" "$dest/" &&
		cp "$keys/$(node_name "$n")_host_key" "$dest/ssh_host_ed25519_key" &&
		cp "$keys/$(node_name "$n")_host_key.pub" "$dest/ssh_host_ed25519_key.pub" &&
		cp "$keys/id_ed25519.pub" "$dest/authorized_keys" || die_setup "cannot copy the ssh keys"
	{
		for ((k = 0; k < NICS; k++)); do echo "ListenAddress $(node_addr "$n" "$k"):22"; done
		cat <<-EOF
			HostKey /etc/ssh/openib-guest/ssh_host_ed25519_key
			AuthorizedKeysFile /etc/ssh/openib-guest/authorized_keys
			PermitRootLogin prohibit-password
			PubkeyAuthentication yes
			PasswordAuthentication no
			KbdInteractiveAuthentication no
			UsePAM no
			UseDNS no
			X11Forwarding no
			PrintMotd no
			PrintLastLog no
			PidFile /run/sshd-openib-guest.pid
			# mpirun may open many sessions at once.
			MaxStartups 64
			MaxSessions 64
			ForceCommand /bin/bash /.openib-run/ssh-session.sh
		EOF
	} >"$dest/sshd_config"
	cat >"$dest/ssh_config" <<-EOF
		# The guest's /etc/ssh/ssh_config in an openib-guest bed (--nodes $NODES).
		Host *
		    User root
		    IdentityFile /etc/ssh/openib-guest/id_ed25519
		    IdentitiesOnly yes
		    UserKnownHostsFile /etc/ssh/openib-guest/known_hosts
		    GlobalKnownHostsFile /dev/null
		    StrictHostKeyChecking yes
		    BatchMode yes
		    # The post-quantum hybrid KEX (OpenSSH's default) costs ~1.5 s per
		    # login under TCG; keys made for one run on a private wire gain
		    # nothing from it.
		    KexAlgorithms curve25519-sha256,curve25519-sha256@libssh.org
		    ConnectTimeout 30
		    LogLevel ERROR
	EOF
}

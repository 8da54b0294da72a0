# node-ssh.sh: OpenSSH on a node of a multi-node openib-guest bed (guest side).
# Sourced by stage2.sh (bash, inside the guest) when SSHD=1.  The host wrote
# $RUN/ssh/: this node's host key, the bed's client key, authorized_keys,
# known_hosts (every node's name and addresses with its host key),
# sshd_config and ssh_config.  Keys are made per run by openib-guest; nothing
# here touches the host: /etc and /root live in the guest's overlay.
# shellcheck shell=bash

SSH_CONF_DIR=/etc/ssh/openib-guest

# start_sshd: install the configuration, start sshd on the wire addresses and
# wait (bounded) until it listens on port 22.
start_sshd() {
	local home i
	[ -x /usr/sbin/sshd ] || setup_fail "/usr/sbin/sshd not found (host package openssh-server)"
	mkdir -p "$SSH_CONF_DIR" && chmod 700 "$SSH_CONF_DIR" || setup_fail "cannot create $SSH_CONF_DIR"
	# Copies owned by root with private modes: sshd and ssh refuse private
	# keys others can read, and sshd's StrictModes checks authorized_keys.
	cp "$RUN"/ssh/* "$SSH_CONF_DIR/" || setup_fail "cannot copy $RUN/ssh"
	chown -R 0:0 "$SSH_CONF_DIR" && chmod 600 "$SSH_CONF_DIR"/* || setup_fail "cannot chmod $SSH_CONF_DIR"
	cp "$SSH_CONF_DIR/ssh_config" /etc/ssh/ssh_config || setup_fail "cannot write /etc/ssh/ssh_config"
	chmod 644 /etc/ssh/ssh_config
	# Hide the host user's ~/.ssh (its config and keys would come first);
	# a tmpfs mounted in the guest, so the host's copy is untouched even
	# when the home directory is a read-write share.
	home=$(getent passwd root | cut -d: -f6)
	if [ -n "$home" ] && [ -d "$home/.ssh" ]; then
		mount -t tmpfs -o mode=0700 tmpfs "$home/.ssh" || setup_fail "cannot hide $home/.ssh"
	fi
	# Without PAM, sshd refuses every login to an account whose password
	# is locked ("!"), keys included: root has no password in the guest.
	sed -i -E 's/^root:![^:]*:/root:*:/' /etc/shadow 2>/dev/null
	# sshd runs the ForceCommand with root's login shell; bash started by
	# sshd sources the host user's ~/.bashrc (seconds under emulation, and
	# not the host environment ssh-session.sh gives).  dash reads nothing.
	sed -i -E 's#^(root:[^:]*:[^:]*:[^:]*:[^:]*:[^:]*:).*#\1/bin/sh#' /etc/passwd ||
		setup_fail "cannot set root's shell in /etc/passwd"
	mkdir -p /run/sshd && chmod 755 /run/sshd # privilege separation directory
	/usr/sbin/sshd -f "$SSH_CONF_DIR/sshd_config" -E "$RUN/sshd.log" ||
		setup_fail "sshd did not start: $(tail -n 3 "$RUN/sshd.log" 2>/dev/null | tr '\n' ' ')"
	for ((i = 0; i < 100; i++)); do
		# state 0A = LISTEN on port 22 (0016)
		awk '$2 ~ /:0016$/ && $4 == "0A" { f = 1 } END { exit !f }' /proc/net/tcp && return 0
		sleep 0.1
	done
	setup_fail "sshd is not listening on port 22 after 10 s"
}

# check_peers: on the cmd node, log in once to every other node (bounded), so
# that a broken bed is a setup failure with its reason, not an mpirun error.
check_peers() {
	local peer out
	for peer in $PEERS; do
		out=$(timeout 60 ssh -n "$peer" hostname 2>&1) ||
			setup_fail "ssh $peer failed: $out"
		[ "$out" = "$peer" ] || setup_fail "ssh $peer answered '$out' (expected its host name)"
	done
}

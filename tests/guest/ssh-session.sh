#!/bin/bash
# ssh-session.sh: sshd's ForceCommand on the nodes of a multi-node openib-guest
# bed.  Runs the requested command (or a shell reading stdin) as CMD runs on
# node1: in CMD's working directory and with the host's environment, so that
# the daemons mpirun starts over ssh, and the ranks they start, see the same
# OMPI_MCA_*, PATH and OPENIB_* variables on every node.

__og_has_cmd=${SSH_ORIGINAL_COMMAND+1}
__og_cmd=${SSH_ORIGINAL_COMMAND-}
# shellcheck source=/dev/null
. /.openib-run/config # GUEST_CWD (not exported)
for __og_v in $(compgen -e); do unset "$__og_v"; done
unset __og_v
# shellcheck source=/dev/null
. /.openib-run/env
if [ -n "${TMPDIR:-}" ]; then mkdir -p "$TMPDIR" 2>/dev/null; fi
cd "$GUEST_CWD" 2>/dev/null || cd / || exit 126
if [ -n "$__og_has_cmd" ]; then
	exec /bin/bash -c "$__og_cmd"
fi
exec /bin/bash

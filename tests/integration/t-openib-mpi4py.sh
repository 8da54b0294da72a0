#!/bin/bash
# Debian's mpi4py over OUR openib (issue 16): imported with its default
# initialization, mpi4py asks for MPI_THREAD_MULTIPLE. Under
# mpirun -np 2 --mca btl openib,self: a ping-pong of numpy arrays (0 B to
# 4 MiB, a pickled array, two Python threads at once on their own
# communicators) and an all-to-all (Alltoall, Alltoallv, pickled alltoall),
# every element checked by the scripts. Each job: the level provided was
# MPI_THREAD_MULTIPLE and openib made the connections and carried the data.
# timeout: 400
. "$OPENIB_SRCDIR/tests/integration/lib.sh"
. "$OPENIB_SRCDIR/tests/integration/openib_lib.sh"
. "$OPENIB_SRCDIR/tests/integration/threads_lib.sh"
need_cmd mpirun timeout
use_our_component
# Debian's python3 (the one with python3-mpi4py and python3-numpy), not
# whatever python3 comes first in PATH
PY=/usr/bin/python3
"$PY" -c 'import mpi4py, numpy' ||
	fail "$PY cannot import mpi4py and numpy (apt-get install python3-mpi4py python3-numpy)"

for script in mpi4py_pingpong mpi4py_alltoall; do
	run_job "$script" 180 "${MPIRUN[@]}" "${MPI_OPENIB_ARGS[@]}" --mca btl_openib_verbose 10 \
		"$PY" -B "$OPENIB_SRCDIR/tests/integration/$script.py"
	[ "$RC" = 0 ] || fail "$script: mpirun exited with status $RC"
	assert_grep "^$script: thread level provided MPI_THREAD_MULTIPLE \\(mpi4py [0-9.]+, rc.thread_level multiple," \
		"$OUT" "$script: mpi4py's default initialization gave MPI_THREAD_MULTIPLE"
	assert_grep "^$script: PASSED .* errors=0\$" "$OUT" "$script: every element checked"
	if grep -E "^$script: rank" "$OUT"; then fail "$script: errors reported (above)"; fi
	assert_openib_carried "$OUT" 2 2 oob
	ok "$(grep -E "^$script: PASSED" "$OUT")"
done

# shellcheck shell=bash
# Running MPI ranks under ThreadSanitizer and judging what it reports (for
# the tests that say "# tsan: yes"; source after lib.sh).
#
# Only our component is instrumented (tests/tsan-build.sh, made by run-all
# or `make check-tsan` into $OPENIB_TSAN_BUILDDIR); Open MPI, libibverbs and
# the rxe provider are Debian's uninstrumented builds. TSan sees what the
# instrumented code reads and writes, the libc calls it makes (memcpy, free,
# ...) and every pthread call from any library (locks and condition
# variables order accesses whoever takes them), so it checks openib-ng's
# own accesses in full but is blind inside Open MPI.
#
#   tsan_setup           the TSan copy of the component is loaded from now
#                        on; writes the rank wrapper $TSAN_RANK and sets
#                        $TSAN_LOGS (TSan's reports: $TSAN_LOGS/tsan.PID)
#   tsan_scan RE LABEL [WHAT]
#                        print every report under $TSAN_LOGS (then moved to
#                        $TSAN_LOGS/LABEL); sets TSAN_OURS (reports with a
#                        frame matching the ERE RE, which is WHAT, default
#                        "openib-ng code") and TSAN_ELSEWHERE
#   tsan_supp_check FILE every suppression in FILE says why, and none names
#                        openib-ng's code
#
# The rank wrapper: mpirun starts "$TSAN_RANK PROGRAM ARGS" instead of the
# program, so that only the MPI ranks load libtsan, not mpirun or orted (they
# are not ours, and a fork()ing launcher under TSan only adds noise). It runs
# the program with ASLR off (setarch -R): the TSan of GCC 12 expects
# application memory where the kernel puts it with at most 28 bits of mmap
# randomization (Debian 12's default, and the guest's kernel); kernels set to
# more (vm.mmap_rnd_bits = 32, as some newer distributions do) make it die
# with "FATAL: ThreadSanitizer: unexpected memory mapping".

# Our code in a report: a frame in our sources (paths as compiled in the
# build directory; btl_openib/, connect/, hmem/, our public headers) or in
# our component's module (which also covers Open MPI's inline functions
# compiled into it: a race there is a use of Open MPI's objects by our code).
# shellcheck disable=SC2034 # read by the tests
TSAN_OURS_RE='(^|[ /])(btl_openib|connect|hmem|include/openib)/[^ :]+:[0-9]+|\(mca_btl_openib\.so\+'

tsan_setup() {
	local so libtsan opts
	so=${OPENIB_TSAN_BUILDDIR:-}/.libs/mca_btl_openib.so
	[ -n "${OPENIB_TSAN_BUILDDIR:-}" ] && [ -f "$so" ] ||
		fail "no ThreadSanitizer build (OPENIB_TSAN_BUILDDIR=${OPENIB_TSAN_BUILDDIR:-unset}; run-all makes it with tests/tsan-build.sh)"
	libtsan=$(ldd "$so" | awk '/libtsan/ { print $3 }')
	[ -f "$libtsan" ] || fail "cannot find the libtsan that $so needs"
	export OMPI_MCA_mca_base_component_path="$OPENIB_TSAN_BUILDDIR/.libs:$OMPI_SYSTEM_COMPONENT_DIR"
	TSAN_LOGS=$OPENIB_TEST_TMP/tsan-logs
	mkdir -p "$TSAN_LOGS" || fail "cannot create $TSAN_LOGS"
	# halt_on_error=0: every report of the run, not only the first.
	# exitcode=0: the reports are judged from the logs (tsan_scan), so the
	#   exit status stays the program's own (a verification failure).
	# history_size=4: enough memory of past accesses that the second stack
	#   of a race is restored, not "[failed to restore the stack]".
	# second_deadlock_stack=1: a lock-order inversion shows both orders.
	# ignore_noninstrumented_modules=1: the libc calls that TSan intercepts
	#   (memcpy, free, pthread_mutex_init, ...) count only when made from
	#   instrumented code, i.e. ours. Open MPI hands a request's completion
	#   from the thread that progresses it to the thread that waits on it
	#   with its own atomics, which TSan cannot see (not instrumented);
	#   without this flag every such hand-off is "a race": the waiter's
	#   wait-sync object on its stack (pthread_mutex_init, then
	#   pthread_mutex_lock by the completing thread), the receive buffer
	#   that ob1 unpacked into and the application then frees or reuses.
	#   Locks and condition variables used by Open MPI still order our
	#   accesses; only its memory accesses through libc are no longer
	#   checked, as its own loads and stores never were (tests/tsan.supp).
	# Reports go to files (log_path), not into the MPI output; Suppressions
	# used are listed at the end of each rank's file.
	opts="halt_on_error=0 exitcode=0 history_size=4 second_deadlock_stack=1"
	opts="$opts ignore_noninstrumented_modules=1"
	opts="$opts log_path=$TSAN_LOGS/tsan suppressions=$OPENIB_SRCDIR/tests/tsan.supp"
	TSAN_RANK=$OPENIB_TEST_TMP/tsan-rank
	{
		echo '#!/bin/sh'
		echo '# One MPI rank under ThreadSanitizer (written by tsan_lib.sh).'
		if command -v setarch >/dev/null 2>&1; then
			echo "exec setarch $(uname -m) -R env LD_PRELOAD='$libtsan' TSAN_OPTIONS='$opts' \"\$@\""
		else
			echo "exec env LD_PRELOAD='$libtsan' TSAN_OPTIONS='$opts' \"\$@\""
		fi
	} >"$TSAN_RANK" && chmod +x "$TSAN_RANK" || fail "cannot write $TSAN_RANK"
	note "ThreadSanitizer: component $so, runtime $libtsan, options: $opts"
}

# tsan_scan RE LABEL [WHAT]: print the reports of the last run, count them.
tsan_scan() {
	local re=$1 label=$2 what=${3:-openib-ng code} counts=$OPENIB_TEST_TMP/tsan-counts
	local -a logs
	TSAN_OURS=0 TSAN_ELSEWHERE=0
	logs=("$TSAN_LOGS"/tsan.*)
	if [ ! -e "${logs[0]}" ]; then
		note "$label: ThreadSanitizer wrote no report"
		return 0
	fi
	# A report runs from its WARNING/ERROR/FATAL line to its SUMMARY line.
	# It is ours when a frame of the racing (or locking, or crashing)
	# stacks matches RE; the stacks that only say where the memory, a
	# mutex or a thread came from do not count (a thread leak excepted).
	awk -v re="$re" -v label="$label" -v what="$what" -v counts="$counts" '
		function flush() {
			if (!inrep) return
			n++
			printf "---- %s: ThreadSanitizer report %d (%s, %s) ----\n%s", label, n,
				ours ? "in " what : "elsewhere", file, body
			if (ours) o++; else e++
			inrep = 0
		}
		FNR == 1 { flush(); file = FILENAME; sub(/.*\//, "", file) }
		/^(==[0-9]+==)?(WARNING|ERROR|FATAL): ThreadSanitizer/ {
			flush(); inrep = 1; ours = 0; body = ""; ctx = 0
			leak = ($0 ~ /thread leak/)
		}
		/^Suppressions used:/ { flush(); supp = 1 }
		supp && NF { printf "%s: %s: %s\n", label, file, $0 }
		supp && !NF { supp = 0 }
		!inrep { next }
		{ body = body $0 "\n" }
		/^  [^ ]/ {
			ctx = ($0 ~ /^  (Location is|Mutex M[0-9]+ .*created at|Thread T[0-9]+ .*created by)/) && !leak
		}
		/^ +#[0-9]+ / && !ctx && $0 ~ re { ours = 1 }
		/^SUMMARY: ThreadSanitizer/ { flush() }
		END { flush(); printf "%d %d\n", o, e > counts }
	' "${logs[@]}" || fail "$label: cannot read the ThreadSanitizer logs"
	read -r TSAN_OURS TSAN_ELSEWHERE <"$counts" || fail "$label: no report count"
	mkdir -p "$TSAN_LOGS/$label" && mv "${logs[@]}" "$TSAN_LOGS/$label/" ||
		fail "cannot move the ThreadSanitizer logs aside"
	note "$label: $TSAN_OURS ThreadSanitizer report(s) in $what, $TSAN_ELSEWHERE elsewhere"
}

# tsan_supp_check FILE: each suppression has a comment right above it (the
# block of comment lines before it says what it hides and why it is not
# ours), and none could hide openib-ng's code. TSan matches a suppression
# against every frame of every stack of a report, thread creation stacks
# included, so a pattern naming our code, or a whole Open MPI library
# (every one of our threads and progress calls has Open MPI frames below
# it), would hide our own races.
tsan_supp_check() {
	awk '
		/^[[:space:]]*$/ { explained = 0; next }
		/^#/ { explained = 1; next }
		!explained { printf "%s:%d: suppression without a comment above it: %s\n", FILENAME, NR, $0; bad = 1 }
		/btl_openib|connect\/|hmem|openib|mca_btl/ {
			printf "%s:%d: suppression names openib-ng code: %s\n", FILENAME, NR, $0; bad = 1
		}
		/:[^:]*lib(open-pal|open-rte|mpi|c|pthread|tsan)(\.so[.0-9]*)?[[:space:]]*$/ {
			printf "%s:%d: suppression of a whole library: %s\n", FILENAME, NR, $0; bad = 1
		}
		!/^(race|race_top|thread|mutex|signal|deadlock|called_from_lib):[^[:space:]]+$/ {
			printf "%s:%d: not a TSan suppression line: %s\n", FILENAME, NR, $0; bad = 1
		}
		END { exit bad }
	' "$1"
}

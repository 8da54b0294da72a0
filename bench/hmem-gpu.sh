#!/bin/sh
# hmem-gpu.sh: the HMEM hooks on a machine with a GPU and its CUDA driver:
# build them there with a C compiler (scripts/hmem-gpu-build.sh; no Open MPI
# needed but for two tests), run every HMEM unit test against the real
# driver, and time the copy hooks against the driver's own copy
# (bench/hmem_copy_bench, pageable and pinned host memory).
#
# Usage: sh bench/hmem-gpu.sh OUTDIR [OMPI_DIR]
#   OUTDIR    gets log.txt (everything, in order), results.txt (the short
#             version: machine, test counts, the timing tables),
#             nvidia-smi.txt, bench-pageable.txt and bench-pinned.txt
#             (bench-MODE-N.txt with HMEM_GPU_RUNS)
#   OMPI_DIR  optional, as for scripts/hmem-gpu-build.sh; its lib/openmpi3
#             (Open MPI's opal components: shmem, reachable, patcher, ...)
#             is put on the component path of test_hmem_params
# Environment: HMEM_GPU_BUILDDIR (default OUTDIR/build), HMEM_GPU_REV (the
# source's revision, printed when SRC is a copy without git),
# HMEM_GPU_SAMPLES (default 200 per size and method),
# HMEM_GPU_SIZES (default 8,64,512,4K,32K,256K,2M,16M,64M),
# HMEM_GPU_RUNS (default 1: each benchmark run that many times, to see the
# spread between runs; then the files are bench-MODE-N.txt),
# HMEM_GPU_LIBCUDA (the benchmark's driver library, default libcuda.so.1;
# the fake, tests/unit/hmem/.libs/hmem_fake_cuda.so, tries the script out
# on a machine without a GPU).
# Exit status: 0 when no test failed and every timed copy moved the right
# bytes. A test that skips (77) is reported as SKIP with its reason; on a
# machine without a driver test_hmem_cuda and the benchmark skip.
set -u

SRC=$(cd "$(dirname "$0")/.." && pwd -P)
OUTDIR=${1:?usage: sh bench/hmem-gpu.sh OUTDIR [OMPI_DIR]}
OMPI=${2:-}
SAMPLES=${HMEM_GPU_SAMPLES:-200}
SIZES=${HMEM_GPU_SIZES:-8,64,512,4K,32K,256K,2M,16M,64M}
RUNS=${HMEM_GPU_RUNS:-1}
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd -P)
B=${HMEM_GPU_BUILDDIR:-$OUTDIR/build}
LOG=$OUTDIR/log.txt
RES=$OUTDIR/results.txt
: >"$LOG"
: >"$RES"
status=0

log() { echo "$*" | tee -a "$LOG"; }
res() { echo "$*" | tee -a "$RES" >>"$LOG"; }
run_logged() { # run_logged CMD...: output into the log, status returned
	"$@" >>"$LOG" 2>&1
}

log "== hmem-gpu.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) in $SRC"
res "# HMEM on a real GPU: bench/hmem-gpu.sh, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
# A copy of the source inside some other checkout is no checkout of ours.
if command -v git >/dev/null 2>&1 &&
	[ "$(git -C "$SRC" rev-parse --show-toplevel 2>/dev/null)" = "$SRC" ]; then
	res "source: git $(git -C "$SRC" rev-parse --short HEAD)"
elif [ -n "${HMEM_GPU_REV:-}" ]; then
	res "source: $HMEM_GPU_REV (a copy, no git checkout)"
fi

# ---- the machine --------------------------------------------------------
{
	echo "== machine"
	uname -a
	head -n 4 /etc/os-release 2>/dev/null
	ldd --version 2>&1 | head -n 1
	${CC:-gcc} --version | head -n 1
	grep -m1 'model name' /proc/cpuinfo
	nproc
} >>"$LOG" 2>&1
if command -v nvidia-smi >/dev/null 2>&1; then
	nvidia-smi >"$OUTDIR/nvidia-smi.txt" 2>&1
	{
		echo
		echo "nvidia-smi --query-gpu=name,driver_version,memory.total,pci.bus_id,pcie.link.gen.max,pcie.link.width.max --format=csv"
		nvidia-smi --query-gpu=name,driver_version,memory.total,pci.bus_id,pcie.link.gen.max,pcie.link.width.max --format=csv
		echo
		nvidia-smi -L
	} >>"$OUTDIR/nvidia-smi.txt" 2>&1
	cat "$OUTDIR/nvidia-smi.txt" >>"$LOG"
	res "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -n 1) (name, driver, memory)"
else
	echo "nvidia-smi: not found" >"$OUTDIR/nvidia-smi.txt"
	res "gpu: none (no nvidia-smi)"
fi
res "host: $(uname -srm); $(ldd --version 2>&1 | head -n 1); $(${CC:-gcc} --version | head -n 1)"

# ---- build ---------------------------------------------------------------
log "== build (scripts/hmem-gpu-build.sh $B ${OMPI:-})"
if ! run_logged sh "$SRC/scripts/hmem-gpu-build.sh" "$B" ${OMPI:+"$OMPI"}; then
	res "build: FAILED (see log.txt)"
	exit 1
fi
res "build: $(tail -n 1 "$LOG")"
res "test_hmem_cuda links: $(ldd "$B/tests/unit/hmem/test_hmem_cuda" | awk '{print $1}' | tr '\n' ' ')"

# ---- unit tests ------------------------------------------------------------
log "== unit tests"
export OPENIB_BUILDDIR="$B" OPENIB_SRCDIR="$SRC"
if [ -n "$OMPI" ]; then
	OMPI=$(cd "$OMPI" && pwd -P)
	export LD_LIBRARY_PATH="$OMPI/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	export OMPI_MCA_mca_base_component_path="$OMPI/lib/openmpi3"
fi
pass=0 fail=0 skip=0
res ""
res "| test | result | last line |"
res "|------|--------|-----------|"
for t in ops iov abi plugin counting params cuda_fake cuda_on_fake cuda cache app app_posix; do
	bin=$B/tests/unit/hmem/test_hmem_$t
	if [ ! -x "$bin" ]; then
		res "| test_hmem_$t | NOT BUILT | needs Open MPI (OMPI_DIR not given) |"
		continue
	fi
	log "-- test_hmem_$t"
	timeout -k 10 300 "$bin" >"$OUTDIR/.t.out" 2>&1
	rc=$?
	cat "$OUTDIR/.t.out" >>"$LOG"
	last=$(grep -v '^ *$' "$OUTDIR/.t.out" | tail -n 1 | tr '|' '/')
	case $rc in
	0) r=PASS pass=$((pass + 1)) ;;
	77) r=SKIP skip=$((skip + 1)) ;;
	*) r="FAIL (exit $rc)" fail=$((fail + 1)) status=1 ;;
	esac
	log "-- test_hmem_$t: $r"
	res "| test_hmem_$t | $r | $last |"
done
rm -f "$OUTDIR/.t.out"
res ""
res "unit tests: $pass passed, $fail failed, $skip skipped"
if [ -e /dev/nvidiactl ] && grep -q '^| test_hmem_cuda | SKIP' "$RES"; then
	res "test_hmem_cuda skipped on a machine with an NVIDIA device: that is a failure here"
	status=1
fi

# ---- the copy benchmark ------------------------------------------------------
run=1
while [ "$run" -le "$RUNS" ]; do
for m in pageable pinned; do
	f=$OUTDIR/bench-$m.txt
	[ "$RUNS" -eq 1 ] || f=$OUTDIR/bench-$m-$run.txt
	log "== bench/hmem_copy_bench -m $m -n $SAMPLES -s $SIZES (run $run of $RUNS)"
	timeout -k 10 480 "$B/bench/hmem_copy_bench" -m "$m" -n "$SAMPLES" -s "$SIZES" \
		${HMEM_GPU_LIBCUDA:+-l "$HMEM_GPU_LIBCUDA"} >"$f" 2>&1
	rc=$?
	cat "$f" >>"$LOG"
	res ""
	res "## copy timings, host memory $m (bench/hmem_copy_bench -m $m -n $SAMPLES; run $run of $RUNS: $(basename "$f")), exit $rc"
	grep '^#\|^detect\|^SKIP' "$f" | grep -v '^# dir' >>"$RES"
	res ""
	res "| dir | bytes | cuMemcpy median [q1, q3] us | hook | detect+hook | cuMemcpyAsync+sync | override (async) | hook - cuMemcpy | detect+hook - cuMemcpy | override - cuMemcpyAsync |"
	res "|-----|------:|------|------|------|------|------|------:|------:|------:|"
	awk '!/^#/ && !/^detect/ && NF >= 10 {
		key = $1 " " $3
		if (!(key in seen)) { seen[key] = 1; order[++n] = key }
		cell[key, $4] = sprintf("%.2f [%.2f, %.2f]", $5, $6, $7)
		med[key, $4] = $5
		if ($10 != "ok") bad = 1
	}
	END {
		split("cuMemcpy hook detect+hook cuMemcpyAsync override", ms, " ")
		for (i = 1; i <= n; i++) {
			split(order[i], k, " ")
			line = "| " k[1] " | " k[2] " |"
			for (j = 1; j <= 5; j++) line = line " " cell[order[i], ms[j]] " |"
			# differences of medians, us
			line = line sprintf(" %+.2f | %+.2f | %+.2f |",
				med[order[i], "hook"] - med[order[i], "cuMemcpy"],
				med[order[i], "detect+hook"] - med[order[i], "cuMemcpy"],
				med[order[i], "override"] - med[order[i], "cuMemcpyAsync"])
			print line
		}
		if (bad) print "WRONG DATA in some row: see bench-*.txt"
	}' "$f" >>"$RES"
	case $rc in
	0) ;;
	77) res "benchmark skipped: $(grep -m1 SKIP "$f")" ;;
	*) status=1 ;;
	esac
done
run=$((run + 1))
done
log "== done: exit $status"
exit $status

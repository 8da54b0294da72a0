#!/bin/bash
# Issue 19 experiment 4, one guest boot: the eager ring's slot count, 32 (the
# old default) against 64, alternated over 6 rounds: openib_bench 8 B message
# rate (windows of 64) for 1 pair and for 4 pairs, and 8 B latency; with the
# per-port statistics at finalize (btl_openib_verbose 10) of each 1-pair run.
. /work/main/tests/integration/lib.sh
export OMPI_MCA_mca_base_component_path="/work/main/.libs:$OMPI_SYSTEM_COMPONENT_DIR"
B=/work/diag/openib_bench
OUT=${OUT:-/work/diag/out4}; mkdir -p "$OUT"
OIB=("${MPI_OPENIB_ARGS[@]}" --mca btl_openib_cpc_include oob)
for i in 1 2 3 4 5 6; do
  for s in 32 64; do
    timeout 300 "${MPIRUN[@]}" "${OIB[@]}" --mca btl_openib_eager_rdma_slots $s --mca btl_openib_verbose 10 \
      "$B" --csv -t lat,rate -m 8 -M 8 >"$OUT/s$s.$i.csv" 2>"$OUT/s$s.$i.err"
    rc1=$?
    timeout 300 mpirun --allow-run-as-root --oversubscribe -np 8 "${OIB[@]}" --mca btl_openib_eager_rdma_slots $s \
      "$B" --csv -t rate -m 8 -M 8 >"$OUT/s$s-x4.$i.csv" 2>"$OUT/s$s-x4.$i.err"
    rc4=$?
    printf "slots %s round %s rc=%s/%s: " $s $i $rc1 $rc4
    awk -F, '$2=="lat"||$2=="rate"||$2=="ratex4"{printf "%s=%s ", $2, $6}' "$OUT/s$s.$i.csv" "$OUT/s$s-x4.$i.csv"
    grep statistics "$OUT/s$s.$i.err" | sed -E 's/.*sends ([0-9]+) \([0-9]+ bytes, ([0-9]+) inline.*credit writes ([0-9]+).*/[sends \1 off-ring \2 credit-writes \3]/' | tr '\n' ' '
    echo
  done
done

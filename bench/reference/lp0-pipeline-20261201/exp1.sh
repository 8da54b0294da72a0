#!/bin/bash
# Issue 19 experiment 1, one guest boot, alternated rounds:
#  A) large messages with mpi_leave_pinned 0: ob1's rndv + put pipeline under
#     the current btl_rdma_pipeline_* defaults and alternatives, lp auto as control
#  B) 8 B message rate and latency against the eager ring's slot count
# Run 2026-12-01 on main 1d5d061 (the component as at that commit):
#   cd /work/diag && mpicc -O2 -Wall -o openib_bench bench/openib_bench.c
#   tests/guest/openib-guest -- bash exp1.sh   (its output: exp1.log)
# The B part's 4-pair rows are in the CSVs as "ratex4" (the awk in this
# script looked for "rate" and printed nothing for them); exp4.sh in
# ../ring-slots-20261201 measured the ring again, 6 rounds.
. /work/main/tests/integration/lib.sh
export OMPI_MCA_mca_base_component_path="/work/main/.libs:$OMPI_SYSTEM_COMPONENT_DIR"
B=/work/diag/openib_bench
OUT=${OUT:-/work/diag/out1}; mkdir -p $OUT
OIB=(--mca pml ob1 --mca btl 'openib,self' --mca btl_openib_cpc_include oob)
mpirun --allow-run-as-root -np 2 "${OIB[@]}" --mca btl_openib_verbose 10 $B -t lat -m 8 -M 8 -i 10 -n 10 2>&1 | grep -m2 -i leave_pinned
mpirun --allow-run-as-root -np 2 "${OIB[@]}" --mca mpi_leave_pinned 0 --mca btl_openib_verbose 10 $B -t lat -m 8 -M 8 -i 10 -n 10 2>&1 | grep -m2 -i leave_pinned
cfg_args() {
  case $1 in
    lpauto) echo "" ;;
    lp0) echo "--mca mpi_leave_pinned 0" ;;
    lp0-send0) echo "--mca mpi_leave_pinned 0 --mca btl_openib_rdma_pipeline_send_length 0" ;;
    lp0-send128k) echo "--mca mpi_leave_pinned 0 --mca btl_openib_rdma_pipeline_send_length 131072" ;;
    lp0-rget) echo "--mca mpi_leave_pinned 0 --mca btl_openib_min_rdma_pipeline_size 1073741824" ;;
    ring32) echo "" ;;
    ring64) echo "--mca btl_openib_eager_rdma_slots 64" ;;
    ring128) echo "--mca btl_openib_eager_rdma_slots 128" ;;
  esac
}
for i in 1 2 3; do
  for c in lpauto lp0 lp0-send0 lp0-send128k lp0-rget; do
    # shellcheck disable=SC2046
    timeout 600 mpirun --allow-run-as-root --oversubscribe -np 2 "${OIB[@]}" $(cfg_args $c) \
      $B --csv -t lat,uni -m 256K -M 16M --big-samples 10 -n 20 > $OUT/$c.$i.csv 2>$OUT/$c.$i.err
    printf "%s %s rc=%s: " $c $i $?; awk -F, '$2=="lat"||$2=="uni"{printf "%s%s=%.4g ", $2, $1, $6}' $OUT/$c.$i.csv; echo
  done
  for c in ring32 ring64 ring128; do
    v=""; [ $i = 1 ] && v="--mca btl_openib_verbose 10"
    # shellcheck disable=SC2046
    timeout 600 mpirun --allow-run-as-root --oversubscribe -np 2 "${OIB[@]}" $(cfg_args $c) $v \
      $B --csv -t lat,rate -m 8 -M 8 > $OUT/$c.$i.csv 2>$OUT/$c.$i.err
    printf "%s %s rc=%s: " $c $i $?; awk -F, '$2=="lat"||$2=="rate"{printf "%s%s=%.4g ", $2, $1, $6}' $OUT/$c.$i.csv; echo
    # shellcheck disable=SC2046
    timeout 600 mpirun --allow-run-as-root --oversubscribe -np 8 "${OIB[@]}" $(cfg_args $c) \
      $B --csv -t rate -m 8 -M 8 > $OUT/$c-x4.$i.csv 2>$OUT/$c-x4.$i.err
    printf "%s-x4 %s rc=%s: " $c $i $?; awk -F, '$2=="rate"{printf "%s%s=%.4g ", $2, $1, $6}' $OUT/$c-x4.$i.csv; echo
  done
done

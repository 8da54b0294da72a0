#!/bin/bash
# Issue 19: the 8 B message rate of 4 pairs at once on ONE guest (2 vCPUs,
# 8 ranks: ranks 0-3 send to 4-7), where openib was 0.83-0.88x UCX in the
# one-node table.  Question: is the gap the cost of 8 ranks busy-polling on
# 2 vCPUs (then yielding when idle moves it), or openib's own?  Every
# transport with and without mpi_yield_when_idle 1, alternated, 3 rounds,
# one boot:
#   cd /work/diag/pairs1 && /work/main/tests/guest/openib-guest -- bash exp.sh
. /work/main/tests/integration/lib.sh
export OMPI_MCA_mca_base_component_path="/work/main/.libs:$OMPI_SYSTEM_COMPONENT_DIR"
B=/work/diag/pairs1/openib_bench
OUT=${OUT:-/work/diag/pairs1/out}; mkdir -p $OUT
for i in 1 2 3; do
  for y in 0 1; do
    for c in oob rdma_cm ucx; do
      case $c in
        ucx) args=("${MPI_UCX_ARGS[@]}") ;;
        *) args=("${MPI_OPENIB_ARGS[@]}" --mca btl_openib_cpc_include "$c") ;;
      esac
      t0=$(date +%s)
      timeout -k 10 600 mpirun --allow-run-as-root --oversubscribe -np 8 --mca mpi_yield_when_idle $y \
        "${args[@]}" $B --csv --tests rate -m 8 -M 8 > $OUT/$c.y$y.$i.csv 2>$OUT/$c.y$y.$i.err
      rc=$?
      printf "%s yield=%s round %s rc=%s %ss: " $c $y $i $rc $(( $(date +%s) - t0 )); grep -E '^8,ratex4' $OUT/$c.y$y.$i.csv | tr '\n' ' '; echo
    done
  done
done

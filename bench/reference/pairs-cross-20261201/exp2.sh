#!/bin/bash
# Issue 19 experiment 2, one boot of the two-node bed: the 8 B message rate of
# 4 pairs at once across the bed (ranks 0-3 on node1 send to 4-7 on node2),
# every transport with mpi_yield_when_idle 1 (4 spinning ranks per 1-vCPU
# guest starve the kernel's rxe and the guest's sshd otherwise), 3 rounds.
# Run 2026-12-01 on main c69100a in one boot of the bed:
#   cd /work/diag && tests/guest/openib-guest --nodes 2 -- bash exp2.sh
# (openib_bench built from bench/openib_bench*.c at that commit).
. /work/main/tests/integration/lib.sh
need_nodes 2
export OMPI_MCA_mca_base_component_path="/work/main/.libs:$OMPI_SYSTEM_COMPONENT_DIR"
B=/work/diag/openib_bench
OUT=${OUT:-/work/diag/out2}; mkdir -p $OUT
H="${BED_NODES[0]}:4,${BED_NODES[1]}:4"
for i in 1 2 3; do
  for c in oob rdma_cm ucx tcp; do
    case $c in
      ucx) args=("${MPI_UCX_ARGS[@]}") ;;
      tcp) args=("${MPI_TCP_ARGS[@]}") ;;
      *) args=("${MPI_OPENIB_ARGS[@]}" --mca btl_openib_cpc_include "$c") ;;
    esac
    t0=$(date +%s)
    timeout -k 10 600 mpirun --allow-run-as-root --oversubscribe -np 8 --host "$H" --mca mpi_yield_when_idle 1 \
      "${args[@]}" $B --csv --tests rate -m 8 -M 8 > $OUT/$c.$i.csv 2>$OUT/$c.$i.err
    rc=$?
    printf "%s %s rc=%s %ss: " $c $i $rc $(( $(date +%s) - t0 )); grep -E '^8,ratex4|^# verif|rank 0 on' $OUT/$c.$i.csv | tr '\n' ' '; echo
    ssh -o ConnectTimeout=10 "${BED_NODES[1]}" uptime || echo "node2 does not answer"
  done
done

#!/bin/bash
# Issue 19 experiment 3, one guest boot: user-space instructions per received
# message of a 4 KiB uni-directional stream (windows of 16 MPI_Isend/Irecv,
# openib oob), before (wt-old: reposts one ibv_post_srq_recv per buffer) and
# after (main: one chain per CQ poll), callgrind inside run_uni only, N and 2N
# windows: (Ir(2N) - Ir(N)) / (16 N) per rank. Then the ring's slot counters
# of an 8 B rate run with 32 and 64 slots (btl_openib_verbose 10 statistics).
. /work/main/tests/integration/lib.sh
OUT=${OUT:-/work/diag/out3}; mkdir -p $OUT
B=/work/diag/openib_bench
N=${N:-60}
for t in old new; do
  lib=/work/main/.libs; [ $t = old ] && lib=/work/wt-old/.libs
  for n in $N $((2 * N)); do
    OMPI_MCA_mca_base_component_path="$lib:$OMPI_SYSTEM_COMPONENT_DIR" timeout 1800 "${MPIRUN[@]}" \
      "${MPI_OPENIB_ARGS[@]}" --mca btl_openib_cpc_include oob \
      valgrind --tool=callgrind --toggle-collect=run_uni \
      --callgrind-out-file="$OUT/cg.$t.$n.%q{OMPI_COMM_WORLD_RANK}" \
      $B -t uni -m 4K -M 4K -b $n -n $n -x 4 --csv > $OUT/$t.$n.csv 2>$OUT/$t.$n.err
    echo "$t $n rc=$? $(grep '^# verif' $OUT/$t.$n.csv)"
  done
  for r in 0 1; do
    a=$(awk '/^summary:|^totals:/{print $2; exit}' $OUT/cg.$t.$N.$r)
    b=$(awk '/^summary:|^totals:/{print $2; exit}' $OUT/cg.$t.$((2 * N)).$r)
    echo "$t rank $r: $(( (b - a) / (16 * N) )) instructions per message (Ir $a -> $b)"
  done
done
export OMPI_MCA_mca_base_component_path="/work/main/.libs:$OMPI_SYSTEM_COMPONENT_DIR"
for s in 32 64; do
  "${MPIRUN[@]}" "${MPI_OPENIB_ARGS[@]}" --mca btl_openib_cpc_include oob --mca btl_openib_eager_rdma_slots $s \
    --mca btl_openib_verbose 10 $B --csv -t rate -m 8 -M 8 > $OUT/ring$s.csv 2> $OUT/ring$s.err
  echo "slots $s rc=$? $(grep '^8,rate' $OUT/ring$s.csv)"; grep statistics $OUT/ring$s.err | sed 's/.*statistics: //' | cut -c1-150
done

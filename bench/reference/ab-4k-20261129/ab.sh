#!/bin/bash
# A/B in one guest boot, alternated: this tree (new) and e029446 (old, the
# tree of bench/reference/20261124-093942), each with oob and rdma_cm;
# openib_bench lat+uni 1 KiB..64 KiB, 4 rounds.  A one-off diagnostic,
# kept as the record of how summary.txt and the CSVs here were made
# (2026-11-29, this tree = ca422b9):
#   git worktree add /work/wt-old e029446 && sh /work/wt-old/scripts/build.sh
#   cd /work/diag && tests/guest/openib-guest -- bash ab.sh
# openib_bench is the binary the main job built for
# bench/reference/20261129-112229 (bench/openib_bench.c at ca422b9).
OUT=${OUT:-/work/diag/out}; mkdir -p $OUT
SYS=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
B=/work/main/bench/results/20261129-112229/openib_bench
for i in 1 2 3 4; do
  for t in new old; do
    for c in oob rdma_cm; do
      lib=/work/main/.libs; [ $t = old ] && lib=/work/wt-old/.libs
      OMPI_MCA_mca_base_component_path="$lib:$SYS" timeout 300 mpirun --allow-run-as-root --oversubscribe -np 2 \
        --mca pml ob1 --mca btl openib,self --mca btl_openib_cpc_include $c \
        $B --csv -t lat,uni -m 1K -M 64K -i 500 -b 100 > $OUT/$t-$c.$i.csv 2>$OUT/$t-$c.$i.err
      printf "%s %s %s rc=%s: " $t $c $i $?; awk -F, '$2=="lat"||$2=="uni"{printf "%s%s=%.1f ", $2, $1, $6}' $OUT/$t-$c.$i.csv; echo
    done
  done
done

#!/bin/bash
# One-off diagnostic, 2026-11-29, tree a29b404: in one guest boot
# (cd /work/diag && /work/main/tests/guest/openib-guest -- bash modes.sh),
# 6 alternating runs of openib_bench uni at 4 KiB alone, openib (oob) and
# UCX, with /proc/softirqs and the ksoftirqd threads' CPU ticks around each.
# The printed lines (bandwidth MiB/s, TASKLET/NET_RX per CPU, ksoftirqd
# ticks before and after) are in summary.txt.
# per run: uni 4 KiB bandwidth, and what the kernel's deferred work did meanwhile
. /work/main/tests/integration/lib.sh
export OMPI_MCA_mca_base_component_path="/work/main/.libs:$OMPI_SYSTEM_COMPONENT_DIR"
B=/work/diag/openib_bench
snap() {
  awk '/TASKLET|NET_RX/{printf "%s %s %s ", $1, $2, $3}' /proc/softirqs
  for p in $(pgrep ksoftirqd); do awk '{printf "%s:%d ", $2, $14+$15}' /proc/$p/stat; done
  echo
}
for i in 1 2 3 4 5 6; do
  for cfg in oob ucx; do
    a=$(snap)
    if [ $cfg = ucx ]; then args=("${MPI_UCX_ARGS[@]}"); else args=(--mca pml ob1 --mca btl 'openib,self' --mca btl_openib_cpc_include oob); fi
    timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 "${args[@]}" $B --csv -t uni -m 4K -M 4K -b 300 > m.$cfg.$i.csv 2>m.$cfg.$i.err
    b=$(snap)
    bw=$(awk -F, '$2=="uni"{print $6}' m.$cfg.$i.csv)
    echo "$cfg $i bw=$bw | before: $a | after: $b"
  done
done

#!/bin/bash
for i in 1 2 3 4 5 6; do
 for c in 00 10 11 01; do
  rh=${c:0:1}; dh=${c:1:1}
  env $( [ $rh = 0 ] && echo RXP_NO_HUGEPAGE=1 ) $( [ $dh = 0 ] && echo RXP_BENCH_DPDK_NO_HUGE=1 ) RXP_BENCH_HEADLINE=1 RXP_BENCH_NO_INSTR=1 /tmp/h5/bin --runs 5 --outdir /tmp/h5/$c.$i >/tmp/h5/$c.$i.out 2>&1 || echo fail $c $i
 done
done

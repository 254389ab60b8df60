#!/usr/bin/env bash
# Third pass (2026-11-24): torchsparse fp16 weight-gradient kernels, stores as written vs
# conflict-free stores (timing and ncu shared-store wavefronts).
set -u
OUT=${OUT:-gpu_out}; mkdir -p "$OUT"; G=bench/triage/gpu; B=build/triage_gpu
M=l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,gpu__time_duration.sum
for v in orig store; do
  nvcc -O3 -arch=sm_90 -std=c++17 -I$B -include $B/wg_$v.cuh $G/wgrad_bench.cu -o /tmp/wg_$v 2>/dev/null
  /tmp/wg_$v | sed "s/^/wg_$v /" | tee -a "$OUT/wgrad.txt"
  PROFILE=1 ncu --metrics $M --csv /tmp/wg_$v 2>/dev/null | grep '^"[0-9]' | \
    awk -F'","' -v v=$v '{split($5, k, "("); print v, k[1], $13, $15}' >> "$OUT/wgrad_ncu.txt"
done
cat "$OUT/wgrad_ncu.txt"

#!/usr/bin/env bash
# On the GPU machine, from the repository root, with build/triage_gpu carried:
#   bash bench/triage/gpu/run.sh   (writes to $OUT, default ./gpu_out)
set -u
OUT=${OUT:-gpu_out}; mkdir -p "$OUT"
G=bench/triage/gpu; B=build/triage_gpu
ARCH=${ARCH:-sm_90}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"
nvcc --version | tail -2 >> "$OUT/device.txt"
which ncu >> "$OUT/device.txt" 2>&1
for v in orig store frag reduce; do
  nvcc -O3 -arch=$ARCH -std=c++17 -I$B -include $B/ts_$v.cuh $G/torchsparse_bench.cu \
       -o /tmp/ts_$v 2> "$OUT/build_ts_$v.log" || { echo "build ts_$v failed"; tail -5 "$OUT/build_ts_$v.log"; }
done
nvcc -O3 -arch=$ARCH -std=c++17 -I$B $G/micro.cu -o /tmp/micro -Xptxas -v 2> "$OUT/build_micro.log" || tail -20 "$OUT/build_micro.log"
for v in orig store frag reduce; do
  [ -x /tmp/ts_$v ] && /tmp/ts_$v | sed "s/^/ts_$v /" | tee -a "$OUT/timings.txt"
done
/tmp/micro | tee -a "$OUT/timings.txt"
# shared-memory wavefronts and bank conflicts, per kernel (first launch of each)
if command -v ncu > /dev/null; then
  M=l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum,gpu__time_duration.sum
  for v in orig store frag reduce; do
    [ -x /tmp/ts_$v ] && PROFILE=1 timeout 240 ncu --metrics $M \
       --csv /tmp/ts_$v > "$OUT/ncu_ts_$v.csv" 2> "$OUT/ncu_ts_$v.err" &
    wait
  done
fi
# ptxas stack frames of the CL204 findings
grep -A2 "knn" "$OUT/build_micro.log" | head -20 > "$OUT/ptxas_knn.txt"
python3 bench/triage/gpu/summarize.py "$OUT"
mkdir -p "$OUT/raw" && mv "$OUT"/ncu_* "$OUT"/build_ts_* "$OUT/raw/" && tar -czf "$OUT/raw.tgz" -C "$OUT" raw && rm -rf "$OUT/raw"

#!/usr/bin/env bash
# Final triage pass (bench/triage/sheet-final.md), on the GPU machine from the repository
# root with build/triage_gpu carried (prepare.py, then final_prepare.py):
#   bash bench/triage/gpu/final_run.sh        (writes to $OUT, default ./gpu_out)
# COMPILE_ONLY=1 builds everything and stops (for a machine without a GPU).
# Times torchsparse's setting1 kernels with the kernel map as written and transposed
# (CL201 on out_in_map loads) and, for the tf32 forward kernel, with the fragment loads at a
# 36-float row stride (prepare.py's frag variant: CL202 on line 768), and reads ncu's time,
# global-load traffic and shared-load wavefronts per kernel.
set -u
OUT=${OUT:-gpu_out}; mkdir -p "$OUT"
G=bench/triage/gpu; B=build/triage_gpu; ARCH=${ARCH:-sm_90}
for v in orig map frag; do
  nvcc -O3 -arch=$ARCH -std=c++17 -I$B -include $B/ts_$v.cuh $G/map_bench.cu -o /tmp/fwd_$v \
    2> "$OUT/build_fwd_$v.log" || { echo "build fwd_$v failed"; grep -i error "$OUT/build_fwd_$v.log" | head -5; }
  [ $v = frag ] || nvcc -O3 -arch=$ARCH -std=c++17 -I$B -include $B/wg_$v.cuh $G/wgrad_bench.cu -o /tmp/wg_$v \
    2> "$OUT/build_wg_$v.log" || { echo "build wg_$v failed"; grep -i error "$OUT/build_wg_$v.log" | head -5; }
done
[ -n "${COMPILE_ONLY:-}" ] && { ls -la /tmp/fwd_* /tmp/wg_*; exit 0; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"
nvcc --version | tail -2 >> "$OUT/device.txt"
# alternate the variants so that clocks and caches treat both alike
for round in 1 2 3; do
  for v in orig map frag; do
    /tmp/fwd_$v | sed "s/^/fwd_$v /" >> "$OUT/map_timings.txt"
    [ $v = frag ] || /tmp/wg_$v | sed "s/^/wg_$v /" >> "$OUT/map_timings.txt"
  done
done
cat "$OUT/map_timings.txt"
if command -v ncu > /dev/null; then
  M=gpu__time_duration.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,lts__t_sectors_srcunit_tex_op_read.sum,dram__bytes_read.sum
  for v in orig map frag; do
    PROFILE=1 timeout 100 ncu --metrics $M --csv /tmp/fwd_$v > "$OUT/ncu_fwd_$v.csv" 2> "$OUT/ncu_fwd_$v.err"
    [ $v = frag ] || PROFILE=1 timeout 100 ncu --metrics $M --csv /tmp/wg_$v > "$OUT/ncu_wg_$v.csv" 2> "$OUT/ncu_wg_$v.err"
  done
  for f in "$OUT"/ncu_*.csv; do
    echo "== $(basename $f)"
    grep '^"[0-9]' "$f" | awk -F'","' '{split($5, k, "("); print k[1], $(NF-2), $NF}' | tr -d '"'
  done | tee "$OUT/map_ncu.txt"
fi

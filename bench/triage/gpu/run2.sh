#!/usr/bin/env bash
# Second pass (2026-11-24): SASS of the f32 SIMT kernels (is the A_shared load vectorised?),
# FP64 instructions of the CL403 term, and the marching-cubes CL204 analog.
set -u
OUT=${OUT:-gpu_out}; mkdir -p "$OUT"; G=bench/triage/gpu; B=build/triage_gpu
for v in orig reduce; do
  nvcc -O3 -arch=sm_90 -std=c++17 -cubin -I$B -include $B/ts_$v.cuh $G/torchsparse_bench.cu -o /tmp/ts_$v.cubin
  cuobjdump -sass /tmp/ts_$v.cubin | awk '/Function :/ {f=$3} /LDS/ {match($0, /LDS[.A-Z0-9]*/); c[f" "substr($0, RSTART, RLENGTH)]++} END {for (k in c) print k, c[k]}' \
    | grep f32f32f32 | sort | sed "s/^/$v /" >> "$OUT/sass_lds.txt"
done
nvcc -O3 -arch=sm_90 -std=c++17 -cubin -I$B $G/micro.cu -o /tmp/micro.cubin
for f in '_Z4termILb1EEvPKfS1_Pfi' '_Z4termILb0EEvPKfS1_Pfi'; do
  echo "$f $(cuobjdump -sass -fun $f /tmp/micro.cubin | grep -cE 'DADD|DMUL|DFMA|MUFU.RCP64H|F2F.F64|F2F.F32.F64')" >> "$OUT/sass_fp64.txt"
done
nvcc -O3 -arch=sm_90 $G/mcubes.cu -o /tmp/mcubes -Xptxas -v 2> "$OUT/mcubes_ptxas.txt"
/tmp/mcubes > "$OUT/mcubes.txt"
cat "$OUT"/sass_lds.txt "$OUT"/sass_fp64.txt "$OUT"/mcubes.txt; grep -A1 "properties for _Z3tri" "$OUT/mcubes_ptxas.txt"

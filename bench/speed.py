"""Lines per second, cold (no cache) and warm (cache), against tree-sitter parsing alone.

    python bench/speed.py                 # a generated corpus (default 200 files)
    python bench/speed.py PATH [PATH...]  # real code checked out locally
    python bench/speed.py --jobs 2

Prints one table; nothing here is a pass/fail test.
"""
from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KERNEL = """
#define TILE_{n} 32
template <int B = 256>
__global__ void __launch_bounds__(B) kernel_{n}(const float* __restrict__ in, float* out,
                                                 int n, int ld) {{
  __shared__ float tile[TILE_{n}][TILE_{n} + 1];
  int x = blockIdx.x * TILE_{n} + threadIdx.x;
  int y = blockIdx.y * TILE_{n} + threadIdx.y;
  for (int j = 0; j < TILE_{n}; j += 8)
    tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * ld + x];
  __syncthreads();
  float v = tile[threadIdx.x][threadIdx.y];
  for (int o = 16; o > 0; o /= 2) v += __shfl_down{legacy}(v, o);
  if (x < n) out[y * ld + x] = v * 0.5f;
}}

void launch_{n}(const float* in, float* out, int n, int ld) {{
  dim3 block(32, 8);
  kernel_{n}<<<dim3(n / 32, n / 32), block>>>(in, out, n, ld);
}}
"""


def generate(folder: Path, files: int, kernels_per_file: int = 20) -> None:
    rnd = random.Random(0)
    for f in range(files):
        body = "".join(KERNEL.format(n=f * 1000 + k, legacy="" if rnd.random() < 0.1 else
                                     "_sync_placeholder")
                       for k in range(kernels_per_file))
        body = body.replace("__shfl_down_sync_placeholder(", "__shfl_down_sync(0xffffffff, ")
        (folder / f"gen_{f:04d}.cu").write_text(body)


def count_lines(paths: list[Path]) -> tuple[int, list[Path]]:
    files = [p for root in paths for p in ([root] if root.is_file() else root.rglob("*"))
             if p.suffix in (".cu", ".cuh", ".py") and p.is_file()]
    return sum(p.read_bytes().count(b"\n") + 1 for p in files), files


def parse_only(files: list[Path]) -> float:
    from cudalint.parse import parse
    start = time.perf_counter()
    for p in files:
        if p.suffix != ".py":
            parse(p.read_bytes())
    return time.perf_counter() - start


def run_cli(paths: list[Path], jobs: int, cache: bool, cwd: Path) -> float:
    cmd = [sys.executable, "-m", "cudalint", "check", *map(str, paths), "--exit-zero",
           "--output-format", "concise", "-j", str(jobs)]
    if not cache:
        cmd.append("--no-cache")
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="*", type=Path)
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="cudalint-bench-"))
    try:
        paths = [p.resolve() for p in args.paths]
        if not paths:
            generate(tmp, args.files)
            paths = [tmp]
        lines, files = count_lines(paths)
        parse_s = parse_only(files)
        shutil.rmtree(tmp / ".cudalint_cache", ignore_errors=True)
        cold = run_cli(paths, args.jobs, cache=True, cwd=tmp)
        warm = run_cli(paths, args.jobs, cache=True, cwd=tmp)
        print(f"files            {len(files)}")
        print(f"lines            {lines}")
        print(f"parse only (1 core)  {parse_s:8.2f} s  {lines / parse_s:12,.0f} lines/s")
        print(f"cudalint cold ({args.jobs} jobs) {cold:8.2f} s  {lines / cold:12,.0f} lines/s")
        print(f"cudalint warm ({args.jobs} jobs) {warm:8.2f} s  {lines / warm:12,.0f} lines/s")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

"""GPU timing for CL203: run time of each fixture kernel of fixtures/CL203/aliasing.cu
(reloads, kept stores) and fixtures/CL203/vector_split.cu (split vector loads) as written
and after ``cudalint --unsafe-fixes`` (the `__restrict__` the finding asks for).

The sources come from a plan written here (no GPU needed):

    python tools/gputruth/restrict_timing.py --plan            # tools/gputruth/restrict_plan.json
    python tools/gputruth/restrict_timing.py --compile-only    # build the driver, run nothing
    python tools/gputruth/restrict_timing.py --out $OUT        # on the GPU machine

With ``--fixture vector`` the same for vector_split.cu (plan
tools/gputruth/restrict_vector_plan.json, output vector_timing.json), each kernel at two
sizes: 2^24 elements (the data streams from DRAM) and 2^18 (it stays in the 50 MB L2,
where the number of load instructions matters more than the bytes).

On the GPU machine the script needs only nvcc: it puts both versions of the fixture in
one translation unit (namespaces ``orig`` and ``fixd``), with a generated host driver
that launches each kernel on 2^24-element inputs, checks that both versions write the
same bytes (non-atomic kernels), and times 35 launches of each, alternating, with CUDA
events after 3 warm-up launches. Output: one JSON file (median and minimum milliseconds,
the ratio as written / fixed, the GPU's name), committed as fixtures/CL203/timing.json.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLAN = Path(__file__).with_name("restrict_plan.json")
FIXTURE = ROOT / "fixtures" / "CL203" / "aliasing.cu"
VECTOR_PLAN = Path(__file__).with_name("restrict_vector_plan.json")
VECTOR_FIXTURE = ROOT / "fixtures" / "CL203" / "vector_split.cu"
RUNS = 35
WARMUP = 3

# kernel -> (launch arguments in terms of the driver's buffers, grid, block, atomic)
CASES = {
    "split": ("(const float*)A, (float*)B, N", "N / 256", 256, False),
    "split3": ("(float*)A, (float*)B, N", "N / 256", 256, False),
    "quantize": ("(const float*)A, (int*)B, N", "N / 256", 256, False),
    "interleave": ("(const float*)A, (float*)B, N", "N / 256", 256, False),
    "around_barrier": ("(const float*)A, (float*)B", "N / 256", 256, False),
    "gemv": ("(const float*)A, (const float*)C, (float*)B, ROWS, COLS", "ROWS / 256", 256,
             False),
    "taps5": ("(const float*)C, (const float*)A, (float*)B", "N / 256", 256, False),
    "scatter_grad": ("(const float*)A, (float*)B, (const int*)D, 1024", "N / 4 / 256", 256,
                     True),
}

# vector_split.cu: (arguments with {ns} for the fixture's own types and n the element
# count, grid in terms of n); every kernel reads A and writes B, none uses atomics
VECTOR_CASES = {
    "swap_pairs": ("(float2*)B, (const float2*)A, n", "n / 256"),
    "reverse4": ("(float4*)B, (const float4*)A, n", "n / 256"),
    "rotate4": ("(float4*)B, (const float4*)A, n", "n / 256"),
    "swap_int2": ("(int2*)B, (const int2*)A, n", "n / 256"),
    "swap_double2": ("(double2*)B, (const double2*)A, n", "n / 256"),
    "reverse_quad": ("({ns}::Quad*)B, (const {ns}::Quad*)A, n", "n / 256"),
    "conjugate_swap": ("({ns}::cplx*)B, (const {ns}::cplx*)A, n", "n / 256"),
    "unpack4": ("(float*)B, (const float4*)A, n", "n / 256"),
    "int2_to_float2": ("(float2*)B, (const int2*)A, n", "n / 256"),
    "swap_rows": ("(float2*)B, (const float2*)A, n / 4", "n / 4 / 256"),
}
VECTOR_SIZES = (1 << 24, 1 << 18)

_DRIVER = r"""
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

namespace orig {
%(original)s
}
namespace fixd {
%(fixed)s
}

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    fprintf(stderr, "%%s: %%s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

static const int N = 1 << 24;
static const int ROWS = 1 << 16;
static const int COLS = 256;
static const size_t BYTES = (size_t)4 * N * 4;      // 4N floats per buffer
static void *A, *B, *C, *D;

__global__ void fill(float* p, size_t n, float scale) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    for (; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = scale * (float)((i * 2654435761u) %% 1000) / 1000.0f;
}
__global__ void fill_index(int* p, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    for (; i < n; i += (size_t)gridDim.x * blockDim.x) p[i] = (int)((i * 7919) %% (N - 2048));
}

static void reset() {
    fill<<<1024, 256>>>((float*)A, 4 * (size_t)N, 1.0f);
    CHECK(cudaMemset(B, 0, BYTES));
    fill<<<1024, 256>>>((float*)C, 4 * (size_t)N, 0.5f);
    fill_index<<<1024, 256>>>((int*)D, 4 * (size_t)N);
    CHECK(cudaDeviceSynchronize());
}

template <class F> static void time_pair(const char* name, bool atomic, F orig_launch,
                                         F fixd_launch) {
    std::vector<unsigned char> out0(BYTES), out1(BYTES);
    reset(); orig_launch(); CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(out0.data(), B, BYTES, cudaMemcpyDeviceToHost));
    reset(); fixd_launch(); CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(out1.data(), B, BYTES, cudaMemcpyDeviceToHost));
    bool same = memcmp(out0.data(), out1.data(), BYTES) == 0;
    reset();
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0)); CHECK(cudaEventCreate(&e1));
    std::vector<float> t0, t1;
    for (int r = 0; r < %(warmup)d + %(runs)d; ++r) {
        for (int v = 0; v < 2; ++v) {
            CHECK(cudaEventRecord(e0));
            if (v == 0) orig_launch(); else fixd_launch();
            CHECK(cudaEventRecord(e1));
            CHECK(cudaEventSynchronize(e1));
            float ms; CHECK(cudaEventElapsedTime(&ms, e0, e1));
            if (r >= %(warmup)d) (v == 0 ? t0 : t1).push_back(ms);
        }
    }
    CHECK(cudaGetLastError());
    std::sort(t0.begin(), t0.end()); std::sort(t1.begin(), t1.end());
    printf("{\"kernel\": \"%%s\", \"original_ms\": %%.5f, \"fixed_ms\": %%.5f, "
           "\"original_min_ms\": %%.5f, \"fixed_min_ms\": %%.5f, \"ratio\": %%.4f, "
           "\"same_output\": %%s}\n", name, t0[t0.size() / 2], t1[t1.size() / 2],
           t0[0], t1[0], t0[t0.size() / 2] / t1[t1.size() / 2],
           atomic ? "null" : (same ? "true" : "false"));
}

int main() {
    CHECK(cudaMalloc(&A, BYTES)); CHECK(cudaMalloc(&B, BYTES));
    CHECK(cudaMalloc(&C, BYTES)); CHECK(cudaMalloc(&D, BYTES));
    cudaDeviceProp prop; CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("{\"device\": \"%%s\"}\n", prop.name);
%(cases)s
    return 0;
}
"""


def make_plan(fixture: Path = FIXTURE) -> dict:
    sys.path.insert(0, str(ROOT))
    from dataclasses import replace
    from cudalint.config import Settings
    from cudalint.fixes import fix_text
    text = fixture.read_text()
    fixed, count = fix_text(str(fixture), text, replace(Settings(), select=("CL203",)),
                            "cuda", unsafe=True)
    return {"fixture": str(fixture.relative_to(ROOT)), "fixes": count, "original": text,
            "fixed": fixed}


def _vector_cases() -> list[str]:
    cases = []
    for n in VECTOR_SIZES:
        cases.append(f"    {{ const int n = {n};")
        for name, (args, grid) in VECTOR_CASES.items():
            launch = "[&]() {{ {ns}::{name}<<<{grid}, 256>>>({args}); }}"
            pair = [launch.format(ns=ns, name=name, grid=grid, args=args.format(ns=ns))
                    for ns in ("orig", "fixd")]
            cases.append(f'    time_pair("{name}@{n}", false, '
                         f'std::function<void()>({pair[0]}), '
                         f'std::function<void()>({pair[1]}));')
        cases.append("    }")
    return cases


def driver_source(plan: dict) -> str:
    if plan["fixture"].endswith("vector_split.cu"):
        src = _DRIVER % {"original": plan["original"], "fixed": plan["fixed"],
                         "cases": "\n".join(_vector_cases()), "runs": RUNS,
                         "warmup": WARMUP}
        return src.replace("#include <vector>", "#include <vector>\n#include <functional>")
    cases = []
    for name, (args, grid, block, atomic) in CASES.items():
        launch = "[&]() {{ {ns}::{name}<<<{grid}, {block}>>>({args}); }}"
        cases.append(f'    time_pair("{name}", {str(atomic).lower()}, '
                     f'std::function<void()>({launch.format(ns="orig", name=name, grid=grid, block=block, args=args)}), '
                     f'std::function<void()>({launch.format(ns="fixd", name=name, grid=grid, block=block, args=args)}));')
    src = _DRIVER % {"original": plan["original"], "fixed": plan["fixed"],
                     "cases": "\n".join(cases), "runs": RUNS, "warmup": WARMUP}
    return src.replace("#include <vector>", "#include <vector>\n#include <functional>")


def build(workdir: Path, plan: dict) -> Path:
    src = workdir / "restrict_timing.cu"
    src.write_text(driver_source(plan))
    exe = workdir / "restrict_timing"
    subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-std=c++17", "-o", str(exe), str(src)],
                   check=True)
    return exe


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plan", action="store_true", help="write the plan (needs cudalint)")
    ap.add_argument("--compile-only", action="store_true")
    ap.add_argument("--out", help="folder for timing.json")
    ap.add_argument("--fixture", choices=("aliasing", "vector"), default="aliasing")
    args = ap.parse_args(argv)
    vector = args.fixture == "vector"
    plan_path = VECTOR_PLAN if vector else PLAN
    if args.plan:
        plan_path.write_text(json.dumps(
            make_plan(VECTOR_FIXTURE if vector else FIXTURE), indent=1) + "\n")
        print(f"wrote {plan_path.relative_to(ROOT)}")
        return 0
    plan = json.loads(plan_path.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        exe = build(Path(tmp), plan)
        if args.compile_only:
            print("built", exe.name)
            return 0
        proc = subprocess.run([str(exe)], capture_output=True, text=True)
        sys.stdout.write(proc.stdout)
        sys.stderr.write(proc.stderr)
        if proc.returncode != 0:
            return proc.returncode
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    nvcc = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout
    result = {"device": rows[0]["device"], "nvcc": nvcc.strip().splitlines()[-1],
              "runs": RUNS, "warmup": WARMUP, "n": list(VECTOR_SIZES) if vector else 1 << 24,
              "fixture": plan["fixture"], "kernels": rows[1:]}
    out = Path(args.out or os.environ.get("OUT", "."))
    out.mkdir(parents=True, exist_ok=True)
    name = "vector_timing.json" if vector else "timing.json"
    (out / name).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

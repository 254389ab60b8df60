"""Language-server latency: a ~2,000-line .cu is opened in `cudalint server`, then edited
(a statement typed into the kernel nearest the middle of the file) again and again; the
figure is the time from sending didChange to receiving the first publishDiagnostics of
that version (the edited kernel analysed again, the rest of the file's findings moved
along: cudalint/incremental.py); each edit follows the previous publish, as in typing,
so the whole-file analysis (fullDelay 400 ms after the last edit) waits until the end,
where it is timed too.

    python bench/lsp_latency.py                     # a generated 2,000-line .cu
    python bench/lsp_latency.py --file k.cu         # any file (padded/cut to --lines)
    python bench/lsp_latency.py --debounce 100      # with the editor-facing debounce
    python bench/lsp_latency.py --where device      # typing into a __device__ function
    python bench/lsp_latency.py --lines 60 --edits 5 --repeat 5 \
        --version base=/tmp/v/base --version now=.  # versions side by side

The debounce is 0 by default here, so the figure is the re-analysis itself (worker
round trip included). The in-process lint time of the same text, per rule, and the CPU
time of one edit's analysis in process (``incremental.lint_kernel_slice``), are printed
beside it, to tell the server's overhead from the analysis.

A version is a folder put first on PYTHONPATH (``pip install --no-deps --target DIR``
of a ``git archive``, as in bench/versions.py), or ``.`` for this tree. With several, the
servers run alternately (base, now, base, now, ...) so that load on a shared machine
falls on all alike; each figure is the median over ``--repeat`` servers (edits: over all
their edits). Start-up depends on byte-compiled modules: an editable tree run with
PYTHONDONTWRITEBYTECODE compiles every module in each process, an installed one does
not (run this tree with PYTHONPYCACHEPREFIX set and PYTHONDONTWRITEBYTECODE unset to
compare like with like).
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

# Typical kernels of a PyTorch CUDA extension: elementwise, grid-stride, shared-memory
# reduction, warp shuffles, tiled transpose, a 2D stencil, and their launches.
TEMPLATE = """\
// ---- block {i} -------------------------------------------------------------------
template <typename T>
__device__ __forceinline__ T warp_sum_{i}(T v) {{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}}

__global__ void scale_{i}(const float* __restrict__ x, float* __restrict__ y, float a, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i];
}}

__global__ void saxpy_stride_{i}(const float* __restrict__ x, float* y, float a, int n) {{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = a * x[i] + y[i];
}}

__global__ void reduce_{i}(const float* __restrict__ in, float* __restrict__ out, int n) {{
    __shared__ float buf[256];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x * 2 + threadIdx.x;
    float v = 0.0f;
    if (i < n) v += in[i];
    if (i + blockDim.x < n) v += in[i + blockDim.x];
    buf[tid] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 32; s >>= 1) {{
        if (tid < s)
            buf[tid] += buf[tid + s];
        __syncthreads();
    }}
    if (tid < 32) {{
        float w = buf[tid] + buf[tid + 32];
        w = warp_sum_{i}(w);
        if (tid == 0) out[blockIdx.x] = w;
    }}
}}

#define TILE_{i} 32
__global__ void transpose_{i}(const float* __restrict__ in, float* __restrict__ out,
                              int rows, int cols) {{
    __shared__ float tile[TILE_{i}][TILE_{i} + 1];
    int x = blockIdx.x * TILE_{i} + threadIdx.x;
    int y = blockIdx.y * TILE_{i} + threadIdx.y;
    if (x < cols && y < rows)
        tile[threadIdx.y][threadIdx.x] = in[y * cols + x];
    __syncthreads();
    x = blockIdx.y * TILE_{i} + threadIdx.x;
    y = blockIdx.x * TILE_{i} + threadIdx.y;
    if (x < rows && y < cols)
        out[y * rows + x] = tile[threadIdx.x][threadIdx.y];
}}

__global__ void stencil_{i}(const float* __restrict__ u, float* __restrict__ v, int w, int h) {{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < 1 || y < 1 || x >= w - 1 || y >= h - 1) return;
    int c = y * w + x;
    v[c] = 0.25f * (u[c - 1] + u[c + 1] + u[c - w] + u[c + w]) - u[c];
}}

__global__ void softmax_row_{i}(const float* __restrict__ x, float* __restrict__ y, int cols) {{
    const float* row = x + blockIdx.x * cols;
    float m = -1e30f;
    for (int j = threadIdx.x; j < cols; j += 32)
        m = fmaxf(m, row[j]);
    for (int o = 16; o > 0; o >>= 1)
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += 32)
        s += __expf(row[j] - m);
    s = warp_sum_{i}(s);
    for (int j = threadIdx.x; j < cols; j += 32)
        y[blockIdx.x * cols + j] = __expf(row[j] - m) / s;
}}

void launch_{i}(const float* x, float* y, float* tmp, int n, int rows, int cols) {{
    scale_{i}<<<(n + 255) / 256, 256>>>(x, y, 2.0f, n);
    saxpy_stride_{i}<<<120, 256>>>(x, y, 0.5f, n);
    reduce_{i}<<<(n + 511) / 512, 256>>>(x, tmp, n);
    dim3 block(TILE_{i}, TILE_{i});
    dim3 grid((cols + TILE_{i} - 1) / TILE_{i}, (rows + TILE_{i} - 1) / TILE_{i});
    transpose_{i}<<<grid, block>>>(x, y, rows, cols);
    dim3 sb(16, 16);
    dim3 sg((cols + 15) / 16, (rows + 15) / 16);
    stencil_{i}<<<sg, sb>>>(x, y, cols, rows);
    softmax_row_{i}<<<rows, 32>>>(x, y, cols);
}}

"""


def generated(lines: int) -> str:
    out, i = [], 0
    while sum(part.count("\n") for part in out) < lines:
        out.append(TEMPLATE.format(i=i))
        i += 1
    return "".join(out)


def fit(text: str, lines: int) -> str:
    rows = text.split("\n")
    while len(rows) < lines:
        rows += rows[:lines - len(rows)]
    return "\n".join(rows[:lines]) + "\n"


def in_process(text: str, repeat: int) -> tuple[float, dict[str, float]]:
    import cudalint.engine as engine
    from cudalint.config import Settings
    per_rule: dict[str, float] = defaultdict(float)
    original = engine._run

    def timed(rule, ctx, unit, findings, notices):
        t = time.perf_counter()
        original(rule, ctx, unit, findings, notices)
        per_rule[rule.code] += time.perf_counter() - t

    settings = Settings()
    engine.lint_text("bench.cu", text, settings, "cuda")          # warm
    times = []
    engine._run = timed
    try:
        for _ in range(repeat):
            t = time.perf_counter()
            engine.lint_text("bench.cu", text, settings, "cuda")
            times.append(time.perf_counter() - t)
    finally:
        engine._run = original
    return statistics.median(times), {k: v / repeat for k, v in per_rule.items()}


def kernel_line(text: str, where: str = "kernel") -> int:
    """0-based line just inside the body of the kernel (``where="device"``: the
    ``__device__`` function) nearest the middle of the file."""
    from cudalint.incremental import _functions
    from cudalint.parse import parse
    data = text.encode("utf-8")
    functions = _functions(parse(data).root_node, text, lambda b: len(
        data[:b].decode("utf-8", "replace")))
    kernels = [f for f in functions if f.is_kernel] if where == "kernel" else [
        f for f in functions if not f.is_kernel and "__device__" in text[f.outer:f.body_start]]
    middle = len(text) // 2
    best = min(kernels, key=lambda f: abs(f.body_start - middle))
    return text.count("\n", 0, best.body_start) + 1


def family_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by a process and all its descendants
    (the server, its forkserver and workers, multiprocessing's resource tracker), read
    from /proc; NaN elsewhere. On a loaded machine wall times mostly say how busy it
    was; this says what the server's start and first analysis cost."""
    try:
        tick = os.sysconf("SC_CLK_TCK")
        stats = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                stats[int(entry)] = (int(fields[1]), int(fields[11]) + int(fields[12]))
    except (OSError, ValueError, AttributeError):
        return float("nan")
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += stats.get(p, (0, 0))[1]
        todo.extend(c for c, (parent, _) in stats.items() if parent == p)
    return total / tick


cpu_at_open: list[float] = []


async def server_latency(path: Path, text: str, edits: int, debounce: int,
                         whole: list[float] | None = None, full_delay: int = 400,
                         site: str = ".", where: str = "kernel") -> list[float]:
    client = LanguageClient("bench", "0")
    published: dict[int, float] = {}
    publishes: dict[int, int] = {}
    arrived = asyncio.Event()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_publish(params: types.PublishDiagnosticsParams):
        if params.version is not None:
            published.setdefault(params.version, time.perf_counter())
            publishes[params.version] = publishes.get(params.version, 0) + 1
            arrived.set()

    started = time.perf_counter()
    env = dict(os.environ)
    if site != ".":
        env["PYTHONPATH"] = site
    # started in the file's folder, as an editor starts it in the workspace: `python -m`
    # puts its working directory first on sys.path, so started here (the repository) the
    # server would import this tree's cudalint whatever PYTHONPATH says
    await client.start_io(sys.executable, "-m", "cudalint", "server", env=env,
                          cwd=str(path.parent))
    await client.initialize_async(types.InitializeParams(
        capabilities=types.ClientCapabilities(), root_uri=path.parent.as_uri(),
        initialization_options={"debounce": debounce, "fullDelay": full_delay}))
    client.initialized(types.InitializedParams())
    uri = path.as_uri()

    async def wait_for(version: int) -> float:
        while version not in published:
            arrived.clear()
            await asyncio.wait_for(arrived.wait(), 600)
        return published[version]

    client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(
        uri=uri, language_id="cuda-cpp", version=1, text=text)))
    opened = time.perf_counter()
    await wait_for(1)                          # includes the worker's start-up
    if whole is not None:
        whole.append(published[1] - started)   # server start -> first diagnostics
        whole.append(published[1] - opened)    # didOpen -> first diagnostics
        cpu_at_open.append(family_cpu(client._server.pid))
    line = kernel_line(text, where)
    latencies = []
    for k in range(edits):
        version = k + 2
        # typing a statement into the kernel nearest the middle of the file
        change = types.TextDocumentContentChangePartial(
            range=types.Range(types.Position(line, 0), types.Position(line, 0)),
            text=f"    float edit{k} = {k}.0f;\n")
        sent = time.perf_counter()
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=version), [change]))
        latencies.append(await wait_for(version) - sent)
    if whole is not None and edits:
        # the typing pauses: the whole-file analysis follows (a second publish), unless
        # the first already was one (an edit the server does not slice)
        try:
            while publishes.get(version, 0) < 2:
                arrived.clear()
                await asyncio.wait_for(arrived.wait(), full_delay / 1000 + 60)
            whole.append(time.perf_counter() - sent - full_delay / 1000)
        except asyncio.TimeoutError:
            whole.append(float("nan"))
    if edits == 0 and whole is not None:
        whole.append(float("nan"))
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return latencies


def slice_cpu(text: str, edits: int, where: str = "kernel") -> float:
    """CPU seconds of one edit's analysis in this process (the fast worker's job), the
    median over ``edits`` statements typed into the middle kernel (or device function)
    as the server sees them."""
    from cudalint.config import Settings
    from cudalint.incremental import changed_span, lint_kernel_slice
    settings = Settings()
    line = kernel_line(text, where)
    rows = text.split("\n")
    previous = text
    times = []
    for k in range(edits + 2):
        rows.insert(line, f"    float edit{k} = {k}.0f;")
        new = "\n".join(rows)
        start, _old_end, new_end = changed_span(previous, new)
        t = time.process_time()
        lint_kernel_slice("bench.cu", new, settings, "cuda", start, new_end)
        if k >= 2:                   # the first two compile what they need
            times.append(time.process_time() - t)
        previous = new
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--file", type=Path, default=None, help="a .cu to use instead")
    ap.add_argument("--lines", type=int, default=2000)
    ap.add_argument("--edits", type=int, default=15)
    ap.add_argument("--debounce", type=int, default=0, help="server debounce in ms")
    ap.add_argument("--version", action="append", default=[], metavar="NAME=DIR",
                    help="a cudalint to run the server from (DIR first on PYTHONPATH, "
                         "or . for this tree); repeat to compare")
    ap.add_argument("--repeat", type=int, default=1, help="servers per version")
    ap.add_argument("--where", choices=("kernel", "device"), default="kernel",
                    help="type into the middle kernel, or into the middle __device__ "
                         "function (which kernels call)")
    args = ap.parse_args()
    versions = dict(v.split("=", 1) for v in args.version) or {"this tree": "."}
    text = fit(args.file.read_text(encoding="utf-8", errors="replace") if args.file
               else generated(args.lines), args.lines)
    runs: dict[str, list[tuple[list[float], list[float], float]]] = {k: [] for k in versions}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.cu"
        path.write_text(text, encoding="utf-8")
        for _ in range(args.repeat):
            for name, site in versions.items():
                whole: list[float] = []
                latencies = asyncio.run(server_latency(path, text, args.edits,
                                                       args.debounce, whole, site=site,
                                                       where=args.where))
                runs[name].append((latencies, whole, cpu_at_open.pop()))
    source = args.file or "generated kernels"
    print(f"{source}: {text.count(chr(10))} lines, {args.edits} edits in a {args.where} "
          f"function, debounce "
          f"{args.debounce} ms, {args.repeat} server(s) per version, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load "
          f"{os.getloadavg()[0]:.1f}")
    for name, got in runs.items():
        ms = sorted(x * 1000 for lat, _, _ in got for x in lat)
        start_ms = statistics.median(w[0] * 1000 for _, w, _ in got)
        open_ms = [w[1] * 1000 for _, w, _ in got]
        full_ms = statistics.median(w[2] * 1000 for _, w, _ in got)
        cpu = [c for _, _, c in got]
        print(f"[{name}]")
        print(f"  server: didChange -> publishDiagnostics median "
              f"{statistics.median(ms):.0f} ms, p90 {ms[int(0.9 * (len(ms) - 1))]:.0f} ms, "
              f"min {ms[0]:.0f} ms, max {ms[-1]:.0f} ms")
        print(f"  server: first diagnostics {statistics.median(open_ms):.0f} ms after "
              f"didOpen (min {min(open_ms):.0f}, max {max(open_ms):.0f}), {start_ms:.0f} ms "
              f"after the server's start (cold: its imports, the worker, the analysis)")
        print(f"  server: CPU of its processes from start to the first diagnostics "
              f"median {statistics.median(cpu):.2f} s (min {min(cpu):.2f})")
        print(f"  server: the whole-file analysis once the edits pause (after the 400 ms "
              f"fullDelay): {full_ms:.0f} ms")
    engine_s, per_rule = in_process(text, 5)
    print(f"this tree, in process: one edit's analysis "
          f"{slice_cpu(text, 9, args.where) * 1000:.0f} ms "
          f"CPU (median of 9); the whole file {engine_s * 1000:.0f} ms (median of 5)")
    top = sorted(per_rule.items(), key=lambda kv: -kv[1])[:6]
    print("slowest rules: " + ", ".join(f"{code} {t * 1000:.0f} ms" for code, t in top))
    return 0


if __name__ == "__main__":
    sys.exit(main())

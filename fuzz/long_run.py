"""A time-boxed random fuzz run over every target (no extra dependencies).

    python fuzz/long_run.py --minutes 25 [--targets cuda,python] [--out /tmp/cudalint-fuzz]

Targets are visited round-robin; each input is a seed (fixtures, examples, regressions)
or a generated file, put through the mutations of tests/fuzz/fuzzlib.py. Any input that
breaks a property (an exception, a rule crash reported as CL000, a position outside the
file, JSON that does not round-trip, a fix that is not idempotent) or runs longer than
``--slow`` seconds is written to ``<out>/<target>/`` with its traceback (inputs run in a
worker process: a hang past ``--hang`` seconds or a dead worker is recorded too, and the
worker restarted); copy it into
``tests/fuzz/regressions/<target>/`` once fixed. Prints inputs and failures per target.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "fuzz"))

import fuzzlib as fl  # noqa: E402
import hostile  # noqa: E402

MAX_INPUT = 256 * 1024         # bytes: bigger inputs measure speed, not robustness
PTXAS_CU = sorted(fl.FIXTURES.glob("CL30*/*.cu"))


def _mut(rng, base, corpus, snippets, max_ops=6):
    scale = 10 if rng.random() < 0.05 else 1
    out = fl.mutate(base, fl.random_ops(rng, max_ops), corpus, snippets, scale)
    return out[:MAX_INPUT]


def make(target: str, rng: random.Random, tmp: Path):
    """(input bytes, callable running the target on them). The callable is rebuilt in the
    worker process from (target, bytes, extra): see :func:`runner`."""
    if target == "cuda":
        base = fl.gen_kernel(rng).encode() if rng.random() < 0.4 else rng.choice(fl.CUDA_SEEDS)
        data = _mut(rng, base, fl.CUDA_SEEDS, fl.CUDA_SNIPPETS)
        notices = rng.random() < 0.5
        return data, lambda: fl.check_cuda(data, notices=notices)
    if target == "cuda_text":
        data = _mut(rng, rng.choice(fl.CUDA_SEEDS), fl.CUDA_SEEDS, fl.CUDA_SNIPPETS)
        text = data.decode("utf-8", "surrogateescape")
        return data, lambda: fl.check_cuda_text(text)
    if target == "python":
        if rng.random() < 0.5:
            cuda = fl.gen_kernel(rng) if rng.random() < 0.5 else _mut(
                rng, rng.choice(fl.CUDA_SEEDS), fl.CUDA_SEEDS, fl.CUDA_SNIPPETS, 3).decode(
                "utf-8", "replace").replace("\0", "")
            base = fl.gen_python(rng, cuda).encode("utf-8", "surrogatepass")
            data = _mut(rng, base, fl.PYTHON_SEEDS, fl.PY_SNIPPETS, 2)
        else:
            data = _mut(rng, rng.choice(fl.PYTHON_SEEDS), fl.PYTHON_SEEDS + fl.CUDA_SEEDS,
                        fl.PY_SNIPPETS)
        return data, lambda: fl.check_python(data)
    if target == "ptxas":
        base = fl.gen_ptxas(rng).encode() if rng.random() < 0.5 else rng.choice(fl.PTXAS_SEEDS)
        data = _mut(rng, base, fl.PTXAS_SEEDS, (b"ptxas info    : ", b"'", b"\n"), 4)
        cu = rng.choice(PTXAS_CU).read_bytes() if rng.random() < 0.3 else None
        return data, lambda: fl.check_ptxas(data, cu=cu, tmpdir=tmp)
    if target == "config":
        seeds = fl.TOML_SEEDS
        data = _mut(rng, rng.choice(seeds), seeds,
                    (b"[tool.cudalint]\n", b" = ", b"\"", b"[", b"]", b"{", b"}", b"nan",
                     b"inf", b"-1", b"99999999999999999999999", b"\n", b"'''", b"#",
                     b"arch = \"sm_0\"\n", b"block-size = [1024, 1024]\n",
                     b"defines = { N = 99999999999999999999999 }\n", b"select = [\"\"]\n",
                     b"occupancy-threshold = 100\n", b"per-file-ignores = { \"[\" = [] }\n"),
                    4)
        name = rng.choice(["pyproject.toml", "cudalint.toml", ".cudalint.toml"])
        return data, lambda: fl.check_config(data, name, Path(tempfile.mkdtemp(dir=tmp)))
    if target == "fix_cuda":
        base = fl.gen_kernel(rng).encode() if rng.random() < 0.4 else rng.choice(fl.CUDA_SEEDS)
        data = _mut(rng, base, fl.CUDA_SEEDS, fl.CUDA_SNIPPETS)
        return data, lambda: fl.check_fix(data, "cuda")
    if target == "fix_python":
        base = fl.gen_python(rng, fl.gen_kernel(rng)).encode() if rng.random() < 0.5 \
            else rng.choice(fl.PYTHON_SEEDS)
        data = _mut(rng, base, fl.PYTHON_SEEDS, fl.PY_SNIPPETS + fl.CUDA_SNIPPETS[:60], 4)
        return data, lambda: fl.check_fix(data, "python")
    if target in ("build_cmake", "build_toml", "build_setup"):
        snippets = tuple(w.encode() for w in fl.FLAG_WORDS) + (
            b"(", b")", b"[[", b"]]", b"[=[", b"]=]", b"#[[", b"\"", b"${", b"}", b"\n", b"$<",
            b">", b"[", b"]", b"{", b"'''", b'"""', b"=", b",", b"\\")
        gen, seeds, name = {
            "build_cmake": (fl.gen_cmake, fl.CMAKE_SEEDS, "CMakeLists.txt"),
            "build_toml": (fl.gen_build_toml, fl.BUILD_TOML_SEEDS, "pyproject.toml"),
            "build_setup": (fl.gen_setup, fl.SETUP_SEEDS, "setup.py"),
        }[target]
        base = gen(rng).encode() if rng.random() < 0.5 or not seeds else rng.choice(seeds)
        data = _mut(rng, base, seeds, snippets, 3)
        return data, lambda: fl.check_build(data, name, Path(tempfile.mkdtemp(dir=tmp)))
    if target == "cache":
        data = _mut(rng, CACHE_SEED, [CACHE_SEED], (b"null", b"[]", b"{}", b"1", b"-1",
                                                    b"1e999", b"NaN", b",", b"\"x\""), 4)
        return data, lambda: fl.check_cache_entry(data, Path(tempfile.mkdtemp(dir=tmp)))
    if target in ("hostile_cuda", "hostile_fix"):
        r = rng.random()
        if r < 0.35:
            data = hostile.gen_launch(rng).encode()
        elif r < 0.6:
            data = hostile.gen_macro_chain(rng).encode()
        elif CORPUS["cuda"]:
            data = hostile.corrupt(rng, rng.choice(CORPUS["cuda"]), CORPUS["cuda"])
        else:
            data = hostile.corrupt(rng, rng.choice(fl.CUDA_SEEDS), fl.CUDA_SEEDS)
        if rng.random() < 0.3:
            data = _mut(rng, data, fl.CUDA_SEEDS, fl.CUDA_SNIPPETS, 3)
        if target == "hostile_fix":
            return data, lambda: fl.check_fix(data, "cuda")
        notices = rng.random() < 0.5
        return data, lambda: fl.check_cuda(data, notices=notices)
    if target in ("hostile_python", "hostile_fix_python"):
        r = rng.random()
        if r < 0.6:
            data = hostile.gen_template_python(rng).encode()
        elif CORPUS["python"]:
            data = hostile.corrupt(rng, rng.choice(CORPUS["python"]), CORPUS["python"])
        else:
            data = hostile.corrupt(rng, rng.choice(fl.PYTHON_SEEDS), fl.PYTHON_SEEDS)
        if rng.random() < 0.3:
            data = _mut(rng, data, fl.PYTHON_SEEDS, fl.PY_SNIPPETS, 3)
        if target == "hostile_fix_python":
            return data, lambda: fl.check_fix(data, "python")
        return data, lambda: fl.check_python(data)
    if target == "notebook":
        data = hostile.gen_notebook(rng)
        if rng.random() < 0.3:
            data = hostile.corrupt(rng, data, [])
        return data, lambda: fl.check_notebook(data, Path(tempfile.mkdtemp(dir=tmp)))
    if target == "server":
        import server_target
        data = server_target.random_script(rng)
        return data, lambda: server_target.check_server_script(data)
    raise SystemExit(f"unknown target {target}")


def _cache_seed() -> bytes:
    from cudalint.cache import Cache
    tmp = Path(tempfile.mkdtemp(prefix="cudalint-fuzz-"))
    result = fl.lint_bytes("k.cu", fl.CUDA_SEEDS[0], fl.ALL, "cuda")
    cache = Cache(tmp)
    cache.put("0" * 64, result)
    cache.save()
    return cache.index_path.read_bytes()


CACHE_SEED = _cache_seed()
CORPUS = hostile.corpus()
TARGETS = ["cuda", "cuda_text", "python", "ptxas", "config", "fix_cuda", "fix_python",
           "build_cmake", "build_toml", "build_setup", "cache", "hostile_cuda",
           "hostile_fix", "hostile_python", "hostile_fix_python", "notebook"]
MEMORY_FAIL_MB = 500            # peak resident memory of one input under 100 KB: a failure
SMALL_INPUT = 100 * 1024


def _clear_peak(pid: int | str) -> None:
    """Reset the peak resident size of a process (Linux: /proc/PID/clear_refs, 5)."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


RESTART_KB = 300 * 1024         # a worker holding more after an input starts afresh


def _resident_kb() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)
    except (OSError, ValueError, IndexError):
        return 0


def _children_s() -> float:
    import resource
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _cpu_s(pid: int | None) -> float:
    """user + system CPU seconds of a process (0 when it is gone or None)."""
    if pid is None:
        return 0.0
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def _peak_kb(pid: int | str) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def worker(conn, mem_limit_mb: int) -> None:
    """Runs inputs the parent names by (target, seed); answers (traceback or None, secs,
    peak resident KB of this process and of its libclang helper, input size)."""
    import resource
    from cudalint.analysis.fp import clang_process
    lim = mem_limit_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
    tmp_root = Path(tempfile.mkdtemp(prefix="cudalint-fuzz-run-"))
    import shutil
    while True:
        try:
            target, seed = conn.recv()
        except EOFError:
            return
        work = Path(tempfile.mkdtemp(dir=tmp_root))
        problem = None
        size = 0
        _clear_peak("self")
        helper = clang_process.helper_pid()
        if helper is not None:
            _clear_peak(helper)
        c0, k0, h0 = time.process_time(), _children_s(), _cpu_s(helper)
        try:
            data, run = make(target, random.Random(seed), work)
            size = len(data)
            run()
        except Exception as exc:  # noqa: BLE001 - every failure is a finding
            problem = "".join(traceback.format_exception(exc))
        after = clang_process.helper_pid()
        # CPU seconds of this process and of its libclang helper (reaped helpers count
        # through the children's time, a new one whole): on a shared machine wall time
        # measures the others
        dt = time.process_time() - c0 + _children_s() - k0 + _cpu_s(after) - (
            h0 if after == helper else 0.0)
        helper = after
        peak = max(_peak_kb("self"), _peak_kb(helper) if helper is not None else 0)
        # freed memory the allocator keeps would count as the next input's peak
        retire = _resident_kb() > RESTART_KB
        conn.send((problem, dt, peak, size, retire))
        if retire:
            return
        shutil.rmtree(work, ignore_errors=True)


class Pool:
    """One worker process, restarted when it hangs or dies."""

    def __init__(self, mem_limit_mb: int):
        import multiprocessing
        self.ctx = multiprocessing.get_context("spawn")
        self.mem = mem_limit_mb
        self.proc = None

    def start(self) -> None:
        self.conn, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=worker, args=(child, self.mem), daemon=True)
        self.proc.start()

    def run(self, target: str, seed: int, limit: float):
        if self.proc is None or not self.proc.is_alive():
            self.start()
        t0 = time.monotonic()
        self.conn.send((target, seed))
        if self.conn.poll(limit):
            try:
                *answer, retire = self.conn.recv()
                if retire:
                    self.proc.join(5)
                    self.proc = None
                return tuple(answer)
            except EOFError:
                pass
            self.proc.join(5)
            code = self.proc.exitcode
            self.proc = None
            return f"worker died (exit code {code}): a crash or out of memory", \
                time.monotonic() - t0, 0, 0
        self.proc.kill()
        self.proc.join(5)
        self.proc = None
        return f"hang: no answer in {limit:.0f} s", time.monotonic() - t0, 0, 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=25.0)
    ap.add_argument("--targets", default=",".join(TARGETS + (
        ["server"] if _has_server() else [])),
        help="comma-separated, visited round-robin (name one twice to run it twice as often)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--out", default="/tmp/cudalint-fuzz")
    ap.add_argument("--slow", type=float, default=10.0,
                    help="CPU seconds of one input (worker + libclang helper): record as slow")
    ap.add_argument("--hang", type=float, default=180.0, help="seconds: kill, record a hang")
    ap.add_argument("--memory-mb", type=int, default=4096, help="address space per worker")
    ap.add_argument("--stats", default=None, help="write the counts as JSON here")
    ap.add_argument("--workers", type=int, default=1,
                    help="independent runs in parallel (seeds seed*1000+k), stats merged")
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    if args.workers > 1:
        return _parallel(args, seed, argv if argv is not None else sys.argv[1:])
    targets = args.targets.split(",")
    rng = random.Random(seed)
    out = Path(args.out)
    tmp_root = Path(tempfile.mkdtemp(prefix="cudalint-fuzz-gen-"))
    end = time.monotonic() + args.minutes * 60
    names = list(dict.fromkeys(targets))
    runs = {t: 0 for t in names}
    fails = {t: 0 for t in names}
    seconds = {t: 0.0 for t in names}
    slowest = {t: 0.0 for t in names}
    peak = {t: 0 for t in names}                # KB, the largest of one input
    peaks: dict[int, int] = {}                  # 10 MB bucket -> inputs
    seen: set[str] = set()
    failures: list[dict] = []
    pool = Pool(args.memory_mb)
    print(f"seed {seed}; {args.minutes} min over {', '.join(targets)}", flush=True)
    i = 0
    last_report = time.monotonic()
    while time.monotonic() < end:
        target = targets[i % len(targets)]
        i += 1
        input_seed = rng.randrange(1 << 62)
        problem, dt, kb, size = pool.run(target, input_seed, args.hang)
        seconds[target] += dt
        slowest[target] = max(slowest[target], dt)
        peak[target] = max(peak[target], kb)
        peaks[kb // 10240] = peaks.get(kb // 10240, 0) + 1
        runs[target] += 1
        if problem is None and dt > args.slow:
            problem = f"slow input: {dt:.1f} s"
        if problem is None and kb > MEMORY_FAIL_MB * 1024 and size < SMALL_INPUT:
            problem = f"memory: {kb // 1024} MB at peak for a {size}-byte input"
        if problem is not None:
            fails[target] += 1
            last = problem.strip().splitlines()[-1]
            sig = hashlib.sha1(f"{target}:{last[:120]}".encode()).hexdigest()[:10]
            failures.append({"target": target, "seed": input_seed, "sig": sig,
                             "what": last[:300]})
            if sig not in seen:
                seen.add(sig)
                data, _ = make(target, random.Random(input_seed), tmp_root)
                d = out / target
                d.mkdir(parents=True, exist_ok=True)
                (d / f"{sig}.input").write_bytes(data)
                (d / f"{sig}.txt").write_text(f"input seed {input_seed}\n{problem}")
                print(f"[{target}] NEW failure {sig}: {last[:200]}", flush=True)
        if time.monotonic() - last_report > 60:
            last_report = time.monotonic()
            print("  " + ", ".join(f"{t} {runs[t]}" for t in names), flush=True)
    stats = {"seed": seed, "runs": runs, "fails": fails, "seconds": seconds,
             "slowest": slowest, "peak_kb": peak, "peaks_10mb": peaks,
             "failures": failures, "distinct": sorted(seen)}
    _report(stats)
    if args.stats:
        Path(args.stats).write_text(json.dumps(stats, indent=1))
    return 1 if seen else 0


def _report(stats: dict) -> None:
    print("inputs per target:")
    for t, n in stats["runs"].items():
        print(f"  {t:18s} {n:8d} inputs  {stats['fails'][t]:4d} failing  "
              f"{stats['seconds'][t]:8.1f} s  slowest {stats['slowest'][t]:.2f} s  "
              f"peak {stats['peak_kb'][t] // 1024} MB")
    buckets = sorted((int(k), v) for k, v in stats["peaks_10mb"].items())
    total = sum(v for _, v in buckets)
    acc, marks = 0, {}
    for k, v in buckets:
        acc += v
        for q in (0.5, 0.99, 0.999):
            if q not in marks and acc >= q * total:
                marks[q] = (k + 1) * 10
    print(f"peak resident memory per input: median < {marks.get(0.5)} MB, 99% < "
          f"{marks.get(0.99)} MB, 99.9% < {marks.get(0.999)} MB, largest "
          f"{max(stats['peak_kb'].values(), default=0) // 1024} MB")
    print(f"total {sum(stats['runs'].values())} inputs, {len(stats['distinct'])} distinct "
          f"failures (seed {stats['seed']})")


def _parallel(args, seed: int, argv: list[str]) -> int:
    """``--workers N``: N runs of this script side by side, their stats merged."""
    import subprocess
    tmp = Path(tempfile.mkdtemp(prefix="cudalint-fuzz-stats-"))
    keep = []
    skip = False
    for a in argv:                  # drop --workers/--seed/--stats and their values
        if skip:
            skip = False
            continue
        if a in ("--workers", "--seed", "--stats"):
            skip = True
            continue
        if a.startswith(("--workers=", "--seed=", "--stats=")):
            continue
        keep.append(a)
    procs = [subprocess.Popen([sys.executable, __file__, *keep, "--seed",
                               str(seed * 1000 + k), "--stats", str(tmp / f"{k}.json")],
                              stdout=open(tmp / f"{k}.log", "w"), stderr=subprocess.STDOUT)
             for k in range(args.workers)]
    for p in procs:
        p.wait()
    merged: dict = {"seed": seed, "runs": {}, "fails": {}, "seconds": {}, "slowest": {},
                    "peak_kb": {}, "peaks_10mb": {}, "failures": [], "distinct": set(),
                    "workers": args.workers}
    for k in range(args.workers):
        try:
            st = json.loads((tmp / f"{k}.json").read_text())
        except (OSError, ValueError):
            print(f"worker run {k} left no stats: see {tmp / f'{k}.log'}")
            continue
        for key, how in (("runs", sum), ("fails", sum), ("seconds", sum),
                         ("slowest", max), ("peak_kb", max), ("peaks_10mb", sum)):
            for t, v in st[key].items():
                merged[key][t] = how((merged[key].get(t, 0), v))
        merged["failures"] += st["failures"]
        merged["distinct"] |= set(st["distinct"])
    merged["distinct"] = sorted(merged["distinct"])
    _report(merged)
    if args.stats:
        Path(args.stats).write_text(json.dumps(merged, indent=1))
    return 1 if merged["distinct"] else 0


def _has_server() -> bool:
    try:
        import server_target  # noqa: F401
        return server_target.available()
    except ImportError:
        return False


if __name__ == "__main__":
    sys.exit(main())

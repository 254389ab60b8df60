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
import random
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "fuzz"))

import fuzzlib as fl  # noqa: E402

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
TARGETS = ["cuda", "cuda_text", "python", "ptxas", "config", "fix_cuda", "fix_python",
           "build_cmake", "build_toml", "build_setup", "cache"]


def worker(conn, mem_limit_mb: int) -> None:
    """Runs inputs the parent names by (target, seed); answers (traceback or None, secs)."""
    import resource
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
        t0 = time.monotonic()
        try:
            _, run = make(target, random.Random(seed), work)
            run()
        except Exception as exc:  # noqa: BLE001 - every failure is a finding
            problem = "".join(traceback.format_exception(exc))
        conn.send((problem, time.monotonic() - t0))
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
                return self.conn.recv()
            except EOFError:
                pass
            self.proc.join(5)
            code = self.proc.exitcode
            self.proc = None
            return f"worker died (exit code {code}): a crash or out of memory", \
                time.monotonic() - t0
        self.proc.kill()
        self.proc.join(5)
        self.proc = None
        return f"hang: no answer in {limit:.0f} s", time.monotonic() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=25.0)
    ap.add_argument("--targets", default=",".join(TARGETS + (
        ["server"] if _has_server() else [])))
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--out", default="/tmp/cudalint-fuzz")
    ap.add_argument("--slow", type=float, default=30.0, help="seconds: record as slow")
    ap.add_argument("--hang", type=float, default=180.0, help="seconds: kill, record a hang")
    ap.add_argument("--memory-mb", type=int, default=4096, help="address space per worker")
    ap.add_argument("--stats", default=None, help="write the counts as JSON here")
    args = ap.parse_args(argv)
    targets = args.targets.split(",")
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    out = Path(args.out)
    tmp_root = Path(tempfile.mkdtemp(prefix="cudalint-fuzz-gen-"))
    end = time.monotonic() + args.minutes * 60
    runs = {t: 0 for t in targets}
    fails = {t: 0 for t in targets}
    seconds = {t: 0.0 for t in targets}
    slowest = {t: 0.0 for t in targets}
    seen: set[str] = set()
    pool = Pool(args.memory_mb)
    print(f"seed {seed}; {args.minutes} min over {', '.join(targets)}", flush=True)
    i = 0
    last_report = time.monotonic()
    while time.monotonic() < end:
        target = targets[i % len(targets)]
        i += 1
        input_seed = rng.randrange(1 << 62)
        problem, dt = pool.run(target, input_seed, args.hang)
        seconds[target] += dt
        slowest[target] = max(slowest[target], dt)
        runs[target] += 1
        if problem is None and dt > args.slow:
            problem = f"slow input: {dt:.1f} s"
        if problem is not None:
            fails[target] += 1
            last = problem.strip().splitlines()[-1]
            sig = hashlib.sha1(f"{target}:{last[:120]}".encode()).hexdigest()[:10]
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
            print("  " + ", ".join(f"{t} {runs[t]}" for t in targets), flush=True)
    print("inputs per target:")
    for t in targets:
        print(f"  {t:12s} {runs[t]:7d} inputs  {fails[t]:4d} failing  "
              f"{seconds[t]:7.1f} s  slowest {slowest[t]:.2f} s")
    print(f"total {sum(runs.values())} inputs, {len(seen)} distinct failures (seed {seed})")
    if args.stats:
        Path(args.stats).write_text(json.dumps({"seed": seed, "runs": runs, "fails": fails,
                                                "seconds": seconds, "slowest": slowest},
                                               indent=1))
    return 1 if seen else 0


def _has_server() -> bool:
    try:
        import server_target  # noqa: F401
        return server_target.available()
    except ImportError:
        return False


if __name__ == "__main__":
    sys.exit(main())

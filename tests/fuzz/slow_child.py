"""One fuzz input through its target, alone in this process, timed by CPU.

    python tests/fuzz/slow_child.py INPUT[.gz] TARGET

Prints one JSON object: ``cpu_s`` (user + system CPU seconds of this process, of the
children it reaped and of its libclang helper, from the start of the check: the imports
and the rules' loading are not counted), ``peak_mb`` (this process's peak resident size)
and ``problem`` (the exception the check raised, or null). Run as a child process by
``fuzz/slow_inputs.py`` and by ``test_fuzz_regressions.py`` (the ``<target>_slow``
folders): a slow input is measured by CPU, so that a loaded, shared machine measures the
input and not the load, and a hang inside a C library cannot stop the caller.

Targets as the campaign runs them (``fuzz/long_run.py``): ``fix_*``/``hostile_fix*``
through :func:`fuzzlib.check_fix` (unsafe fixes, twice), ``cuda``/``hostile_cuda``,
``cuda_text``, ``python``/``hostile_python``, ``notebook``, ``server`` and ``build_*``
through their own checks.
"""
from __future__ import annotations

import gzip
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

TARGETS = ("hostile_fix_python", "hostile_fix", "hostile_python", "hostile_cuda",
           "fix_python", "fix_cuda", "cuda_text", "python", "cuda", "notebook", "server",
           "build_cmake", "build_toml", "build_setup")
_BUILD_NAMES = {"build_cmake": "CMakeLists.txt", "build_toml": "pyproject.toml",
                "build_setup": "setup.py"}


def _cpu_of(pid: int | None) -> float:
    if pid is None:
        return 0.0
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def check(data: bytes, target: str) -> None:
    import fuzzlib as fl
    if target.startswith(("fix_", "hostile_fix")):
        fl.check_fix(data, "python" if target.endswith("python") else "cuda")
    elif target == "cuda_text":
        fl.check_cuda_text(data.decode("utf-8", "surrogateescape"))
    elif target in ("python", "hostile_python"):
        fl.check_python(data)
    elif target == "notebook":
        fl.check_notebook(data, Path(tempfile.mkdtemp(prefix="cudalint-slow-")))
    elif target == "server":
        import server_target
        server_target.check_server_script(data)
    elif target in _BUILD_NAMES:
        fl.check_build(data, _BUILD_NAMES[target],
                       Path(tempfile.mkdtemp(prefix="cudalint-slow-")))
    elif target in ("cuda", "hostile_cuda"):
        fl.check_cuda(data)
    else:
        raise SystemExit(f"unknown target {target!r}")


def main(path: str, target: str) -> dict:
    from cudalint.analysis.fp import clang_process
    from cudalint.rule import all_rules
    all_rules()
    raw = Path(path).read_bytes()
    data = gzip.decompress(raw) if path.endswith(".gz") else raw
    problem = None
    c0 = time.process_time()
    try:
        check(data, target)
    except Exception as exc:  # noqa: BLE001 - reported to the caller
        problem = f"{type(exc).__name__}: {exc}"[:300]
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = time.process_time() - c0 + ru.ru_utime + ru.ru_stime + \
        _cpu_of(clang_process.helper_pid())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    return {"cpu_s": round(cpu, 3), "peak_mb": peak, "problem": problem}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2])))

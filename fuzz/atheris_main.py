"""Coverage-guided fuzzing with atheris (libFuzzer) for long runs; not needed in CI.

    pip install atheris
    python fuzz/atheris_main.py cuda   /tmp/corpus-cuda   fixtures/ -max_total_time=3600 \
        -artifact_prefix=/tmp/cudalint-crash- -timeout=60 -rss_limit_mb=4096
    python fuzz/atheris_main.py python /tmp/corpus-py     fixtures/ examples/
    python fuzz/atheris_main.py ptxas  /tmp/corpus-ptxas  fixtures/
    python fuzz/atheris_main.py config|cmake|pyproject|setup|fix_cuda|fix_python|cache|server

The first argument names the target; the rest go to libFuzzer (corpus folders first: the
first one is written to, the others seed it; ``-max_total_time``, ``-jobs``, ...). Each
input is handed to the same check as the hypothesis tests (tests/fuzz/fuzzlib.py), so a
crash here is a property failure there; put the crashing file libFuzzer writes
(``crash-<sha>``) into ``tests/fuzz/regressions/<target folder>/`` once fixed.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "fuzz"))


def _targets():
    import fuzzlib as fl
    tmp = Path(tempfile.mkdtemp(prefix="cudalint-atheris-"))
    ptxas_cu = sorted(fl.FIXTURES.glob("CL30*/*.cu"))[0].read_bytes()

    def server(data: bytes) -> None:
        import json
        import server_target
        text = data.decode("utf-8", "surrogateescape")
        # the input is the buffer; a few edits at fixed spots make it a session
        n = text.count("\n")
        script = {"kind": "cuda", "encoding": "utf-16", "text": text, "changes": [
            {"range": [[n // 2, 0], [n // 2, 3]], "text": "x"},
            {"range": [[0, 0], [0, 0]], "text": "// noqa\n"}]}
        server_target.check_server_script(json.dumps(script).encode())

    return {
        "cuda": lambda d: fl.check_cuda(d, notices=True),
        "cuda_text": lambda d: fl.check_cuda_text(d.decode("utf-8", "surrogateescape")),
        "python": fl.check_python,
        "ptxas": lambda d: (fl.check_ptxas(d), fl.check_ptxas(d, cu=ptxas_cu, tmpdir=tmp)),
        "config": lambda d: fl.check_config(d, "pyproject.toml", Path(tempfile.mkdtemp(
            dir=tmp))),
        "cmake": lambda d: fl.check_build(d, "CMakeLists.txt", Path(tempfile.mkdtemp(dir=tmp))),
        "pyproject": lambda d: fl.check_build(d, "pyproject.toml",
                                              Path(tempfile.mkdtemp(dir=tmp))),
        "setup": lambda d: fl.check_build(d, "setup.py", Path(tempfile.mkdtemp(dir=tmp))),
        "fix_cuda": lambda d: fl.check_fix(d, "cuda"),
        "fix_python": lambda d: fl.check_fix(d, "python"),
        "cache": lambda d: fl.check_cache_entry(d, Path(tempfile.mkdtemp(dir=tmp))),
        "server": server,
    }


def main() -> None:
    import atheris
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        raise SystemExit(__doc__)
    name = sys.argv.pop(1)
    with atheris.instrument_imports():
        import cudalint.engine  # noqa: F401
        import cudalint.fixes  # noqa: F401
        targets = _targets()
    if name not in targets:
        raise SystemExit(f"unknown target {name!r}; one of {', '.join(sorted(targets))}")
    check = targets[name]
    for arg in sys.argv[1:2]:
        if not arg.startswith("-") and not Path(arg).exists():
            Path(arg).mkdir(parents=True, exist_ok=True)   # the corpus libFuzzer writes to

    def one(data: bytes) -> None:
        check(data)

    atheris.Setup(sys.argv, one)
    atheris.Fuzz()


if __name__ == "__main__":
    main()

"""A run leaves the temp directory as it found it, but for one keyed folder (the libclang
shim's PCH, reused by every later run): worker and libclang helper processes end with
os._exit, where no atexit clean-up runs, so a folder per process was litter (issue 16)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cudalint.analysis.fp.clang_session import libclang_available

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(not libclang_available(), reason="the shim is a libclang artefact")
def test_runs_with_workers_leave_one_reused_shim_folder(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp))
    seen = []
    for _ in range(3):
        proc = subprocess.run(
            [sys.executable, "-m", "cudalint", "check", str(ROOT / "fixtures" / "CL403"),
             str(ROOT / "examples"), "--no-cache", "-j", "2", "--select", "ALL",
             "--output-format", "json"],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
        assert proc.returncode == 1, proc.stderr
        assert '"CL403"' in proc.stdout          # libclang ran (in workers / its helper)
        seen.append(sorted(os.listdir(tmp)))
    assert len(seen[0]) == 1 and seen[0][0].startswith("cudalint-shim-")
    assert seen[0] == seen[1] == seen[2]
    assert sorted(os.listdir(tmp / seen[0][0])) == ["shim.cuh", "shim.pch"]


def _state(folder: Path) -> list[tuple[str, int, int]]:
    """Every entry under ``folder``: its path, size and modification time (a rebuilt
    PCH, or a file written and left, changes it)."""
    return sorted((str(p.relative_to(folder)), p.stat().st_size, p.stat().st_mtime_ns)
                  for p in folder.rglob("*"))


@pytest.mark.skipif(not libclang_available(), reason="the shim is a libclang artefact")
def test_twenty_runs_with_two_jobs_and_an_interrupted_one_leave_temp_as_found(tmp_path):
    """Issue 16's done-criterion: once the keyed shim folder exists, 20 consecutive runs
    with --jobs 2 (workers and libclang in them) leave the temp directory exactly as they
    found it, and so does a run interrupted by SIGINT while its workers run."""
    import signal
    import time
    src = tmp_path / "src"
    src.mkdir()
    for i in range(8):      # enough files for worker processes (runner.PARALLEL_MIN_FILES)
        (src / f"m{i}.cu").write_text((ROOT / "fixtures" / "CL403" / "math_calls.cu")
                                      .read_text())
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp))
    command = [sys.executable, "-m", "cudalint", "check", str(src), "--arch", "sm_86",
               "--no-cache", "-j", "2", "--select", "CL403", "--output-format", "json"]

    def run() -> None:
        proc = subprocess.run(command, capture_output=True, text=True, env=env,
                              cwd=tmp_path, timeout=600)
        assert proc.returncode == 1, proc.stderr
        assert proc.stdout.count('"CL403"') == 8 * 4     # libclang ran in the workers

    run()                                   # builds the keyed shim folder
    found = _state(tmp)
    assert [p for p, _, _ in found if "/" not in p][0].startswith("cudalint-shim-")
    for k in range(20):
        run()
        assert _state(tmp) == found, f"run {k + 2}"

    for i in range(8, 1000):                # a longer run, interrupted while it works
        (src / f"m{i}.cu").write_text((src / "m0.cu").read_text())
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=env, cwd=tmp_path)
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    deadline = time.monotonic() + 30        # interrupt once its workers run (a fixed 3 s
    while time.monotonic() < deadline:      # sleep let a fast machine finish first)
        if children.exists() and children.read_text().strip():
            break
        time.sleep(0.05)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode in (130, -2), err
    assert _state(tmp) == found

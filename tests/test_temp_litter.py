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

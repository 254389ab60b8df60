"""The pre-commit hook for real: a project whose .pre-commit-config.yaml points at a git
copy of this working tree runs `pre-commit run --all-files`; pre-commit installs cudalint
from that repository with pip (PyPI for the dependencies) and the hook must fail with
cudalint's findings, and honour `exclude` for the files it is handed."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

LEGACY_CU = ("__global__ void reduce(float* a) {\n"
             "    a[0] = __shfl(a[1], 0);\n"
             "}\n")
CLEAN_CU = ("__global__ void copy(float* __restrict__ b) {\n"
            "    b[threadIdx.x] = 0.0f;\n"
            "}\n")
LEGACY_PY = ('import cupy as cp\n'
             'k = cp.RawKernel(r"""\n'
             '__global__ void k(float* a) { a[0] = __shfl_down(a[1], 1); }\n'
             '""", "k")\n')

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
           "GIT_CONFIG_NOSYSTEM": "1"}


def _git(*args: str, cwd: Path) -> str:
    env = {**os.environ, **GIT_ENV, "HOME": str(cwd)}
    return subprocess.run(["git", "-c", "init.defaultBranch=main", "-c",
                           "commit.gpgsign=false", *args], cwd=cwd, env=env, check=True,
                          capture_output=True, text=True).stdout


def _hook_repo(dest: Path) -> str:
    """A git repository holding this working tree (tracked and untracked, not ignored
    files) in one commit; returns the commit."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], cwd=ROOT, capture_output=True,
                            check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = ROOT / rel
        if not src.is_file():
            continue                 # deleted in the working tree
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)
    _git("init", "-q", cwd=dest)
    _git("add", "-A", cwd=dest)
    _git("commit", "-q", "-m", "hook repo", cwd=dest)
    return _git("rev-parse", "HEAD", cwd=dest).strip()


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(),
                    reason="needs git and a git checkout of cudalint")
def test_pre_commit_hook_runs_cudalint(tmp_path):
    hooks = tmp_path / "hookrepo"
    hooks.mkdir()
    rev = _hook_repo(hooks)

    proj = tmp_path / "proj"
    (proj / "src").mkdir(parents=True)
    (proj / "third_party").mkdir()
    (proj / "src" / "legacy.cu").write_text(LEGACY_CU)
    (proj / "src" / "clean.cu").write_text(CLEAN_CU)
    (proj / "src" / "kernels.py").write_text(LEGACY_PY)
    (proj / "src" / "notes.txt").write_text("__shfl(x, 0) in a text file is not linted\n")
    (proj / "third_party" / "vendored.cu").write_text(LEGACY_CU)
    (proj / "pyproject.toml").write_text('[tool.cudalint]\nextend-exclude = ["third_party"]\n')
    (proj / ".pre-commit-config.yaml").write_text(
        f"repos:\n"
        f"  - repo: {hooks.as_posix()}\n"
        f"    rev: {rev}\n"
        f"    hooks:\n"
        f"      - id: cudalint\n")
    _git("init", "-q", cwd=proj)
    _git("add", "-A", cwd=proj)

    env = {**os.environ, **GIT_ENV, "PRE_COMMIT_HOME": str(tmp_path / "cache"),
           "NO_COLOR": "1", "TERM": "dumb"}
    env.pop("VIRTUAL_ENV", None)
    run = subprocess.run([sys.executable, "-m", "pre_commit", "run", "--all-files",
                          "--color", "never"], cwd=proj, env=env, capture_output=True,
                         text=True, timeout=900)
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "cudalint" in out and "Failed" in out, out
    assert "src/legacy.cu:2:12: CL104" in out, out
    assert "src/kernels.py:3:38: CL104" in out, out
    assert "clean.cu" not in out and "notes.txt" not in out, out
    assert "third_party" not in out, out         # --force-exclude: config exclude holds

    # fixed code passes the hook
    (proj / "src" / "legacy.cu").write_text(CLEAN_CU)
    (proj / "src" / "kernels.py").write_text(LEGACY_PY.replace("__shfl_down(a[1], 1)",
                                                               "__shfl_down_sync(0xffffffffu, a[1], 1)"))
    _git("add", "-A", cwd=proj)
    run = subprocess.run([sys.executable, "-m", "pre_commit", "run", "--all-files",
                          "--color", "never"], cwd=proj, env=env, capture_output=True,
                         text=True, timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Passed" in run.stdout

"""Output cut short never leaves a corrupt cache entry or a half-written fixed file.

* SIGKILL at a chosen moment: a child process runs the real CLI with its writes slowed
  down (half of a cache entry or of a fixed file written and flushed, then it waits), and
  is killed there, or just before the rename; and SIGKILL at random moments of real runs.
* A full disk: ``write`` / ``os.replace`` failing with ENOSPC, a cache folder that cannot
  be written (EACCES / EROFS).

After each, every cache entry reads back as exactly what a fresh lint gives (or is not
there), every source file is byte-for-byte either the original or the fully fixed text,
and a new run prints what a run without cache prints.
"""
from __future__ import annotations

import errno
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import pytest

from cudalint import __version__
from cudalint.cache import CACHE_DIR, INDEX_NAME, decode_result, read_index
from cudalint.config import Settings
from cudalint.fixes import fix_text

ROOT = Path(__file__).resolve().parents[2]

# a kernel with a legacy intrinsic (CL104, unsafe fix) and an unused noqa (CL001, safe fix)
KERNEL = textwrap.dedent("""\
    __global__ void reduce_{i}(const float* x, float* y) {{
        float v = x[threadIdx.x];
        for (int o = 16; o > 0; o >>= 1)
            v += __shfl_down(v, o);
        v += __shfl_xor(v, 1);  // noqa: CL202
        y[threadIdx.x * {i}] = v;
    }}
    """)


def make_project(folder: Path, n: int = 8, pad: int = 0) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pyproject.toml").write_text("[tool.cudalint]\nselect = [\"ALL\"]\n")
    files = []
    for i in range(n):
        p = folder / f"k{i}.cu"
        p.write_text(KERNEL.format(i=i + 1) + "// padding\n" * pad)
        files.append(p)
    return files


CHILD = textwrap.dedent("""\
    import os, sys, time
    mode, where, marker = sys.argv[1], sys.argv[2], sys.argv[3]
    import cudalint.cache as cache_mod, cudalint.fixes as fixes_mod
    from cudalint.cli import main

    def pause():
        open(marker, "w").close()
        time.sleep(120)

    class SlowFile:
        # writes half of the first big write, flushes it to the file, then waits
        def __init__(self, fh):
            self.fh, self.done = fh, False
        def write(self, data):
            if not self.done and len(data) > 1:
                self.done = True
                half = len(data) // 2
                self.fh.write(data[:half])
                self.fh.flush()
                os.fsync(self.fh.fileno())
                pause()
                return self.fh.write(data[half:]) + half
            return self.fh.write(data)
        def __getattr__(self, name):
            return getattr(self.fh, name)
        def __enter__(self):
            return self
        def __exit__(self, *a):
            return self.fh.__exit__(*a)

    class OsProxy:
        def __getattr__(self, name):
            return getattr(os, name)
        def fdopen(self, *a, **k):
            fh = os.fdopen(*a, **k)
            return SlowFile(fh) if where == "write" else fh
        def replace(self, *a, **k):
            if where == "replace":
                pause()
            return os.replace(*a, **k)

    if mode == "cache":
        cache_mod.os = OsProxy()
        if where == "write":
            # json.dump writes in small chunks: let the whole entry be one write
            import json
            real = json.dump
            cache_mod.json = type("J", (), {"dump": staticmethod(
                lambda obj, fh, **k: fh.write(json.dumps(obj, **k))),
                "load": staticmethod(json.load)})
        sys.exit(main(sys.argv[4:]))
    else:
        fixes_mod.os = OsProxy()
        sys.exit(main(sys.argv[4:]))
    """)


def run_child(tmp: Path, mode: str, where: str, args: list[str]) -> None:
    """Start the CLI in a child, wait until it is inside the write, SIGKILL it."""
    script = tmp.parent / "child.py"       # outside the project: not linted
    script.write_text(CHILD)
    marker = tmp.parent / f"marker-{mode}-{where}"
    if marker.exists():
        marker.unlink()
    proc = subprocess.Popen([sys.executable, str(script), mode, where, str(marker), *args],
                            cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not marker.exists():
        if proc.poll() is not None:
            raise AssertionError(f"child ended before the write: {proc.stderr.read()!r}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("child never reached the write")
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL


def cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cudalint", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def entries(project: Path) -> dict:
    """The cache index's entries (name -> entry); {} when there is none or it is not whole."""
    # whatever code fingerprint it carries: the code may change while a test runs
    index = read_index(project / CACHE_DIR / __version__ / INDEX_NAME, check_code=False)
    return {n: e for n, e in index.items() if not n.startswith("\0")}   # files'


def index_is_whole(project: Path) -> bool:
    return bool(read_index(project / CACHE_DIR / __version__ / INDEX_NAME,
                           check_code=False))


def assert_cache_sound(project: Path) -> int:
    """Every entry reads back and equals a fresh lint of its file; a new cached run
    prints exactly what an uncached run prints. Returns #entries."""
    for name, entry in entries(project).items():
        got = decode_result(entry[4])
        assert got is not None, f"cache entry {name!r} is corrupt: {entry!r:.200}"
        src = project / Path(got.path).name
        fresh = _lint(project, src)
        assert [d.to_cache() for d in got.diagnostics] == \
            [d.to_cache() for d in fresh.diagnostics]
    cached = cli(["check", ".", "--output-format", "json"], project)
    uncached = cli(["check", ".", "--output-format", "json", "--no-cache"], project)
    assert cached.returncode == uncached.returncode, cached.stderr
    assert json.loads(cached.stdout) == json.loads(uncached.stdout)
    return len(entries(project))


def _lint(project: Path, src: Path):
    from cudalint.engine import lint_bytes
    settings = replace(Settings(select=("ALL",)), root=str(project))
    return lint_bytes(src.name, src.read_bytes(), settings, "cuda")


# ---------------------------------------------------------------------------------------
# SIGKILL while the cache is written


@pytest.mark.parametrize("where", ["write", "replace"])
def test_kill_while_cache_entry_is_written(tmp_path, where):
    project = tmp_path / "proj"
    make_project(project, n=3)
    run_child(project, "cache", where, ["check", ".", "--output-format", "json", "-j", "1"])
    temps = list((project / CACHE_DIR / __version__).glob(".tmp-*"))
    assert temps, "the kill was meant to land between the temp file and the rename"
    if where == "write":
        # the half-written temp file is there, and it is not a readable index
        assert temps[0].stat().st_size > 0 and read_index(temps[0]) == {}
    assert not index_is_whole(project)     # nothing half-written under the index's name
    assert_cache_sound(project)
    assert len(entries(project)) == len(_targets(project))   # the next run fills it


def test_stale_temp_files_are_swept(tmp_path):
    project = tmp_path / "proj"
    make_project(project, n=1)
    run_child(project, "cache", "write", ["check", ".", "-j", "1"])
    d = project / CACHE_DIR / __version__
    (stale,) = d.glob(".tmp-*")
    old = time.time() - 7200
    os.utime(stale, (old, old))
    fresh = d / ".tmp-fresh.json"        # another process's write in progress: kept
    fresh.write_text("{")
    assert_cache_sound(project)
    assert not stale.exists()
    assert fresh.exists()


def test_kill_at_random_moments_with_cache(tmp_path):
    project = tmp_path / "proj"
    make_project(project, n=40, pad=100)
    t0 = time.monotonic()
    cli(["check", ".", "--output-format", "json", "--no-cache"], project)
    full = time.monotonic() - t0           # kills land from mid-run to the very end
    rng = random.Random(1234)
    for _ in range(6):
        proc = subprocess.Popen([sys.executable, "-m", "cudalint", "check", ".",
                                 "--output-format", "json"], cwd=project,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.5 * full, 1.05 * full))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        index = project / CACHE_DIR / __version__ / INDEX_NAME
        if index.exists():                 # the index is whole, or it is not there
            assert index_is_whole(project), "corrupt index"
            for name, entry in entries(project).items():
                assert decode_result(entry[4]) is not None, f"corrupt entry {name!r}"
        # edit some files so that later runs write new entries
        for p in rng.sample(sorted(project.glob("*.cu")), 10):
            p.write_text(p.read_text() + "// edited\n")
    assert assert_cache_sound(project) >= 40


# ---------------------------------------------------------------------------------------
# SIGKILL while --fix writes


def expected_fix(path: Path) -> str:
    text = path.read_text()
    fixed, n = fix_text(path.name, text, Settings(select=("ALL",)), "cuda", True)
    assert n > 0 and fixed != text
    return fixed


@pytest.mark.parametrize("where", ["write", "replace"])
def test_kill_while_fix_writes(tmp_path, where):
    project = tmp_path / "proj"
    files = make_project(project, n=3, pad=2000)
    before = {p: p.read_text() for p in files}
    after = {p: expected_fix(p) for p in files}
    run_child(project, "fix", where, ["check", ".", "--fix", "--unsafe-fixes", "--no-cache",
                                      "-j", "1"])
    states = {p: p.read_text() for p in files}
    for p in files:
        assert states[p] in (before[p], after[p]), f"{p.name} is half-written"
    # the file being written when the kill came is still the original
    assert any(states[p] == before[p] for p in files)
    leftovers = list(project.glob(".*.cudalint-tmp"))
    assert leftovers, "the kill was meant to land before the rename"
    if where == "write":
        assert all(len(t.read_bytes()) < len(after[files[0]].encode()) for t in leftovers)
    # a later run ignores the leftovers and finishes the job
    res = cli(["check", ".", "--fix", "--unsafe-fixes", "--output-format", "json"], project)
    assert res.returncode in (0, 1), res.stderr
    for p in files:
        assert p.read_text() == after[p]
    assert all(d["filename"].endswith(".cu") and "cudalint-tmp" not in d["filename"]
               for d in json.loads(res.stdout))


def test_kill_at_random_moments_during_fix(tmp_path):
    project = tmp_path / "proj"
    files = make_project(project, n=16, pad=3000)
    before = {p: p.read_text() for p in files}
    after = {p: expected_fix(p) for p in files}
    rng = random.Random(99)
    for _ in range(4):
        proc = subprocess.Popen([sys.executable, "-m", "cudalint", "check", ".", "--fix",
                                 "--unsafe-fixes", "--no-cache"], cwd=project,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.3, 2.0))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        for p in files:
            assert p.read_text() in (before[p], after[p]), f"{p.name} is half-written"
        for p in files:                    # start over from the originals
            p.write_text(before[p])


# ---------------------------------------------------------------------------------------
# a full disk, a cache folder that cannot be written


def _targets(project: Path):
    from cudalint.config import ConfigResolver
    from cudalint.discovery import discover
    return discover([str(project)], ConfigResolver())


def _run(project: Path, use_cache: bool = True):
    from cudalint.runner import run
    return [[d.to_cache() for d in r.diagnostics] for r in run(_targets(project),
                                                                use_cache=use_cache, jobs=2)]


def _enospc(*a, **k):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


class _FullFile:
    """A file object on a full disk: the first write of any size fails."""

    def __init__(self, fh):
        self.fh = fh

    def write(self, data):
        if len(data) > 0:
            self.fh.write(data[:len(data) // 3])
            _enospc()
        return 0

    def __getattr__(self, name):
        return getattr(self.fh, name)

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return self.fh.__exit__(*a)


@pytest.mark.parametrize("fault", ["replace", "write", "mkstemp", "mkdir"])
def test_cache_on_full_or_readonly_disk(tmp_path, monkeypatch, fault):
    import cudalint.cache as cache_mod
    project = tmp_path / "proj"
    make_project(project, n=7)        # > PARALLEL_MIN_FILES: the pool path too
    truth = _run(project, use_cache=False)

    class OsProxy:
        def __getattr__(self, name):
            return getattr(os, name)

        def replace(self, *a, **k):
            return _enospc()

        def fdopen(self, *a, **k):
            return _FullFile(os.fdopen(*a, **k))

    if fault in ("replace", "write"):
        proxy = OsProxy()
        if fault == "replace":
            proxy.fdopen = os.fdopen  # type: ignore[method-assign]
        else:
            proxy.replace = os.replace  # type: ignore[method-assign]
        monkeypatch.setattr(cache_mod, "os", proxy)
    elif fault == "mkstemp":
        def readonly(*a, **k):
            raise OSError(errno.EACCES, os.strerror(errno.EACCES))
        monkeypatch.setattr(cache_mod.tempfile, "mkstemp", readonly)
    else:
        def rofs(self, *a, **k):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))
        monkeypatch.setattr(cache_mod.Path, "mkdir", rofs)
    assert _run(project) == truth          # the run is not affected
    assert _run(project) == truth          # nor the next one
    assert not index_is_whole(project)     # no entry, complete or not
    d = project / CACHE_DIR / __version__
    assert not d.is_dir() or not any(d.iterdir()), list(d.iterdir())   # no temp files
    monkeypatch.undo()
    assert _run(project) == truth                                   # disk freed: cached
    assert len(entries(project)) == len(truth)


@pytest.mark.parametrize("fault", ["write", "replace", "fsync"])
def test_fix_on_full_disk(tmp_path, monkeypatch, fault):
    import cudalint.fixes as fixes_mod
    from cudalint.fixes import write_atomic
    target = tmp_path / "k.cu"
    original = KERNEL.format(i=1) * 50
    target.write_text(original)
    os.chmod(target, 0o640)

    class OsProxy:
        def __getattr__(self, name):
            return getattr(os, name)

        def fdopen(self, *a, **k):
            fh = os.fdopen(*a, **k)
            return _FullFile(fh) if fault == "write" else fh

        def replace(self, *a, **k):
            return _enospc() if fault == "replace" else os.replace(*a, **k)

        def fsync(self, fd):
            return _enospc() if fault == "fsync" else os.fsync(fd)

    monkeypatch.setattr(fixes_mod, "os", OsProxy())
    with pytest.raises(OSError) as info:
        write_atomic(target, "fixed\n" * 10000)
    assert info.value.errno == errno.ENOSPC
    assert target.read_text() == original            # untouched
    assert os.stat(target).st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.cu"]   # no temp file left


def test_fix_on_full_disk_cli(tmp_path):
    """Through the CLI: exit 2 with a one-line error, every file whole."""
    project = tmp_path / "proj"
    files = make_project(project, n=3)
    before = {p: p.read_text() for p in files}
    script = tmp_path / "full.py"
    script.write_text(textwrap.dedent("""\
        import errno, os, sys
        import cudalint.fixes as f
        class P:
            def __getattr__(self, n):
                return getattr(os, n)
            def replace(self, *a):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        f.os = P()
        from cudalint.cli import main
        sys.exit(main(sys.argv[1:]))
        """))
    res = subprocess.run([sys.executable, str(script), "check", ".", "--fix", "--unsafe-fixes",
                          "--no-cache"], cwd=project, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 2
    assert "No space left on device" in res.stderr and "unchanged" in res.stderr
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr
    for p in files:
        assert p.read_text() == before[p]
    assert list(project.glob(".*.cudalint-tmp")) == []

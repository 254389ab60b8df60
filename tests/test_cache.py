"""The result cache (cudalint/cache.py): a warm run trusts stat signatures only where that
is safe, falls back to the content key everywhere else, and never serves a stale result.

Each test counts what the run read and linted (in-process, one file: the serial path).
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

import cudalint.cache as cache_mod
import cudalint.engine as engine_mod
import cudalint.runner as runner_mod
from cudalint import __version__
from cudalint.cli import main

LEGACY = "__global__ void k(float* a) {\n    a[0] = __shfl(a[1], 0);\n}\n"
SAME_SIZE_CLEAN = LEGACY.replace("__shfl(", "__shfx(")      # no CL104, same size


@pytest.fixture
def proj(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    return tmp_path


class Counts:
    def __init__(self, monkeypatch):
        self.reads = 0
        self.lints = 0
        self.linted: list[str] = []
        real_read, real_lint = runner_mod._read, engine_mod.lint_bytes

        def read(path):
            self.reads += 1
            return real_read(path)

        def lint(*a, **k):
            self.lints += 1
            self.linted.append(a[0])
            return real_lint(*a, **k)

        monkeypatch.setattr(runner_mod, "_read", read)
        monkeypatch.setattr(engine_mod, "lint_bytes", lint)

    def reset(self):
        self.reads = self.lints = 0
        self.linted = []


@pytest.fixture
def counts(monkeypatch):
    return Counts(monkeypatch)


@pytest.fixture
def no_racy(monkeypatch):
    """Signatures trusted at once (the files of a test are milliseconds old)."""
    monkeypatch.setattr(cache_mod, "RACY_NS", 0)


def run(capsys, *args: str) -> tuple[int, list]:
    code = main(["a.cu", "--output-format", "json", *args])
    return code, json.loads(capsys.readouterr().out)


def next_tick():
    time.sleep(0.05)       # file timestamps move in ticks of a few milliseconds


def test_warm_run_reads_no_file(proj, capsys, counts, no_racy):
    (proj / "a.cu").write_text(LEGACY)
    code, first = run(capsys)
    assert code == 1 and counts.lints == 1
    counts.reset()
    code, again = run(capsys)
    assert (code, again) == (1, first)
    assert (counts.reads, counts.lints) == (0, 0)


def test_untrusted_signature_is_checked_by_content(proj, capsys, counts):
    # default RACY_NS: a file changed just before the run is never trusted by stat
    (proj / "a.cu").write_text(LEGACY)
    run(capsys)
    counts.reset()
    assert run(capsys)[0] == 1
    assert (counts.reads, counts.lints) == (1, 0)


def test_touched_but_unchanged_is_read_not_linted(proj, capsys, counts, no_racy):
    a = proj / "a.cu"
    a.write_text(LEGACY)
    run(capsys)
    next_tick()
    os.utime(a)                                  # new mtime, same bytes
    counts.reset()
    assert run(capsys)[0] == 1
    assert (counts.reads, counts.lints) == (1, 0)
    counts.reset()                               # the new signature was recorded
    assert run(capsys)[0] == 1
    assert (counts.reads, counts.lints) == (0, 0)


@pytest.mark.parametrize("racy", [True, False])
def test_same_size_and_mtime_restored_is_seen(proj, capsys, counts, monkeypatch, racy):
    if not racy:
        monkeypatch.setattr(cache_mod, "RACY_NS", 0)
    a = proj / "a.cu"
    a.write_text(LEGACY)
    assert run(capsys)[0] == 1
    st = a.stat()
    if not racy:
        next_tick()                              # ctime moves on
    a.write_text(SAME_SIZE_CLEAN)
    os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert a.stat().st_size == st.st_size and a.stat().st_mtime_ns == st.st_mtime_ns
    counts.reset()
    code, found = run(capsys)
    assert (code, found) == (0, [])
    assert counts.lints == 1


def test_settings_change_relints(proj, capsys, counts, no_racy):
    (proj / "a.cu").write_text(LEGACY)
    run(capsys)
    counts.reset()
    assert run(capsys, "--ignore", "CL104") == (0, [])
    assert counts.lints == 1
    (proj / "pyproject.toml").write_text("[tool.cudalint]\nignore = ['CL104']\n")
    counts.reset()
    assert run(capsys) == (0, [])
    assert counts.lints == 1


def test_rule_code_change_empties_the_cache(proj, capsys, counts, no_racy, monkeypatch):
    (proj / "a.cu").write_text(LEGACY)
    run(capsys)
    counts.reset()
    monkeypatch.setattr(cache_mod, "code_fingerprint", lambda: "other code")
    assert run(capsys)[0] == 1
    assert counts.lints == 1


def test_header_edits_and_new_headers_relint(proj, capsys, counts, no_racy):
    (proj / "a.cu").write_text('#include "tile.cuh"\n#include "extra.cuh"\n' + LEGACY)
    (proj / "tile.cuh").write_text('#include "deep.cuh"\n#define TILE 16\n')
    (proj / "deep.cuh").write_text("#define DEEP 1\n")
    run(capsys)
    counts.reset()
    run(capsys)
    assert counts.lints == 0
    for edit in (lambda: (proj / "tile.cuh").write_text('#include "deep.cuh"\n#define TILE 32\n'),
                 lambda: (proj / "deep.cuh").write_text("#define DEEP 2\n"),     # 2nd level
                 lambda: (proj / "extra.cuh").write_text("#define EXTRA 1\n")):  # created
        next_tick()
        edit()
        counts.reset()
        run(capsys)
        assert "a.cu" in counts.linted
        counts.reset()
        run(capsys)
        assert counts.lints == 0


def test_damaged_index_is_an_empty_cache(proj, capsys, counts, no_racy):
    (proj / "a.cu").write_text(LEGACY)
    _, truth = run(capsys)
    index = proj / ".cudalint_cache" / __version__ / "index.bin"
    whole = index.read_bytes()
    for damaged in (whole[:len(whole) // 2], b"", b"\0" * 100, whole[:-1] + b"!",
                    cache_mod.MAGIC + b"x" * 32 + b"\xff\xff",
                    cache_mod.MAGIC + cache_mod._header("0" * 16) + whole[len(
                        cache_mod.MAGIC) + len(cache_mod._header("0" * 16)):],
                    cache_mod.MAGIC + b"\xff\n" + b"x" * 40):
        index.write_bytes(damaged)
        assert cache_mod.read_index(index) == {}
        counts.reset()
        assert run(capsys) == (1, truth)
        assert counts.lints == 1
    index.unlink()
    index.mkdir()                       # not even a file: still no crash
    assert run(capsys) == (1, truth)


def test_another_working_folder_is_another_entry(proj, capsys, no_racy):
    (proj / "sub").mkdir()
    (proj / "sub" / "a.cu").write_text(LEGACY)
    main(["sub/a.cu", "--output-format", "json"])
    (shown,) = json.loads(capsys.readouterr().out)
    assert shown["filename"] == "sub/a.cu"
    os.chdir(proj / "sub")
    assert run(capsys)[1][0]["filename"] == "a.cu"


def test_results_round_trip_exactly(proj, capsys, no_racy):
    (proj / "a.cu").write_text(LEGACY + "// noqa: CL104\n__global__ void j() {}  // noqa: CL104\n")
    fresh = run(capsys, "--no-cache", "--select", "ALL")
    run(capsys, "--select", "ALL")
    assert run(capsys, "--select", "ALL") == fresh


def test_unplain_metrics_are_not_cached(proj):
    from cudalint.diagnostics import Diagnostic
    from cudalint.engine import FileResult
    d = Diagnostic("CL104", "n", "m", "warning", "a.cu", 1, 1, 1, 2, 0, 1,
                   metrics={"x": object()})
    assert cache_mod.encode_result(FileResult("a.cu", [d], {1: "x"}, 1)) is None
    d.metrics = {"x": (1, [2.5, None, True]), "y": {"z": "w"}}
    got = cache_mod.decode_result(cache_mod.encode_result(FileResult("a.cu", [d], {1: "x"}, 1)))
    assert got.diagnostics[0] == d and got.lines == {1: "x"}


def _plugin(site: Path, body: str) -> None:
    dist = site / "myplug-1.0.dist-info"
    dist.mkdir(exist_ok=True)
    (dist / "entry_points.txt").write_text("[cudalint.rules]\nmine = myplug_rules:Rules\n")
    (site / "myplug_rules.py").write_text(body)


def test_code_fingerprint_covers_rules_plugins_and_distributions(tmp_path, monkeypatch):
    files, names = cache_mod._code_files()
    root = Path(__file__).resolve().parent.parent
    assert str(root / "cudalint" / "engine.py") in files
    rules = Path(__import__("importlib.util").util.find_spec("cudalint.rules")
                 .submodule_search_locations[0])
    assert str(rules / "core" / "__init__.py") in files or any(
        f.startswith(str(rules)) for f in files)
    fp = cache_mod.code_fingerprint.__wrapped__

    site = tmp_path / "site-packages"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    with_empty_dir = fp()
    _plugin(site, "X = 1\n")
    installed = fp()
    assert installed != with_empty_dir
    assert str(site / "myplug_rules.py") in cache_mod._code_files()[0]
    (site / "myplug_rules.py").write_text("X = 22\n")        # an edited plugin rule
    assert fp() != installed


def _index_bytes(entries: dict) -> bytes:
    import hashlib
    import marshal
    body = marshal.dumps(entries)
    header = cache_mod._header(cache_mod.code_fingerprint())
    return cache_mod.MAGIC + header + hashlib.blake2b(header + body,
                                                      digest_size=32).digest() + body


PAYLOADS = [None, 1, (), ("a.cu",), ("a.cu", "x", (), ()), ("a.cu", 1, ((1,),), ()),
            ("a.cu", 1, (("x", "y"),), ()), ("a.cu", 1, ((1, 2),), ()),
            ("a.cu", 1, (), (None,)), ("a.cu", 1, (), ((None,) * 17,)),
            ("a.cu", 1, (), (("c",) * 17,)),
            ("a.cu", 1, (), (("CL104", "n", "m", "warning", "a.cu", 1, 1, 1, 1, 0, 0,
                              ("m", ((0, 1, 2),), "safe"), {}, "", False, None, ()),)),
            ("a.cu", 1, (), (("CL104", "n", "m", "warning", "a.cu", 1, 1, 1, 1, 0, 0,
                              None, {}, "", False, None, (("x", (1,), (1, 2)),)),))]


@pytest.mark.parametrize("payload", PAYLOADS)
def test_index_entries_of_another_shape_are_misses(proj, capsys, counts, no_racy, payload):
    """An index that passes the checksum but holds entries of another shape (written by
    something else): each is a miss, never a crash or a wrong result."""
    (proj / "a.cu").write_text(LEGACY)
    _, truth = run(capsys)
    index = proj / ".cudalint_cache" / __version__ / "index.bin"
    entries = cache_mod.read_index(index)
    (name, entry), = [(n, e) for n, e in entries.items() if not n.startswith("\0")]
    folders = {n: e for n, e in entries.items() if n.startswith(cache_mod.BUILD_PREFIX)}
    assert len(folders) == 1
    folder = next(iter(folders))
    for bad in ({name: entry[:4] + (payload,)}, {name: payload},
                {name: (entry[0], entry[1], None, entry[3], entry[4])},
                {name: (entry[0], entry[1], ((1, 2),), entry[3], entry[4])},
                {name: (entry[0], entry[1], (("x",),), entry[3], entry[4])}):
        index.write_bytes(_index_bytes({**folders, **bad}))
        counts.reset()
        assert run(capsys) == (1, truth)
        assert counts.lints == 1
    # a folder's build digest of another shape: computed again (the file's entry holds)
    for bad in ({folder: payload}, {folder: (("setup.py",), (), payload)}):
        index.write_bytes(_index_bytes({name: entry, **bad}))
        assert run(capsys) == (1, truth)


def test_build_chain_covers_what_build_digest_reads(tmp_path):
    from cudalint.project.buildflags import BUILD_FILES, build_digest
    (tmp_path / "r" / ".git").mkdir(parents=True)
    tree = {"r/setup.py": "x", "r/a/CMakeLists.txt": "y", "r/a/b/pyproject.toml": "z",
            "r/a/b/c/setup.py": "w", "outside/setup.py": "v"}
    for name, text in tree.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    folder = str(tmp_path / "r" / "a" / "b" / "c")
    read = {part.rsplit(":", 1)[0] for part in build_digest(folder + "/k.cu").split(";")
            if part}
    assert read == {str(tmp_path / n) for n in tree if not n.startswith("outside")}
    chain_paths = set()
    f = folder
    while True:
        chain_paths.update(os.path.join(f, n) for n in BUILD_FILES)
        if os.path.exists(os.path.join(f, ".git")) or os.path.dirname(f) == f:
            break
        f = os.path.dirname(f)
    assert read <= chain_paths
    chain = cache_mod.build_chain(folder, BUILD_FILES)
    assert len(chain) == len(BUILD_FILES) * 4
    assert sum(s is not None for s in chain) == 4


def test_build_files_seen_by_stat(proj, capsys, counts, no_racy, monkeypatch):
    import cudalint.project.buildflags as bf
    digests = []
    real = bf.build_digest
    monkeypatch.setattr(bf, "build_digest", lambda p: digests.append(p) or real(p))
    (proj / ".git").mkdir()
    (proj / "sub").mkdir()
    a = proj / "sub" / "a.cu"
    a.write_text(LEGACY)
    main(["sub/a.cu", "--output-format", "json"])
    capsys.readouterr()
    counts.reset()
    digests.clear()
    main(["sub/a.cu", "--output-format", "json"])
    capsys.readouterr()
    assert (counts.lints, counts.reads, digests) == (0, 0, [])   # digest from the index
    for edit in (lambda: (proj / "setup.py").write_text("# new build file above\n"),
                 lambda: (proj / "setup.py").write_text("# edited, other size\n"),
                 lambda: (proj / "sub" / "CMakeLists.txt").write_text("project(x)\n")):
        next_tick()
        edit()
        counts.reset()
        main(["sub/a.cu", "--output-format", "json"])
        capsys.readouterr()
        assert counts.lints == 1


def test_cached_result_is_a_file_result_twin():
    """CachedResult stands in for engine.FileResult (no engine import on a warm run)."""
    from dataclasses import fields
    from cudalint.diagnostics import Diagnostic
    from cudalint.engine import FileResult
    twin = [(f.name, f.default, f.default_factory) for f in fields(cache_mod.CachedResult)]
    assert twin == [(f.name, f.default, f.default_factory) for f in fields(FileResult)]
    shown = Diagnostic("CL104", "n", "m", "warning", "a.cu", 1, 1, 1, 2, 0, 1)
    hidden = Diagnostic("CL104", "n", "m", "warning", "a.cu", 2, 1, 2, 2, 0, 1,
                        suppressed=True)
    for cls in (FileResult, cache_mod.CachedResult):
        assert cls("a.cu", [shown, hidden]).visible == [shown]
    assert set(dir(FileResult)) - set(dir(cache_mod.CachedResult)) == set()


def test_discovery_reads_includes_of_changed_files_only(proj, capsys, counts, no_racy,
                                                        monkeypatch):
    import cudalint.discovery as disc
    scans = []
    real = disc.include_names
    monkeypatch.setattr(disc, "include_names", lambda p: scans.append(str(p)) or real(p))
    (proj / "x.h").write_text("#define X 1\n")
    (proj / "y.h").write_text("#define Y 1\n")
    a = proj / "a.cu"
    a.write_text('#include "x.h"\n' + LEGACY)
    run(capsys)
    assert scans == ["a.cu"] and sorted(counts.linted) == ["a.cu", "x.h"]
    scans.clear()
    counts.reset()
    run(capsys)
    assert scans == [] and counts.lints == 0
    next_tick()
    a.write_text('#include "y.h"\n' + LEGACY)
    counts.reset()
    run(capsys)
    assert scans == ["a.cu"] and sorted(counts.linted) == ["a.cu", "y.h"]
    (proj / "y.h").unlink()              # a header gone: not a target, a.cu linted again
    counts.reset()
    scans.clear()
    run(capsys)
    assert scans == [] and counts.linted == ["a.cu"]
    main(["a.cu", "--output-format", "json", "--no-cache"])      # no cache, no memo
    capsys.readouterr()
    assert scans == ["a.cu"]


def test_foreign_index_is_not_unmarshalled(proj, monkeypatch):
    """Another fingerprint in the header: the body is never given to marshal."""
    import marshal
    index = proj / "index.bin"
    body = marshal.dumps({"x": 1})
    header = cache_mod._header("f" * 16)
    import hashlib
    index.write_bytes(cache_mod.MAGIC + header +
                      hashlib.blake2b(header + body, digest_size=32).digest() + body)
    calls = []
    monkeypatch.setattr(cache_mod.marshal, "loads", lambda b: calls.append(b) or {})
    assert cache_mod.read_index(index) == {} and calls == []
    cache_mod.read_index(index, check_code=False)
    assert len(calls) == 1


def test_entries_of_removed_files_are_dropped(proj, capsys, no_racy):
    (proj / "a.cu").write_text(LEGACY)
    (proj / "b.cu").write_text(LEGACY)
    main([".", "--output-format", "json"])
    index = proj / ".cudalint_cache" / __version__ / "index.bin"
    names = [n for n in cache_mod.read_index(index) if not n.startswith("\0")]
    assert sorted(n.split("\0")[1] for n in names) == ["a.cu", "b.cu", "pyproject.toml"]
    (proj / "b.cu").unlink()
    (proj / "c.cu").write_text(LEGACY)            # something to save
    main([".", "--output-format", "json"])
    capsys.readouterr()
    names = [n for n in cache_mod.read_index(index) if not n.startswith("\0")]
    assert sorted(n.split("\0")[1] for n in names) == ["a.cu", "c.cu", "pyproject.toml"]


def test_build_file_result_follows_the_kernels_it_compiles(proj, capsys):
    """CL401 on a CMakeLists.txt reads the CUDA files the build compiles: editing one
    (expf -> sinf, which fast math changes far from IEEE) changes the build file's
    cached result on a warm run."""
    (proj / "CMakeLists.txt").write_text(
        'project(p LANGUAGES CXX CUDA)\n'
        'string(APPEND CMAKE_CUDA_FLAGS " --use_fast_math")\nadd_library(k k.cu)\n')
    k = proj / "k.cu"
    k.write_text("__global__ void k(float* y, const float* a) {\n"
                 "    y[threadIdx.x] = expf(a[threadIdx.x]);\n}\n")

    def codes() -> list:
        main(["check", ".", "--select", "CL401", "--output-format", "json"])
        return [(d["filename"], d["code"]) for d in json.loads(capsys.readouterr().out)]
    assert codes() == [] and codes() == []                  # cold, then warm
    k.write_text(k.read_text().replace("expf", "sinf"))
    assert codes() == [("CMakeLists.txt", "CL401")]

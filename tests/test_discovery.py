"""Discovery: .gitignore (nested, negated, anchored, directory-only patterns), exclude,
display names and the settings of each folder."""
from __future__ import annotations

import os
from pathlib import Path

from cudalint.config import ConfigResolver
from cudalint.discovery import _GitIgnores, discover


def tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def test_gitignore_semantics(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()
    tree(tmp_path, {
        ".gitignore": "*.gen.cu\n!keep.gen.cu\n/top.cu\nout/\ndocs/**/*.py\n# c\n\n",
        "a.cu": "", "x.gen.cu": "", "keep.gen.cu": "", "top.cu": "", "sub/top.cu": "",
        "out/o.cu": "", "sub/out/o.cu": "", "docs/a/b.py": "", "docs/c.cu": "",
        "sub/.gitignore": "*.py\n!ok.py\nlocal.cu\n", "sub/x.py": "", "sub/ok.py": "",
        "sub/local.cu": "", "local.cu": "", "sub/deep/y.py": "",
        "outfile/o.cu": "",
    })
    got = sorted(t.display for t in discover(["."], ConfigResolver()))
    assert got == sorted(["a.cu", "keep.gen.cu", "sub/top.cu", "docs/c.cu", "sub/ok.py",
                          "local.cu", "outfile/o.cu"]), got


def test_gitignore_prefilter_agrees_with_pathspec(tmp_path):
    import pathspec
    lines = ["*.o", "!keep.o", "build/", "/anchored", "a/**/b", "[abc]x.cu", "dir/*.py",
             "\\#hash", "sp\\ ace", "**/deep", "x?y"]
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("\n".join(lines) + "\n")
    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    gi = _GitIgnores()
    names = ["a.o", "keep.o", "build", "q/build", "anchored", "q/anchored", "a/b", "a/z/b",
             "ax.cu", "dx.cu", "dir/p.py", "dir/q/p.py", "#hash", "sp ace", "deep",
             "q/r/deep", "xzy", "xy", "plain.cu", "q/keep.o"]
    for name in names:
        for is_dir in (False, True):
            want = spec.match_file(name + ("/" if is_dir else ""))
            assert gi.ignored(str(tmp_path / name), is_dir) == want, (name, is_dir)


def test_display_names_and_settings_per_folder(tmp_path, monkeypatch):
    tree(tmp_path, {"p/pyproject.toml": "[tool.cudalint]\narch = 'sm_80'\n",
                    "p/a/k.cu": "", "p/k.cu": "", "q/k.cu": "",
                    "p/a/build/skip.cu": "", "p/a/CMakeLists.txt": ""})
    monkeypatch.chdir(tmp_path / "p")
    found = {t.display: t for t in discover([".", "../q", "a/"], ConfigResolver())}
    assert set(found) == {"k.cu", "pyproject.toml", os.path.join("a", "k.cu"),
                          os.path.join("a", "CMakeLists.txt"), os.path.join("..", "q", "k.cu")}
    assert found["k.cu"].settings.arch == "sm_80"
    assert found[os.path.join("a", "k.cu")].settings.arch == "sm_80"
    assert found[os.path.join("..", "q", "k.cu")].settings.arch == "sm_90"
    assert found[os.path.join("a", "CMakeLists.txt")].kind == "cmake"


def test_include_scan_agrees_with_the_line_regex():
    """_include_names is a faster _INCLUDE.finditer: same names on any bytes (blank lines,
    # and include on different lines, directives mid-line, names spanning lines)."""
    import random
    from cudalint.discovery import _INCLUDE, _include_names
    rng = random.Random(7)
    alphabet = [b"#", b"include", b" ", b"\n", b"\t", b'"', b"a", b"x.h", b"\r", b"\v", b"\f",
                b"# include", b"//", b"#include \"h.cuh\"\n"]
    for _ in range(50000):
        data = b"".join(rng.choice(alphabet) for _ in range(rng.randint(0, 16)))
        assert _include_names(data) == [m.group(1) for m in _INCLUDE.finditer(data)], data


def test_included_headers_are_targets(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    tree(tmp_path, {"src/k.cu": '#include "a.h"\n  #  include "../inc/b.hpp"\nx #include "c.h"\n'
                                '#include "missing.h"\n#include "d.txt"\n',
                    "src/a.h": "", "inc/b.hpp": "", "src/c.h": "", "src/d.txt": ""})
    got = sorted(t.display for t in discover(["src"], ConfigResolver()))
    assert got == sorted([os.path.join("src", "k.cu"), os.path.join("src", "a.h"),
                          os.path.join("inc", "b.hpp")])

"""``--add-noqa`` (issue 16, item 4; ruff's flag): a noqa comment for every finding shown,
``// noqa: CODE`` in CUDA (inside the kernel string for CUDA held in Python), ``# noqa:
CODE`` on the Python line, joined to an existing noqa comment, never inside a Python string
that is not CUDA source; written atomically; a second run changes nothing."""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from cudalint.cli import main
from cudalint.diagnostics import Diagnostic
from cudalint.fixes import add_noqa

ROOT = Path(__file__).resolve().parent.parent


def _digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_fixtures_then_a_plain_run_reports_nothing_and_again_changes_nothing(
        tmp_path, monkeypatch, capsys):
    shutil.copytree(ROOT / "fixtures", tmp_path / "fixtures")
    shutil.copytree(ROOT / "tests" / "data" / "notebooks", tmp_path / "fixtures" / "nb")
    monkeypatch.chdir(tmp_path)
    before = _digest(tmp_path)
    assert main(["check", "--no-cache", "--select", "ALL", "--add-noqa", "fixtures"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("Added ") and "noqa directives." in err
    assert "could not take" not in err
    first = _digest(tmp_path)
    assert first != before
    assert main(["check", "--no-cache", "--select", "ALL", "--output-format", "json",
                 "fixtures"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert main(["check", "--no-cache", "--select", "ALL", "--add-noqa", "fixtures"]) == 0
    assert capsys.readouterr().err == "Added 0 noqa directives.\n"
    assert _digest(tmp_path) == first
    nb = json.loads((tmp_path / "fixtures" / "nb" / "kernels.ipynb").read_text())
    assert "    v += __shfl_down(v, 1);  // noqa: CL104\n" in nb["cells"][2]["source"]


def test_merges_with_an_existing_comment_and_python_lines(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k.cu").write_text(
        "__global__ void k(float* a) { a[0] = __shfl(a[1], 0); }  // noqa: E501\n")
    (tmp_path / "m.py").write_text(
        'import cupy as cp\n'
        'k = cp.RawKernel(r"""\n'
        'extern "C" __global__ void k(float* a) {\n'
        '    a[0] = __shfl(a[1], 0);\n'
        '}""", "k")\n'
        'q = cp.RawKernel(r\'extern "C" __global__ void q(float* a) '
        '{ a[0] = __shfl(a[1], 0); }\', "q")\n')
    assert main(["check", "--no-cache", "--select", "CL104", "--add-noqa", "."]) == 0
    assert capsys.readouterr().err == "Added 3 noqa directives.\n"
    assert (tmp_path / "k.cu").read_text().endswith("// noqa: E501, CL104\n")
    py = (tmp_path / "m.py").read_text().splitlines()
    assert py[3] == "    a[0] = __shfl(a[1], 0);  // noqa: CL104"    # inside the kernel
    assert py[5].endswith("\"q\")  # noqa: CL104")                    # on the Python line
    assert main(["check", "--no-cache", "--select", "CL104", "."]) == 0


def _diag(code: str, row: int) -> Diagnostic:
    return Diagnostic(code=code, name="x", message="m", severity="warning", filename="f.py",
                      row=row, column=1, end_row=row, end_column=2, start_offset=0,
                      end_offset=1)


def test_never_inside_a_python_string_that_is_not_cuda():
    text = 'flags = """--use_fast_math\n-O3"""\n'
    new, added, skipped = add_noqa(text, "python", [_diag("CL401", 1)])
    assert (new, added, skipped) == (text, 0, 1)
    new, added, skipped = add_noqa(text, "python", [_diag("CL401", 2)])
    assert new == 'flags = """--use_fast_math\n-O3"""  # noqa: CL401\n' and added == 1


def test_a_continued_line_gets_its_noqa_where_it_ends(tmp_path, monkeypatch, capsys):
    """A line continued with a backslash cannot hold a comment (a `//` one swallows the
    next line of the macro, a `#` one is a Python syntax error): the noqa goes on the row
    that ends the continued line, where suppressions read it for every row of that line
    (ruff's rule for continuation lines); a plain run then reports nothing and a second
    --add-noqa changes nothing."""
    macro = "#define F(x) \\\n  __shfl(x, 0) \\\n  + 1\nint y;\n"
    new, added, skipped = add_noqa(macro, "cuda", [_diag("CL104", 2), _diag("CL202", 1)])
    assert (added, skipped) == (2, 0)
    assert new.split("\n")[2] == "  + 1  // noqa: CL104, CL202"
    assert add_noqa(new, "cuda", [_diag("CL104", 2), _diag("CL202", 1)])[1:] == (0, 0)
    from cudalint.suppressions import parse_suppressions
    sup = parse_suppressions(new)
    assert sup.match("CL104", 1) is sup.match("CL202", 2) is sup.lines[3]
    assert sup.match("CL104", 4) is None

    monkeypatch.chdir(tmp_path)
    (tmp_path / "k.cu").write_text(
        "__global__ void j(float* a) {\n"
        "    a[threadIdx.x] = __shfl(a[threadIdx.x], \\\n"
        "                            0);\n"
        "}\n")
    (tmp_path / "m.py").write_text(
        'import cupy as cp\n'
        'k = cp.RawKernel(r"""\n'
        'extern "C" __global__ void k(float* a) {\n'
        '    a[0] = __shfl(a[1], \\\n'
        '                  0);\n'
        '}\n'
        '""", "k")\n'
        'q = cp.RawKernel(r"""extern "C" __global__ void q(float* a) { '
        'a[0] = __shfl(a[1], 0); }""", \\\n'
        '    "q")\n')
    assert main(["check", "--no-cache", "--select", "CL104", "--output-format", "json",
                 "."]) == 1
    rows = sorted((Path(d["filename"]).name, d["location"]["row"])
                  for d in json.loads(capsys.readouterr().out))
    assert rows == [("k.cu", 2), ("m.py", 4), ("m.py", 8)]
    assert main(["check", "--no-cache", "--select", "CL104", "--add-noqa", "."]) == 0
    assert capsys.readouterr().err == "Added 3 noqa directives.\n"
    cu = (tmp_path / "k.cu").read_text().splitlines()
    assert cu[1].endswith("\\") and cu[2] == "                            0);  // noqa: CL104"
    py = (tmp_path / "m.py").read_text().splitlines()
    assert py[4] == "                  0);  // noqa: CL104"        # CUDA's, in the string
    assert py[8] == '    "q")  # noqa: CL104'                    # the Python line's end
    first = _digest(tmp_path)
    assert main(["check", "--no-cache", "--select", "CL104", "."]) == 0
    capsys.readouterr()
    assert main(["check", "--no-cache", "--select", "CL104", "--add-noqa", "."]) == 0
    assert capsys.readouterr().err == "Added 0 noqa directives.\n"
    assert _digest(tmp_path) == first


@pytest.mark.parametrize("extra", [["--fix"], ["--diff"], ["-"]])
def test_refused_with_fix_diff_or_stdin(extra, capsys):
    assert main(["check", "--add-noqa", *extra]) == 2
    assert "--add-noqa" in capsys.readouterr().err

"""Jupyter notebooks (issue 16, item 1): code cells linted as Python, positions told as
cell and row in the cell the way ruff tells them (``nb.ipynb:cell 3:4:10``; JSON's
``cell`` beside ``location``), IPython syntax blanked, ``# noqa`` inside cells, fixes
written back into the notebook's JSON, discovery of ``*.ipynb`` in folders."""
from __future__ import annotations

import json
import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from cudalint.cli import main
from cudalint.sources.notebook import blank, read_notebook

DATA = Path(__file__).parent / "data" / "notebooks"
NB = DATA / "kernels.ipynb"
# (cell counted over all cells, markdown included; row in the cell; column; code)
EXPECTED = [(3, 4, 10, "CL104"), (5, 7, 22, "CL104"), (6, 4, 39, "CL401")]


@pytest.fixture
def nb_dir(tmp_path, monkeypatch):
    shutil.copy(NB, tmp_path / "kernels.ipynb")
    # the source cell 6 compiles with --use_fast_math (CL401 speaks where it holds code
    # fast math changes: cosf)
    shutil.copy(DATA / "ops.cu", tmp_path / "ops.cu")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _run(capsys, *args) -> str:
    main(["check", "--no-cache", *args])
    return capsys.readouterr().out


def test_json_reports_cell_and_row_in_cell_as_ruff(nb_dir, capsys):
    found = json.loads(_run(capsys, "--output-format", "json", "."))
    assert [(d["cell"], d["location"]["row"], d["location"]["column"], d["code"])
            for d in found] == EXPECTED
    assert all(d["filename"] == "kernels.ipynb" for d in found)
    edit = found[0]["fix"]["edits"][0]
    assert (edit["location"]["row"], edit["location"]["column"]) == (4, 10)
    lines = _run(capsys, "--output-format", "json-lines", "kernels.ipynb").splitlines()
    assert [(json.loads(x)["cell"], json.loads(x)["location"]["row"]) for x in lines] == \
        [(c, r) for c, r, _, _ in EXPECTED]


def test_text_formats_say_cell_row_column(nb_dir, capsys):
    concise = _run(capsys, "--output-format", "concise", "kernels.ipynb")
    for cell, row, col, code in EXPECTED:
        assert f"kernels.ipynb:cell {cell}:{row}:{col}: {code} " in concise
    full = _run(capsys, "--output-format", "full", "kernels.ipynb")
    assert "kernels.ipynb:cell 3:4:10: CL104" in full
    assert "4 |     v += __shfl_down(v, 1);" in full           # the cell's own row 4
    assert "7 |     a[threadIdx.x] = __shfl(a[threadIdx.x], 0);" in full


def test_machine_formats_carry_the_cell(nb_dir, capsys):
    gh = _run(capsys, "--output-format", "github", "kernels.ipynb").splitlines()
    assert gh[0].startswith("::error title=cudalint (CL104),file=kernels.ipynb,line=4,"
                            "col=10")
    assert "::kernels.ipynb:cell 3:4:10: CL104 `__shfl_down`" in gh[0]
    sarif = json.loads(_run(capsys, "--output-format", "sarif", "kernels.ipynb"))
    got = [(r["properties"]["cell"],
            r["locations"][0]["physicalLocation"]["region"]["startLine"], r["ruleId"])
           for r in sarif["runs"][0]["results"] if "suppressions" not in r]
    assert got == [(c, r, code) for c, r, _, code in EXPECTED]
    assert sarif["runs"][0]["results"][0]["message"]["text"].startswith("cell 3: ")
    junit = ET.fromstring(_run(capsys, "--output-format", "junit", "kernels.ipynb"))
    names = [t.get("name") for t in junit.iter("testcase")]
    assert names[0] == "CL104 at kernels.ipynb:cell 3:4:10"
    assert [t.get("line") for t in junit.iter("testcase")] == ["4", "7", "4"]


def test_noqa_inside_a_cell_and_magics_and_writefile_cells(nb_dir, capsys):
    found = json.loads(_run(capsys, "--output-format", "json", "kernels.ipynb"))
    assert 7 not in {d["cell"] for d in found}        # `// noqa: CL104` in the kernel
    assert 8 not in {d["cell"] for d in found}        # %%writefile: not Python, not read
    assert not [d for d in found if d["code"] == "CL000"]   # magics, `!`, `obj?` parse


def test_named_notebook_and_folder_runs_and_stdin(nb_dir, capsys, monkeypatch):
    assert main(["check", "--no-cache", "kernels.ipynb"]) == 1
    out, err = capsys.readouterr()
    assert "Found 2 errors and 1 warning." in out and err == ""
    sub = nb_dir / "sub"
    sub.mkdir()
    shutil.move(nb_dir / "kernels.ipynb", sub / "kernels.ipynb")
    found = json.loads(_run(capsys, "--output-format", "json", "."))
    assert {d["filename"] for d in found} == {str(Path("sub", "kernels.ipynb"))}
    import io

    class Stdin:
        buffer = io.BytesIO((sub / "kernels.ipynb").read_bytes())
    monkeypatch.setattr(sys, "stdin", Stdin)
    found = json.loads(_run(capsys, "--output-format", "json", "--stdin-filename",
                            "nb.ipynb"))
    assert [(d["cell"], d["location"]["row"]) for d in found] == \
        [(c, r) for c, r, _, _ in EXPECTED]


def test_fixes_are_written_back_into_the_cells(nb_dir, capsys):
    before = (nb_dir / "kernels.ipynb").read_text()
    assert main(["check", "--no-cache", "--fix", "--unsafe-fixes", "kernels.ipynb"]) == 1
    capsys.readouterr()
    after = (nb_dir / "kernels.ipynb").read_text()
    old, new = json.loads(before), json.loads(after)
    changed = [i for i, (a, b) in enumerate(zip(old["cells"], new["cells"])) if a != b]
    assert changed == [2, 4]                          # cells 3 and 5 (CL104's)
    assert "    v += __shfl_down_sync(0xffffffff, v, 1);\n" in new["cells"][2]["source"]
    assert new["cells"][4]["source"][0] == "!nvidia-smi\n"      # the magic kept
    assert {k: v for k, v in new.items() if k != "cells"} == \
        {k: v for k, v in old.items() if k != "cells"}
    assert before.splitlines()[:3] == after.splitlines()[:3]    # indentation kept
    # fixing again changes nothing
    main(["check", "--no-cache", "--fix", "--unsafe-fixes", "kernels.ipynb"])
    capsys.readouterr()
    assert (nb_dir / "kernels.ipynb").read_text() == after


def test_blanking_keeps_every_length():
    src = ("%time f()\nfor i in r:\n    !ls\nx = !ls -l\ny = 3  # ok?\nobj?\n"
           "%env A=\\\n  1")
    out = blank(src)
    assert [len(r) for r in out.split("\n")] == [len(r) for r in src.split("\n")]
    assert out.split("\n")[:6] == ["0        ", "for i in r:", "    0  ", "x = 0     ",
                                   "y = 3  # ok?", "0   "]
    compile(out, "<cell>", "exec")
    assert blank("%%bash\necho hi").strip() == ""
    assert blank("%%time\nx = 1") == "      \nx = 1"


def test_cells_map_to_python_rows():
    nb = read_notebook(NB.read_text())
    assert nb.cells == [1, 2, 3, 4, 5, 6, 7, 8]       # JSON index of each code cell
    assert nb.locate(1) == (2, 1)
    assert nb.locate(nb.starts[1] + 3) == (3, 4)


def test_not_a_notebook_is_a_notice(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.ipynb").write_text('{"cells": [')
    (tmp_path / "r.ipynb").write_text(json.dumps(
        {"cells": [], "metadata": {"kernelspec": {"language": "R"}}, "nbformat": 4}))
    found = json.loads(_run(capsys, "--output-format", "json", "."))
    assert [(d["filename"], d["code"]) for d in found] == [("bad.ipynb", "CL000"),
                                                           ("r.ipynb", "CL000")]


def test_a_cached_result_keeps_the_cells(nb_dir, capsys):
    first = _run(capsys, "--output-format", "concise", "kernels.ipynb")   # writes the cache
    main(["check", "--output-format", "concise", "kernels.ipynb"])
    capsys.readouterr()
    main(["check", "--output-format", "concise", "kernels.ipynb"])
    again = capsys.readouterr().out
    assert "kernels.ipynb:cell 3:4:10: CL104 " in again and again == first


def test_the_language_server_leaves_notebook_files_alone():
    """An .ipynb opened as a text document (its JSON) is not linted, as its findings'
    ranges would be the cells'; LSP notebook documents are (tests/test_server_notebooks.py)."""
    from cudalint.server.state import DocumentState
    assert DocumentState.kind_of("/p/nb.ipynb", "json") is None
    assert DocumentState.kind_of("/p/k.py", "python") == "python"


def test_magic_like_rows_inside_a_kernel_string_are_kept():
    src = ('k = cp.RawKernel("""\nextern "C" __global__ void f(\n%(type)s* x) {\n'
           '}""" % d, "f")\n%time g()')
    out = blank(src).split("\n")
    assert out[2] == "%(type)s* x) {"              # CUDA text of a `%` template
    assert out[4] == "0        "                   # the magic after the string

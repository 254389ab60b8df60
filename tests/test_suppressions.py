"""noqa comments (line and file level, CUDA and Python), CL001 and CL002."""
from __future__ import annotations

from cudalint.config import Settings
from cudalint.engine import lint_text
from cudalint.suppressions import parse_suppressions

CALL = "__global__ void k(float* a) {{ a[0] = __shfl(a[1], 0); {c}}}\n"


def codes(text: str, kind: str = "cuda", **settings) -> list[tuple[str, int, bool]]:
    s = Settings(**settings) if settings else Settings()
    res = lint_text("t.cu" if kind == "cuda" else "t.py", text, s, kind)
    return [(d.code, d.row, d.suppressed) for d in res.diagnostics]


def test_line_noqa_forms():
    assert codes(CALL.format(c="")) == [("CL104", 1, False)]
    assert codes(CALL.format(c="// noqa: CL104 ")) == [("CL104", 1, True)]
    assert codes(CALL.format(c="// NOQA:CL202,CL104 ")) == [("CL104", 1, True)]
    assert codes(CALL.format(c="// noqa ")) == [("CL104", 1, True)]
    # another code does not suppress it
    assert ("CL104", 1, False) in codes(CALL.format(c="// noqa: CL202 "))


def test_noqa_on_another_line_does_not_count():
    text = "// noqa: CL104\n" + CALL.format(c="")
    assert ("CL104", 2, False) in codes(text)


def test_file_level():
    assert codes("// cudalint: noqa: CL104\n" + CALL.format(c="")) == [("CL104", 2, True)]
    assert codes("// cudalint: noqa\n" + CALL.format(c="")) == [("CL104", 2, True)]


def test_python_comment_after_the_string_and_inside_it():
    after = ('import cupy as cp\nk = cp.RawKernel("__global__ void k(float* a)'
             '{ a[0] = __shfl(a[1], 0); }", "k")  # noqa: CL104\n')
    assert codes(after, "python") == [("CL104", 2, True)]
    inside = ('import cupy as cp\nk = cp.RawKernel("""\n__global__ void k(float* a) {\n'
              '  a[0] = __shfl(a[1], 0);  // noqa: CL104\n}""", "k")\n')
    assert codes(inside, "python") == [("CL104", 4, True)]


def test_unused_suppression_cl001_when_selected():
    text = "__global__ void k() {}  // noqa: CL104\n"
    assert codes(text) == []                                   # off by default
    assert codes(text, extend_select=("CL001",)) == [("CL001", 1, False)]
    used = CALL.format(c="// noqa: CL104 ")
    assert [c for c in codes(used, extend_select=("CL001",)) if c[0] == "CL001"] == []


def test_unknown_code_cl002():
    text = CALL.format(c="// noqa: CL104, CL999 ")
    found = codes(text)
    assert ("CL002", 1, False) in found and ("CL104", 1, True) in found
    # another tool's code (ruff, flake8) is not ours to judge
    assert codes(CALL.format(c="// noqa: CL104, E501 ")) == [("CL104", 1, True)]


def test_a_row_with_a_file_directive_still_reads_its_line_directive():
    # lone-CR line ends make the whole file one row: fuzz seed 35, where "Disable CL201
    # for this line" appended `// noqa: CL201` after a `// cudalint: noqa: CL202`
    from cudalint.suppressions import noqa_edit
    text = ("__global__ void k(float* a, int n) { a[threadIdx.x * 33] = 0; }\r"
            "// cudalint: noqa: CL202\r// more\r")
    sup = parse_suppressions(text)
    assert [d.codes for d in sup.file] == [["CL202"]] and sup.lines == {}
    edit = noqa_edit(text, "cuda", 1, "CL201")
    fixed = text[:edit.start] + edit.content + text[edit.end:]
    sup = parse_suppressions(fixed)
    assert sup.match("CL201", 1) is not None and sup.match("CL202", 1) is not None

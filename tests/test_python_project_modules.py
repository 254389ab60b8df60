"""Issue 21: kernels a Python file compiles through the project's other modules: a
wrapper called as ``M.f(...)``, text constants and helpers imported from another module,
and the wrapper body that such calls make of the compile call inside ``M``."""
from __future__ import annotations

from dataclasses import replace

from cudalint.config import Settings
from cudalint.engine import lint_text
from cudalint.sources.python.extract import extract_python_units
from fixture_support import FIXTURES, expectations


def _lint(path, codes):
    text = path.read_text(encoding="utf-8")
    return lint_text(str(path), text, replace(Settings(), select=tuple(codes)), "python")


def _extract(path):
    return extract_python_units(path.read_text(encoding="utf-8"), str(path))


def test_module_attribute_wrapper_reports_at_the_callers_literal():
    """``build.load_kernel(...)`` (from pkg import M) and ``kb.load_kernel(...)``
    (import pkg.M as kb): the wrapper's parameters are bound to the call's arguments,
    the finding is at the exact column of the caller's literal, the launch block is
    read; ``build.describe(...)`` compiles nothing and stays silent."""
    path = FIXTURES / "CL104" / "python_module_wrapper.py"
    lines = path.read_text(encoding="utf-8").splitlines()
    expect, _ = expectations(path)
    got = {(d.row, d.column) for d in _lint(path, ["CL104"]).diagnostics}
    assert got == {(row, lines[row - 1].index("__shfl_down(") + 1) for row in expect}
    assert len(got) == 2
    ex = _extract(path)
    assert [(k.name, [la.block for la in k.launches]) for k in ex.kernels] == [
        ("shift_float", [(128, 1, 1)]), ("twice", [])]
    assert not ex.unread


def test_module_attribute_wrapper_with_unknown_source_is_listed(tmp_path):
    """Nothing unread in silence: an ``M.f(...)`` wrapper call whose source is not known
    is a compile call listed with its reason; the call inside ``M`` is then a wrapper
    body (its kernels are read at the calls), not a second unread call."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "gen.py").write_text(
        "import cupy\n"
        "def make(ndim):\n"
        "    code = ''\n"
        "    for i in range(ndim):\n"
        "        code += 'x[%d] = 0;' % i\n"
        "    return cupy.ElementwiseKernel('T x', 'T y', code, 'k')\n")
    use = pkg / "use.py"
    use.write_text("from pkg import gen\n"
                   "def run(x):\n"
                   "    return gen.make(x.ndim)(x)\n")
    ex = extract_python_units(use.read_text(), str(use))
    assert not ex.kernels and [u.api for u in ex.unread] == ["make (cupy.ElementwiseKernel)"]
    inner = extract_python_units((pkg / "gen.py").read_text(), str(pkg / "gen.py"))
    assert not inner.unread and len(inner.wrappers) == 1
    # with no caller in the package, the same call is listed as not analysed
    use.unlink()
    inner = extract_python_units((pkg / "gen.py").read_text(), str(pkg / "gen.py"))
    assert len(inner.unread) == 1 and not inner.wrappers


def test_a_wrapper_called_only_through_another_wrapper_stays_listed(tmp_path):
    """A function that calls another module's wrapper is not itself read at its callers
    (wrapper_api looks for API calls): its own call of the wrapper stays listed."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "core.py").write_text(
        "import cupy\n"
        "def build(code):\n"
        "    if code.startswith('x'):\n"
        "        code = code + ';'\n"
        "    return cupy.RawKernel(code, 'k')\n")
    (pkg / "mid.py").write_text(
        "from pkg import core\n"
        "def mid(code):\n"
        "    return core.build(code)\n")
    (pkg / "top.py").write_text("from pkg import mid\nk = mid.mid(src)\n")
    ex = extract_python_units((pkg / "mid.py").read_text(), str(pkg / "mid.py"))
    assert len(ex.unread) == 1 and not ex.wrappers


def test_imported_text_constants_are_read_and_name_their_place():
    """``from M import SRC``, ``M.SRC`` and ``M.helper(...)``: read through the other
    module's bindings; the finding is at the compile call, and for text written in M
    its message names the line and column there; a name M does not define is listed
    with its reason."""
    path = FIXTURES / "CL104" / "python_imported_text.py"
    found = _lint(path, ["CL104"]).diagnostics
    expect, _ = expectations(path)
    assert {d.row for d in found} == set(expect) and {d.column for d in found} == {5}
    note = "(in `kernel_lib/sources.py` at line 7, column 22, read by this call)"
    assert [d.message.endswith(note) for d in found] == [True, True, False]
    ex = _extract(path)
    assert [u.reason for u in ex.unread] == [
        "`sources.MISSING`: its module defines no `MISSING`"]


def test_imported_text_look_alikes(tmp_path):
    """A name imported from a package that is not a file of the project (cupy) or bound
    in the module at run time stays unread with its reason; an int constant imported
    from another module fills a placeholder."""
    (tmp_path / "consts.py").write_text("import os\nBLOCK = 128\nSRC = os.environ['K']\n")
    use = tmp_path / "use.py"
    use.write_text(
        "import cupy\n"
        "from consts import BLOCK, SRC\n"
        "from cupy._core import KERNEL\n"
        "a = cupy.RawKernel('#define B %d\\n__global__ void k() {}' % BLOCK, 'k')\n"
        "b = cupy.RawKernel(SRC, 'k')\n"
        "c = cupy.RawKernel(KERNEL, 'k')\n")
    ex = extract_python_units(use.read_text(), str(use))
    assert [k.text.split("\n")[0] for k in ex.kernels] == ["#define B 128"]
    assert [u.reason.split(" (")[0] for u in ex.unread] == [
        "a subscript expression is not followed", "`KERNEL` is imported from `cupy._core`"]


def test_module_files_are_cache_dependencies():
    from cudalint.sources.python.modules import python_deps
    for name, want in (("python_module_wrapper.py", ["__init__.py", "build.py"]),
                       ("python_imported_text.py", ["__init__.py", "sources.py"])):
        path = FIXTURES / "CL104" / name
        _, deps = python_deps(path, path.read_text(encoding="utf-8"))
        assert sorted(p.rsplit("/", 1)[-1] for p, _ in deps) == want, name


# ---------------------------------------------------------------------------------------
# CUDA files the Python reads: linted at their own positions


def test_a_header_the_python_reads_is_linted_at_its_own_positions(tmp_path, monkeypatch,
                                                                  capsys):
    """fixtures/project/python_header: ops.py reads cuda/records.h (no .cu includes it)
    into a RawModule with `#define STRIDE 3` before it and launches it with a block of
    128. Linting the folder, or ops.py alone, adds the header; its CL201 (STRIDE and the
    block from the Python) and CL104 are at the header's rows and columns, nothing is
    at the Python call, and cuda/unread.h (a path from the working directory) is not
    linted."""
    import json
    import shutil
    from cudalint.cli import main
    root = tmp_path / "python_header"
    shutil.copytree(FIXTURES / "project" / "python_header", root)
    monkeypatch.chdir(tmp_path)
    # paths are shown relative to the folder discovery was imported in (the engine
    # reads files by the paths shown): make that this one
    monkeypatch.setattr("cudalint.discovery._CWD", str(tmp_path))
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for target in ("python_header", "python_header/ops.py"):
        main(["check", target, "--select", "CL104,CL201", "--output-format", "json",
              "--no-cache"])
        got = sorted((d["filename"], d["location"]["row"], d["location"]["column"],
                      d["code"]) for d in json.loads(capsys.readouterr().out))
        assert got == [("python_header/cuda/records.h", 6, 18, "CL201"),
                       ("python_header/cuda/records.h", 8, 19, "CL104")], target
    [d] = [d for d in lint_text(str(root / "cuda" / "records.h"),
                                (root / "cuda" / "records.h").read_text(),
                                replace(Settings(), select=("CL201",)), "cuda").diagnostics]
    assert "12 32-byte sectors per request instead of 4 (block 128 from the Python " \
           "launch)" in d.message
    # without the Python that reads it, the header alone knows neither STRIDE nor the
    # block: no CL201
    (root / "ops.py").unlink()
    assert lint_text(str(root / "cuda" / "records.h"), (root / "cuda" / "records.h")
                     .read_text(), replace(Settings(), select=("CL201",)),
                     "cuda").diagnostics == []


def test_a_header_result_is_cached_with_the_python_that_reads_it(tmp_path, monkeypatch,
                                                                 capsys):
    """The header's cached result depends on the Python that compiles it: changing the
    launch block in ops.py changes the header's finding on a warm run."""
    import json
    import shutil
    from cudalint.cli import main
    root = tmp_path / "python_header"
    shutil.copytree(FIXTURES / "project" / "python_header", root)
    monkeypatch.chdir(tmp_path)
    # paths are shown relative to the folder discovery was imported in (the engine
    # reads files by the paths shown): make that this one
    monkeypatch.setattr("cudalint.discovery._CWD", str(tmp_path))
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")

    def blocks() -> list:
        main(["check", "python_header", "--select", "CL201", "--output-format", "json"])
        return [d["metrics"].get("block") for d in json.loads(capsys.readouterr().out)]
    assert blocks() == [[128, 1, 1]] and blocks() == [[128, 1, 1]]   # cold, then warm
    ops = root / "ops.py"
    ops.write_text(ops.read_text().replace("(128,), (x, y, n)", "(64,), (x, y, n)"))
    assert blocks() == [[64, 1, 1]]


def test_no_compile_call_of_these_forms_is_dropped_in_silence():
    """Every call of a compile API or of a project wrapper in the fixtures of these
    forms is read, listed as not analysed, or a wrapper body: none is missing."""
    import ast
    names = {"RawKernel", "RawModule", "load_kernel"}
    for path in (FIXTURES / "CL104" / "python_module_wrapper.py",
                 FIXTURES / "CL104" / "python_imported_text.py",
                 FIXTURES / "CL104" / "python_file_read.py",
                 FIXTURES / "CL104" / "python_wrapper.py",
                 FIXTURES / "project" / "python_header" / "ops.py"):
        text = path.read_text(encoding="utf-8")
        calls = {n.lineno for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Call)
                 and (getattr(n.func, "attr", None) or getattr(n.func, "id", None)) in names}
        ex = extract_python_units(text, str(path))
        seen = {text.count("\n", 0, s) + 1 for s in
                [k.call_start for k in ex.kernels] + [u.start for u in ex.unread]
                + [u.start for u in ex.wrappers] + [u.start for u in ex.not_compiled]}
        assert calls and seen == calls, (path.name, sorted(calls), sorted(seen))


def test_three_names_assigned_in_branches_give_one_kernel_per_branch():
    """cupyx's _pba_3d.py:319: the parameter lists and the operation each assigned in an
    if/else: three levels of branches, 2 x 2 x 2 kernels (at most 8)."""
    ex = extract_python_units(
        "import cupy\n"
        "def make(a, b, c):\n"
        "    if a:\n"
        "        in_params = 'T x'\n"
        "    else:\n"
        "        in_params = 'T x, T w'\n"
        "    if b:\n"
        "        out_params = 'T y'\n"
        "    else:\n"
        "        out_params = 'T y, T z'\n"
        "    if c:\n"
        "        op = 'y = x;'\n"
        "    else:\n"
        "        op = 'y = -x;'\n"
        "    return cupy.ElementwiseKernel(in_params, out_params, op, 'k')\n", "t.py")
    assert len(ex.kernels) == 8 and not ex.unread

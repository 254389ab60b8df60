"""The command line, end to end: exit codes, formats, config, fixes, cache, bad input."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from cudalint.cli import main

ROOT = Path(__file__).resolve().parent.parent
LEGACY = "__global__ void k(float* a) {\n    a[0] = __shfl(a[1], 0);\n}\n"
CLEAN = "__global__ void k(float* a) {\n    a[0] = __shfl_sync(0xffffffffu, a[1], 0);\n}\n"


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def proj(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    return tmp_path


# ---------------------------------------------------------------------------------------
# exit codes and the basic contract


def test_exit_codes(proj, capsys):
    (proj / "bad.cu").write_text(LEGACY)
    (proj / "good.cu").write_text(CLEAN)
    assert cli(capsys, "check", "good.cu")[0] == 0
    code, out, _ = cli(capsys, "bad.cu")                       # `check` is the default
    assert code == 1 and "bad.cu:2:12: CL104" in out
    assert cli(capsys, "bad.cu", "--exit-zero")[0] == 0
    assert cli(capsys, "missing.cu")[0] == 2
    assert cli(capsys, "bad.cu", "--select", "NOPE")[0] == 2
    code, _, err = cli(capsys, "check", "--no-such-flag")
    assert code == 2 and "unrecognized arguments: --no-such-flag" in err


def test_json_contract_positions_in_cu_and_py(proj, capsys):
    (proj / "a.cu").write_text(LEGACY)
    (proj / "k.py").write_text('import cupy as cp\nk = cp.RawKernel(r"""\n'
                               '__global__ void k(float* a) { a[0] = __shfl(a[1], 0); }\n'
                               '""", "k")\n')
    code, out, _ = cli(capsys, ".", "--output-format", "json", "--no-cache")
    assert code == 1
    found = {d["filename"]: d for d in json.loads(out)}
    assert set(found) == {"a.cu", "k.py"}
    for d in found.values():
        for key in ("code", "message", "filename", "location", "end_location", "severity",
                    "fix", "url", "metrics"):
            assert key in d
        assert d["code"] == "CL104" and d["url"].endswith("#cl104")
        assert d["end_location"]["column"] - d["location"]["column"] == len("__shfl")
    assert found["a.cu"]["location"] == {"row": 2, "column": 12}
    line = (proj / "k.py").read_text().splitlines()[2]
    assert found["k.py"]["location"] == {"row": 3, "column": line.index("__shfl") + 1}
    assert found["a.cu"]["fix"]["applicability"] == "unsafe"


def test_select_ignore_and_per_file_ignores(proj, capsys):
    (proj / "a.cu").write_text(LEGACY)
    assert cli(capsys, "a.cu", "--ignore", "CL104")[0] == 0
    assert cli(capsys, "a.cu", "--select", "CL2")[0] == 0
    assert cli(capsys, "a.cu", "--select", "CL2", "--extend-select", "CL104")[0] == 1
    (proj / "pyproject.toml").write_text(
        '[tool.cudalint]\nper-file-ignores = {"a.cu" = ["CL104"]}\n')
    assert cli(capsys, "a.cu")[0] == 0


def test_config_discovered_upward_and_wrong_types_name_the_key(proj, capsys):
    sub = proj / "pkg" / "csrc"
    sub.mkdir(parents=True)
    (sub / "a.cu").write_text(LEGACY)
    (proj / "pkg" / "pyproject.toml").write_text('[tool.cudalint]\nignore = ["CL104"]\n')
    assert cli(capsys, str(sub / "a.cu"))[0] == 0
    (proj / "pkg" / "pyproject.toml").write_text('[tool.cudalint]\nselect = "CL104"\n')
    code, _, err = cli(capsys, str(sub / "a.cu"))
    assert code == 2 and "`select`" in err and "list" in err
    (proj / "pkg" / "pyproject.toml").write_text('[tool.cudalint\nselect = [\n')
    code, _, err = cli(capsys, str(sub / "a.cu"))
    assert code == 2 and "pyproject.toml" in err


def test_cudalint_toml(proj, capsys):
    (proj / "a.cu").write_text(LEGACY)
    (proj / "cudalint.toml").write_text('ignore = ["CL104"]\n')
    assert cli(capsys, "a.cu")[0] == 0


def test_gitignore_respected(proj, capsys):
    (proj / ".git").mkdir()
    (proj / ".gitignore").write_text("build/\n")
    (proj / "build").mkdir()
    (proj / "build" / "gen.cu").write_text(LEGACY)
    (proj / "src.cu").write_text(CLEAN)
    assert cli(capsys, ".")[0] == 0
    assert cli(capsys, "build/gen.cu")[0] == 1          # named explicitly: linted
    assert cli(capsys, "build/gen.cu", "--force-exclude")[0] == 0


def test_stdin(proj, capsys, monkeypatch):
    import io
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(LEGACY.encode())))
    code, out, _ = cli(capsys, "-", "--stdin-filename", "x.cu", "--output-format", "concise")
    assert code == 1 and out.startswith("x.cu:2:12: CL104")


@pytest.mark.parametrize("fmt", ["full", "concise", "github", "junit", "sarif", "json-lines"])
def test_every_format_reports_the_finding(proj, capsys, fmt):
    (proj / "a.cu").write_text(LEGACY)
    code, out, _ = cli(capsys, "a.cu", "--output-format", fmt, "--no-cache")
    assert code == 1
    if fmt == "github":
        assert out.startswith("::error title=cudalint (CL104),file=a.cu,line=2,col=12,")
    elif fmt == "junit":
        root = ET.fromstring(out)
        [case] = root.findall(".//testcase")
        assert case.get("name") == "CL104 at a.cu:2:12" and case.get("line") == "2"
        assert case.find("failure").get("type") == "CL104"
    elif fmt == "sarif":
        run = json.loads(out)["runs"][0]
        assert run["results"][0]["ruleId"] == "CL104"
    elif fmt == "json-lines":
        assert json.loads(out.splitlines()[0])["code"] == "CL104"
    else:
        assert "a.cu:2:12: CL104" in out
    if fmt == "full":
        assert "__shfl(a[1], 0)" in out and "^^^^^^" in out


def test_statistics(proj, capsys):
    (proj / "a.cu").write_text(LEGACY + LEGACY.replace("void k", "void k2"))
    code, out, _ = cli(capsys, "a.cu", "--statistics")
    assert code == 1 and out.split()[:2] == ["2", "CL104"]


def test_quiet_prints_only_diagnostics(proj, capsys):
    (proj / "a.cu").write_text(LEGACY)
    code, out, _ = cli(capsys, "a.cu", "-q")
    assert code == 1 and out.strip().count("\n") == 0 and "Found" not in out


# ---------------------------------------------------------------------------------------
# fixes


def test_fix_diff_idempotent_and_atomic(proj, capsys):
    f = proj / "a.cu"
    f.write_text(LEGACY)
    os.chmod(f, 0o640)
    code, out, _ = cli(capsys, "a.cu", "--fix")            # the fix is unsafe: not applied
    assert code == 1 and f.read_text() == LEGACY
    code, out, _ = cli(capsys, "a.cu", "--diff", "--unsafe-fixes")
    assert code == 1 and "+    a[0] = __shfl_sync(0xffffffff, a[1], 0);" in out
    assert f.read_text() == LEGACY                          # --diff never writes
    code, out, _ = cli(capsys, "a.cu", "--fix", "--unsafe-fixes")
    assert code == 0 and "Found 1 finding (1 fixed, 0 remaining)." in out
    fixed = f.read_text()
    assert "__shfl_sync(0xffffffff, a[1], 0)" in fixed
    assert oct(f.stat().st_mode & 0o777) == oct(0o640)      # mode kept by the atomic write
    assert [p.name for p in proj.iterdir() if p.name.startswith(".a.cu")] == []
    assert cli(capsys, "a.cu", "--fix", "--unsafe-fixes")[0] == 0
    assert f.read_text() == fixed                           # idempotent


def test_fix_removes_stale_temporaries_only(proj, capsys):
    """A --fix killed between write and rename leaves `.a.cu.*.cudalint-tmp`; the next
    write removes those older than ten minutes and leaves a fresh one (another run's)."""
    f = proj / "a.cu"
    f.write_text(LEGACY)
    stale = proj / ".a.cu.old1.cudalint-tmp"
    fresh = proj / ".a.cu.new1.cudalint-tmp"
    other = proj / ".b.cu.old2.cudalint-tmp"
    for p in (stale, fresh, other):
        p.write_text("partial")
    old = os.stat(stale).st_mtime - 3600
    os.utime(stale, (old, old))
    os.utime(other, (old, old))
    assert cli(capsys, "a.cu", "--fix", "--unsafe-fixes")[0] == 0
    assert not stale.exists() and fresh.exists() and other.exists()


def test_output_file_written_whole_with_usual_mode(proj, capsys):
    (proj / "a.cu").write_text(LEGACY)
    report = proj / "report.json"
    report.write_text("previous report")
    code, out, _ = cli(capsys, "a.cu", "--output-format", "json", "-o", str(report))
    assert code == 1 and out == ""
    assert [d["code"] for d in json.loads(report.read_text())] == ["CL104"]
    new = proj / "new.json"
    mask = os.umask(0o022)
    try:
        assert cli(capsys, "a.cu", "--output-format", "json", "-o", str(new))[0] == 1
    finally:
        os.umask(mask)
    assert oct(new.stat().st_mode & 0o777) == oct(0o644)    # not mkstemp's 0600
    assert [p.name for p in proj.iterdir() if "cudalint-tmp" in p.name] == []
    code, _, err = cli(capsys, "a.cu", "-o", str(proj / "no" / "such" / "dir.txt"))
    assert code == 2 and "cannot write" in err and len(err.strip().splitlines()) == 1


def test_fix_inside_python_string(proj, capsys):
    f = proj / "k.py"
    f.write_text('import cupy as cp\nk = cp.RawKernel("__global__ void k(int* a)'
                 '{ a[0] = __any(a[1]); }", "k")\n')
    assert cli(capsys, "k.py", "--fix", "--unsafe-fixes")[0] == 0
    text = f.read_text()
    assert "__any_sync(0xffffffff, a[1])" in text
    compile(text, "k.py", "exec")                          # still valid Python


def test_fix_never_makes_a_parse_worse(tmp_path):
    from cudalint.config import Settings
    from cudalint.fixes import fix_text, parse_quality
    text = "__global__ void k(float* a) { a[0] = __shfl(a[1], 0); }\n"
    fixed, n = fix_text("a.cu", text, Settings(), "cuda", True)
    assert n == 1 and parse_quality(fixed, "cuda") <= parse_quality(text, "cuda")


# ---------------------------------------------------------------------------------------
# cache


def _index(proj: Path) -> dict:
    from cudalint import __version__
    from cudalint.cache import read_index
    return read_index(proj / ".cudalint_cache" / __version__ / "index.bin")


def test_cache_is_used_and_keyed_by_settings(proj, capsys):
    (proj / "a.cu").write_text(LEGACY)
    assert cli(capsys, "a.cu")[0] == 1
    cache = proj / ".cudalint_cache"
    assert (cache / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f")
    assert len(_index(proj)) == 1
    # a corrupt index is ignored, not trusted
    index = next(cache.rglob("index.bin"))
    index.write_bytes(index.read_bytes()[:-5] + b"xxxxx")
    assert _index(proj) == {}
    assert cli(capsys, "a.cu")[0] == 1
    # other settings: the old result is not used
    assert cli(capsys, "a.cu", "--ignore", "CL104")[0] == 0
    assert cli(capsys, "a.cu")[0] == 1
    # an edit to the file changes the key
    (proj / "a.cu").write_text(CLEAN)
    assert cli(capsys, "a.cu")[0] == 0


def test_cache_result_equals_fresh_result(proj, capsys):
    (proj / "a.cu").write_text(LEGACY)
    _, first, _ = cli(capsys, "a.cu", "--output-format", "json")
    _, second, _ = cli(capsys, "a.cu", "--output-format", "json")
    _, fresh, _ = cli(capsys, "a.cu", "--output-format", "json", "--no-cache")
    assert json.loads(first) == json.loads(second) == json.loads(fresh)


# ---------------------------------------------------------------------------------------
# bad input: diagnostics or one clear line, never a traceback


def bad_inputs(tmp: Path) -> dict[str, Path]:
    files = {
        "binary.cu": b"\x7fELF\x00\x01\x02" + bytes(range(256)) * 4,
        "latin1.cu": "__global__ void k() { /* caf\xe9 */ }\n".encode("latin-1"),
        "empty.cu": b"",
        "unterminated.cu": b'__global__ void k(char* s) { s = "abc\n /* never closed\n',
        "nested.cu": b"__global__ void k(int* a) { a[0] = " + b"(" * 3000 + b"1"
                     + b")" * 3000 + b"; }\n",
        "macros.cu": b"#define K(x) x\nK(K(K(__global__ void k(){ __shfl(1,0); })))\n" * 50,
        "broken.py": b"import cupy as cp\nk = cp.RawKernel('''\n__shfl(1,0)\n",
        "nul.py": b"import cupy\x00\n",
    }
    out = {}
    for name, data in files.items():
        p = tmp / name
        p.write_bytes(data)
        out[name] = p
    return out


def test_bad_inputs_give_diagnostics_not_crashes(proj, capsys):
    files = bad_inputs(proj)
    code, out, err = cli(capsys, ".", "--output-format", "json", "--no-cache")
    assert code in (0, 1) and "Traceback" not in err
    diags = json.loads(out)
    by_file = {}
    for d in diags:
        by_file.setdefault(d["filename"], []).append(d["code"])
    assert by_file["binary.cu"] == ["CL000"]
    assert by_file["latin1.cu"] == ["CL000"]
    assert by_file["nul.py"] == ["CL000"]
    assert "CL000" in by_file["broken.py"]              # Python syntax error, said once
    assert "empty.cu" not in by_file
    assert set(files) >= set(by_file)


def test_ten_megabyte_file(proj, capsys):
    body = "__global__ void k%d(float* a) { a[threadIdx.x] += 1.0f; }\n"
    text = "".join(body % i for i in range(10 * 1024 * 1024 // len(body)))
    (proj / "big.cu").write_text(text + LEGACY)
    code, out, _ = cli(capsys, "big.cu", "--output-format", "concise", "--no-cache",
                       "--select", "CL104")
    assert code == 1 and f"big.cu:{text.count(chr(10)) + 2}:12: CL104" in out


def test_rule_command(capsys):
    code, out, _ = cli(capsys, "rule", "CL104")
    assert code == 0 and "What it does" in out and "Use instead" in out
    code, out, _ = cli(capsys, "rule", "--all", "--output-format", "json")
    rules = json.loads(out)
    assert code == 0 and {"CL000", "CL104", "CL201", "CL202"} <= {r["code"] for r in rules}
    assert cli(capsys, "rule", "CL999")[0] == 2


def test_console_script_runs_in_a_subprocess(tmp_path):
    (tmp_path / "a.cu").write_text(LEGACY)
    proc = subprocess.run([sys.executable, "-m", "cudalint", "a.cu", "--no-cache"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "CL104" in proc.stdout and proc.stderr == ""


def test_cache_follows_build_files(proj, capsys):
    """CL402 depends on -fmad from setup.py: editing setup.py must not serve a stale result."""
    (proj / "det.cu").write_text(
        "__global__ void k(int* out, const float* a) {\n"
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    float det = a[0] * a[3] - a[1] * a[2];\n"
        "    out[i] = det > 0.0f ? 1 : (det < 0.0f ? -1 : 0);\n}\n")
    setup = ("from setuptools import setup\n"
             "from torch.utils.cpp_extension import CUDAExtension\n"
             "setup(name='x', ext_modules=[CUDAExtension('x', sources=['det.cu'],\n"
             "      extra_compile_args={'nvcc': [%s]})])\n")
    (proj / "setup.py").write_text(setup % "'-O3'")
    code, out, _ = cli(capsys, "det.cu", "--select", "CL402", "--output-format", "concise")
    assert code == 1 and "det.cu:3:" in out
    (proj / "setup.py").write_text(setup % "'-O3', '-fmad=false'")
    code, out, _ = cli(capsys, "det.cu", "--select", "CL402", "--output-format", "concise")
    assert code == 0, out


def test_row_100_is_not_an_emoji(proj, capsys):
    # rich turns ":100:" into an emoji unless told not to
    (proj / "a.cu").write_text("\n" * 99 + LEGACY)
    code, out, _ = cli(capsys, "a.cu", "--output-format", "concise")
    assert code == 1 and "a.cu:101:12: CL104" in out
    (proj / "b.cu").write_text("\n" * 98 + LEGACY)
    code, out, _ = cli(capsys, "b.cu")
    assert "b.cu:100:12: CL104" in out and "\U0001f4af" not in out


def test_python_file_rules_locate_after_form_feed_and_line_separator(proj, capsys):
    """ast counts lines by \\n only; a form feed or U+2028 inside a line must not shift
    the row of a finding from a Python file rule (CL501), and columns count characters."""
    (proj / "m.py").write_text("import torch\n# a form feed \x0c here\n"
                               "s = 'sep \u2028 é'\nconv = torch.nn.Conv2d(12, 30, 3)  # é\n",
                               encoding="utf-8")
    code, out, _ = cli(capsys, "m.py", "--select", "CL501", "--output-format", "json",
                       "--no-cache")
    assert code == 1
    got = sorted((d["location"]["row"], d["location"]["column"], d["end_location"]["column"])
                 for d in json.loads(out))
    assert got == [(4, 24, 26), (4, 28, 30)]


def test_lines_named_in_messages_are_file_lines_inside_python_strings(proj, capsys):
    """A message that points at another line (CL106's early return, CL102's write) names
    the .py file's line, not the line inside the kernel string."""
    (proj / "k.py").write_text(
        'import cupy as cp\n\n\n# padding so that string lines and file lines differ\n'
        'k = cp.RawKernel(r"""\n'
        'extern "C" __global__ void k(float* out, const float* in) {\n'   # line 6
        '    __shared__ float s[256];\n'
        '    int t = threadIdx.x;\n'
        '    if (t >= 128) return;\n'                                      # line 9
        '    s[t] = in[t];\n'                                              # line 10
        '    __syncthreads();\n'                                           # line 11
        '    out[t] = s[(t + 1) % 128];\n'
        '}\n""", "k")\n'
        'k((1,), (256,), (None, None))\n')
    code, out, _ = cli(capsys, "k.py", "--output-format", "json", "--no-cache",
                       "--select", "CL106")
    found = json.loads(out)
    assert code == 1 and [d["location"]["row"] for d in found] == [11]
    assert "(line 9)" in found[0]["message"], found[0]["message"]


def test_cl102_lines_inside_python_strings(proj, capsys):
    (proj / "k.py").write_text(
        'import cupy as cp\n\n\n'
        'k = cp.RawKernel(r"""\n'
        'extern "C" __global__ void k(float* out) {\n'                     # line 5
        '    __shared__ float s[256];\n'
        '    int t = threadIdx.x;\n'
        '    s[t] = t;\n'                                                  # line 8
        '    out[t] = s[255 - t];\n'                                       # line 9
        '}\n""", "k")\n'
        'k((1,), (256,), (None,))\n')
    code, out, _ = cli(capsys, "k.py", "--output-format", "json", "--no-cache",
                       "--select", "CL102")
    found = json.loads(out)
    assert code == 1 and len(found) == 1, found
    m = found[0]["metrics"]
    assert (m["write_line"], m["read_line"]) == (8, 9)
    assert "(line 8)" in found[0]["message"] and "(line 9)" in found[0]["message"]


def test_cl205_not_on_elementwise_raw_params_and_said_once_per_string(proj, capsys):
    """ElementwiseKernel `raw T x` is a CArray passed by value, a declaration cudalint
    wrote, not the user: no CL205 there. A kernel string given to several RawKernel
    calls is analysed once per call but each finding is said once."""
    (proj / "k.py").write_text(
        'import cupy as cp\n'
        'ew = cp.ElementwiseKernel("raw T table, int32 n", "T y",\n'
        '                          "y = table[i % n]", "gather")\n'
        'SRC = r"""\n'
        'extern "C" __global__ void copy(float* out, float* inp) {\n'       # line 5
        '    int i = blockIdx.x * blockDim.x + threadIdx.x;\n'
        '    out[i] = inp[i];\n'
        '}\n"""\n'
        'a = cp.RawKernel(SRC, "copy")\n'
        'b = cp.RawKernel(SRC, "copy", options=("-lineinfo",))\n')
    code, out, _ = cli(capsys, "k.py", "--output-format", "json", "--no-cache",
                       "--select", "CL205")
    found = json.loads(out)
    assert code == 1
    assert [(d["location"]["row"], d["location"]["column"]) for d in found] == [(5, 45)]
    assert "`inp`" in found[0]["message"]


def test_shape_rules_skip_test_files(proj, capsys):
    model = "import torch\nconv = torch.nn.Conv2d(16, 30, 3)\n"
    for rel in ("tests/model.py", "pkg/test_model.py", "pkg/model_test.py", "pkg/model.py"):
        (proj / rel).parent.mkdir(parents=True, exist_ok=True)
        (proj / rel).write_text(model)
    code, out, _ = cli(capsys, ".", "--select", "CL501", "--output-format", "json",
                       "--no-cache")
    assert code == 1 and sorted({d["filename"] for d in json.loads(out)}) == ["pkg/model.py"]

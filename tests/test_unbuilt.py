"""CUDA files that no build of the project compiles (issue 20: sheet-newcorpus10 N1 and
sheet-newcorpus11 N3, findings in `lovasz_softmax_old.cu` and `GANet_kernel0.cu` judged
not worth acting on): a folder walk leaves them out and says so; a file named on the
command line, or any file with `lint-unbuilt = true`, is linted; anything that may
compile the file (its name in a build file, a Python loader, an #include, a pattern
such as `glob("*.cu")`) keeps it."""
from __future__ import annotations

import pytest

from cudalint.cli import main
from cudalint.project import unbuilt

KERNEL = ("__global__ void k(float* o, const float* a, int n) {\n"
          "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
          "  if (i < n) o[i * 32] = a[i];\n}\n"
          "void go(float* o, const float* a, int n) { k<<<n / 256, 256>>>(o, a, n); }\n")
SETUP = ("from setuptools import setup\n"
         "from torch.utils.cpp_extension import CUDAExtension, BuildExtension\n"
         "setup(name='x', ext_modules=[CUDAExtension('x', {sources})],\n"
         "      cmdclass={{'build_ext': BuildExtension}})\n")


@pytest.fixture
def project(tmp_path, monkeypatch):
    unbuilt.forget()
    (tmp_path / ".git").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "setup.py").write_text(SETUP.format(sources="['src/x.cpp', 'src/kernel.cu']"))
    (tmp_path / "src" / "kernel.cu").write_text(KERNEL)
    (tmp_path / "src" / "kernel_old.cu").write_text(KERNEL)
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    unbuilt.forget()


def _run(capsys, *argv):
    code = main(["check", "--no-cache", "--output-format", "concise", *argv])
    out, err = capsys.readouterr()
    return code, out


def _files(out: str) -> set[str]:
    return {line.split(":", 1)[0] for line in out.splitlines() if ": CL" in line}


def test_a_file_no_build_names_is_left_out_and_said(project, capsys):
    code, out = _run(capsys, ".")
    assert code == 1 and _files(out) == {"src/kernel.cu"}
    assert "1 .cu file that no build compiles was not linted" in out
    code, out = _run(capsys, ".", "--show-unread")
    assert "src/kernel_old.cu: not linted: no build of the project compiles it" in out
    code, out = _run(capsys, ".", "-q")
    assert "no build compiles" not in out


def test_named_or_asked_for_it_is_linted(project, capsys):
    code, out = _run(capsys, "src/kernel_old.cu")
    assert _files(out) == {"src/kernel_old.cu"} and "no build compiles" not in out
    code, out = _run(capsys, ".", "src/kernel_old.cu")
    assert _files(out) == {"src/kernel.cu", "src/kernel_old.cu"}
    (project / "pyproject.toml").write_text("[tool.cudalint]\nlint-unbuilt = true\n")
    code, out = _run(capsys, ".")
    assert _files(out) == {"src/kernel.cu", "src/kernel_old.cu"}


@pytest.mark.parametrize("where,text", [
    ("setup.py", SETUP.format(sources="['src/kernel.cu', 'src/kernel_old.cu']")),
    ("setup.py", "import glob\n" + SETUP.format(sources="glob.glob('src/*.cu')")),
    ("jit.py", "from torch.utils.cpp_extension import load\n"
               "m = load('m', ['src/kernel_old.cu'])\n"),
    ("jit.py", "names = ['kernel', 'kernel_old']\nsrcs = [n + '.cu' for n in names]\n"),
    ("src/kernel.cu", KERNEL.replace("k(", "k2(") + '#include "kernel_old.cu"\n'),
    ("CMakeLists.txt", "file(GLOB SRC src/*.cu)\n"),
])
def test_anything_that_may_compile_it_keeps_it(project, capsys, where, text):
    (project / where).write_text(text)
    code, out = _run(capsys, ".")
    assert "src/kernel_old.cu" in _files(out), out
    assert "no build compiles" not in out


def test_a_project_without_a_build_file_is_linted_whole(project, capsys):
    (project / "setup.py").unlink()
    code, out = _run(capsys, ".")
    assert _files(out) == {"src/kernel.cu", "src/kernel_old.cu"}

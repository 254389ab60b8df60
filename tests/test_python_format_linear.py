"""Fuzz seed 51's fix_python input (a 130 KB kernel template with 55,000 `{{`, formatted
with `.format(...)`: 7.6 s of CPU here, no answer in 20 s on the device): the formatted
text is joined once, not grown a piece at a time (each `+` copied the character maps
again), and runs without braces are passed over in one step."""
from __future__ import annotations

from cudalint.sources.python import mapping
from cudalint.sources.python.extract import extract_python_units

N = 5000
SRC = ('import cupy as cp\ncode = """\nextern "C" __global__ void k(float* out) {{\n'
       '    out[threadIdx.x] = {value};\n' + "    {{ }}\n" * N + '}}\n"""\n'
       'kernel = cp.RawKernel(code.format(value=2), "k")\n')


def test_a_template_with_many_escaped_braces_is_joined_once(monkeypatch):
    adds = []
    real = mapping.MStr.__add__
    monkeypatch.setattr(mapping.MStr, "__add__", lambda a, b: adds.append(1) or real(a, b))
    result = extract_python_units(SRC, "k.py")
    (kernel,) = result.kernels
    assert "out[threadIdx.x] = 2;" in kernel.text
    assert kernel.text.count("{ }") == N                # the escapes, formatted
    assert len(adds) < 50, len(adds)                     # was one per brace pair and field

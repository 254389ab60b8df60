"""Messages never show internal tokens (issue 16 item 3): a value of a Python template
that is not known statically becomes an opaque identifier in the CUDA text, and messages
name it by the placeholder it came from (`%(T)s`, `{dtype}`, `<helper()>`)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


from cudalint.config import Settings
from cudalint.engine import lint_bytes
from cudalint.sources.python.units import OPAQUE_PREFIX, describe_opaque

ROOT = Path(__file__).resolve().parent.parent
ALL = Settings(select=("ALL",), fp64_promotion="always")

TEMPLATED = b'''import cupy as cp


def build(params, suffix):
    src = r"""
extern "C" __global__ void k(const %(T)s* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * 0.1;
}
""" % params
    return cp.RawKernel(src, "k")


def build_f(dtype):
    return cp.RawKernel(f"""
extern "C" __global__ void k(const {dtype}* in, float* out, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i];
}}
""", "k")
'''


def _texts(diagnostics):
    for d in diagnostics:
        yield d.message
        if d.fix is not None:
            yield d.fix.message


def test_placeholders_are_named_as_written():
    r = lint_bytes("t.py", TEMPLATED, ALL, "python")
    texts = list(_texts(r.diagnostics))
    assert texts and not any(OPAQUE_PREFIX in t for t in texts), texts
    assert any("declared `const %(T)s* in`" in t for t in texts), texts
    assert any("declared `const {dtype}* in`" in t for t in texts), texts


def test_unknown_tokens_still_read_as_text():
    assert describe_opaque("x `__cudalint_opaque_3__`", {}) == \
        "x `<a value known only when the program runs>`"
    assert describe_opaque("`__cudalint_opaque_1__ *p`", {"__cudalint_opaque_1__": "%s"}) \
        == "`%s *p`"


def _check_run(paths: list[str]) -> list[dict]:
    p = subprocess.run([sys.executable, "-m", "cudalint", "check", *paths, "--select", "ALL",
                        "--no-cache", "-j", "2", "--output-format", "json"],
                       cwd=ROOT, capture_output=True, timeout=600)
    assert p.returncode in (0, 1), p.stderr.decode()[-2000:]
    return json.loads(p.stdout)


def _leaks(found: list[dict]) -> list[str]:
    return [f"{d['filename']}:{d['location']['row']} {d['code']}: {d['message']}"
            for d in found
            if OPAQUE_PREFIX in d["message"] or OPAQUE_PREFIX in ((d.get("fix") or {})
                                                                   .get("message") or "")]


def test_no_fixture_message_shows_an_internal_token():
    found = _check_run(["fixtures", "examples"])
    assert found and not _leaks(found)

"""CL201 on the ninth triage's wrong class W1 (bench/triage/sheet-newcorpus9.md): a store
made through a reference binding (3dgrut's ``float3& vrt = gPrimVrt[k]; vrt = ...;``) is
a store, said as the direct store of the same element is; the binding itself loads
nothing."""
from __future__ import annotations

import re
from dataclasses import replace

from cudalint.config import Settings
from cudalint.engine import lint_text

KERNEL = """
__global__ void verts(int n, const float3* pos, float3* vrt, float* out) {
  const unsigned idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx < n) {
    const float3 p = pos[idx];
#pragma unroll
    for (int i = 0; i < 24; ++i) {
      BODY
    }
  }
}
void go(int n, const float3* p, float3* v, float* o) { verts<<<(n + 1023) / 1024, 1024>>>(n, p, v, o); }
"""
DIRECT = "vrt[24 * idx + i] = make_float3(p.x + i, p.y, p.z);"
THROUGH_REFERENCE = "float3& v = vrt[24 * idx + i];\n      v = make_float3(p.x + i, p.y, p.z);"
FIELDS = "float3& v = vrt[24 * idx + i];\n      v.x = p.x + i; v.y = p.y; v.z = p.z;"
READ = "float3& v = vrt[24 * idx + i];\n      out[idx] += v.x;"
UPDATE = "float3& v = vrt[24 * idx + i];\n      v.x += p.x;"


def _cl201(body: str):
    s = replace(Settings(), select=("CL201",))
    res = lint_text("v.cu", KERNEL.replace("BODY", body), s, "cuda")
    return [d for d in res.diagnostics if "vrt" in d.message or "v " in d.message]


def test_a_store_through_a_reference_is_said_as_the_direct_store():
    (direct,) = _cl201(DIRECT)
    assert direct.message.startswith("uncoalesced store vrt[24 * idx + i]")
    for body in (THROUGH_REFERENCE, FIELDS):
        (d,) = _cl201(body)
        assert d.message.startswith("uncoalesced store vrt[24 * idx + i]"), d.message
        assert "load" not in d.message.split(":")[0]
        # the same figures and the same explanation after the access's text
        assert d.metrics["sectors_per_request"] == direct.metrics["sectors_per_request"]
        # (the reference's body has one more line: line numbers differ by one)
        same = re.sub(r"line \d+", "line #", d.message.split(":", 1)[1])
        assert same == re.sub(r"line \d+", "line #", direct.message.split(":", 1)[1])


def test_a_reference_read_is_a_load_and_updated_an_update():
    for body, kind in ((READ, "load"), (UPDATE, "update")):
        found = _cl201(body)
        assert found and all(d.message.startswith(f"uncoalesced {kind} vrt[")
                             for d in found), [d.message[:60] for d in found]


READBACK = """
__global__ void verts(int n, const float3* pos, float3* vrt, float4* nrm) {
  const unsigned idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx < n) {
    const float3 p = pos[idx];
    const unsigned s = 4 * idx;
#pragma unroll
    for (int i = 0; i < TRIP; ++i) {
      float3& v = vrt[s + i];
      v = make_float3(p.x + i, p.y, p.z);
    }
    const float3 a = vrt[s + 1], b = vrt[s + 0], c = vrt[s + 2];
    nrm[idx] = make_float4(a.x - b.x, c.y - b.y, a.z, 1.f);
  }
}
void go(int n, const float3* p, float3* v, float4* o) { verts<<<(n + 1023) / 1024, 1024>>>(n, p, v, o); }
"""


def _loads(text: str) -> list[str]:
    s = replace(Settings(), select=("CL201",))
    return sorted(d.message.split(":")[0] for d in lint_text("r.cu", text, s, "cuda").diagnostics
                  if d.message.startswith("uncoalesced load"))


def test_a_load_of_what_the_thread_just_stored_is_not_said():
    # the re-scored new finding of sheet 9 (3dgrut particlePrimitives.cu:205): the three
    # vertices read back were written by the loop above, in every lane
    assert _loads(READBACK.replace("TRIP", "4")) == []
    # vrt[s + 2] was not written (2 passes): said; vrt[s + 0], vrt[s + 1] were
    assert _loads(READBACK.replace("TRIP", "2")) == ["uncoalesced load vrt[s + 2]"]
    # the stores may not run (under a branch): the loads are said
    guarded = READBACK.replace("TRIP", "4").replace("for (int i", "if (p.x > 0) for (int i")
    assert _loads(guarded) and all("vrt[s + 1]" in m for m in _loads(guarded))


def test_a_load_in_the_statement_that_stores_runs_first():
    # Mandelbrot's `dst[pixel].x = (dst[pixel].x * frame + ...)`: the load is said
    text = """
__global__ void acc(float* d, int w, int f) {
  int i = (blockIdx.x * blockDim.x + threadIdx.x) * w;
  d[i] = d[i] * f + 1.f;
}
void go(float* d, int w, int f) { acc<<<64, 256>>>(d, w, f); }
"""
    s = replace(Settings(), select=("CL201",))
    found = [d.message for d in lint_text("a.cu", text, s, "cuda").diagnostics]
    assert any(m.startswith("uncoalesced update d[i]") or m.startswith("uncoalesced load d[i]")
               for m in found), found

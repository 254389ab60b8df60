"""CL201/CL202 on a tail path one lane runs (sheet-newcorpus4 W2, pointnet2's cumsumKernel:
`for (k = 4 * threadIdx.x; k < n; ...) if (k + 3 < n) {...} else {... inp[k2] ...}`). The
lanes that run the `else` have n - 3 <= k < n, a window of 3 values, and lanes' k are 4
apart: one lane at most, so its accesses get one lane's figures (nothing to report), not a
warp's "16 sectors per request". A tail of 128 values, which all 32 lanes can share, keeps
the warp's figures (fixtures/CL201/tail_path.cu)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from cudalint.config import Settings
from cudalint.engine import lint_text

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures/CL201/tail_path.cu"


def _found() -> dict[int, set[str]]:
    s = replace(Settings(), select=("CL201", "CL202"))
    res = lint_text(str(FIXTURE), FIXTURE.read_text(), s, "cuda")
    out: dict[int, set[str]] = {}
    for d in res.diagnostics:
        out.setdefault(d.row, set()).add(d.code)
    return out


def _row(marker: str, kernel: str) -> int:
    lines = FIXTURE.read_text().splitlines()
    start = next(i for i, l in enumerate(lines) if f"void {kernel}(" in l)
    return next(i for i in range(start, len(lines)) if marker in lines[i]) + 1


def test_a_one_lane_tail_path_gets_no_warp_figure():
    found = _found()
    assert "CL201" not in found.get(_row("v += inp[k2]", "tail"), set())
    assert "CL202" not in found.get(_row("buffer4[k2 & 8191] = v", "tail"), set())


def test_a_tail_every_lane_can_share_keeps_the_warp_figure():
    found = _found()
    assert "CL201" in found.get(_row("v += inp[k2]", "wide_tail"), set())
    assert "CL202" in found.get(_row("buffer4[k2 & 8191] = v", "wide_tail"), set())

"""A kernel whose ``__shared__`` array no GPU can hold is not run by the sync analysis
(issue 25): its byte addresses were past 2**61, where Python's dictionaries hash them
alike, and its block runs took 10-15 s of CPU for a few KB of fuzzed notebook or Python."""
from __future__ import annotations

from cudalint.analysis.sync import races
from cudalint.analysis.sync.block_run import BlockRun
from cudalint.config import Settings
from cudalint.engine import lint_bytes

SETTINGS = Settings(select=("CL101", "CL102", "CL103", "CL105"))

TRIANGULAR = """
__global__ void k(float* out, const float* in) {
  __shared__ float s[%s][%s];
  for (int i = 0; i < 64; ++i) {
    s[i][threadIdx.x] = in[i];
    if (threadIdx.x > i) s[threadIdx.x][i] /= s[i][i];
  }
  out[threadIdx.x] = s[0][threadIdx.x];
}
void host(float* o, const float* i) { k<<<1, 128>>>(o, i); }
"""


def _runs(monkeypatch):
    """(file, steps x threads, arrays logged, result) of every block run."""
    seen: list[tuple[object, int]] = []
    spent: dict = {}

    class Counted(BlockRun):
        def run(self):
            res = super().run()
            seen.append((self.ctx.unit.file, self.steps * self.n, len(self.log), res))
            return res
    monkeypatch.setattr(races, "BlockRun", Counted)
    monkeypatch.setattr(races, "_SPENT", spent)
    return seen, spent


def test_shared_array_no_gpu_can_hold_is_not_run(monkeypatch):
    seen, _ = _runs(monkeypatch)
    lint_bytes("k.cu", (TRIANGULAR % ("(1 << 62)", "(1 << 62)")).encode(), SETTINGS,
               "cuda")
    assert seen and all(not r[3].complete and "no GPU can hold" in r[3].reason
                        for r in seen)
    assert sum(r[2] for r in seen) == 0        # nothing logged: stopped at the declaration
    assert sum(r[1] for r in seen) <= 2 * len(seen) * 128


def test_ordinary_shared_array_still_run(monkeypatch):
    seen, _ = _runs(monkeypatch)
    # 48 KB: the usual default limit of static shared memory
    lint_bytes("k.cu", (TRIANGULAR % (96, 128)).encode(), SETTINGS, "cuda")
    assert seen and all("no GPU" not in r[3].reason for r in seen)

"""GPU truth for issue 20: findings the triages judged "not worth acting on" by reading,
and the CL202 rule draft's unmeasured shapes. Does the change each finding asks for change
what an H100 executes or computes?

    python3 tools/gputruth/issue20_worth.py --out $OUT     # on a machine with a GPU

Builds issue20_worth.cu for sm_90 and runs it:
- R (CL203, reloads once per thread outside every loop; sheet-newcorpus10 N2, sheet-newcorpus11
  N6): optimum-quanto's byte unpack (2 and 4 outputs per input byte) and LEAP's ramp filter
  (`G[ind].x *= H[k]; G[ind].y *= H[k];`, its 8x8x8 launch and a coalesced one), as written
  and with the read pointer `const __restrict__`; and CCPi-Regularisation-Toolkit's
  `updBxBy2D` (sheet-newcorpus12 N2: `U[index]` reloaded after the store to `Bx`, beside a
  load of `Dy` that stays there), with `U` restricted and with every read pointer restricted;
- H (CL204 on a per-thread histogram that the block only sums; sheet-newcorpus12 W1):
  fastmoe's expert count (256 private bins per thread, a warp sum and an atomicAdd per warp
  and bin) against one shared histogram per block updated with shared atomics;
- B (CL202, 2-way conflicts beside a global load per shared load): the fixture
  `exit_on_data` (fixtures/CL202/iteration_exits.cu) against a conflict-free index, with its
  global load hitting L1/L2 and streaming from DRAM, and kaolin's 16x16 transpose through
  `shm[16][17]` against the XOR swizzle the message prints;
- D (CL402 on a discriminant that guards its sqrt; sheet-newcorpus11 N4): LEAP's cone
  intersection as nvcc contracts it and with both products rounded (`__dmul_rn`), on random
  and on exactly tangent rays: how many outputs differ, how many take the other branch, and
  by how much.
CUDA events, median of 21 runs after two warm-ups. Writes bench/triage/issue20_worth.json
(a copy under --out).
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from timed_pairs import main, parse as _parse  # noqa: E402

ROOT = HERE.parents[1]
RECORD = ROOT / "bench" / "triage" / "issue20_worth.json"
GROUPS = r"[RBDH]"


def parse(text: str) -> list[dict]:
    return _parse(text, GROUPS)


if __name__ == "__main__":
    main(HERE / "issue20_worth.cu", RECORD, GROUPS, "tools/gputruth/issue20_worth.py")

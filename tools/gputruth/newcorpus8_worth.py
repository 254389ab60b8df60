"""GPU truth for issue 20's sheet-newcorpus8 N2 and N5 (not worth acting on, by reading):
does the layout change the finding asks for change the kernel's time on an H100?

    python3 tools/gputruth/newcorpus8_worth.py --out $OUT     # on a machine with a GPU

Builds newcorpus8_worth.cu for sm_90 and runs it: N2, a per-thread row of 81 doubles
re-read in a 4-deep loop (rows, as found, against the column layout the CL201 remedy
gives), with a light and a heavy (exp) loop body and 0%/50% skipped terms; N5, a 2-way
conflict (CL202) in a loop with a global load per shared use, against rows padded to
2 wavefronts. CUDA events, median of 5 (N2) or 21 (N5) runs. Writes
bench/triage/newcorpus8_worth.json (a copy under --out).
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from timed_pairs import main, parse as _parse  # noqa: E402

ROOT = HERE.parents[1]
RECORD = ROOT / "bench" / "triage" / "newcorpus8_worth.json"
GROUPS = r"N\d"


def parse(text: str) -> list[dict]:
    return _parse(text, GROUPS)


if __name__ == "__main__":
    main(HERE / "newcorpus8_worth.cu", RECORD, GROUPS, "tools/gputruth/newcorpus8_worth.py")

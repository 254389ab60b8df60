"""GPU truth for issue 20's sheet-newcorpus11 N2 (LEAP's per-thread rows sorted in place,
8-thread blocks; judged not worth acting on by estimate): does the column-major layout the
CL201 finding asks for change the kernel's time on an H100?

    python3 tools/gputruth/row_sort.py --out $OUT     # on a machine with a GPU

Builds row_sort.cu for sm_90 and runs it: 2^16 threads, rows of 8, 32 and 64 floats,
8-thread blocks (LEAP's launch) and 128-thread ones, row and column layouts with the same
arithmetic and output. CUDA events, median of 11. Writes bench/triage/row_sort.json.
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from timed_pairs import main, parse as _parse  # noqa: E402

ROOT = HERE.parents[1]
RECORD = ROOT / "bench" / "triage" / "row_sort.json"
GROUPS = r"S"


def parse(text: str) -> list[dict]:
    return _parse(text, GROUPS)


if __name__ == "__main__":
    main(HERE / "row_sort.cu", RECORD, GROUPS, "tools/gputruth/row_sort.py")

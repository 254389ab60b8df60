"""CPU seconds of kept slow fuzz inputs, each through its own target in a fresh process.

    python fuzz/slow_inputs.py [tests/fuzz/slow/*.gz ...] [--limit 3]

The campaign (``long_run.py``) keeps inputs over ``--slow`` seconds in ``tests/fuzz/slow/``
as ``<target>_<sig>.input.gz`` (``local_`` first: a second run's). Each is run again as
the campaign ran it, alone in a fresh process (``tests/fuzz/slow_child.py``: the
targets, and CPU seconds of the process and of its libclang helper, so that a loaded,
shared machine measures the input, not the load).
Prints one row per input; exits 1 when any input is over ``--limit`` seconds.
"""
from __future__ import annotations

import argparse
import gzip
import re
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SLOW = ROOT / "tests" / "fuzz" / "slow"
sys.path.insert(0, str(ROOT / "tests" / "fuzz"))

from slow_child import TARGETS  # noqa: E402

CHILD = ROOT / "tests" / "fuzz" / "slow_child.py"


def target_of(path: Path) -> str:
    if path.parent.name.endswith("_slow"):       # tests/fuzz/regressions/<target>_slow/
        return path.parent.name[:-len("_slow")]
    name = re.sub(r"^(?:local|seed\d+)_", "", path.name)      # which run found it
    for t in TARGETS:
        if name.startswith(t + "_"):
            return t
    raise SystemExit(f"{path}: no fuzz target in its name")


def measure(path: Path, hang: float = 60.0) -> dict:
    try:
        res = subprocess.run([sys.executable, str(CHILD), str(path), target_of(path)],
                             capture_output=True, text=True, cwd=ROOT, timeout=hang)
    except subprocess.TimeoutExpired:
        return {"cpu_s": float("nan"), "peak_mb": 0,
                "problem": f"hang: still running after {hang:g} s (wall)"}
    try:
        return json.loads(res.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return {"cpu_s": float("nan"), "peak_mb": 0,
                "problem": f"exit {res.returncode}: {res.stderr.strip()[-300:]}"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", type=Path)
    ap.add_argument("--limit", type=float, default=3.0)
    args = ap.parse_args(argv)
    paths = args.paths or sorted(SLOW.glob("*.gz"))
    over = 0
    for p in paths:
        r = measure(p)
        size = len(gzip.decompress(p.read_bytes()))
        over += not r["cpu_s"] <= args.limit
        print(f"{p.name:48s} {target_of(p):18s} {size:7d} B  {r['cpu_s']:6.2f} s CPU  "
              f"{r['peak_mb']:5d} MB  {r['problem'] or ''}", flush=True)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())

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

import argparse
import json
import re
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RECORD = ROOT / "bench" / "triage" / "newcorpus8_worth.json"
_LINE = re.compile(r"^(N\d) (.*)$")


def parse(text: str) -> list[dict]:
    """One record per output line: its group and its key=value fields (numbers as
    numbers, a trailing % dropped)."""
    out = []
    for line in text.splitlines():
        m = _LINE.match(line.strip())
        if not m:
            continue
        rec: dict = {"group": m[1]}
        for field in m[2].split():
            if "=" in field:
                k, v = field.split("=", 1)
                v = v.rstrip("%")
                try:
                    rec[k] = float(v) if "." in v else int(v)
                except ValueError:
                    rec[k] = v
            else:
                rec["body"] = field
        out.append(rec)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        exe = str(Path(tmp) / "worth")
        subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-std=c++17", "-o", exe,
                        str(HERE / "newcorpus8_worth.cu")], check=True)
        run = subprocess.run([exe], capture_output=True, text=True, timeout=400)
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                          "--format=csv,noheader"], capture_output=True, text=True).stdout
    data = {"tool": "tools/gputruth/newcorpus8_worth.py", "gpu": gpu.strip(),
            "records": parse(run.stdout), "raw": run.stdout}
    text = json.dumps(data, indent=1) + "\n"
    print(run.stdout, run.stderr)
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        Path(args.out, "newcorpus8_worth.json").write_text(text)
    RECORD.write_text(text)


if __name__ == "__main__":
    main()

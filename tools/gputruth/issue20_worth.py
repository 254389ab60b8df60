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

import argparse
import json
import re
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RECORD = ROOT / "bench" / "triage" / "issue20_worth.json"
_LINE = re.compile(r"^([RBDH]) (.*)$")


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
                rec["body"] = (rec.get("body", "") + " " + field).strip()
        out.append(rec)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        exe = str(Path(tmp) / "worth20")
        subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-std=c++17", "-o", exe,
                        str(HERE / "issue20_worth.cu")], check=True)
        run = subprocess.run([exe], capture_output=True, text=True, timeout=400)
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                          "--format=csv,noheader"], capture_output=True, text=True).stdout
    data = {"tool": "tools/gputruth/issue20_worth.py", "gpu": gpu.strip(),
            "records": parse(run.stdout), "raw": run.stdout}
    text = json.dumps(data, indent=1) + "\n"
    print(run.stdout, run.stderr)
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        Path(args.out, "issue20_worth.json").write_text(text)
    RECORD.write_text(text)


if __name__ == "__main__":
    main()

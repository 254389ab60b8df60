"""Shared by the "worth acting on" GPU measurements (newcorpus8_worth.py, issue20_worth.py):
build one CUDA file for sm_90, run it, read its lines ``GROUP key=value ...`` into records,
and write them with the GPU's name as a JSON record (a copy under ``--out``)."""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import tempfile
from pathlib import Path


def parse(text: str, groups: str) -> list[dict]:
    """One record per output line whose first word matches ``groups`` (a regex): its
    group, its words without ``=`` joined as ``body``, and its key=value fields (numbers
    as numbers, a trailing % dropped)."""
    line_re = re.compile(rf"^({groups}) (.*)$")
    out = []
    for line in text.splitlines():
        m = line_re.match(line.strip())
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


def main(source: Path, record: Path, groups: str, tool: str) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        exe = str(Path(tmp) / source.stem)
        subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-std=c++17", "-o", exe, str(source)],
                       check=True)
        run = subprocess.run([exe], capture_output=True, text=True, timeout=400)
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                          "--format=csv,noheader"], capture_output=True, text=True).stdout
    data = {"tool": tool, "gpu": gpu.strip(), "records": parse(run.stdout, groups),
            "raw": run.stdout}
    text = json.dumps(data, indent=1) + "\n"
    print(run.stdout, run.stderr)
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        Path(args.out, record.name).write_text(text)
    record.write_text(text)

"""Capture real `ptxas -v` logs from older CUDA releases for the CL3xx fixtures.

    python tools/ptxas_versions.py [--wheels DIR]

ptxas of CUDA 11.8 and 12.9 come from NVIDIA's PyPI wheels (`nvidia-cuda-nvcc-cu11`,
`nvidia-cuda-nvcc-cu12`; downloaded into DIR with `pip download --no-deps`). The PTX is
produced by the installed nvcc (`nvcc -ptx -arch=compute_80`) with its `.version` line
lowered to 7.8, which both releases accept for these kernels; the logs are therefore what
those ptxas releases print for the same code. Each log goes beside its fixture as
`<name>.ptxas-<release>.log`, headed by the command that produced it.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RELEASES = {"11.8": "nvidia-cuda-nvcc-cu11==11.8.89", "12.9": "nvidia-cuda-nvcc-cu12==12.9.86"}
FIXTURES = ["CL301/spills.cu", "CL302/stack_frame.cu", "CL303/occupancy.cu"]


def ptxas_from_wheel(spec: str, wheels: Path, into: Path) -> Path:
    wheels.mkdir(parents=True, exist_ok=True)
    name = spec.split("==")[0].replace("-", "_")
    found = list(wheels.glob(f"{name}-*.whl"))
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", spec,
                        "-d", str(wheels)], check=True)
        found = list(wheels.glob(f"{name}-*.whl"))
    with zipfile.ZipFile(found[0]) as z:
        member = next(m for m in z.namelist() if m.endswith("bin/ptxas"))
        target = into / name / "ptxas"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(z.read(member))
        target.chmod(0o755)
    return target


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--wheels", type=Path, default=Path(tempfile.gettempdir()) / "ptxas-wheels")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmpd = Path(tmp)
        tools = {rel: ptxas_from_wheel(spec, args.wheels, tmpd) for rel, spec in RELEASES.items()}
        for fx in FIXTURES:
            src = ROOT / "fixtures" / fx
            ptx = tmpd / (src.stem + ".ptx")
            subprocess.run(["nvcc", "-ptx", "-arch=compute_80", "-o", str(ptx), str(src)],
                           check=True)
            text = re.sub(r"(?m)^\.version .*$", ".version 7.8", ptx.read_text())
            ptx.write_text(text)
            for rel, ptxas in tools.items():
                cmd = [str(ptxas), "-v", "-warn-spills", "-arch=sm_80", "-o", "/dev/null",
                       str(ptx)]
                proc = subprocess.run(cmd, capture_output=True, text=True)
                if proc.returncode != 0:
                    print(f"{fx} with ptxas {rel} failed:\n{proc.stderr}", file=sys.stderr)
                    return 1
                out = src.with_name(f"{src.stem}.ptxas-{rel}.log")
                out.write_text(f"# ptxas {rel} (PyPI {RELEASES[rel]}): ptxas -v -warn-spills "
                               f"-arch=sm_80 {src.stem}.ptx (nvcc -ptx -arch=compute_80 "
                               f"{src.name}, .version 7.8)\n" + proc.stderr + proc.stdout)
                print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

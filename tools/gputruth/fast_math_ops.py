"""SASS evidence for CL401's line between the operations fast math moves far from the IEEE
result and those it keeps within a few ulp (no GPU needed: nvcc -cubin + cuobjdump).

Every probe is one small kernel around one operation. It is compiled for sm_90 without
flags and with the flag that changes it (``--use_fast_math``, or ``-ftz=true``,
``-prec-div=false``, ``-prec-sqrt=false`` alone), and the SASS of both builds is reduced to
facts: instruction count (NOPs left out), the MUFU instructions, whether a call (a slow
path) is there, double-precision instructions, and the mechanism the fast build shows:

* ``no-range-reduction``: MUFU.SIN/MUFU.COS fed by an FMUL.RZ by 1/(2 pi) and nothing
  else (the IEEE build has the range reduction: several times the instructions);
* ``lg2-ex2``: MUFU.LG2 then MUFU.EX2, no test of the base's sign (exp2(y * log2 x));
* ``mufu-tanh``: MUFU.TANH;
* ``folded-to-zero``: the quotient by a constant in (2^126, 2^128) is a multiplication by
  zero (RZ), no MUFU.RCP left;
* ``ftz-constant``: the instruction that reads a constant below FLT_MIN carries .FTZ, so
  the constant (and every subnormal operand) is read as 0;
* ``bounded``: a single MUFU.EX2/LG2/RCP/RSQ/SQRT with at most a scaling FMUL, or the
  full-range ``div.full`` sequence: the documented few-ulp bounds;
* ``ftz-only``: the same instructions, some with .FTZ (only subnormal operands and
  results change);
* ``unchanged``: the same instructions in both builds (or a double-precision path the
  flags do not touch).

``far`` is the kind :func:`cudalint.analysis.fp.fast_math_ops.scan` gives the probe's
source (None: not counted); tests/test_cl401_fast_math_ops.py checks that the two agree
(a far kind always comes with its mechanism, None never with one of the far mechanisms
except for a power of a non-negative base, where the NaN that makes __powf far cannot
occur) and, where nvcc is found, that the committed facts are what nvcc emits now.

    python tools/gputruth/fast_math_ops.py            # rewrites fixtures/CL401/fast_math_ops.json
    python tools/gputruth/fast_math_ops.py --check    # compares with the committed file
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools" / "gputruth"))

import fp_sass  # noqa: E402

OUT = ROOT / "fixtures" / "CL401" / "fast_math_ops.json"
ARCH = fp_sass.ARCH

# name -> (the flag that changes it, the expression computed from float x and z)
PROBES: dict[str, tuple[str, str]] = {
    "sinf": ("--use_fast_math", "sinf(x)"),
    "cosf": ("--use_fast_math", "cosf(x)"),
    "tanf": ("--use_fast_math", "tanf(x)"),
    "std_sin_float": ("--use_fast_math", "std::sin(x)"),
    "sin_of_double": ("--use_fast_math", "(float)sin((double)x)"),
    "powf_xz": ("--use_fast_math", "powf(x, z)"),
    "powf_x_3": ("--use_fast_math", "powf(x, 3.0f)"),
    "powf_abs_base": ("--use_fast_math", "powf(fabsf(x), z)"),
    "powf_x_half": ("--use_fast_math", "powf(x, 0.5f)"),
    "pow_float_int": ("--use_fast_math", "pow(x, 2)"),
    "tanhf": ("--use_fast_math", "tanhf(x)"),
    "div_flt_max": ("--use_fast_math", "x / 3.4e38f"),
    "expf": ("--use_fast_math", "expf(x)"),
    "exp_float": ("--use_fast_math", "exp(x)"),
    "exp10f": ("--use_fast_math", "exp10f(x)"),
    "logf": ("--use_fast_math", "logf(x)"),
    "log2f": ("--use_fast_math", "log2f(x)"),
    "div": ("--use_fast_math", "x / z"),
    "sqrtf": ("--use_fast_math", "sqrtf(x)"),
    "rsqrt_div": ("--use_fast_math", "1.0f / sqrtf(x)"),
    "div_prec_div_false": ("-prec-div=false", "x / z"),
    "sqrtf_prec_sqrt_false": ("-prec-sqrt=false", "sqrtf(x)"),
    "eps_max_ftz": ("-ftz=true", "x / fmaxf(z, 1e-40f)"),
    "eps_flt_min_ftz": ("-ftz=true", "x / fmaxf(z, 1.17549435e-38f)"),
    "mul_ftz": ("-ftz=true", "x * z"),
}

# the bounded mechanisms come with the documented error of the fast version
DOCUMENTED = {
    "expf": "__expf: 2 + floor(|1.173 x|) ulp",
    "exp_float": "__expf: 2 + floor(|1.173 x|) ulp",
    "exp10f": "__exp10f: 2 + floor(|2.97 x|) ulp",
    "logf": "__logf: 2^-21.41 absolute for x in [0.5, 2], else 3 ulp",
    "log2f": "__log2f: 2^-22 absolute for x in [0.5, 2], else 2 ulp",
    "div": "__fdividef: 2 ulp for |y| in [2^-126, 2^126]",
    "sqrtf": "sqrtf with -prec-sqrt=false: 1 ulp",
    "rsqrt_div": "rsqrtf (1/sqrtf converted): 2 ulp",
    "div_prec_div_false": "x/y with -prec-div=false: 2 ulp, full range",
    "sqrtf_prec_sqrt_false": "sqrtf with -prec-sqrt=false: 1 ulp",
    "powf_abs_base": "exp2(y log2 |x|): no negative base, bounded like __expf",
    "powf_x_half": "a negative base is NaN for powf(x, 0.5f) as well",
    "mul_ftz": "only subnormal inputs and results change",
    "eps_flt_min_ftz": "FLT_MIN is a normal float: -ftz leaves it",
}


def source() -> str:
    out = ["#include <cmath>"]
    for name, (_, expr) in PROBES.items():
        out.append(f'extern "C" __global__ void p_{name}(float* y, const float* a, '
                   f'const float* b) {{ int i = threadIdx.x; float x = a[i]; '
                   f'float z = b[i]; (void)z; y[i] = {expr}; }}')
    return "\n".join(out) + "\n"


def _ops(lines: list[str]) -> list[str]:
    out = []
    for ins in lines:
        ins = re.sub(r"^@!?U?P\w+\s+", "", ins)
        if ins and not ins.startswith("NOP"):
            out.append(ins)
    return out


def facts(lines: list[str]) -> dict:
    ops = _ops(lines)
    names = [o.split()[0] for o in ops]
    return {"instructions": len(ops),
            "mufu": sorted({n for n in names if n.startswith("MUFU")}),
            "call": any(n.startswith("CALL") for n in names),
            "fp64": sum(1 for o in ops if fp_sass.FP64.search(o))}


def mechanism(ieee: list[str], fast: list[str]) -> str:
    a, b = _ops(ieee), _ops(fast)
    fb, fa = facts(fast), facts(ieee)
    if a == b or (fb["fp64"] and fa["fp64"]):
        return "unchanged"
    if [o.replace(".FTZ", "") for o in a] == [o.replace(".FTZ", "") for o in b]:
        return "ftz-only"
    mufu = set(fb["mufu"])
    if mufu & {"MUFU.SIN", "MUFU.COS"}:
        reduced = any(o.startswith("FMUL.RZ") for o in b) and \
            fa["instructions"] >= 4 * fb["instructions"]
        return "no-range-reduction" if reduced else "bounded"
    if {"MUFU.LG2", "MUFU.EX2"} <= mufu:
        sign_tests = [o for o in b if o.startswith(("FSETP", "ISETP")) or "SIGN" in o]
        return "lg2-ex2" if not sign_tests else "bounded"
    if "MUFU.TANH" in mufu:
        return "mufu-tanh"
    if not mufu and any(re.match(r"FMUL\S*\s+\S+,\s*RZ,", o) for o in b) and \
            "MUFU.RCP" in fa["mufu"]:
        return "folded-to-zero"
    if any(".FTZ" in o and re.search(r"\d\.\d+e-(?:39|4\d)", o) for o in b):
        return "ftz-constant"
    return "bounded"


def measure() -> dict:
    src = source()
    flags = sorted({f for f, _ in PROBES.values()})
    base = fp_sass.sass(src)
    built = {f: fp_sass.sass(src, [f]) for f in flags}
    from cudalint.analysis.fp.fast_math_ops import scan
    probes = []
    for name, (flag, expr) in PROBES.items():
        fn = f"p_{name}"
        hits = scan(f"__global__ void k(float x, float z) {{ {expr}; }}", device_only=False)
        probes.append({
            "name": name, "flag": flag, "expr": expr,
            "ieee": facts(base[fn]), "fast": facts(built[flag][fn]),
            "mechanism": mechanism(base[fn], built[flag][fn]),
            "far": hits[0].kind if hits else None,
            "documented": DOCUMENTED.get(name),
        })
    return {"arch": ARCH, "nvcc": _nvcc_version(), "probes": probes}


def _nvcc_version() -> str:
    out = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout
    m = re.search(r"release [\d.]+, V[\d.]+", out)
    return m.group(0) if m else out.strip().splitlines()[-1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    got = measure()
    text = json.dumps(got, indent=1, sort_keys=True) + "\n"
    if args.check:
        same = OUT.read_text() == text
        print("same" if same else "DIFFERENT")
        return 0 if same else 1
    OUT.write_text(text)
    for p in got["probes"]:
        print(f"{p['name']:24s} {p['flag']:16s} {p['mechanism']:20s} far={p['far']} "
              f"{p['ieee']['instructions']:4d} -> {p['fast']['instructions']:3d} "
              f"{p['fast']['mufu']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

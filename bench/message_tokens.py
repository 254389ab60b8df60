"""No internal token in any message over real projects (issue 16): the corpus half of
tests/test_opaque_messages.py, which CI cannot run (the projects are not in the repository).

    python bench/message_tokens.py /tmp/real/cupy /tmp/real/pycuda

Runs `cudalint check --select ALL` over the paths and exits 1 listing every finding whose
message or fix message shows the `__cudalint_opaque_` prefix.
"""
from __future__ import annotations

import json
import subprocess
import sys

PREFIX = "__cudalint_opaque_"


def main(paths: list[str]) -> int:
    p = subprocess.run([sys.executable, "-m", "cudalint", "check", *paths, "--select", "ALL",
                        "--no-cache", "-j", "2", "--output-format", "json"],
                       capture_output=True, timeout=3600)
    if p.returncode not in (0, 1):
        print(p.stderr.decode()[-2000:], file=sys.stderr)
        return 2
    found = json.loads(p.stdout)
    leaks = [f"{d['filename']}:{d['location']['row']} {d['code']}: {d['message']}"
             for d in found if PREFIX in d["message"]
             or PREFIX in ((d.get("fix") or {}).get("message") or "")]
    print(f"{len(found)} findings, {len(leaks)} with an internal token")
    print("\n".join(leaks[:50]))
    return 1 if leaks else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["."]))

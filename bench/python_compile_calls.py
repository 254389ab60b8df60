"""How many CUDA compile calls in the Python of real projects cudalint reads (issue 21).

    python bench/python_compile_calls.py /tmp/real /tmp/newcorpus [--list] [--json OUT]

Each folder under a given root is one project. For every ``.py`` file the compile calls
that :func:`cudalint.sources.python.extract.extract_python_units` finds are counted as
read (at least one kernel came out of the call) or unread (listed, with the reason, as
``cudalint check --show-unread`` lists them). A compile call inside a wrapper whose
source its callers pass (``PythonExtraction.wrappers``) is counted apart: its kernels
are read at the wrapper's calls, which are compile calls themselves; so is a call that
compiles no CUDA C++ (``PythonExtraction.not_compiled``: CuPy's ``RawModule(path=)``
loads a cubin or ptx). The engine's own path is used (file paths
as given, so imports of the project's own modules and files read relative to
``__file__`` resolve as they do on the command line). Exit 0; the figures are the output.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def count(project: Path) -> dict:
    from cudalint.sources.python.extract import extract_python_units
    read: list[tuple[str, int]] = []
    unread: list[tuple[str, int, str, str]] = []
    wrappers: list[tuple[str, int, str, str]] = []
    loads: list[tuple[str, int, str, str]] = []
    for dirpath, dirnames, filenames in os.walk(project):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if not name.endswith(".py"):
                continue
            path = Path(dirpath) / name
            text = path.read_bytes().decode("utf-8", "replace")
            result = extract_python_units(text, str(path))
            rel = str(path.relative_to(project.parent))
            for start in sorted({k.call_start for k in result.kernels}):
                read.append((rel, text.count("\n", 0, start) + 1))
            for u in result.unread:
                unread.append((rel, text.count("\n", 0, u.start) + 1, u.api, u.reason))
            for u in result.wrappers:
                wrappers.append((rel, text.count("\n", 0, u.start) + 1, u.api, u.reason))
            for u in result.not_compiled:
                loads.append((rel, text.count("\n", 0, u.start) + 1, u.api, u.reason))
    return {"read": read, "unread": unread, "wrappers": wrappers, "not_compiled": loads}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("roots", nargs="+")
    ap.add_argument("--list", action="store_true", help="list every unread call")
    ap.add_argument("--json", help="write the per-project figures here")
    args = ap.parse_args(argv)
    table = {}
    for root in args.roots:
        for project in sorted(Path(root).iterdir()):
            if project.is_dir():
                got = count(project)
                if got["read"] or got["unread"]:
                    table[project.name] = got
    total_read = sum(len(v["read"]) for v in table.values())
    total = total_read + sum(len(v["unread"]) for v in table.values())
    print(f"{'project':<16} {'read':>5} {'found':>6} {'wrapper bodies':>15} "
          f"{'compile nothing':>16}")
    for name, v in table.items():
        n = len(v["read"]) + len(v["unread"])
        print(f"{name:<16} {len(v['read']):>5} {n:>6} {len(v['wrappers']):>15} "
              f"{len(v['not_compiled']):>16}")
    print(f"{'all':<16} {total_read:>5} {total:>6}  "
          f"({100.0 * total_read / max(total, 1):.1f}% read)")
    if args.list:
        for name, v in table.items():
            for rel, row, api, reason in v["unread"]:
                print(f"{rel}:{row}: `{api}`: {reason}")
            for rel, row, api, reason in v["wrappers"]:
                print(f"{rel}:{row}: `{api}`: wrapper body (read at its calls): {reason}")
            for rel, row, api, reason in v["not_compiled"]:
                print(f"{rel}:{row}: `{api}`: compiles nothing: {reason}")
    if args.json:
        Path(args.json).write_text(json.dumps(table, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Hypothesis profiles of the fuzz tests, and a count of the inputs each target ran.

* CI (default): a fixed, derandomized set of examples per target, about a minute in all.
* Long run: ``CUDALINT_FUZZ_LONG=1`` (random examples, the example database on, examples
  per target from ``CUDALINT_FUZZ_EXAMPLES``, default 20x the CI count); see README.md.
"""
from __future__ import annotations

import json
import os

import fuzzlib


def pytest_terminal_summary(terminalreporter):
    if not fuzzlib.RUNS:
        return
    total = sum(fuzzlib.RUNS.values())
    terminalreporter.write_line(
        f"cudalint fuzz: {total} inputs: " +
        ", ".join(f"{k} {v}" for k, v in sorted(fuzzlib.RUNS.items())))
    out = os.environ.get("CUDALINT_FUZZ_STATS")
    if out:
        with open(out, "w", encoding="utf-8") as fh:
            json.dump(dict(fuzzlib.RUNS), fh, indent=1, sort_keys=True)

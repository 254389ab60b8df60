"""docs/rules.md is generated from the rules' docstrings: it must not go stale."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_rules_md_is_current():
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_rule_docs.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_rules_md_lists_every_rule_with_its_docs():
    from cudalint.rule import all_rules
    text = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    flat = " ".join(text.split())
    for code, rule in all_rules().items():
        assert f"\n## {code}\n" in text, code
        assert " ".join(rule.summary().split()) in flat, code

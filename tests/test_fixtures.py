"""Every fixture of every rule: each `ruleid` line is reported, nothing else is."""
from __future__ import annotations

import pytest

from cudalint.rule import all_rules
from fixture_support import FIXTURES, expectations, fixture_files, lint_fixture

FILES = fixture_files()


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(FIXTURES)) for p in FILES])
def test_fixture_agrees_with_annotations(path):
    code = path.parent.name
    expect, forbid = expectations(path)
    annotated = {c for codes in list(expect.values()) + list(forbid.values()) for c in codes}
    assert annotated, f"{path} has no ruleid/ok annotation"
    codes = annotated | {code}
    result = lint_fixture(path, codes)
    found: dict[int, set[str]] = {}
    for d in result.diagnostics:
        if d.code in codes and not d.suppressed:
            found.setdefault(d.row, set()).add(d.code)
    for row, wanted in expect.items():
        missing = wanted - found.get(row, set())
        assert not missing, f"{path}:{row}: expected {sorted(missing)}, found {found}"
    for row, got in found.items():
        unexpected = got - expect.get(row, set())
        assert not unexpected, f"{path}:{row}: unexpected {sorted(unexpected)} (false positive)"
    for row, banned in forbid.items():
        assert not banned & found.get(row, set()), f"{path}:{row}: flagged an `ok` line"


def test_every_rule_has_fixtures_with_both_outcomes():
    engine_codes = {c for c, r in all_rules().items() if r.target == "engine"}
    for code in all_rules():
        if code in engine_codes:
            continue
        files = fixture_files(code)
        assert files, f"{code} has no fixtures in fixtures/{code}/"
        kinds = set()
        for f in files:
            expect, forbid = expectations(f)
            if any(code in c for c in expect.values()):
                kinds.add("ruleid")
            if any(code in c for c in forbid.values()):
                kinds.add("ok")
        assert kinds == {"ruleid", "ok"}, f"{code}: fixtures need positives and look-alikes"

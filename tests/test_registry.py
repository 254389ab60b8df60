"""The rule registry: every rule documented, found through entry points like a plugin,
installed under the cudalint namespace."""
from __future__ import annotations

import sys
import textwrap
from types import SimpleNamespace

import pytest

import cudalint.rule as rule_mod
from cudalint.rule import DOC_HEADINGS, Rule, RegistryError, all_rules


def test_every_rule_is_documented():
    for code, rule in all_rules().items():
        sections = rule.doc_sections()
        missing = [h for h in DOC_HEADINGS if not sections.get(h)]
        assert not missing, f"{code} lacks doc sections {missing}"
        assert rule.name and rule.name == rule.name.lower() and " " not in rule.name
        assert rule.severity in ("error", "warning", "info")
        assert rule.fix_safety in (None, "safe", "unsafe")
        assert rule.summary().endswith("."), f"{code}: first sentence of What it does"


def test_builtin_rules_live_in_the_cudalint_namespace():
    for rule in all_rules().values():
        assert rule.__module__.startswith("cudalint.rules."), rule.__module__
    import tomllib
    from pathlib import Path
    meta = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())
    packages = meta["tool"]["setuptools"]["packages"]
    assert "rules" not in packages and "cudalint.rules" in packages
    assert not any(p.split(".")[0] != "cudalint" for p in packages)


PLUGIN = textwrap.dedent('''
    from cudalint.rule import Rule
    from cudalint.diagnostics import Finding

    class NoPrintf(Rule):
        """## What it does
        Flags printf in kernels.
        ## Why is this bad?
        Slow.
        ## Example
        printf("x");
        ## Use instead
        Nothing.
        ## References
        None.
        """
        code = "CL901"
        name = "no-printf"

        def check(self, ctx):
            for call in ctx.calls_named("printf"):
                yield Finding.at(call, "printf in device code")
''')


@pytest.fixture
def plugin_env(tmp_path, monkeypatch):
    (tmp_path / "my_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    real = rule_mod.entry_points

    def fake(group):
        eps = list(real(group=group))
        eps.append(SimpleNamespace(name="mine", value="my_plugin",
                                   load=lambda: __import__("my_plugin")))
        return eps

    monkeypatch.setattr(rule_mod, "entry_points", fake)
    all_rules.cache_clear()
    yield tmp_path
    all_rules.cache_clear()
    sys.modules.pop("my_plugin", None)


def test_third_party_rule_found_through_entry_point(plugin_env, monkeypatch, capsys):
    from cudalint.cli import main
    assert "CL901" in all_rules()
    (plugin_env / "a.cu").write_text('__global__ void k() { printf("hi"); }\n')
    monkeypatch.chdir(plugin_env)
    assert main(["a.cu", "--no-cache", "--select", "CL901", "--output-format",
                 "concise"]) == 1
    assert "a.cu:1:23: CL901 printf in device code" in capsys.readouterr().out


def test_two_rules_claiming_a_code_is_an_error(monkeypatch):
    class Dup(Rule):
        code = "CL104"
        name = "dup"

    real = rule_mod.entry_points
    monkeypatch.setattr(rule_mod, "entry_points", lambda group: list(real(group=group)) + [
        SimpleNamespace(name="dup", value="x", load=lambda: Dup)])
    all_rules.cache_clear()
    try:
        with pytest.raises(RegistryError, match="two rules claim CL104"):
            all_rules()
    finally:
        all_rules.cache_clear()

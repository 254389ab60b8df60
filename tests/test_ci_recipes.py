"""The CI recipes of docs/ci.md (issue 16, item 5): each file under docs/ci/ parses as YAML
and has the keys its CI reads, and every cudalint command in it runs against a copy of
examples/ and writes what the next step reads (SARIF for upload-sarif, a Code Quality
report for GitLab's artifact)."""
from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest
import yaml

from cudalint.cli import main

ROOT = Path(__file__).resolve().parent.parent
CI = ROOT / "docs" / "ci"


def _load(name: str) -> dict:
    data = yaml.safe_load((CI / name).read_text())
    assert isinstance(data, dict)
    return data


def _commands(lines) -> list[list[str]]:
    out = []
    for line in lines:
        for part in str(line).split("\n"):
            part = part.strip()
            if part.startswith("cudalint "):
                out.append(shlex.split(part)[1:])
    return out


@pytest.fixture
def examples(tmp_path, monkeypatch):
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path / "examples")
    return tmp_path / "examples"


def test_recipes_are_documented():
    text = (ROOT / "docs" / "ci.md").read_text()
    for f in CI.iterdir():
        assert f"(ci/{f.name})" in text, f"docs/ci.md does not link docs/ci/{f.name}"


def test_github_actions(examples, capsys):
    wf = _load("github-actions.yml")
    assert True in wf or "on" in wf                      # YAML 1.1 reads `on` as true
    [job] = wf["jobs"].values()
    assert job["runs-on"] and job["permissions"]["security-events"] == "write"
    steps = job["steps"]
    uses = [s.get("uses", "") for s in steps]
    assert any(u.startswith("actions/checkout@") for u in uses)
    upload = next(s for s in steps if s.get("uses", "").startswith(
        "github/codeql-action/upload-sarif@"))
    assert upload["if"] == "always()"
    commands = _commands(s["run"] for s in steps if "run" in s)
    assert [c[c.index("--output-format") + 1] for c in commands] == ["github", "sarif"]
    main(commands[0])
    annotations = capsys.readouterr().out.splitlines()
    assert annotations and all(a.startswith(("::error ", "::warning ", "::notice "))
                               for a in annotations)
    assert main(commands[1]) == 0                        # --exit-zero: upload runs
    sarif = json.loads((examples / upload["with"]["sarif_file"]).read_text())
    assert sarif["version"] == "2.1.0" and sarif["runs"][0]["results"]


def test_gitlab_ci(examples, capsys):
    pipeline = _load("gitlab-ci.yml")
    job = pipeline["cudalint"]
    assert job["stage"] in pipeline["stages"] and job["image"]
    report = job["artifacts"]["reports"]["codequality"]
    assert job["artifacts"]["when"] == "always"
    commands = _commands(job["script"])
    assert main(commands[0]) == 0
    issues = json.loads((examples / report).read_text())
    assert issues and {"description", "check_name", "fingerprint", "severity",
                       "location"} <= set(issues[0])
    assert main(commands[1]) == 1                        # the blocking, readable one
    assert "Found " in capsys.readouterr().out


def test_pre_commit(examples, capsys):
    config = _load("pre-commit-config.yaml")
    [repo] = config["repos"]
    assert repo["repo"].startswith("https://") and repo["rev"]
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    known = {h["id"]: h for h in hooks}
    assert all(h["id"] in known for h in repo["hooks"])
    entry = shlex.split(known["cudalint"]["entry"])
    assert entry[0] == "cudalint"
    files = sorted(str(p.relative_to(examples)) for p in examples.rglob("*")
                   if p.suffix in (".cu", ".py"))
    assert main(entry[1:] + files) == 1                   # findings: the commit is stopped
    assert "Found " in capsys.readouterr().out

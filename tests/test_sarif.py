"""SARIF for GitHub code scanning, validated against the official SARIF 2.1.0 schema
(tests/data/sarif-schema-2.1.0.json, from github.com/oasis-tcs/sarif-spec,
sarif-2.1/schema/): repo-relative URIs under %SRCROOT%, rule metadata, fingerprints,
noqa-suppressed findings as in-source suppressions."""
from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import unquote, urlsplit

import jsonschema
import pytest

from cudalint import rule_url
from cudalint.cli import main

SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json")
                    .read_text(encoding="utf-8"))

LEGACY = ("__global__ void k(float* a) {\n"
          "    a[0] = __shfl(a[1], 0);\n"
          "    a[1] = __shfl(a[2], 0);  // noqa: CL104\n"
          "    a[2] = __shfl(a[3], 0);\n"
          "}\n")
PY = ('import cupy as cp\n'
      'k = cp.RawKernel(r"""\n'
      '__global__ void k(float* a) { a[0] = __shfl_xor(a[1], 1); }\n'
      '""", "k")\n')


@pytest.fixture
def sarif(tmp_path, monkeypatch, capsys):
    """Lint a small git repository from a subfolder; the SARIF document."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    src = repo / "src" / "cuda kernels"
    src.mkdir(parents=True)
    (src / "reduce ü.cu").write_text(LEGACY, encoding="utf-8")
    (repo / "src" / "k.py").write_text(PY)
    monkeypatch.chdir(repo / "src")
    code = main(["check", ".", "--output-format", "sarif", "--no-cache"])
    out = capsys.readouterr().out
    assert code == 1
    return json.loads(out), repo


def test_valid_against_the_sarif_schema(sarif):
    doc, _ = sarif
    jsonschema.Draft4Validator.check_schema(SCHEMA)
    jsonschema.Draft4Validator(SCHEMA).validate(doc)
    assert doc["version"] == "2.1.0"
    # the schema does not check URI syntax: every URI must be a valid reference
    run = doc["runs"][0]
    uris = [loc["physicalLocation"]["artifactLocation"]["uri"]
            for r in run["results"] for loc in r["locations"]]
    uris += [run["originalUriBaseIds"]["%SRCROOT%"]["uri"]]
    uris += [r["helpUri"] for r in run["tool"]["driver"]["rules"]]
    for uri in uris:
        assert " " not in uri and all(ord(c) < 128 for c in uri), uri


def test_repo_relative_uris_and_srcroot(sarif):
    doc, repo = sarif
    run = doc["runs"][0]
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == repo.resolve().as_uri() + "/"
    locations = {(unquote(loc["artifactLocation"]["uri"]), loc["artifactLocation"]["uriBaseId"],
                  loc["region"]["startLine"], loc["region"]["startColumn"])
                 for r in run["results"] for loc in
                 (x["physicalLocation"] for x in r["locations"])}
    assert locations == {("src/cuda kernels/reduce ü.cu", "%SRCROOT%", 2, 12),
                         ("src/cuda kernels/reduce ü.cu", "%SRCROOT%", 3, 12),
                         ("src/cuda kernels/reduce ü.cu", "%SRCROOT%", 4, 12),
                         ("src/k.py", "%SRCROOT%", 3, 38)}
    for r in run["results"]:
        uri = r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert not urlsplit(uri).scheme and not uri.startswith("/")
        region = r["locations"][0]["physicalLocation"]["region"]
        assert region["endColumn"] - region["startColumn"] == len("__shfl") + (
            4 if "py" in uri else 0)
    assert run["columnKind"] == "unicodeCodePoints"


def test_rule_metadata(sarif):
    doc, _ = sarif
    run = doc["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == ["CL104"]
    [rule] = rules
    assert rule["name"] == "legacy-warp-intrinsic"
    assert rule["helpUri"] == rule_url("CL104")
    assert rule["shortDescription"]["text"].startswith("Finds the warp intrinsics")
    assert "independently" in rule["fullDescription"]["text"]
    assert "## Use instead" in rule["help"]["markdown"] and rule["help"]["text"]
    assert rule["defaultConfiguration"]["level"] == "error"
    for r in run["results"]:
        assert rules[r["ruleIndex"]]["id"] == r["ruleId"]


def test_suppressed_in_source_and_fingerprints(sarif):
    doc, _ = sarif
    results = doc["runs"][0]["results"]
    suppressed = [r for r in results if "suppressions" in r]
    assert [r["locations"][0]["physicalLocation"]["region"]["startLine"]
            for r in suppressed] == [3]
    assert suppressed[0]["suppressions"][0]["kind"] == "inSource"
    prints = [r["partialFingerprints"]["cudalintFingerprint/v1"] for r in results]
    assert len(set(prints)) == len(prints) == 4


def test_fingerprints_survive_moved_lines_and_separate_twins(tmp_path, monkeypatch, capsys):
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    twin = "__global__ void k(float* a) {\n    a[0] = __shfl(a[1], 0);\n}\n"
    (tmp_path / "a.cu").write_text(twin + twin.replace("void k", "void k2"))
    main(["check", "a.cu", "--output-format", "sarif", "--no-cache"])
    first = [r["partialFingerprints"]["cudalintFingerprint/v1"]
             for r in json.loads(capsys.readouterr().out)["runs"][0]["results"]]
    (tmp_path / "a.cu").write_text("// a new first line\n\n" + twin +
                                   twin.replace("void k", "void k2"))
    main(["check", "a.cu", "--output-format", "sarif", "--no-cache"])
    moved = [r["partialFingerprints"]["cudalintFingerprint/v1"]
             for r in json.loads(capsys.readouterr().out)["runs"][0]["results"]]
    assert len(set(first)) == 2 and moved == first

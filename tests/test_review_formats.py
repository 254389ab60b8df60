"""Output formats for review tools (issue 16, item 4): ``gitlab`` (GitLab Code Quality) and
``rdjson`` (reviewdog), checked against their documented shapes with jsonschema: the
fields GitLab's Code Quality report documents (description, check_name, fingerprint,
severity from its five levels, location.path, location.lines.begin) and reviewdog's
DiagnosticResult (proto/rdf/jsonschema in reviewdog's repository: message, location with
path and a range of 1-based line/column positions, severity ERROR/WARNING/INFO, code with
value/url, suggestions of range and text)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema

from cudalint.cli import main

ROOT = Path(__file__).resolve().parent.parent
_POSITION = {"type": "object", "required": ["line", "column"],
             "properties": {"line": {"type": "integer", "minimum": 1},
                            "column": {"type": "integer", "minimum": 1}}}
_RANGE = {"type": "object", "required": ["start"],
          "properties": {"start": _POSITION, "end": _POSITION}}
RDJSON = {
    "type": "object", "required": ["diagnostics"],
    "properties": {
        "source": {"type": "object", "required": ["name"],
                   "properties": {"name": {"type": "string"}, "url": {"type": "string"}}},
        "diagnostics": {"type": "array", "items": {
            "type": "object", "required": ["message", "location"],
            "properties": {
                "message": {"type": "string"},
                "location": {"type": "object", "required": ["path"],
                             "properties": {"path": {"type": "string"}, "range": _RANGE}},
                "severity": {"enum": ["UNKNOWN_SEVERITY", "ERROR", "WARNING", "INFO"]},
                "code": {"type": "object", "required": ["value"],
                         "properties": {"value": {"type": "string"},
                                        "url": {"type": "string"}}},
                "suggestions": {"type": "array", "items": {
                    "type": "object", "required": ["range", "text"],
                    "properties": {"range": _RANGE, "text": {"type": "string"}}}},
            }}},
    },
}
GITLAB = {
    "type": "array", "items": {
        "type": "object",
        "required": ["description", "check_name", "fingerprint", "severity", "location"],
        "properties": {
            "description": {"type": "string", "minLength": 1},
            "check_name": {"type": "string", "pattern": "^CL[0-9]{3}$"},
            "fingerprint": {"type": "string", "minLength": 1},
            "severity": {"enum": ["info", "minor", "major", "critical", "blocker"]},
            "location": {"type": "object", "required": ["path", "lines"], "properties": {
                "path": {"type": "string", "minLength": 1},
                "lines": {"type": "object", "required": ["begin"],
                          "properties": {"begin": {"type": "integer", "minimum": 1}}}}},
        }},
}


def _out(capsys, *args) -> object:
    main(["check", "--no-cache", *args])
    return json.loads(capsys.readouterr().out)


def test_gitlab_matches_code_quality_and_json(tmp_path, monkeypatch, capsys):
    shutil.copytree(ROOT / "fixtures", tmp_path / "fixtures")
    monkeypatch.chdir(tmp_path)
    report = _out(capsys, "--output-format", "gitlab", "fixtures")
    jsonschema.validate(report, GITLAB)
    plain = _out(capsys, "--output-format", "json", "fixtures")
    assert [(i["check_name"], i["location"]["path"], i["location"]["lines"]["begin"])
            for i in report] == [(d["code"], d["filename"], d["location"]["row"])
                                 for d in plain]
    assert len({i["fingerprint"] for i in report}) == len(report)    # unique
    sev = {"error": "major", "warning": "minor", "info": "info"}
    assert [i["severity"] for i in report] == [sev[d["severity"]] for d in plain]
    assert all(not i["location"]["path"].startswith("/") for i in report)


def test_gitlab_fingerprints_survive_moved_lines(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    src = "__global__ void k(float* a) { a[0] = __shfl(a[1], 0); }\n"
    (tmp_path / "k.cu").write_text(src)
    before = _out(capsys, "--output-format", "gitlab", "k.cu")
    (tmp_path / "k.cu").write_text("// a comment\n\n" + src)
    after = _out(capsys, "--output-format", "gitlab", "k.cu")
    assert [i["fingerprint"] for i in before] == [i["fingerprint"] for i in after]
    assert [i["location"]["lines"]["begin"] for i in after] == [3]


def test_rdjson_matches_reviewdog_and_json(tmp_path, monkeypatch, capsys):
    shutil.copytree(ROOT / "fixtures", tmp_path / "fixtures")
    monkeypatch.chdir(tmp_path)
    report = _out(capsys, "--output-format", "rdjson", "--unsafe-fixes", "fixtures")
    jsonschema.validate(report, RDJSON)
    plain = _out(capsys, "--output-format", "json", "fixtures")
    got = [(d["code"]["value"], d["location"]["path"], d["location"]["range"]["start"]["line"])
           for d in report["diagnostics"]]
    assert got == [(d["code"], d["filename"], d["location"]["row"]) for d in plain]
    assert any("suggestions" in d for d in report["diagnostics"])
    assert report["source"]["name"] == "cudalint"


def test_rdjson_columns_are_utf8_bytes(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k.cu").write_text("__global__ void k(float* a) { /* é */ a[0] = "
                                   "__shfl(a[1], 0); }\n")
    plain = _out(capsys, "--output-format", "json", "k.cu")[0]
    rd = _out(capsys, "--output-format", "rdjson", "k.cu")["diagnostics"][0]
    assert rd["location"]["range"]["start"]["column"] == plain["location"]["column"] + 1


def test_notebook_findings_say_their_cell(tmp_path, monkeypatch, capsys):
    shutil.copy(ROOT / "tests" / "data" / "notebooks" / "kernels.ipynb", tmp_path)
    monkeypatch.chdir(tmp_path)
    gl = _out(capsys, "--output-format", "gitlab", "kernels.ipynb")
    jsonschema.validate(gl, GITLAB)
    assert gl[0]["description"].startswith("CL104 cell 3: ")
    assert gl[0]["location"]["lines"]["begin"] == 4
    rd = _out(capsys, "--output-format", "rdjson", "--unsafe-fixes", "kernels.ipynb")
    jsonschema.validate(rd, RDJSON)
    assert rd["diagnostics"][0]["message"].startswith("cell 3: ")
    assert all("suggestions" not in d for d in rd["diagnostics"])   # no JSON rows to edit

"""Issue 22, "manners of a tool people trust": config typos are errors (not a silent
"All checks passed!"), pipes and interrupts end quietly, the summary reads as ruff's."""
from __future__ import annotations

import json
import re
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cudalint.cli import main

LEGACY = "__global__ void k(float* a) {\n    a[0] = __shfl(a[1], 0);\n}\n"


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def proj(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.cu").write_text(LEGACY)
    return tmp_path


# ---------------------------------------------------------------------------------------
# config validation


@pytest.mark.parametrize("line, key, bad, near", [
    ('select = ["FOO"]', "select", "FOO", None),
    ('select = ["CL9"]', "select", "CL9", "CL6"),
    ('ignore = ["CL1O4"]', "ignore", "CL1O4", "CL104"),
    ('extend-select = ["legacy-warp-intrinsic"]', "extend-select", "LEGACY-WARP-INTRINSIC",
     "CL104"),
    ('per-file-ignores = { "a/*.cu" = ["CL1041"] }', 'per-file-ignores."a/*.cu"', "CL1041",
     "CL104"),
    ('severity = { CL10 = "info" }', "severity.CL10", "CL10", "CL10"),
])
def test_unknown_selector_in_config_is_an_error(proj, capsys, line, key, bad, near):
    (proj / "pyproject.toml").write_text(f"[tool.cudalint]\n{line}\n")
    code, out, err = cli(capsys, ".", "--no-cache")
    assert code == 2 and out == ""
    assert str(proj / "pyproject.toml") in err and f"`{key}`" in err and f"`{bad}`" in err
    if near:
        assert f"closest valid: `{near}`" in err


def test_unknown_selector_in_a_nested_config_is_an_error(proj, capsys):
    (proj / "pyproject.toml").write_text("[tool.cudalint]\nselect = [\"CL1\"]\n")
    sub = proj / "sub"
    sub.mkdir()
    (sub / "k.cu").write_text(LEGACY)
    (sub / "cudalint.toml").write_text("ignore = [\"CL1O4\"]\n")
    code, _, err = cli(capsys, ".", "--no-cache")
    assert code == 2 and str(sub / "cudalint.toml") in err and "`ignore`" in err


def test_config_given_with_config_flag_is_checked(proj, capsys):
    (proj / "other.toml").write_text("select = [\"CLX\"]\n")
    code, _, err = cli(capsys, ".", "--config", "other.toml", "--no-cache")
    assert code == 2 and "other.toml" in err and "`CLX`" in err


def test_valid_selectors_still_run(proj, capsys):
    (proj / "pyproject.toml").write_text(
        "[tool.cudalint]\nselect = [\"CL1\", \"ALL\"]\nignore = [\"CL2\"]\n"
        "per-file-ignores = { \"x/*\" = [\"ALL\", \"CL104\"] }\nseverity = { CL104 = \"info\" }\n")
    code, out, _ = cli(capsys, ".", "--no-cache")
    assert code == 1 and "CL104" in out


def test_unknown_selector_on_command_line_names_the_closest(proj, capsys):
    code, _, err = cli(capsys, ".", "--ignore", "CL1041")
    assert code == 2 and "`--ignore`" in err and "closest valid: `CL104`" in err


@pytest.mark.parametrize("arch, ok", [
    ("sm_999", False), ("sm_80a", False), ("sm_91", False), ("sm_90af", False),
    ("sm_90", True), ("sm_90a", True), ("sm_100f", True), ("compute_86", True),
    ("sm_35", True), ("75", True),
])
def test_arch_is_one_nvcc_knows(proj, capsys, arch, ok):
    (proj / "pyproject.toml").write_text(f"[tool.cudalint]\narch = \"{arch}\"\n")
    code, _, err = cli(capsys, ".", "--no-cache")
    if ok:
        assert code == 1, err
    else:
        assert code == 2 and "`arch`" in err and "nvcc does not know" in err
    code, _, err = cli(capsys, ".", "--no-cache", "--arch", arch)
    assert (code == 1) if ok else (code == 2 and "--arch" in err)


def test_occupancy_table_is_inside_the_nvcc_list():
    from cudalint.analysis.ptxas.occupancy import ARCHS
    from cudalint.config import NVCC_ARCHS
    assert set(ARCHS) <= set(NVCC_ARCHS)


# ---------------------------------------------------------------------------------------
# CLI manners (ruff as the reference)

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def examples(tmp_path, monkeypatch):
    shutil.copytree(ROOT / "examples", tmp_path / "ex")
    (tmp_path / "bad.cu").write_text(LEGACY)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "ex"


def _run(*argv: str, cwd=None, env=None, stdin: bytes | None = None):
    return subprocess.run([sys.executable, "-m", "cudalint", *argv], cwd=cwd, env=env,
                          input=stdin, capture_output=True, timeout=120)


def test_broken_pipe_ends_quietly(proj):
    (proj / "many.cu").write_text("__global__ void k(float* a) {\n" + "".join(
        f"    a[{i}] = __shfl(a[1], 0);\n" for i in range(3000)) + "}\n")
    p = subprocess.Popen([sys.executable, "-m", "cudalint", "many.cu", "--no-cache"],
                         cwd=proj, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout.readline()
    p.stdout.close()                      # `| head -1`
    err = p.stderr.read().decode()
    assert p.wait(60) == 0 and err == "", err


def _findings(capsys, *argv: str) -> list[dict]:
    return json.loads(cli(capsys, *argv, "--output-format", "json")[1])


def test_statistics_honours_json(examples, capsys):
    from collections import Counter
    found = _findings(capsys, "ex", "--no-cache")
    code, out, _ = cli(capsys, "ex", "--statistics", "--output-format", "json")
    stats = json.loads(out)
    assert code == 1 and {s["code"]: s["count"] for s in stats} == \
        dict(Counter(d["code"] for d in found))
    assert {"code": "CL104", "name": "legacy-warp-intrinsic"}.items() <= stats[0].items()
    assert {s["code"] for s in stats if s["fixable"]} == \
        {d["code"] for d in found if (d.get("fix") or {}).get("applicability") == "safe"}
    code, out, _ = cli(capsys, "ex", "--statistics", "--output-format", "json-lines")
    assert [json.loads(x) for x in out.splitlines()] == stats
    assert cli(capsys, "ex", "--statistics", "--output-format", "sarif")[0] == 2


def test_summary_counts_errors_and_warnings_apart(examples, capsys):
    from collections import Counter
    found = Counter(d["severity"] for d in _findings(capsys, "ex", "--no-cache"))
    assert found["error"] and found["warning"]
    code, out, _ = cli(capsys, "ex")
    assert f"Found {found['error']} errors and {found['warning']} warnings." in out
    code, out, _ = cli(capsys, "bad.cu", "--no-cache")
    assert "Found 1 error.\nNo fixes available (1 hidden fix can be enabled with the " \
           "`--unsafe-fixes` option).\n" in out


def test_fix_summary_reads_as_ruffs(examples, capsys):
    import re
    code, out, _ = cli(capsys, "ex", "--fix", "--unsafe-fixes", "--no-cache")
    left = _findings(capsys, "ex", "--no-cache")
    m = re.search(r"^Found (\d+) findings \((\d+) fixed, (\d+) remaining: [^)]*\)\.$", out,
                  re.M)
    assert m and int(m[2]) > 0 and int(m[3]) == len(left) and \
        int(m[1]) == int(m[2]) + int(m[3]), out[-400:]
    assert "Fixed" not in out and "No fixes available" not in out[:m.start()]
    code, out, _ = cli(capsys, "bad.cu", "--fix", "--unsafe-fixes", "--no-cache")
    assert code == 0 and out.endswith("Found 1 finding (1 fixed, 0 remaining).\n")


def test_diff_says_when_fixes_are_hidden(proj, capsys):
    code, out, err = cli(capsys, "bad.cu", "--diff", "--no-cache")
    assert code == 0 and out == ""
    assert "No findings would be fixed (1 fix available with `--unsafe-fixes`)." in err
    code, out, err = cli(capsys, "bad.cu", "--diff", "--unsafe-fixes", "--no-cache")
    assert code == 1 and "__shfl_sync" in out and "Would fix 1 finding." in err


def test_every_flag_has_help_text():
    import argparse
    from cudalint.cli import _parser
    parsers = [_parser()]
    missing = []
    while parsers:
        p = parsers.pop()
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers.extend(action.choices.values())
            elif not action.help and not isinstance(action, argparse._HelpAction):
                missing.append(f"{p.prog} {'/'.join(action.option_strings) or action.dest}")
    assert missing == []


def test_unknown_subcommand_is_an_error_and_clean_clears_the_cache(proj, capsys):
    for word in ("hlep", "clena", "lint"):
        code, out, err = cli(capsys, word)
        assert code == 2 and f"unrecognized subcommand `{word}`" in err
    assert cli(capsys, "help")[0] == 0
    assert cli(capsys, "bad.cu")[0] == 1 and (proj / ".cudalint_cache").is_dir()
    (proj / "sub").mkdir()
    (proj / "sub" / ".cudalint_cache").mkdir()
    code, _, err = cli(capsys, "clean")
    assert code == 0 and "Removing cache at: .cudalint_cache" in err
    assert not (proj / ".cudalint_cache").exists()
    assert not (proj / "sub" / ".cudalint_cache").exists()
    (proj / "clean").mkdir()                     # a folder of that name is still a path
    assert cli(capsys, "check", "clean")[0] == 0


def test_rule_accepts_names(capsys):
    code, out, _ = cli(capsys, "rule", "legacy-warp-intrinsic")
    assert code == 0 and out.startswith("# legacy-warp-intrinsic (CL104)")
    code, _, err = cli(capsys, "rule", "legacy-warp")
    assert code == 2 and "closest: `CL104`" in err


PY_KERNEL = (b'import cupy\nk = cupy.RawKernel(r"""__global__ void k(float* a) '
             b'{ a[0] = __shfl(a[1], 0); }""", "k")\n')


def test_stdin_language_from_the_name_or_detected(proj):
    for argv in (["-"], ["--stdin-filename", "k.py"], ["-", "--stdin-filename", "k.py"]):
        r = _run(*argv, "--output-format", "json", cwd=proj, stdin=PY_KERNEL)
        found = json.loads(r.stdout)
        assert r.returncode == 1 and [(d["code"], d["location"]["row"]) for d in found] \
            == [("CL104", 2)], (argv, r.stderr)
    r = _run("-", "--output-format", "json", cwd=proj, stdin=LEGACY.encode())
    assert [d["code"] for d in json.loads(r.stdout)] == ["CL104"]


def _tty_output(argv: list[str], cwd, env: dict) -> bytes:
    import pty
    master, slave = pty.openpty()
    p = subprocess.Popen([sys.executable, "-m", "cudalint", *argv], cwd=cwd, env=env,
                         stdout=slave, stderr=slave)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    p.wait(60)
    os.close(master)
    return out


def test_no_color_and_color_flag(proj):
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    assert b"\x1b[" in _tty_output(["bad.cu", "--no-cache"], proj, env)
    assert b"\x1b[" not in _tty_output(["bad.cu", "--no-cache"], proj, dict(env, NO_COLOR="1"))
    assert b"\x1b[" not in _tty_output(["bad.cu", "--color", "never"], proj, env)
    piped = _run("bad.cu", "--color", "always", cwd=proj, env=dict(env, NO_COLOR="1"))
    assert b"\x1b[1m" in piped.stdout


def test_rule_code_is_a_hyperlink_to_its_docs_on_a_terminal(proj):
    """OSC 8 (as ruff prints codes): the link opens the rule's docs; plain output has none."""
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    styled = _run("bad.cu", "--no-cache", "--color", "always", cwd=proj, env=env).stdout
    links = re.findall(rb"\x1b\]8;[^;]*;(https?://[^\x1b]+)\x1b\\(?:\x1b\[[0-9;]*m)*(CL\d+)\x1b", styled)
    assert links, styled[:300]
    for url, code in links:
        assert url.lower().endswith(b"#" + code.lower()), (url, code)
    for plain in (_run("bad.cu", "--no-cache", cwd=proj, env=env).stdout,
                  _tty_output(["bad.cu", "--no-cache"], proj, dict(env, NO_COLOR="1"))):
        assert b"\x1b]8" not in plain


def test_metrics_only_on_request_in_text(examples, capsys):
    _, out, _ = cli(capsys, "ex", "--no-cache")
    assert "metrics:" not in out
    _, out, _ = cli(capsys, "ex", "--show-metrics")
    assert "= metrics: " in out
    _, out, _ = cli(capsys, "ex", "--output-format", "json")
    assert any(d.get("metrics") for d in json.loads(out))


# ---------------------------------------------------------------------------------------
# the language server answers a malformed request


def _frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_malformed_lsp_requests_get_error_responses(tmp_path):
    import select
    p = subprocess.Popen([sys.executable, "-m", "cudalint", "server"], cwd=tmp_path,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    buf = b""

    def answer(pred, timeout=5.0):
        nonlocal buf
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            while b"\r\n\r\n" in buf:
                head, rest = buf.split(b"\r\n\r\n", 1)
                n = int(head.split(b"Content-Length:")[1].split(b"\r\n")[0])
                if len(rest) < n:
                    break
                msg, buf = json.loads(rest[:n]), rest[n:]
                if pred(msg):
                    return msg
            if select.select([p.stdout], [], [], 0.1)[0]:
                buf += os.read(p.stdout.fileno(), 65536)
        return None

    def send(obj) -> None:
        p.stdin.write(_frame(obj if isinstance(obj, bytes) else json.dumps(obj).encode()))
        p.stdin.flush()

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"capabilities": {}, "processId": None, "rootUri": None}})
        assert answer(lambda m: m.get("id") == 1) is not None
        send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        for i, params in enumerate([{"foo": 1}, None, {"textDocument": {"uri": 5},
                                                       "position": {"line": "x"}}], 10):
            send({"jsonrpc": "2.0", "id": i, "method": "textDocument/hover", "params": params})
            got = answer(lambda m, i=i: m.get("id") == i)
            assert got is not None and got["error"]["code"] == -32602, (i, got)
        send({"id": 20, "method": "textDocument/hover", "params": {}})
        assert answer(lambda m: m.get("id") == 20)["error"]["code"] == -32600
        send(b'{"jsonrpc": "2.0", "id": 21, "method": ')
        got = answer(lambda m: "error" in m and m.get("id") is None)
        assert got is not None and got["error"]["code"] == -32700
        send({"jsonrpc": "2.0", "id": 22, "method": "shutdown"})
        assert answer(lambda m: m.get("id") == 22) is not None
    finally:
        p.kill()
        p.wait()


# ---------------------------------------------------------------------------------------
# honest docs


def test_rule_docs_cite_what_a_user_can_open():
    """A path in a rule's documentation is a file of this repository (git tracks it); no
    folder of someone's machine (`shared/seeds/` was one)."""
    import re
    from cudalint.rule import all_rules
    tracked = set(subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True,
                                 text=True).stdout.split())
    folders = {str(Path(p).parents[i]) for p in tracked
               for i in range(len(Path(p).parents) - 1)}
    bad = []
    for code, rule in all_rules().items():
        doc = re.sub(r"https?://\S+", "", rule.doc())
        for m in re.findall(r"\b((?:fixtures|tools|docs|bench|shared|tests)/[\w./*-]*)",
                            doc):
            path = m.rstrip(".,)/*")
            if path not in tracked and path not in folders:
                bad.append((code, path))
    assert bad == []


def test_declared_fix_safety_matches_the_fixes():
    """``fix_safety = "safe"`` only where every fix on the fixtures and examples is safe;
    "unsafe" where some are; None where the rule offers none."""
    from cudalint.rule import all_rules
    rules = all_rules()
    r = _run("check", "fixtures", "examples", "--select", "ALL", "--no-cache",
             "--output-format", "json", cwd=ROOT)
    seen: dict[str, set] = {}
    for d in json.loads(r.stdout):
        seen.setdefault(d["code"], set()).add((d.get("fix") or {}).get("applicability"))
    for code, kinds in seen.items():
        declared = rules[code].fix_safety
        if declared is None:
            assert kinds == {None}, code
        elif declared == "safe":
            assert "unsafe" not in kinds, code
        else:
            assert "unsafe" in kinds, code


def test_documented_pre_commit_rev_exists():
    import re
    for doc in ("README.md", "docs/editors.md"):
        revs = re.findall(r"^\s+rev: (\S+)", (ROOT / doc).read_text(), re.M)
        assert revs, doc
        for rev in revs:
            r = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
                               cwd=ROOT, capture_output=True)
            assert r.returncode == 0, f"{doc}: rev {rev} is no tag, branch or commit here"

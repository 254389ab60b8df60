"""Issue 22, "manners of a tool people trust": config typos are errors (not a silent
"All checks passed!"), pipes and interrupts end quietly, the summary reads as ruff's."""
from __future__ import annotations

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

"""The layers of docs/architecture.md, kept by import-linter (contracts in pyproject.toml),
and no import cycles among cudalint's and the rules' modules."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 800


def _lint_imports(root: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(root), COLUMNS="1000")
    code = "import sys; from importlinter.cli import lint_imports_command; " \
           "sys.exit(lint_imports_command())"
    return subprocess.run([sys.executable, "-c", code], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)


def test_layer_contracts_are_kept():
    proc = _lint_imports(ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


@pytest.mark.parametrize("module, line, contract", [
    # the model reaching up into the engine: the layers contract breaks
    ("cudalint/model/types.py", "import cudalint.engine\n", "cudalint layers"),
    # one analysis family reaching into another: the independence contract breaks
    ("cudalint/analysis/sync/cfg.py", "import cudalint.analysis.memory.lanes\n",
     "analysis families"),
    # a rule driving a run
    ("rules/sync/cl104_legacy_warp_intrinsic.py", "import cudalint.runner\n",
     "rules read facts"),
])
def test_a_deliberate_violation_breaks_a_contract(tmp_path, module, line, contract):
    for name in ("cudalint", "rules"):
        shutil.copytree(ROOT / name, tmp_path / name,
                        ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / module
    target.write_text(line + target.read_text())
    proc = _lint_imports(tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    broken = [l for l in proc.stdout.splitlines() if l.rstrip().endswith("BROKEN")]
    assert any(contract in l for l in broken), proc.stdout


def _cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module (iterative Tarjan)."""
    adj = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(adj):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = len(index)
                stack.append(v)
                on_stack.add(v)
            if i < len(adj[v]):
                work.append((v, i + 1))
                w = adj[v][i]
                if w not in index:
                    work.append((w, 0))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return out


def test_no_import_cycles():
    sys.path.insert(0, str(ROOT))
    try:
        graph = grimp.build_graph("cudalint", "rules", exclude_type_checking_imports=True,
                                  cache_dir=None)
    finally:
        sys.path.remove(str(ROOT))
    assert _cycles(graph) == []


def test_cycle_finder_finds_a_cycle():
    """The check above can fail: two modules importing each other are one component."""
    class G:
        modules = {"a", "b", "c"}
        edges = {"a": {"b"}, "b": {"a"}, "c": {"a"}}

        def find_modules_directly_imported_by(self, m):
            return self.edges[m]
    assert _cycles(G()) == [["a", "b"]]


def test_no_module_is_too_long_to_read_in_one_sitting():
    long = {str(p.relative_to(ROOT)): n for folder in ("cudalint", "rules")
            for p in (ROOT / folder).rglob("*.py")
            if (n := p.read_text(encoding="utf-8").count("\n")) > MAX_LINES}
    assert long == {}

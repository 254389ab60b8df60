"""The language server on LSP 3.17 notebook documents (issue 16): a real client opens
tests/data/notebooks/kernels.ipynb as a notebook document; each finding is published under
its cell's URI at positions of the cell's own text (the places ``cudalint kernels.ipynb``
reports as ``cell N:row:column``), a change to a cell moves or clears its findings, and the
quick fix, "Disable for this line" and "fix all" edit the cells."""
from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

SERVER = [sys.executable, "-m", "cudalint", "server"]
NB = Path(__file__).parent / "data" / "notebooks" / "kernels.ipynb"
_VERSIONS: dict[str, int | None] = {}


def _make_client() -> LanguageClient:
    """pytest-lsp's client, recording the version of each publishDiagnostics."""
    from pygls.protocol import default_converter
    from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

    def publish(client: LanguageClient, params: types.PublishDiagnosticsParams):
        client.diagnostics[params.uri] = params.diagnostics
        _VERSIONS[params.uri] = params.version

    client = LanguageClient(converter_factory=default_converter)
    register_lsp_features(client, {**DEFAULT_CLIENT_FEATURES,
                                   types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: publish})
    return client


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, client_factory=_make_client))
async def client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("ws")
    (root / "pyproject.toml").write_text('[tool.cudalint]\nextend-select = ["CL001"]\n')
    caps = client_capabilities("neovim@v0.11.0")
    caps.text_document.diagnostic = None          # no pull support: the server pushes
    caps.general.position_encodings = None        # UTF-16 code units
    caps.notebook_document = types.NotebookDocumentClientCapabilities(
        synchronization=types.NotebookDocumentSyncClientCapabilities())
    result = await lsp_client.initialize_session(types.InitializeParams(
        capabilities=caps, root_uri=root.as_uri(), initialization_options={"debounce": 10}))
    lsp_client.root = root
    lsp_client.server_caps = result.capabilities
    yield
    await lsp_client.shutdown_session()


class Notebook:
    """An editor's side of a notebook document: cells, their URIs and versions."""

    def __init__(self, client: LanguageClient, path: Path):
        raw = json.loads(path.read_text())
        self.client, self.uri, self.version = client, path.as_uri(), 1
        self.kinds, self.uris, self.texts, self.versions = [], [], [], []
        for i, cell in enumerate(raw["cells"]):
            code = cell["cell_type"] == "code"
            self.kinds.append(types.NotebookCellKind.Code if code
                              else types.NotebookCellKind.Markup)
            self.uris.append(f"vscode-notebook-cell:{path}#W{i}sZmlsZQ%3D%3D")
            self.texts.append("".join(cell["source"]))
            self.versions.append(1)
        client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(
                uri=self.uri, notebook_type="jupyter-notebook", version=1,
                cells=[types.NotebookCell(kind=k, document=u)
                       for k, u in zip(self.kinds, self.uris)]),
            cell_text_documents=[types.TextDocumentItem(
                uri=u, language_id="python" if k == types.NotebookCellKind.Code
                else "markdown", version=1, text=t)
                for k, u, t in zip(self.kinds, self.uris, self.texts)]))

    def set_cell(self, i: int, text: str) -> None:
        """Replace cell ``i``'s text (cells counted from 0, markdown included)."""
        old = self.texts[i]
        lines = old.split("\n")
        self.version += 1
        self.versions[i] += 1
        self.texts[i] = text
        whole = types.Range(types.Position(0, 0),
                            types.Position(len(lines) - 1, len(lines[-1])))
        self.client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(
                version=self.version, uri=self.uri),
            change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(
                text_content=[types.NotebookDocumentCellContentChanges(
                    document=types.VersionedTextDocumentIdentifier(
                        uri=self.uris[i], version=self.versions[i]),
                    changes=[types.TextDocumentContentChangePartial(range=whole,
                                                                    text=text)])]))))

    async def diagnostics(self, i: int) -> list[types.Diagnostic]:
        """The diagnostics published for cell ``i``'s current version."""
        uri = self.uris[i]
        while True:
            got = self.client.diagnostics.get(uri)
            if got is not None and _VERSIONS.get(uri) == self.versions[i]:
                return list(got)
            await asyncio.wait_for(self.client.wait_for_notification(
                types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), 120)

    async def actions(self, i: int, rng: types.Range, only=None) -> list[types.CodeAction]:
        return await self.client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=self.uris[i]), range=rng,
            context=types.CodeActionContext(diagnostics=[], only=only))) or []

    def apply(self, action: types.CodeAction) -> list[int]:
        """Apply ``action``'s edits as the editor would; the cells it changed."""
        changed = []
        edit = action.edit
        per_uri = [(dc.text_document.uri, dc.edits) for dc in edit.document_changes or []]
        per_uri += list((edit.changes or {}).items())
        for uri, edits in per_uri:
            i = self.uris.index(uri)
            text = self.texts[i]
            for e in sorted(edits, key=lambda e: (e.range.start.line,
                                                  e.range.start.character), reverse=True):
                text = _put(text, e)
            self.set_cell(i, text)
            changed.append(i)
        return changed


def _put(text: str, edit: types.TextEdit) -> str:
    """An ASCII text's edit applied (the cells here are ASCII)."""
    lines = text.split("\n")

    def at(p: types.Position) -> int:
        return sum(len(x) + 1 for x in lines[:p.line]) + p.character
    return text[:at(edit.range.start)] + edit.new_text + text[at(edit.range.end):]


def _where(d: types.Diagnostic) -> tuple:
    return (d.code, d.range.start.line, d.range.start.character, d.range.end.line,
            d.range.end.character)


@pytest.mark.asyncio
async def test_notebook_document_findings_per_cell_change_fix_noqa(client: LanguageClient):
    sync = client.server_caps.notebook_document_sync
    assert sync is not None and sync.notebook_selector[0].cells[0].language == "python"
    path = Path(client.root) / "kernels.ipynb"
    path.write_text(NB.read_text())
    # the source cell 6 compiles with --use_fast_math (its CL401 names cosf there)
    (Path(client.root) / "ops.cu").write_text((NB.parent / "ops.cu").read_text())
    nb = Notebook(client, path)

    # the places `cudalint kernels.ipynb` reports (`cell 3:4:10` ...), as 0-based lines
    # and characters of each cell's own text, under the cell's URI
    assert [_where(d) for d in await nb.diagnostics(2)] == [("CL104", 3, 9, 3, 20)]
    cli = json.loads(subprocess.run(
        [*SERVER[:-1], "check", "--no-cache", "--output-format", "json", path.name],
        cwd=client.root, capture_output=True, text=True).stdout)
    assert {d["cell"] for d in cli} >= {3, 5, 6}
    for i, kind in enumerate(nb.kinds):
        if kind == types.NotebookCellKind.Code:
            want = sorted((d["code"], d["location"]["row"] - 1, d["location"]["column"] - 1,
                           d["end_location"]["row"] - 1, d["end_location"]["column"] - 1)
                          for d in cli if d["cell"] == i + 1)
            assert sorted(_where(d) for d in await nb.diagnostics(i)) == want, i
    assert await nb.diagnostics(6) == []           # `// noqa: CL104` inside the cell
    assert await nb.diagnostics(1) == []           # `%matplotlib inline` is no error
    assert nb.uris[0] not in client.diagnostics    # markdown: nothing published

    # a change to the cell: its finding moves with its text
    original = nb.texts[2]
    nb.set_cell(2, "# the reduction\n" + original)
    [d] = await nb.diagnostics(2)
    assert _where(d) == ("CL104", 4, 9, 4, 20)
    assert ("CL104", 6, 21) in [_where(d)[:3] for d in await nb.diagnostics(4)]

    # the quick fix and "Disable for this line" edit the cell itself
    titles = [a.title for a in await nb.actions(2, d.range)]
    assert titles == ["cudalint (CL104): Use `__shfl_down_sync` with the full-warp mask "
                      "(unsafe)", "cudalint (CL104): Disable for this line"]
    fix, noqa = await nb.actions(2, d.range)
    assert nb.apply(fix) == [2]
    assert "__shfl_down_sync(0xffffffff, v, 1)" in nb.texts[2].split("\n")[4]
    assert await nb.diagnostics(2) == []
    nb.set_cell(2, original)
    [d] = await nb.diagnostics(2)
    [noqa] = [a for a in await nb.actions(2, d.range) if "Disable" in a.title]
    assert nb.apply(noqa) == [2]
    assert nb.texts[2].split("\n")[3] == "    v += __shfl_down(v, 1);  // noqa: CL104"
    assert await nb.diagnostics(2) == []

    # fix all: the safe fixes of the whole notebook (an unused noqa in another cell)
    nb.set_cell(3, "x = 1  # noqa: CL202\n")
    [unused] = await nb.diagnostics(3)
    assert unused.code == "CL001"
    [fix_all] = await nb.actions(3, unused.range, only=["source.fixAll.cudalint"])
    assert nb.apply(fix_all) == [3] and nb.texts[3] == "x = 1\n"
    assert await nb.diagnostics(3) == []

    # a cell removed, then the notebook closed: their diagnostics are cleared
    nb.version += 1
    client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
        notebook_document=types.VersionedNotebookDocumentIdentifier(version=nb.version,
                                                                    uri=nb.uri),
        change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(
            structure=types.NotebookDocumentCellChangeStructure(
                array=types.NotebookCellArrayChange(start=5, delete_count=1),
                did_close=[types.TextDocumentIdentifier(uri=nb.uris[5])])))))
    for _ in range(50):
        if client.diagnostics.get(nb.uris[5]) is not None and \
                not client.diagnostics[nb.uris[5]]:
            break
        await asyncio.sleep(0.1)
    assert list(client.diagnostics[nb.uris[5]]) == []
    client.notebook_document_did_close(types.DidCloseNotebookDocumentParams(
        notebook_document=types.NotebookDocumentIdentifier(uri=nb.uri),
        cell_text_documents=[types.TextDocumentIdentifier(uri=u) for i, u in
                             enumerate(nb.uris) if i != 5]))
    for _ in range(50):
        if client.diagnostics.get(nb.uris[4]) is not None and \
                not client.diagnostics[nb.uris[4]]:
            break
        await asyncio.sleep(0.1)
    assert list(client.diagnostics[nb.uris[4]]) == []


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, client_factory=_make_client))
async def pull_client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("ws")
    caps = client_capabilities("neovim@v0.11.0")
    assert caps.text_document.diagnostic is not None
    caps.general.position_encodings = ["utf-16"]
    caps.notebook_document = types.NotebookDocumentClientCapabilities(
        synchronization=types.NotebookDocumentSyncClientCapabilities())
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=caps, root_uri=root.as_uri()))
    lsp_client.root = root
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_notebook_cells_pulled(pull_client: LanguageClient):
    """A client that pulls diagnostics (VS Code) asks for each cell's URI."""
    path = Path(pull_client.root) / "kernels.ipynb"
    path.write_text(NB.read_text())
    nb = Notebook(pull_client, path)
    params = types.DocumentDiagnosticParams(
        text_document=types.TextDocumentIdentifier(uri=nb.uris[2]))
    report = await pull_client.text_document_diagnostic_async(params)
    assert [_where(d) for d in report.items] == [("CL104", 3, 9, 3, 20)]
    params.previous_result_id = report.result_id
    again = await pull_client.text_document_diagnostic_async(params)
    assert again.kind == "unchanged"
    nb.set_cell(2, "\n" + nb.texts[2])
    report = await pull_client.text_document_diagnostic_async(params)
    assert report.kind == "full" and [_where(d)[:2] for d in report.items] == [("CL104", 4)]
    assert nb.uris[2] not in pull_client.diagnostics          # nothing was pushed

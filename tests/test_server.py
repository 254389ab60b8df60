"""The language server end to end: a real LSP client (pytest-lsp) drives `cudalint server`
over stdio: initialize, open, change, diagnostics (pushed and pulled), code actions,
applying their edits, hover, settings, crash containment, shutdown; .cu and .py files."""
from __future__ import annotations

import asyncio
import re
import sys
import textwrap
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from cudalint.server.options import parse_options
from cudalint.server.positions import LineIndex, minimal_edit, noqa_edit

SERVER = [sys.executable, "-m", "cudalint", "server"]

CU = ("__global__ void k(float* a) {\n"
      "    a[0] = __shfl(a[1], 0);\n"
      "}\n")
PY = ('import cupy as cp\n'
      'k = cp.RawKernel(r"""\n'
      '__global__ void k(float* a) { a[0] = __shfl(a[1], 0); }\n'
      '""", "k")\n')
PY_ONE_LINE = ("import cupy as cp\n"
               "k = cp.RawKernel('__global__ void k(float* a) { a[0] = __shfl(a[1], 0); }',"
               " 'k')\n")

# A rule plugin, installed for the server process only (through PYTHONPATH and a
# dist-info entry point): it fails in the three ways a rule can fail.
PLUGIN = textwrap.dedent('''
    import os, time
    from cudalint.rule import Rule

    class Crashing(Rule):
        """## What it does
        Fails on purpose (a test plugin).
        ## Why is this bad?
        -
        ## Example
        -
        ## Use instead
        -
        ## References
        -
        """
        code = "CL999"
        name = "test-crash"

        def check(self, ctx):
            text = ctx.unit.text
            if "RULE_RAISES" in text:
                raise ValueError("boom")
            if "RULE_HANGS" in text:
                time.sleep(3600)
            if "RULE_KILLS" in text:
                os._exit(3)
            return []
''')


def _plugin_env(tmp: Path) -> dict[str, str]:
    import os
    (tmp / "crashplugin.py").write_text(PLUGIN)
    info = tmp / "crashplugin-0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: crashplugin\nVersion: 0.0\n")
    (info / "entry_points.txt").write_text("[cudalint.rules]\ncrash = crashplugin:Crashing\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp)] + [p for p in [env.get("PYTHONPATH")] if p])
    return env


_VERSIONS: dict[str, int | None] = {}


def _make_client() -> LanguageClient:
    """pytest-lsp's client, but recording the version of each publishDiagnostics."""
    from pygls.protocol import default_converter
    from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

    def publish(client: LanguageClient, params: types.PublishDiagnosticsParams):
        client.diagnostics[params.uri] = params.diagnostics
        _VERSIONS[params.uri] = params.version

    client = LanguageClient(converter_factory=default_converter)
    register_lsp_features(client, {**DEFAULT_CLIENT_FEATURES,
                                   types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: publish})
    return client


def _push_capabilities() -> types.ClientCapabilities:
    caps = client_capabilities("neovim@v0.11.0")
    caps.text_document.diagnostic = None          # no pull support: the server pushes
    caps.general.position_encodings = None        # LSP's default: UTF-16 code units
    return caps


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, client_factory=_make_client))
async def client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("ws")
    (root / "pyproject.toml").write_text('[tool.cudalint]\nextend-select = ["CL001"]\n'
                                         'ignore = ["CL203"]\n')
    params = types.InitializeParams(capabilities=_push_capabilities(), root_uri=root.as_uri(),
                                    initialization_options={"debounce": 10})
    await lsp_client.initialize_session(params)
    lsp_client.root = root
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, client_factory=_make_client))
async def pull_client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("ws")
    caps = client_capabilities("neovim@v0.11.0")
    assert caps.text_document.diagnostic is not None
    caps.general.position_encodings = ["utf-16"]
    params = types.InitializeParams(capabilities=caps, root_uri=root.as_uri(),
                                    initialization_options={"settings": {"ignore": ["CL203"]}})
    await lsp_client.initialize_session(params)
    lsp_client.root = root
    yield
    await lsp_client.shutdown_session()


_PLUGIN_DIR = None


def _crash_config() -> ClientServerConfig:
    import tempfile
    global _PLUGIN_DIR
    _PLUGIN_DIR = tempfile.TemporaryDirectory(prefix="cudalint-plugin-")
    return ClientServerConfig(server_command=SERVER, client_factory=_make_client,
                              server_env=_plugin_env(Path(_PLUGIN_DIR.name)))


@pytest_lsp.fixture(config=_crash_config())
async def crash_client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("ws")
    params = types.InitializeParams(capabilities=_push_capabilities(), root_uri=root.as_uri(),
                                    initialization_options={"timeout": 4, "debounce": 0,
                                                            "ignore": ["CL203"]})
    await lsp_client.initialize_session(params)
    lsp_client.root = root
    yield
    await lsp_client.shutdown_session()


# -- helpers: an editor's side of the protocol ------------------------------------------

def _offset(text: str, pos: types.Position) -> int:
    """UTF-16 position -> str index, computed independently of the server's code."""
    lines = text.split("\n")
    start = sum(len(line) + 1 for line in lines[:pos.line])
    line = lines[pos.line]
    units = 0
    for i, ch in enumerate(line):
        if units >= pos.character:
            return start + i
        units += 2 if ord(ch) > 0xFFFF else 1
    return start + len(line)


def apply(text: str, edits: list[types.TextEdit]) -> str:
    spans = sorted(((_offset(text, e.range.start), _offset(text, e.range.end), e.new_text)
                    for e in edits), reverse=True)
    for s, e, new in spans:
        text = text[:s] + new + text[e:]
    return text


def edits_of(action: types.CodeAction, uri: str) -> list[types.TextEdit]:
    edit = action.edit
    if edit.document_changes:
        return [e for dc in edit.document_changes if dc.text_document.uri == uri
                for e in dc.edits]
    return list(edit.changes[uri])


class Doc:
    def __init__(self, client: LanguageClient, name: str, text: str, language: str):
        self.client, self.text, self.version = client, text, 1
        path = Path(client.root) / name
        path.write_text(text, encoding="utf-8")
        self.uri = path.as_uri()
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=self.uri, language_id=language,
                                                 version=1, text=text)))

    def replace_all(self, text: str) -> None:
        self.version += 1
        self.text = text
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=self.uri,
                                                                version=self.version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))

    def apply_action(self, action: types.CodeAction) -> None:
        self.replace_all(apply(self.text, edits_of(action, self.uri)))

    async def diagnostics(self) -> list[types.Diagnostic]:
        """The diagnostics published for this document's current version."""
        client = self.client
        while True:
            got = client.diagnostics.get(self.uri)
            if got is not None and self._published_version == self.version:
                return list(got)
            params = await client.wait_for_notification(
                types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
            del params

    @property
    def _published_version(self):
        return _VERSIONS.get(self.uri)

    async def actions(self, rng: types.Range, only=None) -> list[types.CodeAction]:
        return await self.client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=self.uri), range=rng,
            context=types.CodeActionContext(diagnostics=[], only=only))) or []

    async def hover(self, line: int, character: int):
        return await self.client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=self.uri),
            position=types.Position(line=line, character=character)))


# -- .cu -----------------------------------------------------------------------------

@pytest.mark.asyncio
async def test_cu_open_change_fix_noqa_hover(client: LanguageClient):
    doc = Doc(client, "a.cu", CU, "cuda-cpp")
    [d] = await doc.diagnostics()
    assert (d.code, d.source, d.severity) == ("CL104", "cudalint",
                                              types.DiagnosticSeverity.Error)
    assert d.range == types.Range(types.Position(1, 11), types.Position(1, 17))
    assert d.code_description.href.endswith("#cl104")

    # an unsaved incremental edit: a line inserted above; analysed from the buffer
    doc.version += 1
    doc.text = "// header\n" + doc.text
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=doc.uri, version=doc.version),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(types.Position(0, 0), types.Position(0, 0)),
            text="// header\n")]))
    [d] = await doc.diagnostics()
    assert d.range.start == types.Position(2, 11)

    hover = await doc.hover(2, 13)
    assert "CL104" in hover.contents.value and "## What it does" in hover.contents.value
    assert hover.range == d.range
    assert await doc.hover(0, 3) is None

    actions = await doc.actions(d.range)
    titles = [a.title for a in actions]
    assert titles == ["cudalint (CL104): Use `__shfl_sync` with the full-warp mask (unsafe)",
                      "cudalint (CL104): Disable for this line"]
    fix, noqa = actions
    assert fix.kind == types.CodeActionKind.QuickFix and fix.diagnostics[0].code == "CL104"

    # apply the fix as the editor would: the finding is gone, the code is the fixed one
    before = doc.text
    doc.apply_action(fix)
    assert "__shfl_sync(0xffffffff, a[1], 0)" in doc.text
    assert await doc.diagnostics() == []

    # back to the original, then disable for this line: a // noqa comment
    doc.replace_all(before)
    [d] = await doc.diagnostics()
    [noqa] = [a for a in await doc.actions(d.range) if "Disable" in a.title]
    doc.apply_action(noqa)
    assert doc.text.split("\n")[2] == "    a[0] = __shfl(a[1], 0);  // noqa: CL104"
    assert await doc.diagnostics() == []


@pytest.mark.asyncio
async def test_edit_inside_a_kernel_fast_then_whole_file(client: LanguageClient):
    text = CU + CU.replace("void k", "void k2")
    doc = Doc(client, "two.cu", text, "cuda-cpp")
    assert [d.range.start.line for d in await doc.diagnostics()] == [1, 4]
    # typing inside the first kernel: that kernel is analysed again, the second one's
    # finding moves down a line; then the whole-file analysis publishes the same
    doc.version += 1
    doc.text = text.replace("{\n", "{\n    int x = 0;\n", 1)
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=doc.uri, version=doc.version),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(types.Position(1, 0), types.Position(1, 0)),
            text="    int x = 0;\n")]))
    fast = await doc.diagnostics()
    assert [(d.code, d.range.start.line, d.range.start.character) for d in fast] == [
        ("CL104", 2, 11), ("CL104", 5, 11)]
    # a second publish of the same version: the fast one came first
    await asyncio.wait_for(
        client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), 120)
    assert _VERSIONS[doc.uri] == doc.version and list(client.diagnostics[doc.uri]) == fast


@pytest.mark.asyncio
async def test_noqa_extends_an_existing_comment_and_fix_all(client: LanguageClient):
    text = ("__global__ void k(float* a) {\n"
            "    a[0] = __shfl(a[1], 0);  // noqa: CL202\n"     # CL202 unused: CL001
            "}\n")
    doc = Doc(client, "b.cu", text, "cuda")
    diags = await doc.diagnostics()
    assert sorted(d.code for d in diags) == ["CL001", "CL104"]
    cl001 = next(d for d in diags if d.code == "CL001")
    assert list(cl001.tags) == [types.DiagnosticTag.Unnecessary]
    cl104 = next(d for d in diags if d.code == "CL104")
    [noqa] = [a for a in await doc.actions(cl104.range) if "Disable" in a.title]
    assert [e.new_text for e in edits_of(noqa, doc.uri)] == [", CL104"]

    # source.fixAll.cudalint applies the safe fixes (removing the unused code) only
    [fix_all] = await doc.actions(cl104.range, only=["source.fixAll.cudalint"])
    assert fix_all.kind == "source.fixAll.cudalint"
    doc.apply_action(fix_all)
    assert doc.text.split("\n")[1] == "    a[0] = __shfl(a[1], 0);"
    assert [d.code for d in await doc.diagnostics()] == ["CL104"]
    # nothing safe is left to fix: no fix-all action
    [d] = await doc.diagnostics()
    assert await doc.actions(d.range, only=["source.fixAll"]) == []
    # a quick-fix request does not offer source actions
    assert all(a.kind == types.CodeActionKind.QuickFix
               for a in await doc.actions(d.range, only=["quickfix"]))


@pytest.mark.asyncio
async def test_utf16_columns_after_astral_characters(client: LanguageClient):
    text = "// é🙂\n__global__ void k(float* a) { /* 🙂🙂 */ a[0] = __shfl(a[1], 0); }\n"
    doc = Doc(client, "u.cu", text, "cuda-cpp")
    [d] = await doc.diagnostics()
    line = text.split("\n")[1]
    col = line.index("__shfl")
    assert d.range.start == types.Position(1, col + 2)        # two surrogate pairs
    assert d.range.end == types.Position(1, col + 2 + len("__shfl"))
    # the noqa edit lands at the true end of the line
    [noqa] = [a for a in await doc.actions(d.range) if "Disable" in a.title]
    doc.apply_action(noqa)
    assert doc.text.split("\n")[1].endswith("}  // noqa: CL104")
    assert await doc.diagnostics() == []


@pytest.mark.asyncio
async def test_settings_from_pyproject_and_initialization_options(client: LanguageClient):
    # pyproject.toml ignores CL203 (a read-only pointer without __restrict__ otherwise)
    text = ("__global__ void k(const float* a, float* b) {\n"
            "    b[threadIdx.x] = a[threadIdx.x];\n"
            "}\n")
    doc = Doc(client, "c.cu", text, "cuda-cpp")
    assert await doc.diagnostics() == []
    # editor settings on top of the file's: select only CL2 -> CL104 disappears
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"cudalint": {"settings": {"select": ["CL2"]}, "debounce": 0}}))
    legacy = Doc(client, "d.cu", CU, "cuda-cpp")
    assert await legacy.diagnostics() == []


# -- .py ------------------------------------------------------------------------------

@pytest.mark.asyncio
async def test_py_kernel_string_positions_hover_noqa(client: LanguageClient):
    doc = Doc(client, "k.py", PY, "python")
    [d] = await doc.diagnostics()
    col = PY.split("\n")[2].index("__shfl")
    assert (d.code, d.range.start, d.range.end) == (
        "CL104", types.Position(2, col), types.Position(2, col + 6))
    hover = await doc.hover(2, col + 2)
    assert "legacy-warp-intrinsic" in hover.contents.value

    actions = await doc.actions(d.range)
    fix = next(a for a in actions if "full-warp" in a.title)
    before = doc.text
    doc.apply_action(fix)
    assert "__shfl_sync(0xffffffff, a[1], 0)" in doc.text.split("\n")[2]
    assert await doc.diagnostics() == []

    # the line ends inside the triple-quoted string: the comment is CUDA's, in the string
    doc.replace_all(before)
    [d] = await doc.diagnostics()
    [noqa] = [a for a in await doc.actions(d.range) if "Disable" in a.title]
    doc.apply_action(noqa)
    assert doc.text.split("\n")[2].endswith("}  // noqa: CL104")
    assert await doc.diagnostics() == []


@pytest.mark.asyncio
async def test_py_one_line_string_gets_a_python_comment(client: LanguageClient):
    text = "# 🙂\n" + PY_ONE_LINE
    doc = Doc(client, "one.py", text, "python")
    [d] = await doc.diagnostics()
    line = text.split("\n")[2]
    assert d.range.start == types.Position(2, line.index("__shfl"))
    [noqa] = [a for a in await doc.actions(d.range) if "Disable" in a.title]
    doc.apply_action(noqa)
    assert doc.text.split("\n")[2].endswith("'k')  # noqa: CL104")
    assert await doc.diagnostics() == []


@pytest.mark.asyncio
async def test_unread_compile_call_is_a_hint_at_the_call(client: LanguageClient):
    """Issue 21: a compile call whose CUDA was not analysed is shown where it is, as a
    hint with the reason (the CLI lists them with --show-unread)."""
    text = ("import cupy as cp\n"
            "with open('k.cu') as f:\n"
            "    k = cp.RawKernel(f.read(), 'k')\n")
    doc = Doc(client, "unread.py", text, "python")
    [d] = await doc.diagnostics()
    assert d.severity == types.DiagnosticSeverity.Hint and d.code is None
    assert d.range.start == types.Position(2, 8) and d.range.end == types.Position(2, 35)
    assert d.message == ("`cupy.RawKernel` call not analysed: read from a file at run "
                         "time")
    assert [a for a in await doc.actions(d.range) if "Disable" in a.title] == []


@pytest.mark.asyncio
async def test_pull_diagnostics(pull_client: LanguageClient):
    doc = Doc(pull_client, "a.cu", CU, "cuda-cpp")
    params = types.DocumentDiagnosticParams(
        text_document=types.TextDocumentIdentifier(uri=doc.uri))
    report = await pull_client.text_document_diagnostic_async(params)
    assert [d.code for d in report.items] == ["CL104"] and report.result_id
    assert report.items[0].range.start == types.Position(1, 11)
    params.previous_result_id = report.result_id
    again = await pull_client.text_document_diagnostic_async(params)
    assert again.kind == "unchanged" and again.result_id == report.result_id
    doc.replace_all("// nothing here\n")
    report = await pull_client.text_document_diagnostic_async(params)
    assert report.kind == "full" and list(report.items) == []
    assert doc.uri not in pull_client.diagnostics          # nothing was pushed


# -- crash containment ------------------------------------------------------------------

@pytest.mark.asyncio
async def test_failures_become_cl000_and_the_server_lives_on(crash_client: LanguageClient):
    raises = Doc(crash_client, "r.cu", "// RULE_RAISES\n" + CU, "cuda-cpp")
    diags = await raises.diagnostics()
    assert sorted(d.code for d in diags) == ["CL000", "CL104"]
    assert "internal error in rule CL999" in next(d for d in diags if d.code == "CL000").message

    hangs = Doc(crash_client, "h.cu", "// RULE_HANGS\n" + CU, "cuda-cpp")
    [d] = await hangs.diagnostics()
    assert d.code == "CL000" and "longer than 4 s" in d.message

    kills = Doc(crash_client, "x.cu", "// RULE_KILLS\n" + CU, "cuda-cpp")
    [d] = await kills.diagnostics()
    assert d.code == "CL000" and "process died" in d.message

    # and the server (with a fresh worker) still answers
    fine = Doc(crash_client, "f.cu", CU, "cuda-cpp")
    assert [d.code for d in await fine.diagnostics()] == ["CL104"]
    assert (await fine.hover(1, 12)) is not None


# -- the pieces, in process -----------------------------------------------------------

def test_line_index_encodings():
    text = "a🙂b\r\nxé\rz"
    u16 = LineIndex(text)
    assert u16.position(text.index("b")) == types.Position(0, 3)
    assert u16.position(text.index("x")) == types.Position(1, 0)
    assert u16.position(text.index("z")) == types.Position(2, 0)
    assert u16.position(text.index("\r")) == types.Position(0, 4)
    assert u16.offset(types.Position(0, 3)) == text.index("b")
    assert LineIndex(text, "utf-8").position(text.index("b")) == types.Position(0, 5)
    assert LineIndex(text, "utf-32").position(text.index("b")) == types.Position(0, 2)
    for i in range(len(text) + 1):
        if text[i - 1:i + 1] != "\r\n":
            assert u16.offset(u16.position(i)) == i


def test_noqa_edit_syntax():
    e = noqa_edit("x;\\\ny;\n", "cuda", 1, "CL104")          # a macro continuation:
    assert (e.start, e.content) == (6, "  // noqa: CL104")      # where its line ends
    assert noqa_edit("x;  # noqa\n", "python", 1, "CL104") is None      # bare noqa
    e = noqa_edit("x = 1  # noqa: E501\n", "python", 1, "CL104")
    assert (e.start, e.content) == (len("x = 1  # noqa: E501"), ", CL104")
    e = noqa_edit("x;   \r\ny;\n", "cuda", 1, "CL104")
    assert (e.start, e.content) == (2, "  // noqa: CL104")


def test_options_and_minimal_edit():
    opts = parse_options({"settings": {"extendSelect": ["CL404"], "block-size": 128},
                          "unsafeFixes": True, "arch": "sm_80"})
    assert opts.overrides == {"extend_select": ("CL404",), "block_size": (128, 1, 1),
                              "arch": "sm_80"} and opts.unsafe_fixes
    from cudalint.config import ConfigError
    with pytest.raises(ConfigError, match="unknown option `nope`"):
        parse_options({"nope": 1})
    e = minimal_edit("abcXdef", "abcYYdef")
    assert (e.start, e.end, e.content) == (3, 4, "YY")


# -- the fast path: one edited kernel analysed again, the rest moved along -------------

FAST_PATH_FIXTURES = sorted(
    p for code in ("CL101", "CL102", "CL103", "CL104", "CL105", "CL201", "CL202")
    for p in (Path(__file__).resolve().parent.parent / "fixtures" / code).glob("*.cu"))


@pytest.mark.parametrize("path", FAST_PATH_FIXTURES, ids=lambda p: p.name)
def test_kernel_slice_merge_equals_a_full_analysis(path):
    """An edit inside a kernel: the previous findings moved along plus the slice's
    findings for that kernel are exactly what a whole-file analysis finds."""
    from cudalint.config import Settings
    from cudalint.engine import lint_text
    from cudalint.incremental import _functions, changed_span, lint_kernel_slice, merge
    from cudalint.parse import parse
    settings = Settings()
    text = path.read_text(encoding="utf-8")
    old = lint_text(str(path), text, settings, "cuda")
    kernels = [f for f in _functions(parse(text.encode()).root_node, text, lambda b: b)
               if f.is_kernel]
    assert kernels

    def key(result):
        # line numbers quoted in messages and metrics are moved on a best-effort basis
        # (the whole-file analysis that follows has them exact): compared without them
        return sorted((d.code, d.row, d.column, d.end_row, d.end_column, d.start_offset,
                       re.sub(r"\d+", "#", d.message), d.suppressed, repr(d.fix),
                       re.sub(r"\d+", "#", repr(d.metrics)))
                      for d in result.diagnostics)

    for kernel in kernels[::max(1, len(kernels) // 4)]:
        at = kernel.body_start + 1
        new = text[:at] + "\n    int edited_here = 1;" + text[at:]
        start, old_end, new_end = changed_span(text, new)
        piece = lint_kernel_slice(str(path), new, settings, "cuda", start, new_end)
        assert piece is not None and piece.start == kernel.start
        merged = merge(old, text, new, piece, old_end, new_end)
        assert key(merged) == key(lint_text(str(path), new, settings, "cuda")), kernel.name


DEVICE_FIXTURES = sorted(
    Path(__file__).resolve().parent.parent / "fixtures" / name for name in (
        "CL101/templated_reduction.cu", "CL103/mismatched.cu", "CL201/device_function.cu",
        "CL201/hot_path.cu", "CL202/device_function.cu", "CL108/device_function.cu",
        "CL204/remedies.cu"))


@pytest.mark.parametrize("path", DEVICE_FIXTURES, ids=lambda p: p.parent.name + p.name)
def test_device_function_slice_merge_equals_a_full_analysis(path):
    """An edit inside a __device__ function that kernels call: its findings and the
    calling kernels' (the lane engine and the block run follow callees) come from the
    slice, the rest moved along; together exactly what a whole-file analysis finds."""
    from cudalint.config import Settings
    from cudalint.engine import lint_text
    from cudalint.incremental import (MAX_CALLERS, _calling_kernels, _functions,
                                      changed_span, lint_kernel_slice, merge)
    from cudalint.parse import parse
    settings = Settings()
    text = path.read_text(encoding="utf-8")
    old = lint_text(str(path), text, settings, "cuda")
    functions = _functions(parse(text.encode()).root_node, text, lambda b: b)
    called = [f for f in functions if not f.is_kernel and "__device__" in
              text[f.outer:f.body_start] and any(f.name in k.words for k in functions
                                                 if k.is_kernel)]
    assert called

    def key(result):
        return sorted((d.code, d.row, d.column, d.end_row, d.end_column, d.start_offset,
                       re.sub(r"\d+", "#", d.message), d.suppressed, repr(d.fix),
                       re.sub(r"\d+", "#", repr(d.metrics)))
                      for d in result.diagnostics)

    for fn in called:
        at = fn.body_start + 1
        new = text[:at] + "\n    int edited_here = 1;" + text[at:]
        start, old_end, new_end = changed_span(text, new)
        piece = lint_kernel_slice(str(path), new, settings, "cuda", start, new_end)
        if len(_calling_kernels(fn, functions)) > MAX_CALLERS:
            assert piece is None        # analysed whole
            continue
        assert piece is not None and piece.start == fn.start and piece.callers, fn.name
        merged = merge(old, text, new, piece, old_end, new_end)
        assert key(merged) == key(lint_text(str(path), new, settings, "cuda")), fn.name


def test_kernel_slice_declines_edits_outside_kernels():
    from cudalint.config import Settings
    from cudalint.incremental import lint_kernel_slice
    text = "int helper(int x) {\n    return x;\n}\n" + CU
    at = text.index("return")
    assert lint_kernel_slice("h.cu", text, Settings(), "cuda", at, at + 1) is None
    at = text.index("a[0]")
    assert lint_kernel_slice("h.cu", text, Settings(), "cuda", at, at + 1) is not None
    # a file-level noqa anywhere: no slicing (the slice could drop it)
    assert lint_kernel_slice("h.cu", "// cudalint: noqa: CL104\n" + text, Settings(), "cuda",
                             at + 26, at + 27) is None

"""The language server re-lints an open document when a file whose facts its result used
changes (issue 13, item 5): a launcher that instantiates its template kernel, a header
it includes. The server lints an open CUDA file with the open documents and its folder as
its project (project.index.editor_index) and keeps the files the result used
(Analysis.deps); a change to one of them, saved or not, publishes the dependents again."""
from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from test_server import Doc, client  # noqa: F401  (the pytest-lsp fixture)

KERNEL = ("#pragma once\n"
          "template <int S>\n"
          "__global__ void k(const float *a, float *o) {\n"
          "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
          "    o[i] = a[i * S];\n"
          "}\n")
MAIN = ('#include "kernel.cuh"\n'
        "void run(const float *a, float *o) {\n"
        "    k<{S}><<<1, 32>>>(a, o);\n"
        "}\n")


async def _until(client: LanguageClient, uri: str, done, timeout: float = 120):
    """The diagnostics of ``uri`` once ``done`` holds for them."""
    async def wait():
        while True:
            got = client.diagnostics.get(uri)
            if got is not None and done(list(got)):
                return list(got)
            await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return await asyncio.wait_for(wait(), timeout)


def _cl201(diags) -> list[types.Diagnostic]:
    return [d for d in diags if d.code == "CL201"]


@pytest.mark.asyncio
async def test_changing_the_launcher_relints_the_kernel_file(client: LanguageClient):
    (client.root / "main.cu").write_text(MAIN.replace("{S}", "1"))
    kernel = Doc(client, "kernel.cuh", KERNEL, "cuda-cpp")
    main = Doc(client, "main.cu", MAIN.replace("{S}", "1"), "cuda-cpp")
    await main.diagnostics()
    # k<1>: neighbouring floats per lane
    assert _cl201(await kernel.diagnostics()) == []
    # the launcher now instantiates k<3> (unsaved): every third float per lane
    main.replace_all(MAIN.replace("{S}", "3"))
    got = await _until(client, kernel.uri, lambda ds: bool(_cl201(ds)))
    [d] = _cl201(got)
    assert d.range.start.line == 4 and "`k<3>`" in d.message
    assert "12 32-byte sectors per request" in d.message
    # saved back to k<1>: the finding goes
    main.replace_all(MAIN.replace("{S}", "1"))
    (client.root / "main.cu").write_text(main.text)
    client.text_document_did_save(types.DidSaveTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=main.uri)))
    await _until(client, kernel.uri, lambda ds: not _cl201(ds))

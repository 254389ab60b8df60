"""Fuzz target for the language server (``cudalint/server.py``): an editor session as a
script of document changes, and the server's options.

A script (JSON, the format of ``regressions/server/*.json``)::

    {"kind": "cuda" | "python", "encoding": "utf-16" | "utf-8" | "utf-32",
     "text": "<the buffer didOpen sends>",
     "changes": [{"range": [[line, char], [line, char]] | null, "text": "..."}, ...],
     "options": <initializationOptions> (optional)}

Each change goes through pygls's ``TextDocument.apply_change`` (what ``didChange`` does
to the buffer), then the buffer through the server's analysis (``_job_lint``) and its
conversion to LSP (``LineIndex``, ``to_lsp``). Properties: nothing raises; every range
lies inside the buffer in the negotiated encoding and maps back to the diagnostic's
offsets; each diagnostic serialises as LSP JSON; "Disable for this line" (``noqa_edit``)
suppresses exactly that finding; ``minimal_edit`` rebuilds the new buffer; the options
parser raises nothing but ConfigError.
"""
from __future__ import annotations

import importlib.util
import json
import random

import fuzzlib as fl


def available() -> bool:
    return importlib.util.find_spec("cudalint.server") is not None


def _units(s: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(s.encode("utf-8", "surrogatepass"))
    if encoding == "utf-16":
        return len(s) + sum(1 for ch in s if ord(ch) > 0xFFFF)
    return len(s)


CHANGE_TEXTS = ["", "x", "\n", "\r\n", "\r", "😀", "é", "\udce9", "__shfl(v, 0)",
                "__shfl_down(v, 1);\n", "// noqa: CL104", "# noqa", "\"", "'''", "{", "}",
                "__global__ void k(float* a) { a[threadIdx.x * 32] = __shfl(a[0], 0); }\n",
                "import cupy as cp\nk = cp.RawKernel(r'''__global__ void f(){ __shfl(1,0); }"
                "''', 'f')\n", "\t", "\x00", "\u2028", "\ufeff"]


MAX_BUFFER = 256 * 1024


def random_script(rng: random.Random) -> bytes:
    kind = rng.choice(["cuda", "python"])
    seeds = fl.CUDA_SEEDS if kind == "cuda" else fl.PYTHON_SEEDS
    base = rng.choice(seeds)
    if rng.random() < 0.5:
        base = fl.mutate(base, fl.random_ops(rng, 3), seeds,
                         fl.CUDA_SNIPPETS if kind == "cuda" else fl.PY_SNIPPETS)
    # at most 256 KB, as every target of fuzz/long_run.py: bigger buffers measure speed,
    # not robustness (the seed-27 run made buffers of up to 2.3 MB, slow for that alone)
    text = base[:MAX_BUFFER].decode("utf-8", "surrogateescape")
    changes = []
    lines = max(1, text.count("\n") + 1)
    for _ in range(rng.randint(0, 6)):
        if rng.random() < 0.1:
            changes.append({"range": None, "text": rng.choice(CHANGE_TEXTS) * rng.randint(1, 3)})
            continue
        a = [rng.randint(0, lines + 1), rng.randint(0, 90)]
        b = [a[0] + rng.choice([0, 0, 0, 1, 2, -1]), rng.randint(0, 90)]
        changes.append({"range": [a, b], "text": "".join(
            rng.choice(CHANGE_TEXTS) for _ in range(rng.randint(0, 3)))})
    options = rng.choice([None, {}, {"settings": {"select": ["ALL"]}},
                          {"debounce": rng.choice([0, 10, -1, 1e999, float("nan"), "x"])},
                          {"timeout": rng.choice([1, 0, 1e999, True])},
                          {"cudalint": {"select": rng.choice([["CL1"], "CL1", [1]])}},
                          {"diagnosticMode": rng.choice(["pull", "push", 3])},
                          {"blockSize": rng.choice([[32, 8], 0, [2000]])}, [], "x"])
    return json.dumps({"kind": kind, "encoding": rng.choice(["utf-16", "utf-8", "utf-32"]),
                       "text": text, "changes": changes, "options": options},
                      ensure_ascii=True).encode()


def check_options(raw) -> None:
    from cudalint.config import ConfigError
    from cudalint.server.options import parse_options
    try:
        parse_options(raw)
    except ConfigError:
        pass


def check_server_script(data: bytes) -> None:
    from lsprotocol import types as lsp
    from pygls.workspace import TextDocument
    from pygls.workspace.position_codec import PositionCodec

    fl.RUNS["server"] += 1
    script = json.loads(data.decode("utf-8"))
    kind, encoding = script["kind"], script["encoding"]
    if "options" in script:
        check_options(script["options"])
    codec = PositionCodec(encoding=lsp.PositionEncodingKind(encoding))
    uri = "file:///fuzz/buffer." + ("cu" if kind == "cuda" else "py")
    doc = TextDocument(uri, script["text"], version=0, position_codec=codec)
    before = doc.source
    check_buffer(before, kind, encoding)
    for n, ch in enumerate(script["changes"], start=1):
        if ch["range"] is None:
            event = lsp.TextDocumentContentChangeWholeDocument(text=ch["text"])
        else:
            (l1, c1), (l2, c2) = ch["range"]
            if l2 < 0 or (l2, c2) < (l1, c1):
                continue        # a client never sends a reversed range
            event = lsp.TextDocumentContentChangePartial(
                range=lsp.Range(start=lsp.Position(line=l1, character=c1),
                                end=lsp.Position(line=l2, character=c2)), text=ch["text"])
        try:
            doc.apply_change(event)
        except Exception:        # pygls's own handling of an out-of-range change
            continue
        after = doc.source
        check_minimal_edit(before, after)
        before = after
    check_buffer(before, kind, encoding)


def check_minimal_edit(before: str, after: str) -> None:
    from cudalint.server.positions import minimal_edit
    e = minimal_edit(before, after)
    if not 0 <= e.start <= e.end <= len(before):
        fl._fail(f"minimal_edit span {e.start}..{e.end} outside 0..{len(before)}")
    if before[:e.start] + e.content + before[e.end:] != after:
        fl._fail("minimal_edit does not rebuild the new buffer")


def check_buffer(text: str, kind: str, encoding: str) -> None:
    from lsprotocol import converters
    from cudalint.server.positions import LineIndex, noqa_edit, to_lsp
    from cudalint.server.worker import _job_lint

    path = "/fuzz/buffer." + ("cu" if kind == "cuda" else "py")
    result = _job_lint(path, text, fl.ALL, kind)
    fl.check_result(result, text, kind)
    index = LineIndex(text, encoding)
    lines = index.starts
    conv = converters.get_converter()
    for d in result.visible:
        item = to_lsp(d, index)
        r = item.range
        for p in (r.start, r.end):
            if not 0 <= p.line < len(lines):
                fl._fail(f"{d.code} LSP line {p.line} outside 0..{len(lines) - 1}")
            line_text = text[index.starts[p.line]:index.ends[p.line]]
            if not 0 <= p.character <= _units(line_text, encoding):
                fl._fail(f"{d.code} LSP character {p.character} outside line {p.line} "
                         f"({_units(line_text, encoding)} {encoding} units)")
        if (r.end.line, r.end.character) < (r.start.line, r.start.character):
            fl._fail(f"{d.code} LSP range ends before it starts")
        back = index.offset(r.start)
        if back != d.start_offset and not (
                d.start_offset > 0 and text[d.start_offset - 1:d.start_offset + 1] == "\r\n"):
            fl._fail(f"{d.code} LSP start {r.start} is offset {back}, not {d.start_offset}")
        try:
            json.dumps(conv.unstructure(item), allow_nan=False)
        except (TypeError, ValueError) as exc:
            fl._fail(f"{d.code} LSP diagnostic is not JSON: {exc}")
    # "Disable for this line" on the first few findings
    # (not for CL001/CL002: they are about the noqa comment itself, which a code added to
    # it cannot silence; reported to the server's owner)
    for d in [x for x in result.visible if x.code not in ("CL001", "CL002")][:3]:
        row = d.noqa_row or d.row
        e = noqa_edit(text, kind, row, d.code)
        if e is None:
            continue
        if not 0 <= e.start <= e.end <= len(text):
            fl._fail(f"noqa edit {e.start}..{e.end} outside 0..{len(text)}")
        new = text[:e.start] + e.content + text[e.end:]
        again = _job_lint(path, new, fl.ALL, kind)
        left = [x for x in again.visible if x.code == d.code and (x.noqa_row or x.row) == row]
        if left:
            fl._fail(f"'Disable {d.code} for this line' left {left[0].message!r} on row "
                     f"{row}: {e.content!r} at {e.start}")

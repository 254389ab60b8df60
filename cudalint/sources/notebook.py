"""Jupyter notebooks as Python text: the code cells of an ``.ipynb``, in order, become one
Python source (as ruff reads a notebook), each cell's text followed by a newline, so the
Python rules and the kernel extraction see what the kernel would run. IPython syntax that
is not Python -- line magics (``%time f()``, ``x = %env``), shell escapes (``!nvcc ...``,
``files = !ls``), help (``obj?``) and the body of a cell magic that is not Python
(``%%writefile k.cu``, ``%%bash``) -- is blanked in place, keeping every length, so rows and
columns inside a cell are the notebook's own. A blanked statement becomes ``0`` padded with
spaces (an expression statement: an indented block whose only line was a magic still
parses).

A position in the Python text becomes (cell, row in the cell, column), the cell counted
from 1 over all cells of the notebook, markdown included -- ruff's numbering, so
``nb.ipynb:cell 3:2:8`` names the same place in both tools. Fixes are applied to the
Python text and split back into the cells (:meth:`Notebook.write_back`); the JSON is
written again with the notebook's indentation and everything but the changed sources
untouched.
"""
from __future__ import annotations

import bisect
import io
import json
import re
import tokenize
from dataclasses import dataclass, field

# cell magics whose body is Python (ruff's list): the first line is blanked, the rest read
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "python",
                                "python3", "memit", "snakeviz"})
_LINE_MAGIC = re.compile(r"^([ \t]*)([%!].*|[^#\n]*\?\??)$")
_ASSIGNED_MAGIC = re.compile(r"^([ \t]*[\w.,\s\[\]()*]+=[ \t]*)([%!].*)$")


class NotNotebook(ValueError):
    """The file is not a notebook this reader understands (the message says why)."""


@dataclass
class Notebook:
    raw: dict
    indent: int | None
    cells: list[int] = field(default_factory=list)        # JSON index of each code cell
    sources: list[str] = field(default_factory=list)      # each code cell's text
    was_list: list[bool] = field(default_factory=list)
    python: str = ""
    starts: list[int] = field(default_factory=list)       # first row of each code cell

    def locate(self, row: int) -> tuple[int, int]:
        """(cell number counted from 1 over all cells, row in that cell) of a row of
        :attr:`python`."""
        k = max(0, bisect.bisect_right(self.starts, row) - 1)
        if not self.cells:
            return 1, row
        return self.cells[k] + 1, row - self.starts[k] + 1

    @property
    def marked(self) -> str:
        """:attr:`python` with a comment row between cells, for fixes: the fixed text is
        split back into cells at these rows (:meth:`write_back`)."""
        return "".join(blank(s) + "\n" + BOUNDARY for s in self.sources)

    def write_back(self, fixed: str) -> str | None:
        """The notebook's JSON with ``fixed`` (:attr:`marked` after fixes) split back
        into its cells; None when the cells cannot be told apart any more or a blanked
        magic was edited (the file is then left as it is)."""
        parts = fixed.split("\n" + BOUNDARY)
        if len(parts) != len(self.sources) + 1 or parts[-1] != "":
            return None
        raw = json.loads(json.dumps(self.raw))
        changed = False
        for k, text in enumerate(parts[:-1]):
            merged = _restore_magics(self.sources[k], text)
            if merged is None:
                return None
            if merged == self.sources[k]:
                continue
            changed = True
            cell = raw["cells"][self.cells[k]]
            cell["source"] = merged.splitlines(True) if self.was_list[k] else merged
        if not changed:
            return None
        return json.dumps(raw, indent=self.indent, ensure_ascii=False) + "\n"


BOUNDARY = "# cudalint: notebook cell boundary\n"


def _restore_magics(original: str, fixed: str) -> str | None:
    """Put the original IPython rows back over their stand-ins in a fixed cell, in order
    (a fix may add or remove rows elsewhere); None when a stand-in is gone."""
    pairs = [(o, b) for o, b in zip(original.split("\n"), blank(original).split("\n"))
             if o != b]
    if not pairs:
        return fixed
    rows = fixed.split("\n")
    k = 0
    for i, r in enumerate(rows):
        if k < len(pairs) and r == pairs[k][1]:
            rows[i] = pairs[k][0]
            k += 1
    return "\n".join(rows) if k == len(pairs) else None


def blank(source: str) -> str:
    """The cell's text with IPython syntax blanked, every row its length."""
    rows = source.split("\n")
    first = rows[0].strip() if rows else ""
    if first.startswith("%%"):
        name = first[2:].split(None, 1)[0] if first[2:].strip() else ""
        if name not in PYTHON_CELL_MAGICS:
            return "\n".join(" " * len(r) for r in rows)
        rows[0] = " " * len(rows[0])
        start = 1
    else:
        start = 0
    out = rows[:start]
    continued = False
    for r in rows[start:]:
        if continued:                     # a magic's backslash continuation
            continued = r.rstrip().endswith("\\")
            out.append(" " * len(r))
            continue
        m = _ASSIGNED_MAGIC.match(r) or _LINE_MAGIC.match(r)
        if m and (m.re is _ASSIGNED_MAGIC or _is_magic(m.group(2))):
            body = m.group(2)
            out.append(m.group(1) + "0" + " " * (len(body) - 1))
            continued = body.rstrip().endswith("\\")
            continue
        out.append(r)
    inside = _rows_inside_strings("\n".join(out))
    if inside:                            # `%(type)s* x` in a kernel string is CUDA text
        out = [rows[i] if i in inside else r for i, r in enumerate(out)]
    return "\n".join(out)


def _rows_inside_strings(text: str) -> set[int]:
    """0-based rows that begin inside a string literal (a multi-line kernel string)."""
    rows: set[int] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.STRING or tok.type in _STRING_PARTS:
                rows.update(range(tok.start[0], tok.end[0]))   # 1-based start+1 .. end
    except (tokenize.TokenError, SyntaxError, ValueError, IndentationError, SystemError):
        pass            # SystemError: Python 3.12's tokenizer on some NUL bytes
    return rows


_STRING_PARTS = {getattr(tokenize, n) for n in ("FSTRING_MIDDLE", "TSTRING_MIDDLE")
                 if hasattr(tokenize, n)}


def _is_magic(text: str) -> bool:
    text = text.rstrip()
    if text.startswith(("%", "!")):
        return True
    # help: `obj?`, `obj??` (a Python line never ends in `?` outside a string/comment)
    return text.endswith("?") and "'" not in text and '"' not in text and "#" not in text


def read_notebook(text: str) -> Notebook:
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise NotNotebook(f"not valid notebook JSON ({exc})") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("cells", None), list):
        raise NotNotebook("not a Jupyter notebook (no `cells` list)")
    if not _is_python(raw):
        raise NotNotebook("not a Python notebook (kernel language "
                          f"{_language(raw)!r}); skipped")
    nb = Notebook(raw=raw, indent=_indent(text))
    row = 1
    parts = []
    for i, cell in enumerate(raw["cells"]):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        src = cell.get("source", "")
        was_list = isinstance(src, list)
        if was_list:
            src = "".join(s for s in src if isinstance(s, str))
        elif not isinstance(src, str):
            continue
        src = src.replace("\r\n", "\n")
        nb.cells.append(i)
        nb.sources.append(src)
        nb.was_list.append(was_list)
        nb.starts.append(row)
        body = blank(src)
        parts.append(body + "\n")
        row += body.count("\n") + 1
    nb.python = "".join(parts)
    return nb


def _language(raw: dict) -> str:
    meta = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {}
    info = meta.get("language_info") if isinstance(meta.get("language_info"), dict) else {}
    lang = info.get("name")
    if not isinstance(lang, str):
        spec = meta.get("kernelspec") if isinstance(meta.get("kernelspec"), dict) else {}
        lang = spec.get("language")
    return lang if isinstance(lang, str) else "python"


def _is_python(raw: dict) -> bool:
    return _language(raw).lower() in ("python", "python3", "ipython", "ipython3")


def _indent(text: str) -> int | None:
    """The JSON's indentation (nbformat writes 1), None for a one-line file."""
    m = re.search(r"\n( +)\S", text)
    return len(m.group(1)) if m else None

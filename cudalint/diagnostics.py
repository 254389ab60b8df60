"""What a rule says (a Finding, in unit coordinates) and what a user sees (a Diagnostic,
in file coordinates, after suppressions)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tree_sitter import Node

SEVERITIES = ("error", "warning", "info")


CELL_KEY = 1_000_000_000        # FileResult.lines keys of a notebook: cell * CELL_KEY + row


@dataclass(frozen=True)
class Edit:
    """Replace ``[start, end)`` with ``content``. Offsets are unit bytes in a Finding's fix
    and file characters in a Diagnostic's fix."""
    start: int
    end: int
    content: str


@dataclass(frozen=True)
class Fix:
    message: str
    edits: tuple[Edit, ...]
    applicability: str = "safe"          # "safe" | "unsafe"

    @property
    def is_safe(self) -> bool:
        return self.applicability == "safe"


@dataclass
class Finding:
    """A rule's report, located in its unit (byte offsets into the unit's UTF-8 text), or
    in its file (``in_file``)."""
    start: int
    end: int
    message: str
    metrics: dict[str, Any] = field(default_factory=dict)
    fix: Fix | None = None
    code: str = ""                        # filled by the engine from the rule
    severity: str | None = None           # None: the rule's configured severity
    # start/end are character offsets in the file, not bytes of the unit: a place outside
    # the unit's text (the Python call that launches an embedded kernel); no fix
    in_file: bool = False

    @classmethod
    def at(cls, node: Node, message: str, **kw: Any) -> "Finding":
        return cls(start=node.start_byte, end=node.end_byte, message=message, **kw)

    @classmethod
    def in_file_at(cls, start: int, end: int, message: str, **kw: Any) -> "Finding":
        """A finding at file characters ``[start, end)`` (see ``in_file``)."""
        return cls(start=start, end=end, message=message, in_file=True, **kw)


@dataclass
class Diagnostic:
    code: str
    name: str
    message: str
    severity: str
    filename: str
    row: int
    column: int
    end_row: int
    end_column: int
    start_offset: int                     # file character offsets, for fixes and excerpts
    end_offset: int
    fix: Fix | None = None                # edits in file character offsets
    metrics: dict[str, Any] = field(default_factory=dict)
    url: str = ""
    suppressed: bool = False              # kept for SARIF's in-source suppressions
    noqa_row: int | None = None           # the file row whose noqa comment applies
    # a notebook's finding: the cell (counted from 1 over all cells, as ruff); rows are
    # then rows of that cell
    cell: int | None = None

    def line_key(self, row: int) -> int:
        """The key of a shown source row in FileResult.lines: the row, or for a notebook
        the cell and the row (rows of different cells never collide)."""
        return row if self.cell is None else self.cell * CELL_KEY + row

    @property
    def where(self) -> str:
        """``row:column``, or ``cell N:row:column`` in a notebook (ruff's form)."""
        cell = "" if self.cell is None else f"cell {self.cell}:"
        return f"{cell}{self.row}:{self.column}"

    def sort_key(self):
        return (self.filename, self.cell or 0, self.row, self.column, self.code, self.message)

    def to_json(self) -> dict[str, Any]:
        fix = None
        if self.fix is not None:
            fix = {
                "applicability": self.fix.applicability,
                "message": self.fix.message,
                "edits": [{"content": e.content, "location": _rc(e.start_rc),
                           "end_location": _rc(e.end_rc)} for e in self.fix_edits_rc],
            }
        cell = {} if self.cell is None else {"cell": self.cell}
        return {
            **cell,
            "code": self.code,
            "name": self.name,
            "message": self.message,
            "severity": self.severity,
            "filename": self.filename,
            "location": {"row": self.row, "column": self.column},
            "end_location": {"row": self.end_row, "column": self.end_column},
            "fix": fix,
            "url": self.url,
            "metrics": self.metrics,
            "noqa_row": self.noqa_row,
        }

    # filled by the engine: fix edits as (row, col) pairs for output formats
    fix_edits_rc: list = field(default_factory=list)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Diagnostic":
        """Inverse of to_json, used by the cache."""
        fix = None
        edits_rc = []
        if data.get("fix"):
            f = data["fix"]
            edits = tuple(Edit(e["start"], e["end"], e["content"]) for e in f["offsets"])
            fix = Fix(f["message"], edits, f["applicability"])
            edits_rc = [_EditRC(e["content"], (e["location"]["row"], e["location"]["column"]),
                                (e["end_location"]["row"], e["end_location"]["column"]))
                        for e in f["edits"]]
        d = cls(code=data["code"], name=data["name"], message=data["message"],
                severity=data["severity"], filename=data["filename"],
                row=data["location"]["row"], column=data["location"]["column"],
                end_row=data["end_location"]["row"], end_column=data["end_location"]["column"],
                start_offset=data["start_offset"], end_offset=data["end_offset"], fix=fix,
                metrics=data.get("metrics", {}), url=data.get("url", ""),
                suppressed=data.get("suppressed", False), noqa_row=data.get("noqa_row"),
                cell=data.get("cell"))
        d.fix_edits_rc = edits_rc
        return d

    def to_cache(self) -> dict[str, Any]:
        data = self.to_json()
        data["start_offset"] = self.start_offset
        data["end_offset"] = self.end_offset
        data["suppressed"] = self.suppressed
        if self.fix is not None:
            data["fix"]["offsets"] = [{"start": e.start, "end": e.end, "content": e.content}
                                      for e in self.fix.edits]
        return data


@dataclass(frozen=True)
class _EditRC:
    content: str
    start_rc: tuple[int, int]
    end_rc: tuple[int, int]


def _rc(rc: tuple[int, int]) -> dict[str, int]:
    return {"row": rc[0], "column": rc[1]}


def edit_rc(content: str, start_rc: tuple[int, int], end_rc: tuple[int, int]) -> _EditRC:
    return _EditRC(content, start_rc, end_rc)

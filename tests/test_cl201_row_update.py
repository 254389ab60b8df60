"""CL201 on an update that walks the thread's own row (sheet-newcorpus4 W1, labelstat:
`out[i] += ...` inside `for (i < nclass)`, under an `if` in an outer loop): every element of
the row is read and written across the loop, so the message is the row walk's, not "of the
1024 bytes a warp moves here, the kernel accesses 128" with records of 8. An update of one
field of real 8-int records keeps the one-field message (fixtures/CL201/row_update.cu)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from cudalint.config import Settings
from cudalint.engine import lint_text

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures/CL201/row_update.cu"


def _messages() -> dict[int, str]:
    s = replace(Settings(), select=("CL201",))
    res = lint_text(str(FIXTURE), FIXTURE.read_text(), s, "cuda")
    return {d.row: d.message for d in res.diagnostics if d.code == "CL201"}


def test_an_update_walking_its_row_is_a_row_walk():
    msg = _messages()[12]
    assert "each thread walks its own row across the loop at line 12" in msg
    assert "the kernel accesses" not in msg and "records of 8" not in msg
    assert "store the rows column-major" in msg


def test_an_update_of_one_field_of_records_keeps_the_field_message():
    msg = _messages()[20]
    assert "of the 1024 bytes a warp moves here, the kernel accesses 128" in msg
    assert "records of 8" in msg and "row" not in msg

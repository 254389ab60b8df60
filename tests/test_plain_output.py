"""The plain console (output that is not a terminal) writes exactly what rich writes there,
for every kind of text a finding can carry."""
from __future__ import annotations

import io
import random

import pytest
from rich.console import Console
from rich.markup import escape as rich_escape

from cudalint.diagnostics import Diagnostic, Edit, Fix
from cudalint.engine import FileResult
from cudalint.output import console as console_mod
from cudalint.output.console import PlainConsole, escape, make_console
from cudalint.output.text import render_concise, render_full, render_statistics

ODD = ["", "plain", "a[i]", "[bold]x[/]", "\\[y]", "x\\", "\\\\[b]", "[link=u]", "[@c]", "[#f]",
       "tab\there", "bell\x07", "cr\rlf", "esc\x1b[31m", "\x7f", "é中😀\u0301\u200d", "a\nb",
       "`__shfl(a[1], 0)`", ":100:", ":smile:", "[*]", "  trailing  ", "\u2028\x85"]


def results(rng: random.Random) -> list:
    out = []
    for i in range(40):
        pick = lambda: "".join(rng.choice(ODD) for _ in range(rng.randint(0, 3)))  # noqa
        name = f"d{i}/{pick()}.cu"
        lines = {r: pick() for r in range(1, 6)}
        diags = []
        for _ in range(rng.randint(0, 3)):
            row = rng.randint(1, 5)
            fix = None if rng.random() < 0.4 else Fix(pick(), (Edit(0, 1, "x"),),
                                                      rng.choice(["safe", "unsafe"]))
            diags.append(Diagnostic(
                "CL" + str(rng.randint(100, 105)), "n", pick(),
                rng.choice(["error", "warning", "info"]), name, row, rng.randint(1, 9),
                min(5, row + rng.randint(0, 2)), rng.randint(1, 9), 0, 1, fix=fix,
                metrics={"k": pick(), "n": rng.randint(0, 9)} if rng.random() < .5 else {}))
        out.append(FileResult(name, diags, lines, 5,
                              error=pick() or None if rng.random() < .1 else None))
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("render", [render_full, render_concise])
def test_plain_equals_rich(seed, render):
    res = results(random.Random(seed))
    for unsafe in (False, True):
        for quiet in (False, True):
            want, got = io.StringIO(), io.StringIO()
            render(res, Console(file=want, highlight=False, soft_wrap=True, emoji=False,
                                force_terminal=False), unsafe_fixes=unsafe, quiet=quiet)
            render(res, PlainConsole(got), unsafe_fixes=unsafe, quiet=quiet)
            assert got.getvalue() == want.getvalue()


def test_statistics_and_messages_through_rich():
    res = results(random.Random(9))
    want, got = io.StringIO(), io.StringIO()
    render_statistics(res, Console(file=want, highlight=False, soft_wrap=True, emoji=False,
                                   force_terminal=False))
    render_statistics(res, PlainConsole(got))
    assert got.getvalue() == want.getvalue() != ""
    for text in ODD + ["Fixed 3 errors.", "[cyan]x[/]"]:
        want, got = io.StringIO(), io.StringIO()
        Console(file=want, highlight=False, soft_wrap=True, emoji=False,
                force_terminal=False).print(text, highlight=False)
        PlainConsole(got).print(text, highlight=False)
        assert got.getvalue() == want.getvalue(), repr(text)


def test_escape_is_richs():
    rng = random.Random(4)
    alphabet = list("ab[]/\\#@*: ") + ["[bold]", "[/]", "\\[", "[link=x]", "\\\\", "]"]
    for _ in range(20000):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 10)))
        assert escape(s) == rich_escape(s)


def test_which_console(monkeypatch):
    buf = io.StringIO()
    assert isinstance(make_console(buf, forced_plain=True), PlainConsole)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)

    class Pipe(io.StringIO):
        def isatty(self):
            return False

    class Tty(io.StringIO):
        def isatty(self):
            return True

    for stream, plain in ((Pipe(), True), (Tty(), False)):
        monkeypatch.setattr(console_mod.sys, "stdout", stream)
        assert isinstance(make_console(stream, forced_plain=False), PlainConsole) == plain
    pipe = Pipe()
    monkeypatch.setattr(console_mod.sys, "stdout", pipe)
    monkeypatch.setenv("FORCE_COLOR", "1")                  # rich decides: colour
    assert not isinstance(make_console(pipe, forced_plain=False), PlainConsole)

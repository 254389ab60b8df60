"""Where the human formats write: rich's Console on a terminal (colour), and for a pipe or
a file a :class:`PlainConsole` that writes what rich would write there, without importing
rich (about a third of a fully cached run went to rich's import and markup parsing).

A line is given as parts (text, or (style, text)); rich gets the markup the formats always
built (``[style]escaped text[/]``). Without a terminal rich drops the styles and prints the
text, except that it strips control characters, expands tabs and unescapes backslashes
before brackets: a line holding any of those goes to rich itself.
"""
from __future__ import annotations

import os
import re
import sys
from typing import Any, TextIO

# what rich changes when it prints plain text (control characters, tabs, backslashes)
_UNSAFE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f\\]")
_TAG = re.compile(r"(\\*)(\[[a-z#/@][^[]*?])")      # rich.markup.escape's pattern


def escape(text: str) -> str:
    """rich.markup.escape, without importing rich."""
    def repl(m: re.Match) -> str:
        backslashes, tag = m.group(1), m.group(2)
        return f"{backslashes}{backslashes}\\{tag}"
    text = _TAG.sub(repl, text)
    if text.endswith("\\") and not text.endswith("\\\\"):
        return text + "\\"
    return text


Part = "str | tuple[str, str]"


def markup(parts) -> str:
    return "".join(escape(p) if isinstance(p, str) else f"[{p[0]}]{escape(p[1])}[/]"
                   for p in parts)


def plain_text(parts) -> str:
    return "".join(p if isinstance(p, str) else p[1] for p in parts)


class PlainConsole:
    """The part of rich's Console the formats use, for output that is not a terminal."""

    is_terminal = False

    def __init__(self, file: TextIO):
        self.file = file
        self._rich = None

    def rich(self):
        """The rich console for what this one does not print itself (tables, odd text)."""
        if self._rich is None:
            from rich.console import Console
            self._rich = Console(file=self.file, highlight=False, soft_wrap=True,
                                 emoji=False, force_terminal=False)
        return self._rich

    def line(self, parts, **kw: Any) -> None:
        text = plain_text(parts)
        if _UNSAFE.search(text):
            self.rich().print(markup(parts), **kw)
        else:
            self.file.write(text + "\n")

    def print(self, *objects: Any, **kw: Any) -> None:
        if not objects:
            self.file.write("\n")
        elif len(objects) == 1 and isinstance(objects[0], str) and "[" not in objects[0] \
                and not _UNSAFE.search(objects[0]) and not kw.get("style"):
            self.file.write(objects[0] + "\n")
        else:
            self.rich().print(*objects, **kw)


def line(console, parts, **kw: Any) -> None:
    """Print one line given as parts on either console."""
    if isinstance(console, PlainConsole):
        console.line(parts, **kw)
    else:
        console.print(markup(parts), **kw)


def plain_possible(stream: TextIO, forced_plain: bool) -> bool:
    """Would rich print without styles here? (Conservative: any variable that rich reads
    to decide, and it decides.)"""
    if forced_plain:
        return True
    if "TTY_COMPATIBLE" in os.environ or "FORCE_COLOR" in os.environ:
        return False
    if stream is not sys.stdout:
        return False
    try:
        return not stream.isatty()
    except (ValueError, AttributeError):
        return False


def make_console(stream: TextIO, forced_plain: bool, color: str = "auto"):
    """cli's console: a PlainConsole where rich would print plain text, else rich's.
    ``--color never`` and NO_COLOR (https://no-color.org, any non-empty value) print no
    styles at all, bold included (rich's own no_color keeps bold); ``--color always``
    styles even a pipe."""
    if color == "always":
        from rich.console import Console
        return Console(file=stream, highlight=False, soft_wrap=True, emoji=False,
                       force_terminal=True)
    if color == "never" or os.environ.get("NO_COLOR") or \
            plain_possible(stream, forced_plain):
        return PlainConsole(stream)
    from rich.console import Console
    return Console(file=stream, highlight=False, soft_wrap=True, emoji=False,
                   force_terminal=False if forced_plain else None)

"""Output formats. Each is a function ``(results, console, **options)`` registered in
FORMATS; the human formats write through :mod:`cudalint.output.console` (rich on a
terminal, plain text otherwise). A format's module is imported when it is used."""
from __future__ import annotations

from importlib import import_module

_WHERE = {
    "full": ("text", "render_full"),
    "concise": ("text", "render_concise"),
    "json": ("machine", "render_json"),
    "json-lines": ("machine", "render_json_lines"),
    "sarif": ("sarif", "render_sarif"),
    "github": ("machine", "render_github"),
    "junit": ("machine", "render_junit"),
    "gitlab": ("review", "render_gitlab"),
    "rdjson": ("review", "render_rdjson"),
}


def _lazy(module: str, name: str):
    def render(*args, **kwargs):
        return getattr(import_module(f"{__name__}.{module}"), name)(*args, **kwargs)
    render.__name__ = name
    return render


FORMATS = {fmt: _lazy(*where) for fmt, where in _WHERE.items()}


def __getattr__(name: str):
    """``from cudalint.output import render_full`` (and the others) still works."""
    for module, attr in _WHERE.values():
        if attr == name:
            return getattr(import_module(f"{__name__}.{module}"), attr)
    if name == "render_statistics":
        from cudalint.output.text import render_statistics
        return render_statistics
    raise AttributeError(name)

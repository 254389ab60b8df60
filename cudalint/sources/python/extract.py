"""CUDA code inside Python strings, read with :mod:`ast` (project code is never run).

:func:`extract_python_units` is the entry: every kernel a Python file hands to a compile
call (:mod:`cudalint.sources.python.calls`), or notes saying why none could be read. A
file that never names a compile API is not parsed at all.
"""
from __future__ import annotations

import ast
import warnings

import re
from functools import lru_cache

from cudalint.sources.python.apis import SIGNAL_WORDS, CompileApi, user_apis
from cudalint.sources.python.calls import Collector
from cudalint.sources.python.modules import wrapper_modules
from cudalint.sources.python.resolve import Extractor
from cudalint.sources.python.units import PythonExtraction

# chainer's wrappers have common last names: the module attribute is the signal
_CHAINER_WORDS = ("cuda.elementwise", "cuda.reduce", "cuda.raw")


@lru_cache(maxsize=16)
def _signals(configured: tuple[str, ...]) -> tuple[tuple[str, ...], re.Pattern]:
    """Words one of which a file must hold to be parsed, and the regex of a call (or an
    aliased import) of one."""
    words = tuple(sorted(set(SIGNAL_WORDS) | set(configured)))
    use = re.compile(r"\b(?:" + "|".join(re.escape(w) for w in words) + r")\s*(?:\(|as\b)"
                     + r"|\bcuda\.(?:elementwise|reduce|raw)\s*\(")
    return words + _CHAINER_WORDS, use


def extract_python_units(text: str, filename: str = "<python>",
                         compile_apis: tuple = ()) -> PythonExtraction:
    """Every CUDA unit held in a Python file. Never raises.

    ``compile_apis``: the ``python-compile-apis`` setting (a project's own wrappers).
    """
    result = PythonExtraction()
    apis: dict[str, CompileApi] = user_apis(compile_apis)
    words, use = _signals(tuple(sorted({q.rsplit(".", 1)[-1] for q in apis})))
    wrappers = {}
    if not any(w in text for w in words) or use.search(text) is None:
        # a call of a compile wrapper the project defines in another of its modules
        wrappers = wrapper_modules(filename, text, words)
        if not wrappers:
            return result
    else:
        wrappers = wrapper_modules(filename, text, words)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")      # invalid escapes in kernel strings
            tree = ast.parse(text, filename=filename)
    except SyntaxError as exc:
        off = 0
        if exc.lineno:
            ex = Extractor(text)
            off = ex.offset(exc.lineno, 0) + max(0, (exc.offset or 1) - 1)
        result.notes.append((min(off, len(text)), f"Python syntax error ({exc.msg}); "
                             "kernel strings in this file were not analysed"))
        return result
    except (ValueError, RecursionError, MemoryError) as exc:
        result.notes.append((0, f"could not parse this Python file ({type(exc).__name__}); "
                             "kernel strings in it were not analysed"))
        return result
    try:
        Collector(text, tree, result, apis, filename, wrappers, words).run()
    except RecursionError:
        result.notes.append((0, "Python expressions nested too deeply; kernel strings in "
                             "this file were not analysed"))
    return result

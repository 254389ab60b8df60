"""CUDA code inside Python strings, read with :mod:`ast` (project code is never run).

:func:`extract_python_units` is the entry: every kernel a Python file hands to a compile
call (:mod:`cudalint.sources.python.calls`), or notes saying why none could be read. A
file that never names a compile API is not parsed at all.
"""
from __future__ import annotations

import ast
import warnings

from cudalint.sources.python.calls import API_USE, API_WORDS, Collector
from cudalint.sources.python.resolve import Extractor
from cudalint.sources.python.units import PythonExtraction


def extract_python_units(text: str, filename: str = "<python>") -> PythonExtraction:
    """Every CUDA unit held in a Python file. Never raises."""
    result = PythonExtraction()
    if not any(w in text for w in API_WORDS) or API_USE.search(text) is None:
        return result
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
        Collector(text, tree, result).run()
    except RecursionError:
        result.notes.append((0, "Python expressions nested too deeply; kernel strings in "
                             "this file were not analysed"))
    return result

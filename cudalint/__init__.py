"""cudalint: a static analyzer for CUDA C++ in Python projects.

The flow, one way (each stage a module or package of its own):

    paths -> discovery -> sources -> parse -> model -> analysis -> rules
          -> diagnostics -> suppressions -> output

* ``discovery``: which files to lint (.gitignore, ``exclude``), and their config.
* ``sources``: a file becomes one or more *units* of CUDA text with a position map back
  to the file (a ``.cu`` file is one unit; a ``.py`` file yields one per kernel string).
* ``parse`` / ``model``: each unit is parsed once with tree-sitter; the model
  (kernels, parameters, shared arrays, launches, constants) is computed lazily once.
* ``analysis``: shared, lazily computed facts that several rules read.
* ``rules`` (the top-level ``rules/`` folder, installed as ``cudalint.rules``): one rule
  per module; a rule receives a :class:`cudalint.context.UnitContext` and yields findings.
* ``engine``: runs the rules, maps positions back to files, applies suppressions.
* ``output``: formats diagnostics (full, concise, json, sarif, github, junit).
"""

__version__ = "0.1.0"
DOCS_URL = "https://github.com/cudalint/cudalint/blob/main/docs/rules.md"


def rule_url(code: str) -> str:
    return f"{DOCS_URL}#{code.lower()}"

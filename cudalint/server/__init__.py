"""``cudalint server``: the language server (stdio), on pygls and lsprotocol.

* Diagnostics are pushed (``textDocument/publishDiagnostics``) after open, change (with a
  debounce) and save, or pulled (``textDocument/diagnostic``) when the client says it can
  pull; never both. Each has ``code``, ``codeDescription.href``, ``source: "cudalint"``
  and an exact range in the negotiated position encoding (UTF-16 code units unless the
  client offers another), inside Python strings too.
* Code actions: every fix of a finding, "cudalint (CODE): Disable for this line" (adds the
  code to the line's ``noqa`` comment or writes one, ``//`` or ``#`` as the spot needs),
  and ``source.fixAll.cudalint`` (the safe fixes, as ``cudalint --fix``).
* Hover on a finding, or on a code in a ``noqa`` comment, shows the rule's documentation.
* Settings: the closest ``pyproject.toml``/``cudalint.toml`` of each file, exactly as the
  command line finds it, with ``initializationOptions`` (or
  ``workspace/didChangeConfiguration``) on top; the text analysed is the editor's buffer.
* Latency: an edit inside a kernel re-analyses that kernel alone (a slice of the file,
  ``cudalint/incremental.py``) and moves the other findings along; the whole file is
  analysed again when the edits pause (``fullDelay``) and replaces the quick result.
* Notebooks (LSP 3.17 notebook documents): the Python cells of a notebook are linted as
  one Python file, as ``cudalint nb.ipynb`` reads it; each finding is published under its
  cell's URI at the cell's own positions, and the features above work inside cells.
* The analysis runs in worker processes (one for whole files, one for edited kernels):
  a rule that loops forever, or a crash that takes a process down, becomes a CL000
  diagnostic and a fresh worker; the server stays up. Every handler is guarded as well.

Modules: ``app`` (the server class and ``serve``), ``handlers`` (the LSP features),
``state`` (open documents, settings per file, analyses), ``notebooks`` (notebook
documents: their cells linted together, findings told per cell), ``incremental`` (an edited
kernel re-analysed alone, then the whole file), ``worker`` (the analysis process and its
time limit), ``options`` (initializationOptions), ``positions`` (offsets <-> LSP
positions, findings as LSP diagnostics, noqa and fix edits).
"""

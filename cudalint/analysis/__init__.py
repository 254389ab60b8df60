"""Analyses: facts computed once per unit on demand and shared by the rules that read them.

One package per family of facts, mirroring ``rules/``:

- ``memory``: which thread reads which address (lane/index engine), sibling accesses to
  one record, how kernels use their pointer parameters, how local arrays are indexed.
  Read by CL201-CL204.
- ``sync``: control flow, thread dependence and the block simulation that finds races,
  divergent barriers and warp-mask mismatches. Read by CL101-CL105.
- ``fp``: floating-point types and contractions (libclang, with a tree-sitter fallback).
  Read by CL402-CL404.
- ``ptxas``: ptxas ``-v`` logs, running ptxas, and the occupancy calculator. Read by
  CL301-CL303.

Rules reach an analysis through ``ctx.analysis(Class)``, which memoises it per unit. The
families do not import each other (an import-linter contract checks it): a fact two
families need belongs to ``model`` or ``project``.
"""

"""Floating-point facts: where float code is promoted to double, and which expressions
nvcc may contract to an FMA whose rounding a careful algorithm depends on.

- ``fpfilter``: a byte-level prefilter that decides which functions need libclang at all.
- ``fptypes``: libclang over a CUDA shim gives the types (FP64 promotions, contractions).
- ``fptypes_ts``: the tree-sitter fallback when libclang is missing or refuses the unit.

Read by CL402 (contraction) and CL403 (FP64 promotion).
"""

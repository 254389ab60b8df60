"""Floating-point facts: where float code is promoted to double, and which expressions
nvcc may contract to an FMA whose rounding a careful algorithm depends on.

- ``fpfilter``: a byte-level prefilter that decides which functions need libclang at all.
- ``contraction_shapes``: the `-` signs the prefilter keeps as CL402 candidates (a
  difference of products with its sign tested, an error term), from the tree-sitter tree.
- ``clang_session``: the libclang session -- CUDA shim, index, parse of one unit, and the
  guards (stack size, `<` chains) that keep a parse from crashing or running away.
- ``fptypes``: the walk of libclang's tree gives the types (FP64 promotions, contractions).
- ``fptypes_ts``: the tree-sitter fallback when libclang is missing or refuses the unit.
- ``facts``: what the analysis reports, whichever engine computed it.
- ``fast_math_ops``: the operations of the code a build compiles that fast math moves far
  from the IEEE result (``sinf`` without range reduction, ``__powf`` of a negative base,
  ``tanh.approx``, ``__fdividef`` by a huge constant, a subnormal epsilon under -ftz), a
  lexical scan of the build's CUDA files or kernel string.

Read by CL401 (fast-math flags), CL402 (contraction) and CL403 (FP64 promotion).
"""

"""Project: facts that cross files, between the sources and the per-unit model.

A unit alone does not say which headers it includes, which constants those headers define,
or which build file compiles it with which nvcc flags. This layer reads those facts once per
run (memoised by file signature) and hands them to the model and the analyses:

- ``includes``: the project headers a file includes (quoted includes, relative to the
  includer), the integer constants they define, and the digest the result cache keys on.
- ``build``: one compilation description (its flags with their offsets, its sources).
- ``build_python``, ``build_cmake``, ``build_toml``, ``build_make``: the readers of
  setup.py, torch ``load``/``load_inline``, CuPy and PyCUDA calls; of CMakeLists.txt; of
  pyproject.toml; of GNU Makefiles. Read by CL401 (Makefiles by CL401 only: they are not
  among the build files ``buildflags`` looks up for a unit).
- ``buildflags``: the build files that apply to a source file, the nvcc settings of a
  unit, and the build files' digest. Read by CL402/CL404 and the runner (the digest keys
  the result cache); CL401 takes its pre-check words from it.
- ``targets``: the GPU architectures a unit is compiled for (the ``arch`` setting, the
  compile call's options, ``-arch``/``-gencode`` and the CMake/PyTorch architecture lists
  of its build files, else sm_80 and newer). Read by CL203 and CL403.
- ``nvcc_flags``: what a list of nvcc words means for floating point (-ftz, -prec-div,
  -prec-sqrt, --use_fast_math, --fmad) and for ptxas.

- ``index``: the project index (kernels, launches, macros and constants across files),
  with ``launch_text``: what a launch needs from its host function's text (the block's
  declaration, function pointers, the call's arguments), and ``header_functions``: the
  ``__device__`` functions of project headers that a file calls, appended to its unit
  (``Unit.spliced``) so that the lane and race analyses follow the call as nvcc
  inlines it; findings on them are told at the call (CL201, CL202) or not at all.

It may import ``model``, ``sources`` and ``parse``; never ``analysis`` or anything above.
"""

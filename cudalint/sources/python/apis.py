"""The Python calls that compile CUDA: one table, and which argument holds what.

Each :class:`CompileApi` names, for one qualified callable, the argument that holds the
CUDA source (for the snippet APIs, the operation), the kernel name, the preamble, the
compiler options and RawModule's ``name_expressions``, plus how the text is built from
them (``form``) and who picks the block size of its launches (``launch``). An argument
is an :class:`Arg`: a position, a keyword, or both (the keyword wins when given).

A project declares its own wrappers with the ``python-compile-apis`` setting
(:func:`user_apis` turns each entry into a :class:`CompileApi`); the built-in entries
are :data:`BUILTIN`.

Block sizes the library fixes (``launch = "library"``), read from CuPy 15.0.0a1:

* ``ElementwiseKernel``: ``block_size = kwargs.pop('block_size', 128)``
  (cupy/_core/_kernel.pyx:864), handed to ``linear_launch(..., block_max_size=
  block_size)`` (cupy/_core/_kernel.pyx:933-934), which launches
  ``blockx = min(block_max_size, size)`` threads (cupy/cuda/function.pyx:159): 128
  threads for any array of 128 elements or more.
* ``ReductionKernel``: ``_default_block_size = 256 if runtime._is_hip_environment else
  512`` (cupy/_core/_reduction.pyx:232-233): 512 threads on CUDA.

PyCUDA 2026.1: ``ReductionKernel`` fixes ``self.block_size = 512``
(pycuda/reduction.py:227) and its stage-1 loop reads ``i = blockIdx.x*BLOCK_SIZE*
seq_count + tid`` (pycuda/reduction.py:103), consecutive threads on consecutive
elements as in the snippet wrapper; ``ElementwiseKernel`` takes its block from
``gpuarray._splay_backend`` (pycuda/gpuarray.py:111-140): 32 to 128 threads depending
on the array's size, so no block is assumed for it.
"""
from __future__ import annotations

from dataclasses import dataclass

# forms: how the CUDA text is built from the arguments
CODE = "code"                     # one string holds a translation unit
SOURCES = "sources"               # a string or a list of strings (torch load_inline)
CUPY_ELEMENTWISE = "cupy-elementwise"
CUPY_REDUCTION = "cupy-reduction"
PYCUDA_ELEMENTWISE = "pycuda-elementwise"
PYCUDA_REDUCTION = "pycuda-reduction"
PYCUDA_SCAN = "pycuda-scan"
FORMS = (CODE, SOURCES, CUPY_ELEMENTWISE, CUPY_REDUCTION, PYCUDA_ELEMENTWISE,
         PYCUDA_REDUCTION, PYCUDA_SCAN)

# launch conventions of what the call returns
CUPY_LAUNCH = "cupy"              # k(grid, block, args, shared_mem=...)
PYCUDA_LAUNCH = "pycuda"          # f(*args, block=..., grid=..., shared=...)
LIBRARY_LAUNCH = "library"        # the library launches it (block size below)
LAUNCHES = (CUPY_LAUNCH, PYCUDA_LAUNCH, LIBRARY_LAUNCH)

ELEMENTWISE_BLOCK = 128           # cupy/_core/_kernel.pyx:864, cupy/cuda/function.pyx:159
REDUCTION_BLOCK = 512             # cupy/_core/_reduction.pyx:232-233 (CUDA, not HIP)
PYCUDA_REDUCTION_BLOCK = 512      # pycuda/reduction.py:227


@dataclass(frozen=True)
class Arg:
    pos: int | None = None
    kw: str | None = None


@dataclass(frozen=True)
class CompileApi:
    label: str                          # what a unit is called: "cupy.RawKernel"
    form: str = CODE
    source: Arg | None = None
    name: Arg | None = None
    preamble: Arg | None = None
    options: Arg | None = None
    name_expressions: Arg | None = None
    launch: str = CUPY_LAUNCH
    block: int | None = None            # block size the library launches with
    default_name: str | None = None
    no_extern_c: Arg | None = None


_RAW = CompileApi("cupy.RawKernel", CODE, Arg(0, "code"), Arg(1, "name"),
                  options=Arg(2, "options"))
_MODULE = CompileApi("cupy.RawModule", CODE, Arg(None, "code"), options=Arg(None, "options"),
                     name_expressions=Arg(None, "name_expressions"))
_COMPILE_WITH_CACHE = CompileApi("cupy.cuda.compile_with_cache", CODE, Arg(0, "source"),
                                 options=Arg(1, "options"))
_ELEMENTWISE = CompileApi("cupy.ElementwiseKernel", CUPY_ELEMENTWISE, Arg(2, "operation"),
                          Arg(3, "name"), Arg(5, "preamble"), Arg(None, "options"),
                          launch=LIBRARY_LAUNCH, block=ELEMENTWISE_BLOCK,
                          default_name="kernel")
_REDUCTION = CompileApi("cupy.ReductionKernel", CUPY_REDUCTION, Arg(2, "map_expr"),
                        Arg(6, "name"), Arg(9, "preamble"), Arg(10, "options"),
                        launch=LIBRARY_LAUNCH, block=REDUCTION_BLOCK,
                        default_name="reduce_kernel")
# chainer.backends.cuda: elementwise(in_params, out_params, operation, name, **kwargs),
# reduce(in_params, out_params, map_expr, reduce_expr, post_map_expr, identity, name,
# **kwargs) and raw(code, name, *args, **kwargs) build the CuPy kernels above
_CHAINER_ELEMENTWISE = CompileApi("chainer.cuda.elementwise", CUPY_ELEMENTWISE,
                                  Arg(2, "operation"), Arg(3, "name"),
                                  Arg(None, "preamble"), Arg(None, "options"),
                                  launch=LIBRARY_LAUNCH, block=ELEMENTWISE_BLOCK,
                                  default_name="kernel")
_CHAINER_REDUCE = CompileApi("chainer.cuda.reduce", CUPY_REDUCTION, Arg(2, "map_expr"),
                             Arg(6, "name"), Arg(None, "preamble"), Arg(None, "options"),
                             launch=LIBRARY_LAUNCH, block=REDUCTION_BLOCK,
                             default_name="reduce_kernel")
_CHAINER_RAW = CompileApi("chainer.cuda.raw", CODE, Arg(0, "code"), Arg(1, "name"),
                          options=Arg(2, "options"))
_SOURCE_MODULE = CompileApi("pycuda.SourceModule", CODE, Arg(0, "source"),
                            options=Arg(2, "options"), launch=PYCUDA_LAUNCH,
                            no_extern_c=Arg(4, "no_extern_c"))
_PYCUDA_ELEMENTWISE = CompileApi("pycuda.ElementwiseKernel", PYCUDA_ELEMENTWISE,
                                 Arg(1, "operation"), Arg(2, "name"), Arg(None, "preamble"),
                                 Arg(4, "options"), launch=LIBRARY_LAUNCH,
                                 default_name="kernel")
_PYCUDA_REDUCTION = CompileApi("pycuda.ReductionKernel", PYCUDA_REDUCTION,
                               Arg(2, "reduce_expr"), Arg(5, "name"), Arg(8, "preamble"),
                               Arg(7, "options"), launch=LIBRARY_LAUNCH,
                               block=PYCUDA_REDUCTION_BLOCK, default_name="reduce_kernel")
_PYCUDA_SCAN = CompileApi("pycuda.scan", PYCUDA_SCAN, Arg(1, "scan_expr"),
                          Arg(3, "name_prefix"), Arg(5, "preamble"), Arg(4, "options"),
                          launch=LIBRARY_LAUNCH, default_name="scan")
_LOAD_INLINE = CompileApi("torch.load_inline", SOURCES, Arg(2, "cuda_sources"),
                          Arg(0, "name"), options=Arg(5, "extra_cuda_cflags"),
                          launch=LIBRARY_LAUNCH)


def _each(names: str, api: CompileApi) -> dict[str, CompileApi]:
    return {n: api for n in names.split()}


# CuPy reached through older paths (cupy.core before v9) and through chainer's
# ``cuda.cupy`` (the cupy module itself)
_CUPY_BASES = ("cupy", "cupy._core", "cupy.core", "chainer.cuda.cupy",
               "chainer.backends.cuda.cupy")


def _cupy(name: str, *extra: str) -> str:
    return " ".join([f"{b}.{name}" for b in _CUPY_BASES] + list(extra))


BUILTIN: dict[str, CompileApi] = {
    **_each(_cupy("RawKernel", "cupy._core.raw.RawKernel", "cupy.cuda.RawKernel"), _RAW),
    **_each(_cupy("RawModule", "cupy._core.raw.RawModule", "cupy.cuda.RawModule"),
            _MODULE),
    **_each("cupy.cuda.compile_with_cache cupy.cuda.compiler.compile_with_cache "
            "cupy._core.core.compile_with_cache chainer.cuda.cupy.cuda.compile_with_cache "
            "chainer.backends.cuda.cupy.cuda.compile_with_cache",
            _COMPILE_WITH_CACHE),
    **_each(_cupy("ElementwiseKernel", "cupy._core._kernel.ElementwiseKernel",
                  "cupy.core.core.ElementwiseKernel"), _ELEMENTWISE),
    **_each(_cupy("ReductionKernel", "cupy._core._reduction.ReductionKernel",
                  "cupy.core.core.ReductionKernel"), _REDUCTION),
    **_each("chainer.cuda.elementwise chainer.backends.cuda.elementwise",
            _CHAINER_ELEMENTWISE),
    **_each("chainer.cuda.reduce chainer.backends.cuda.reduce", _CHAINER_REDUCE),
    **_each("chainer.cuda.raw chainer.backends.cuda.raw", _CHAINER_RAW),
    **_each("pycuda.compiler.SourceModule pycuda.compiler.DynamicSourceModule",
            _SOURCE_MODULE),
    **_each("pycuda.elementwise.ElementwiseKernel", _PYCUDA_ELEMENTWISE),
    **_each("pycuda.reduction.ReductionKernel", _PYCUDA_REDUCTION),
    **_each("pycuda.scan.InclusiveScanKernel pycuda.scan.ExclusiveScanKernel",
            _PYCUDA_SCAN),
    **_each("torch.utils.cpp_extension.load_inline", _LOAD_INLINE),
}

# The last name of every built-in API: a file that names none of them (nor a configured
# wrapper) is not parsed.
BUILTIN_WORDS = frozenset(q.rsplit(".", 1)[-1] for q in BUILTIN)
# names too common to decide on their own that a file compiles CUDA
_COMMON = frozenset({"reduce", "raw", "elementwise"})
SIGNAL_WORDS = tuple(sorted(BUILTIN_WORDS - _COMMON))


def _arg(value) -> Arg | None:
    if value is None:
        return None
    if isinstance(value, int):
        return Arg(value, None)
    if isinstance(value, str):
        return Arg(None, value)
    pos, kw = value
    return Arg(pos, kw)


def user_apis(entries) -> dict[str, CompileApi]:
    """The ``python-compile-apis`` setting (validated by cudalint.config) as table rows.

    ``entries``: ((qualified name, ((field, value), ...)), ...), value an int position,
    a str keyword or a (position, keyword) pair; ``form`` and ``launch`` are strings.
    """
    out: dict[str, CompileApi] = {}
    for qualname, fields in entries or ():
        f = dict(fields)
        out[qualname] = CompileApi(
            label=qualname, form=f.get("form", CODE), source=_arg(f.get("source", (0, None))),
            name=_arg(f.get("name")), preamble=_arg(f.get("preamble")),
            options=_arg(f.get("options")), name_expressions=_arg(f.get("name-expressions")),
            launch=f.get("launch", CUPY_LAUNCH), block=f.get("block"))
    return out

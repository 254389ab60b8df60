"""CUDA snippets the libraries wrap into kernels: the kernel cudalint parses in their place.

CuPy's ``ElementwiseKernel`` / ``ReductionKernel`` (and chainer's ``cuda.elementwise`` /
``cuda.reduce``), PyCUDA's ``ElementwiseKernel``, ``ReductionKernel`` and scan kernels
take an operation, a map or a reduce expression, not a kernel. Each is wrapped in a
synthetic kernel shaped as the library's own template (a grid-stride loop over ``i``,
consecutive threads on consecutive elements), with the snippets, the preamble and, for
PyCUDA, the C parameter list mapped back to the file. Parameter lists CuPy writes as
``'T x, raw float32 y'`` become C parameters (type placeholders become template
parameters; a part known only at run time is left out). A snippet that is not known gives None, with a reason (``ex.fail``).
"""
from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from cudalint.sources.python.apis import CompileApi
from cudalint.sources.python.flow import expression_origin
from cudalint.sources.python.mapping import MStr
from cudalint.sources.python.units import OPAQUE_PREFIX

if TYPE_CHECKING:
    from cudalint.sources.python.resolve import Extractor

_DTYPES = {
    "bool": "bool", "int8": "signed char", "uint8": "unsigned char", "int16": "short",
    "uint16": "unsigned short", "int32": "int", "uint32": "unsigned int",
    "int64": "long long", "uint64": "unsigned long long", "float16": "half",
    "float32": "float", "float64": "double", "complex64": "complex<float>",
    "complex128": "complex<double>", "float": "float", "double": "double", "int": "int",
}
_OPAQUE_PART = re.compile(r"^\s*" + re.escape(OPAQUE_PREFIX) + r"\d+__\s*$")
_PARAM_RE = re.compile(r"^\s*(raw\s+)?([A-Za-z_][\w:<>]*)\s+([A-Za-z_]\w*)\s*$")


def _params(spec: str, out: bool, typenames: list[str]) -> list[str] | None:
    if not spec.strip():
        return []
    decls = []
    for part in spec.split(","):
        if _OPAQUE_PART.match(part):
            continue        # parameters known only at run time: not declared, not guessed
        m = _PARAM_RE.match(part)
        if m is None:
            return None
        raw, ty, name = m.group(1), m.group(2), m.group(3)
        cty = _DTYPES.get(ty)
        if cty is None:
            cty = ty
            if ty not in typenames:
                typenames.append(ty)
        if raw:
            decls.append(f"{cty}* {name}")
        elif out:
            decls.append(f"{cty}& {name}")
        else:
            decls.append(f"const {cty} {name}")
    return decls


def _wrap(parts: list[tuple[str, MStr | None]]) -> MStr:
    out = MStr()
    for synthetic, real in parts:
        if synthetic:
            out = out + MStr.synthetic(synthetic)
        if real is not None:
            out = out + real
    return out


def arg(call: ast.Call, pos: int | None, kw: str | None) -> ast.expr | None:
    for k in call.keywords:
        if kw is not None and k.arg == kw:
            return k.value
    if pos is not None and pos < len(call.args) and not any(
            isinstance(a, ast.Starred) for a in call.args[:pos + 1]):
        return call.args[pos]
    return None


class Snippets:
    """The snippet forms of :class:`~cudalint.sources.python.calls.Collector`."""

    ex: "Extractor"

    def _text(self, call, pos, kw, scope, what: str, required: bool = True) -> MStr | None:
        e = arg(call, pos, kw)
        if e is None:
            if required:
                self.ex.fail(f"no {what} argument")
            return None
        return self.ex.string(e, scope)

    def _const(self, call, pos, kw, scope, what: str) -> str | None:
        """A string argument whose value matters but whose place does not (parameter
        lists): followed as a source is (joins, helpers, branches), text only."""
        e = arg(call, pos, kw)
        v = self.ex.string(e, scope) if e is not None else None
        if v is None:
            self.ex.fail(f"the {what} is not a string known without running the program")
            return None
        return v.text

    def _name(self, call, api: CompileApi, scope) -> str:
        e = arg(call, api.name.pos, api.name.kw) if api.name else None
        v = self.ex.const(e, scope) if e is not None else None
        return v if isinstance(v, str) and v.isidentifier() else (api.default_name or "kernel")

    def _preamble(self, call, api: CompileApi, scope) -> MStr | None:
        if api.preamble is None:
            return None
        e = arg(call, api.preamble.pos, api.preamble.kw)
        return self.ex.string(e, scope) if e is not None else None

    def cupy_elementwise(self, call: ast.Call, api: CompileApi, scope) -> MStr | None:
        ins = self._const(call, 0, "in_params", scope, "input parameter list")
        outs = self._const(call, 1, "out_params", scope, "output parameter list")
        op = self._text(call, api.source.pos, api.source.kw, scope, "operation") \
            if api.source else None
        if ins is None or outs is None or op is None:
            return None
        typenames: list[str] = []
        pin, pout = _params(ins, False, typenames), _params(outs, True, typenames)
        if pin is None or pout is None:
            self.ex.fail("a parameter list CuPy would reject")
            return None
        prep = self._text(call, None, "loop_prep", scope, "", False)
        after = self._text(call, None, "after_loop", scope, "", False)
        template = "template <" + ", ".join(f"typename {t}" for t in typenames) + ">\n" \
            if typenames else ""
        linkage = template or 'extern "C" '      # templates cannot have C linkage
        head = (f'\n{linkage}__global__ void {self._name(call, api, scope)}'
                f'({", ".join(pin + pout + ["long long _ind_size"])}) {{\n')
        return _wrap([("", self._preamble(call, api, scope)), (head, prep),
                      ("\nfor (long long i = blockIdx.x * blockDim.x + threadIdx.x; "
                       "i < _ind_size; i += blockDim.x * gridDim.x) {\n", op),
                      (";\n}\n", after), ("\n}\n", None)])

    def cupy_reduction(self, call: ast.Call, api: CompileApi, scope) -> MStr | None:
        ins = self._const(call, 0, "in_params", scope, "input parameter list")
        outs = self._const(call, 1, "out_params", scope, "output parameter list")
        exprs = [self._text(call, pos, kw, scope, kw)
                 for pos, kw in ((2, "map_expr"), (3, "reduce_expr"), (4, "post_map_expr"))]
        if ins is None or outs is None or None in exprs:
            return None
        typenames: list[str] = []
        pin, pout = _params(ins, False, typenames), _params(outs, True, typenames)
        if pin is None or pout is None:
            self.ex.fail("a parameter list CuPy would reject")
            return None
        typenames.append("_type_reduce")
        template = "template <" + ", ".join(f"typename {t}" for t in typenames) + ">\n"
        head = (f'\n{template}__global__ void {self._name(call, api, scope)}'
                f'({", ".join(pin + pout + ["long long _in_ind_size"])}) {{\n'
                "long long i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                "_type_reduce _m = (_type_reduce)(")
        return _wrap([("", self._preamble(call, api, scope)), (head, exprs[0]),
                      (");\n_type_reduce a = _m, b = _m;\na = (_type_reduce)(", exprs[1]),
                      (");\n{\n", exprs[2]), (";\n}\n}\n", None)])

    def _ctype(self, e: ast.expr | None, scope) -> str:
        """The C type of a numpy dtype argument (``np.float32``, ``"float32"``)."""
        if e is None:
            return self.ex.opaque.token("<dtype>").text
        q = self.ex.qualname(e) or ""
        v = self.ex.const(e, scope)
        key = q.rsplit(".", 1)[-1] if q.startswith("numpy.") else v if isinstance(v, str) \
            else None
        ty = _DTYPES.get(key or "")
        return ty.replace("complex<", "pycuda::complex<") if ty else \
            self.ex.opaque.token(expression_origin(e)).text

    def pycuda_elementwise(self, call: ast.Call, api: CompileApi, scope) -> MStr | None:
        args = self._text(call, 0, "arguments", scope, "argument list (a C string)")
        op = self._text(call, api.source.pos, api.source.kw, scope, "operation") \
            if api.source and args is not None else None
        if args is None or op is None:
            return None
        prep = self._text(call, None, "loop_prep", scope, "", False)
        after = self._text(call, None, "after_loop", scope, "", False)
        # pycuda/elementwise.py get_elwise_module: the template PyCUDA compiles
        head = (f'\nextern "C" __global__ void {self._name(call, api, scope)}(')
        return _wrap([("", self._preamble(call, api, scope)), (head, args),
                      (", unsigned long n) {\nsize_t tid = threadIdx.x;\n"
                       "size_t total_threads = gridDim.x*blockDim.x;\n"
                       "size_t cta_start = blockDim.x*blockIdx.x;\nsize_t i;\n", prep),
                      (";\nfor (i = cta_start + tid; i < n; i += total_threads) {\n", op),
                      (";\n}\n", after), (";\n}\n", None)])

    def pycuda_reduction(self, call: ast.Call, api: CompileApi, scope) -> MStr | None:
        red = self._text(call, 2, "reduce_expr", scope, "reduce expression")
        mp = self._text(call, 3, "map_expr", scope, "", False)
        args = self._text(call, 4, "arguments", scope, "", False)
        if red is None:
            return None
        if arg(call, 3, "map_expr") is not None and mp is None or \
                arg(call, 4, "arguments") is not None and args is None:
            return None
        out_type = self._ctype(arg(call, 0, "dtype_out"), scope)
        neutral = self._text(call, 1, "neutral", scope, "", False)
        # pycuda/reduction.py get_reduction_module, stage 1 (BLOCK_SIZE = blockDim.x)
        head = (f"\ntypedef {out_type} out_type;\n"
                f'extern "C" __global__ void {self._name(call, api, scope)}_stage1('
                "out_type *out, ")
        return _wrap([("", self._preamble(call, api, scope)), (head, args),
                      (("" if args is None else ", ") + "unsigned int seq_count, size_t n) {\n"
                       "unsigned int tid = threadIdx.x;\n"
                       "size_t i = blockIdx.x*blockDim.x*seq_count + tid;\n"
                       "out_type acc = (", neutral),
                      (");\nfor (unsigned s = 0; s < seq_count; ++s) {\nif (i >= n) break;\n"
                       "out_type a = acc, b = (", mp if mp is not None else
                       MStr.synthetic("in[i]")),
                      (");\nacc = (", red), (");\ni += blockDim.x;\n}\nout[blockIdx.x] = acc;\n}\n",
                                             None)])

    def pycuda_scan(self, call: ast.Call, api: CompileApi, scope) -> MStr | None:
        scan = self._text(call, api.source.pos, api.source.kw, scope, "scan expression") \
            if api.source else None
        if scan is None:
            return None
        ty = self._ctype(arg(call, 0, "dtype"), scope)
        head = (f"\ntypedef {ty} scan_type;\n"
                f'extern "C" __global__ void {self._name(call, api, scope)}_scan('
                "scan_type *x, unsigned int n) {\n"
                "unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                "if (i + 1 < n) {\nscan_type a = x[i], b = x[i + 1];\nx[i + 1] = (")
        return _wrap([("", self._preamble(call, api, scope)), (head, scan),
                      (");\n}\n}\n", None)])

"""Which Python calls compile CUDA, and which of their arguments hold the code, the
kernel name and the compiler options.

Recognised calls (imports may be aliased, ``import cupy as cp``, ``from cupy import
RawKernel as RK``):

* CuPy ``RawKernel(code, name, options)``, ``RawModule(code=..., options=...)``,
  ``ElementwiseKernel(in_params, out_params, operation, name, ..., preamble=...)`` and
  ``ReductionKernel(...)`` (snippets wrapped in a synthetic kernel so they parse);
* PyCUDA ``SourceModule(source, options=[...], no_extern_c=...)``;
* torch ``torch.utils.cpp_extension.load_inline(name, cpp_sources, cuda_sources=...)``.

:class:`Collector` finds them and resolves their arguments
(:mod:`cudalint.sources.python.resolve`); the launches of the kernels it found are read
by its base, :class:`~cudalint.sources.python.launches.LaunchReader`.
"""
from __future__ import annotations

import ast
import bisect
import re

from cudalint.sources.python.launches import LaunchReader
from cudalint.sources.python.mapping import MStr
from cudalint.sources.python.resolve import Extractor, Scope
from cudalint.sources.python.units import EmbeddedKernel, PyOption, PythonExtraction

# A file without one of these words holds no kernel we know: skip ast.parse entirely.
API_WORDS = ("RawKernel", "RawModule", "ElementwiseKernel", "ReductionKernel",
             "SourceModule", "load_inline")
# ...and one that never calls them (or imports them under another name) neither.
API_USE = re.compile(r"\b(?:RawKernel|RawModule|ElementwiseKernel|ReductionKernel|"
                     r"SourceModule|load_inline)\s*(?:\(|as\b)")

_CUPY_RAW = {"cupy.RawKernel", "cupy._core.raw.RawKernel", "cupy.cuda.RawKernel"}
_CUPY_MODULE = {"cupy.RawModule", "cupy._core.raw.RawModule", "cupy.cuda.RawModule"}
_CUPY_ELEMENTWISE = {"cupy.ElementwiseKernel", "cupy._core._kernel.ElementwiseKernel"}
_CUPY_REDUCTION = {"cupy.ReductionKernel", "cupy._core._reduction.ReductionKernel"}
_PYCUDA = {"pycuda.compiler.SourceModule", "pycuda.compiler.DynamicSourceModule"}
_TORCH = {"torch.utils.cpp_extension.load_inline"}
_API_QUALNAMES = {
    **{q: "cupy.RawKernel" for q in _CUPY_RAW}, **{q: "cupy.RawModule" for q in _CUPY_MODULE},
    **{q: "cupy.ElementwiseKernel" for q in _CUPY_ELEMENTWISE},
    **{q: "cupy.ReductionKernel" for q in _CUPY_REDUCTION},
    **{q: "pycuda.SourceModule" for q in _PYCUDA}, **{q: "torch.load_inline" for q in _TORCH},
}
_COMPOUND_BODIES = ("body", "orelse", "finalbody")
_HEADER_FIELDS = ("test", "iter", "target", "items", "subject", "value", "targets")


# ---------------------------------------------------------------------------------------
# ElementwiseKernel / ReductionKernel wrappers

_DTYPES = {
    "bool": "bool", "int8": "signed char", "uint8": "unsigned char", "int16": "short",
    "uint16": "unsigned short", "int32": "int", "uint32": "unsigned int",
    "int64": "long long", "uint64": "unsigned long long", "float16": "half",
    "float32": "float", "float64": "double", "complex64": "complex<float>",
    "complex128": "complex<double>", "float": "float", "double": "double", "int": "int",
}
_PARAM_RE = re.compile(r"^\s*(raw\s+)?([A-Za-z_][\w:<>]*)\s+([A-Za-z_]\w*)\s*$")


def _params(spec: str, out: bool, typenames: list[str]) -> list[str] | None:
    if not spec.strip():
        return []
    decls = []
    for part in spec.split(","):
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


class Collector(LaunchReader):
    """Finds the API calls and their launches without visiting every expression.

    Statements are walked (cheap); the expressions of a statement are walked only when
    the statement's lines mention an API name, an alias of one, or a kernel handle.
    """

    def __init__(self, text: str, tree: ast.Module, result: PythonExtraction):
        self.ex = Extractor(text)
        self.text = text
        self.tree = tree
        self.result = result
        self.calls: list[tuple[ast.Call, str, Scope | None]] = []
        # (statement or header expression, scope) whose expressions may hold calls
        self.pending: list[tuple[ast.AST, Scope]] = []

    def run(self) -> None:
        module = Scope(self.tree, None)
        self.statements(self.tree.body, module)
        api_names = {a for a, q in self.ex.aliases.items() if q in _API_QUALNAMES}
        if not api_names and not any(q.split(".")[0] in ("cupy", "pycuda", "torch")
                                     for q in self.ex.aliases.values()):
            return
        words = set(api_names) | {q.rsplit(".", 1)[-1] for q in _API_QUALNAMES}
        hot = self.lines_matching(words)
        for node, scope in self.pending:
            if self.touches(node, hot):
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Call):
                        api = _API_QUALNAMES.get(self.ex.qualname(sub.func) or "")
                        if api is not None:
                            self.calls.append((sub, api, scope))
        self.calls.sort(key=lambda c: (c[0].lineno, c[0].col_offset))
        for call, api, scope in self.calls:
            self.result.kernels.extend(self.kernels_of(call, api, scope))
        self.attach_launches()

    # -- walking ------------------------------------------------------------------------

    def statements(self, body: list, scope: Scope) -> None:
        for st in body:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.statements(st.body, Scope(st, scope))
                continue
            if isinstance(st, ast.Import):
                for a in st.names:
                    if a.asname:
                        self.ex.aliases[a.asname] = a.name
                    else:
                        top = a.name.split(".")[0]
                        self.ex.aliases[top] = top
                continue
            if isinstance(st, ast.ImportFrom):
                if st.module and st.level == 0:
                    for a in st.names:
                        if a.name != "*":
                            self.ex.aliases[a.asname or a.name] = f"{st.module}.{a.name}"
                continue
            bodies = [getattr(st, f) for f in _COMPOUND_BODIES
                      if isinstance(getattr(st, f, None), list)]
            bodies += [h.body for h in getattr(st, "handlers", None) or []]
            bodies += [c.body for c in getattr(st, "cases", None) or []]
            if not bodies:
                self.pending.append((st, scope))
                continue
            for f in _HEADER_FIELDS:
                v = getattr(st, f, None)
                for e in (v if isinstance(v, list) else [v]):
                    if isinstance(e, ast.AST):
                        self.pending.append((e, scope))
            for b in bodies:
                self.statements(b, scope)

    def lines_matching(self, words: set[str]) -> set[int]:
        if not words:
            return set()
        rx = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(words))) + r")\b")
        starts = self.ex.line_starts
        return {bisect.bisect_right(starts, m.start()) for m in rx.finditer(self.text)}

    @staticmethod
    def touches(node: ast.AST, lines: set[int]) -> bool:
        first = getattr(node, "lineno", None)
        if first is None:
            return True
        last = getattr(node, "end_lineno", first) or first
        if last - first > 64:
            return any(first <= ln <= last for ln in lines)
        return any(ln in lines for ln in range(first, last + 1))

    # -- arguments ----------------------------------------------------------------------

    @staticmethod
    def arg(call: ast.Call, pos: int | None, kw: str) -> ast.expr | None:
        for k in call.keywords:
            if k.arg == kw:
                return k.value
        if pos is not None and pos < len(call.args) and not any(
                isinstance(a, ast.Starred) for a in call.args[:pos + 1]):
            return call.args[pos]
        return None

    def options(self, expr: ast.expr | None, scope) -> tuple[list[PyOption], bool]:
        if expr is None:
            return [], False
        if isinstance(expr, ast.Name):
            found = self.ex.lookup(expr.id, scope, expr.lineno, 0)
            if found is None or len(found[1]) != 1:
                return [], True
            return self.options(found[1][0].value, found[0])
        if isinstance(expr, ast.Constant) and expr.value is None:
            return [], False
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            s, e = self.ex.span(expr)
            return [PyOption(expr.value, s, e)], False
        if isinstance(expr, (ast.List, ast.Tuple)):
            out: list[PyOption] = []
            opaque = False
            for el in expr.elts:
                v = self.ex.const(el, scope)
                if isinstance(v, str):
                    s, e = self.ex.span(el)
                    out.append(PyOption(v, s, e))
                else:
                    opaque = True
            return out, opaque
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            a, oa = self.options(expr.left, scope)
            b, ob = self.options(expr.right, scope)
            return a + b, oa or ob
        return [], True

    def kernels_of(self, call: ast.Call, api: str, scope) -> list[EmbeddedKernel]:
        ex = self.ex
        cs, ce = ex.span(call)
        name = None
        pieces: list[MStr] = []
        opts_expr = None
        no_extern_c = False
        if api == "cupy.RawKernel":
            code = self.arg(call, 0, "code")
            nm = self.arg(call, 1, "name")
            name = ex.const(nm, scope) if nm is not None else None
            opts_expr = self.arg(call, 2, "options")
            s = ex.string(code, scope) if code is not None else None
            pieces = [s] if s is not None else []
        elif api == "cupy.RawModule":
            code = self.arg(call, 0, "code")
            opts_expr = self.arg(call, None, "options")
            s = ex.string(code, scope) if code is not None else None
            pieces = [s] if s is not None else []
        elif api == "pycuda.SourceModule":
            code = self.arg(call, 0, "source")
            opts_expr = self.arg(call, 2, "options")
            nec = self.arg(call, 4, "no_extern_c")
            no_extern_c = isinstance(nec, ast.Constant) and nec.value is True
            s = ex.string(code, scope) if code is not None else None
            pieces = [s] if s is not None else []
        elif api == "torch.load_inline":
            nm = self.arg(call, 0, "name")
            name = ex.const(nm, scope) if nm is not None else None
            code = self.arg(call, 2, "cuda_sources")
            opts_expr = self.arg(call, 5, "extra_cuda_cflags")
            if code is not None:
                items = code.elts if isinstance(code, (ast.List, ast.Tuple)) else [code]
                if isinstance(code, ast.Name):
                    found = ex.lookup(code.id, scope, code.lineno, 0)
                    if found and len(found[1]) == 1 and isinstance(
                            found[1][0].value, (ast.List, ast.Tuple)):
                        items = found[1][0].value.elts
                        scope = found[0]
                parts = [ex.string(i, scope) for i in items]
                if parts and all(p is not None for p in parts):
                    joined = parts[0]
                    for p in parts[1:]:
                        joined = joined + MStr.synthetic("\n") + p
                    pieces = [joined]
        elif api == "cupy.ElementwiseKernel":
            text = self.elementwise(call, scope)
            name_e = self.arg(call, 3, "name")
            name = ex.const(name_e, scope) if name_e is not None else "kernel"
            opts_expr = self.arg(call, None, "options")
            pieces = [text] if text is not None else []
        elif api == "cupy.ReductionKernel":
            text = self.reduction(call, scope)
            name_e = self.arg(call, 6, "name")
            name = ex.const(name_e, scope) if name_e is not None else "reduce_kernel"
            opts_expr = self.arg(call, None, "options")
            pieces = [text] if text is not None else []
        if not pieces:
            return []
        options, opaque = self.options(opts_expr, scope)
        out = []
        for m in pieces:
            k = EmbeddedKernel(api=api, text=m.text, char_map=m.map, verbatim=m.verb,
                               call_start=cs, call_end=ce,
                               name=name if isinstance(name, str) else None,
                               options=options, options_opaque=opaque,
                               no_extern_c=no_extern_c,
                               pieces=sorted({p for p in m.pieces}))
            out.append(k)
            k._call = call          # type: ignore[attr-defined]
        return out

    def elementwise(self, call: ast.Call, scope) -> MStr | None:
        ex = self.ex
        in_e, out_e, op_e = (self.arg(call, 0, "in_params"), self.arg(call, 1, "out_params"),
                             self.arg(call, 2, "operation"))
        if in_e is None or out_e is None or op_e is None:
            return None
        ins, outs = ex.const(in_e, scope), ex.const(out_e, scope)
        op = ex.string(op_e, scope)
        if not isinstance(ins, str) or not isinstance(outs, str) or op is None:
            return None
        name = ex.const(self.arg(call, 3, "name") or ast.Constant("kernel"), scope)
        typenames: list[str] = []
        pin, pout = _params(ins, False, typenames), _params(outs, True, typenames)
        if pin is None or pout is None:
            return None
        extra = {}
        for kw in ("preamble", "loop_prep", "after_loop"):
            e = self.arg(call, None, kw)
            extra[kw] = ex.string(e, scope) if e is not None else None
        template = "template <" + ", ".join(f"typename {t}" for t in typenames) + ">\n" \
            if typenames else ""
        linkage = template or 'extern "C" '      # templates cannot have C linkage
        head = (f'\n{linkage}__global__ void '
                f'{name if isinstance(name, str) and name.isidentifier() else "kernel"}'
                f'({", ".join(pin + pout + ["long long _ind_size"])}) {{\n')
        return _wrap([("", extra["preamble"]), (head, extra["loop_prep"]),
                      ("\nfor (long long i = blockIdx.x * blockDim.x + threadIdx.x; "
                       "i < _ind_size; i += blockDim.x * gridDim.x) {\n", op),
                      (";\n}\n", extra["after_loop"]), ("\n}\n", None)])

    def reduction(self, call: ast.Call, scope) -> MStr | None:
        ex = self.ex
        ins = ex.const(self.arg(call, 0, "in_params") or ast.Constant(None), scope)
        outs = ex.const(self.arg(call, 1, "out_params") or ast.Constant(None), scope)
        exprs = []
        for pos, kw in ((2, "map_expr"), (3, "reduce_expr"), (4, "post_map_expr")):
            e = self.arg(call, pos, kw)
            exprs.append(ex.string(e, scope) if e is not None else None)
        if not isinstance(ins, str) or not isinstance(outs, str) or None in exprs:
            return None
        typenames: list[str] = []
        pin, pout = _params(ins, False, typenames), _params(outs, True, typenames)
        if pin is None or pout is None:
            return None
        pre_e = self.arg(call, None, "preamble")
        preamble = ex.string(pre_e, scope) if pre_e is not None else None
        rtype = "float"
        typenames.append("_type_reduce")
        template = "template <" + ", ".join(f"typename {t}" for t in typenames) + ">\n"
        name = ex.const(self.arg(call, 6, "name") or ast.Constant("reduce_kernel"), scope)
        head = (f'\n{template}__global__ void '
                f'{name if isinstance(name, str) and name.isidentifier() else "reduce_kernel"}'
                f'({", ".join(pin + pout + ["long long _in_ind_size"])}) {{\n'
                "long long i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                "_type_reduce _m = (_type_reduce)(")
        del rtype
        return _wrap([("", preamble), (head, exprs[0]),
                      (");\n_type_reduce a = _m, b = _m;\na = (_type_reduce)(", exprs[1]),
                      (");\n{\n", exprs[2]), (";\n}\n}\n", None)])

"""Which Python calls compile CUDA, and the CUDA text each one receives.

The calls are the rows of :mod:`cudalint.sources.python.apis` (CuPy, PyCUDA, torch,
chainer, plus the wrappers a project declares in ``python-compile-apis``), matched by
qualified name through the file's imports (``import cupy as cp``, ``from cupy import
_core``, ``from pycuda.compiler import SourceModule as SM``). :class:`Collector` finds
them, resolves their arguments (:mod:`cudalint.sources.python.resolve`; snippet APIs
through :mod:`cudalint.sources.python.snippets`) and records every call whose source it
could not read, with the reason (``PythonExtraction.unread``: nothing is unread in
silence). The launches of the kernels it found are read by its base,
:class:`~cudalint.sources.python.launches.LaunchReader`.
"""
from __future__ import annotations

import ast
import bisect
import re
from dataclasses import replace

from cudalint.sources.python import apis as A
from cudalint.sources.python.apis import BUILTIN, CompileApi
from cudalint.sources.python.files import segments
from cudalint.sources.python.launches import LaunchReader
from cudalint.sources.python.mapping import MStr
from cudalint.sources.python.modules import called_elsewhere
from cudalint.sources.python.resolve import Extractor, Scope
from cudalint.sources.python.snippets import Snippets, arg
from cudalint.sources.python.units import (OPAQUE_PREFIX, EmbeddedKernel, PyLaunch, PyOption,
                                           PythonExtraction, Unread, opaque_in)

_COMPOUND_BODIES = ("body", "orelse", "finalbody")
_HEADER_FIELDS = ("test", "iter", "target", "items", "subject", "value", "targets")
# packages whose names mean a file may compile CUDA through a module attribute
_PACKAGES = ("cupy", "cupyx", "pycuda", "torch", "chainer")
MAX_CALLERS = 8           # calls of a compiling function followed for its parameters
CALLER_DEPTH = 1          # callers of those callers followed, when they pass parameters
MAX_BRANCHES = 8          # kernels one call gives through names assigned in branches
# calls of a compile API that compile no CUDA C++: CuPy's RawModule(path=) loads a
# cubin/ptx/hsaco file ("path (str): Path to a cubin/ptx file", RawModule's docstring),
# and a RawModule with neither code nor path raises TypeError
_LOADS = "loads a compiled module (`path=`: a cubin, ptx or hsaco file), no CUDA source"
_NO_SOURCE = "no source argument (CuPy raises TypeError)"


def _from_parameters(fn: ast.FunctionDef, call: ast.Call) -> bool:
    """Does an argument of `call` depend on a parameter of `fn` (directly, or through
    the names `fn` assigns)? A function that compiles a kernel of its own, whatever
    its caller passes (chainer's conv.im2col_gpu), is not a wrapper: its kernel is read
    where it is written, once."""
    a = fn.args
    params = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
    params |= {x.arg for x in (a.vararg, a.kwarg) if x is not None}
    uses: dict[str, set[str]] = {}
    for n in ast.walk(fn):
        targets = n.targets if isinstance(n, ast.Assign) else \
            [n.target] if isinstance(n, (ast.AugAssign, ast.AnnAssign, ast.For,
                                         ast.comprehension)) else []
        value = n.iter if isinstance(n, (ast.For, ast.comprehension)) else \
            getattr(n, "value", None)
        if not targets or value is None:
            continue
        names = {m.id for m in ast.walk(value) if isinstance(m, ast.Name)}
        for t in targets:
            for m in ast.walk(t):
                if isinstance(m, ast.Name):
                    uses.setdefault(m.id, set()).update(names)
    todo = [m.id for e in [*call.args, *(k.value for k in call.keywords)]
            for m in ast.walk(e) if isinstance(m, ast.Name)]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in params:
            return True
        if name not in seen:
            seen.add(name)
            todo.extend(uses.get(name, ()))
    return False


def _returned_name(fn: ast.FunctionDef, ex: Extractor, scope) -> str | None:
    """``return module.get_function(name)``: the kernel name a wrapper hands back."""
    for st in fn.body:
        if isinstance(st, ast.Return) and isinstance(st.value, ast.Call) and \
                isinstance(st.value.func, ast.Attribute) and \
                st.value.func.attr == "get_function" and st.value.args:
            saved = ex.why
            name = ex.const(st.value.args[0], scope)
            ex.why = saved
            return name if isinstance(name, str) else None
    return None


_OPAQUE_TOKEN = re.compile(re.escape(OPAQUE_PREFIX) + r"\d+__")


def _known(text: str) -> bool:
    """Does a kernel's text hold anything but opaque values and punctuation?"""
    return OPAQUE_PREFIX not in text or any(c.isalnum() for c in _OPAQUE_TOKEN.sub("", text))


def _callee(func: ast.expr) -> str | None:
    """``f`` or ``M.f``: how a call names a function of another module of the project."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return f"{func.value.id}.{func.attr}"
    return None


def _class_of(scope: Scope | None) -> ast.AST | None:
    while scope is not None and not isinstance(scope.node, ast.ClassDef):
        scope = scope.parent
    return scope.node if scope is not None else None


class Collector(LaunchReader, Snippets):
    """Finds the API calls and their launches without visiting every expression.

    Statements are walked (cheap); the expressions of a statement are walked only when
    the statement's lines mention an API name, an alias of one, or a kernel handle.
    """

    def __init__(self, text: str, tree: ast.Module, result: PythonExtraction,
                 apis: dict[str, CompileApi] | None = None, filename: str = "",
                 wrappers: dict | None = None, words: tuple[str, ...] = ()):
        self.apis = {**BUILTIN, **(apis or {})}
        self.words = words          # the signal words of extract.py (modules.load)
        # functions imported from the project's own modules that may compile CUDA
        # (modules.py): name -> (module, def); a call of one is a compile call
        self.wrappers = wrappers or {}
        self.derived: dict[int, tuple] = {}
        # configured wrappers named without a module: calls of a function of this file
        self.local = {q: a for q, a in (apis or {}).items() if "." not in q}
        # the library's own module (pycuda/reduction.py calling its ReductionKernel)
        dotted = filename.replace("\\", "/").removesuffix(".py").replace("/", ".")
        for q, a in self.apis.items():
            mod, _, last = q.rpartition(".")
            if mod and (dotted == mod or dotted.endswith("." + mod)) and \
                    any(isinstance(st, (ast.ClassDef, ast.FunctionDef)) and st.name == last
                        for st in tree.body):
                self.local.setdefault(last, a)
        self.ex = Extractor(text, filename)
        self.text = text
        self.tree = tree
        self.result = result
        self.calls: list[tuple[ast.Call, CompileApi, Scope | None]] = []
        self._sites: dict[str, list[tuple[ast.Call, Scope]]] | None = None
        # (statement or header expression, scope) whose expressions may hold calls
        self.pending: list[tuple[ast.AST, Scope]] = []

    def run(self) -> None:
        module = Scope(self.tree, None)
        self.statements(self.tree.body, module)
        packages = _PACKAGES + tuple(q.split(".")[0] for q in self.apis if "." in q)
        if not self.local and not self.wrappers and not any(
                q.split(".")[0] in packages for q in self.ex.aliases.values()):
            return
        words = {a for a, q in self.ex.aliases.items() if q in self.apis} | \
            {q.rsplit(".", 1)[-1] for q in self.apis} | set(self.wrappers)
        hot = self.lines_matching(words)
        for node, scope in self.pending:
            if self.touches(node, hot):
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Call):
                        api = self.api_of(sub.func)
                        key = _callee(sub.func) if api is None else None
                        if key in self.wrappers:
                            api = self.wrapper_api(sub, key)
                        if api is not None:
                            self.calls.append((sub, api, scope))
        self.calls.sort(key=lambda c: (c[0].lineno, c[0].col_offset))
        for call, api, scope in self.calls:
            self.ex.why, self.ex.params_hit, self.ex.steps = None, False, 0
            self.ex.file_reads = []
            self.ex.branch_hit = None
            try:
                if id(call) in self.derived:
                    found = self.through_wrapper(call, scope, *self.derived[id(call)])
                    self.ex.params_hit = False
                else:
                    found = self.kernels_of(call, api, scope)
                if not found and self.ex.branch_hit is not None and \
                        id(call) not in self.derived:
                    found = self.branches(call, api, scope)
                if self.ex.params_hit and (not found or any(
                        OPAQUE_PREFIX in k.text for k in found)):
                    # a parameter left the source unread or opaque: its callers may know
                    found = self.through_callers(call, api, scope) or found
            except RecursionError:
                found, self.ex.why = [], "expressions nested too deeply"
            if found and not any(_known(k.text) for k in found):
                # nothing of the text is known (a parameter passed on whole): not read
                found = []
                self.ex.fail(f"the source is {', '.join(sorted(set(self.ex.opaque.origins.values())))[:60] or 'unknown'}, known only when the program runs")
            if found:
                self.result.kernels.extend(found)
            elif self.ex.why in (_LOADS, _NO_SOURCE):
                cs, ce = self.ex.span(call)
                self.result.not_compiled.append(Unread(cs, ce, api.label, self.ex.why))
            elif self.is_wrapper_body(scope, call):
                cs, ce = self.ex.span(call)
                self.result.wrappers.append(Unread(cs, ce, api.label, self.reason()))
            else:
                cs, ce = self.ex.span(call)
                self.result.unread.append(Unread(cs, ce, api.label, self.reason()))
        self.attach_launches()

    def through_callers(self, call: ast.Call, api: CompileApi, scope, bound=None,
                        depth: int = 0) -> list[EmbeddedKernel]:
        """A source built from the parameters of the function that compiles it: one
        kernel per call of that function in this module whose arguments are known (at
        most MAX_CALLERS; the same text from several callers is analysed once). A caller
        that passes its own parameters is followed to its callers in turn, CALLER_DEPTH
        functions up (pycuda's ReductionKernel passes self.block_size to
        get_reduction_kernel_and_types, which passes it to get_reduction_module)."""
        bound = bound if bound is not None else scope    # whose parameters callers give
        fn = bound.node if bound is not None else None
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return []
        why = self.ex.why
        method = bound.parent is not None and isinstance(bound.parent.node, ast.ClassDef)
        out: list[EmbeddedKernel] = []
        seen: set = set()
        sites = self.call_sites(fn.name, method)
        if method:          # self.f(...) in the same class (another class may have an f)
            sites = [(c, s) for c, s in sites if _class_of(s) is bound.parent.node]
        for site, site_scope in sites[:MAX_CALLERS]:
            if len(out) >= MAX_CALLERS:
                # nothing more is kept: the rest of the callers (each read again through
                # its own callers, MAX_CALLERS^2 readings) were read for nothing (fuzz
                # python 2816d639cd: 18 copies of pycuda's reduction, 64 readings of
                # each compile call where the first 9 give all 8 kept)
                break
            self.ex.why = None
            values = self.ex.arguments(fn, site, site_scope, bound.parent, method)
            if values is None:
                continue
            with self.ex.binding(bound, values):
                self.ex.params_hit = False
                found = self.kernels_of(call, api, scope)
                if depth < CALLER_DEPTH and self.ex.params_hit and site_scope is not None \
                        and site_scope is not bound and \
                        any(OPAQUE_PREFIX in k.text for k in found):
                    found = self.through_callers(call, api, scope, site_scope,
                                                 depth + 1) or found
                for k in found:
                    key = (k.text, tuple(k.char_map))
                    if key not in seen and len(out) < MAX_CALLERS:
                        seen.add(key)
                        out.append(k)
        self.ex.why = why if out or not why or "is a parameter of" not in why else \
            f"{why} (and no call of `{fn.name}` in this module passes known values)"
        return out

    def is_wrapper_body(self, scope: Scope | None, call: ast.Call) -> bool:
        """The call compiles what the caller of its function passes, and no call of it
        in this module passes anything: its kernels are read at the calls in the
        project's other modules (through_wrapper there), or the function is itself an
        entry of the API table (chainer's ``cuda.elementwise`` in its own module). Its
        arguments depend on the function's parameters (or the reason it was not read is
        one) and another module of the package calls it (pyinn's ``load_kernel``,
        cupyx's ``_filters_core._generate_nd_kernel(...)``): each such call is a compile
        call of its own, read or listed with its reason."""
        fn = scope.node if scope is not None else None
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or \
                scope.parent is None or not isinstance(scope.parent.node, ast.Module) or \
                id(call) in self.derived:
            # a call of another module's wrapper is not an API call that the calls of
            # this function elsewhere would be read through (wrapper_api): it stays listed
            return False
        if fn.name in self.local and f"is a parameter of `{fn.name}`" in (self.ex.why or ""):
            return True
        # a function nobody in the project calls: its call stays listed
        return not self.call_sites(fn.name, False) and \
            (f"is a parameter of `{fn.name}`" in (self.ex.why or "") or
             _from_parameters(fn, call)) and \
            called_elsewhere(self.ex.filename, fn.name, self.words)

    def wrapper_api(self, call: ast.Call, key: str) -> CompileApi | None:
        """The compile call inside an imported function of the project (``f(...)`` or
        ``M.f(...)``), if it has one: the call of that function is then a compile call
        (modules.py)."""
        mod, fn = self.wrappers[key]
        # the answer is kept on the function's node (its module is parsed once), per
        # table of APIs (a project's own wrappers may differ between configurations)
        memo = fn.__dict__.setdefault("_cl_wrapper_api", {})
        apis_key = tuple(sorted(q for q in self.apis if q not in BUILTIN))
        if apis_key not in memo:
            memo[apis_key] = None
            for sub in ast.walk(fn):
                if isinstance(sub, ast.Call):
                    api = self.apis.get(self.ex.qualname(sub.func) or "")
                    if api is not None and _from_parameters(fn, sub):
                        memo[apis_key] = (sub, api)
                        break
        found = memo[apis_key]
        if found is None:
            return None
        sub, api = found
        self.derived[id(call)] = (mod, fn, sub, api)
        return replace(api, label=f"{fn.name} ({api.label})")

    def through_wrapper(self, call: ast.Call, scope, mod, fn: ast.FunctionDef,
                        inner: ast.Call, api: CompileApi) -> list[EmbeddedKernel]:
        """The kernels of a project wrapper's compile call, its parameters bound to the
        arguments of this call; positions are this call's (the wrapper's own text is
        synthetic: it lives in another file)."""
        if mod.scope is None:
            mod.scope = Scope(mod.tree, None)
        inner_scope = self.ex.fn_scopes.get((id(fn), id(mod.scope)))
        if inner_scope is None:
            inner_scope = self.ex.fn_scopes[(id(fn), id(mod.scope))] = Scope(fn, mod.scope)
        values = self.ex.arguments(fn, call, scope, mod.scope, False)
        if values is None:
            return []
        with self.ex.binding(inner_scope, values):
            found = self.kernels_of(inner, api, inner_scope)
            name = _returned_name(fn, self.ex, inner_scope)
        cs, ce = self.ex.span(call)
        for k in found:
            k.call_start, k.call_end = cs, ce
            k.options = [PyOption(str(o), cs, ce) for o in k.options]
            for la in k.launches:
                la.start, la.end = cs, ce
            k.name = k.name or name
            k._call = call                       # type: ignore[attr-defined]
        return found

    def call_sites(self, name: str, method: bool) -> list[tuple[ast.Call, Scope]]:
        if self._sites is None:
            self._sites = {}
            for node, scope in self.pending:
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Call):
                        f = sub.func
                        key = f.id if isinstance(f, ast.Name) else \
                            f"self.{f.attr}" if isinstance(f, ast.Attribute) and isinstance(
                                f.value, ast.Name) and f.value.id in ("self", "cls") \
                            else None
                        if key is not None:
                            self._sites.setdefault(key, []).append((sub, scope))
        return self._sites.get(f"self.{name}" if method else name, [])

    def api_of(self, func: ast.expr) -> CompileApi | None:
        q = self.ex.qualname(func)
        if q is not None:
            return self.apis.get(q)
        if isinstance(func, ast.Name) and func.id in self.local:
            return self.local[func.id]
        return None

    def reason(self) -> str:
        why = self.ex.why or "the source is not a string known without running the program"
        return why

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

    def kernels_of(self, call: ast.Call, api: CompileApi, scope) -> list[EmbeddedKernel]:
        ex = self.ex
        name = None
        options_arg = arg(call, api.options.pos, api.options.kw) if api.options else None
        form = api.form
        text: MStr | None = None
        if form == A.CODE:
            code = arg(call, api.source.pos, api.source.kw) if api.source else None
            if code is None:
                ex.fail(_LOADS if arg(call, None, "path") is not None else _NO_SOURCE)
                return []
            text = ex.string(code, scope)
        elif form == A.SOURCES:
            text = self.sources(call, api, scope)
        elif form == A.CUPY_ELEMENTWISE:
            text = self.cupy_elementwise(call, api, scope)
        elif form == A.CUPY_REDUCTION:
            text = self.cupy_reduction(call, api, scope)
        elif form == A.PYCUDA_ELEMENTWISE:
            text = self.pycuda_elementwise(call, api, scope)
        elif form == A.PYCUDA_REDUCTION:
            text = self.pycuda_reduction(call, api, scope)
        elif form == A.PYCUDA_SCAN:
            text = self.pycuda_scan(call, api, scope)
        if text is None:
            return []
        return self.kernel(call, api, scope, text)

    def branches(self, call: ast.Call, api: CompileApi, scope, depth: int = 0
                 ) -> list[EmbeddedKernel]:
        """A name the source needs that is assigned in the branches of an ``if`` (the
        source, a parameter list, a part): the call is read once per branch, each value
        a kernel of its own (at most MAX_BRANCHES in all); nothing is guessed."""
        hit = self.ex.branch_hit
        alts = self.ex.alternatives(hit[1], hit[0], hit[2]) if hit else None
        if not alts or len(alts) < 2 or depth > 2:
            return []
        why = self.ex.why
        owner = hit[0]
        while owner is not None and hit[1] not in owner.bindings:
            owner = owner.parent
        out: list[EmbeddedKernel] = []
        for value_scope, value in alts:
            if not isinstance(value, (ast.expr, list)) or len(out) >= MAX_BRANCHES:
                return []
            self.ex.why, self.ex.branch_hit = None, None
            with self.ex.binding(owner, {hit[1]: (value, value_scope)}):
                got = self.kernels_of(call, api, scope)
                if not got and self.ex.branch_hit:
                    got = self.branches(call, api, scope, depth + 1)
            if not got:
                self.ex.why = why
                return []
            out.extend(got)
        return out[:MAX_BRANCHES]

    def kernel(self, call: ast.Call, api: CompileApi, scope, text: MStr
               ) -> list[EmbeddedKernel]:
        ex = self.ex
        name = None
        options_arg = arg(call, api.options.pos, api.options.kw) if api.options else None
        if api.name is not None:
            nm = arg(call, api.name.pos, api.name.kw)
            name = ex.const(nm, scope) if nm is not None else api.default_name
        nec = arg(call, api.no_extern_c.pos, api.no_extern_c.kw) if api.no_extern_c else None
        options, opaque = self.options(options_arg, scope)
        cs, ce = ex.span(call)
        k = EmbeddedKernel(api=api.label, text=text.text, char_map=text.map,
                           verbatim=text.verb, call_start=cs, call_end=ce,
                           name=name if isinstance(name, str) else None,
                           options=options, options_opaque=opaque,
                           no_extern_c=isinstance(nec, ast.Constant) and nec.value is True,
                           pieces=sorted(set(text.pieces)),
                           name_expressions=self.name_expressions(call, api, scope),
                           opaque=opaque_in(text.text, ex.opaque.origins),
                           files=segments(text.text, ex.file_reads))
        if api.launch == A.LIBRARY_LAUNCH and api.block:
            k.launches.append(PyLaunch(kernel=None, block=(api.block,), grid=None,
                                       shared_mem=None, start=cs, end=ce))
        k._call = call          # type: ignore[attr-defined]
        k._api = api            # type: ignore[attr-defined]
        return [k]

    def sources(self, call: ast.Call, api: CompileApi, scope) -> MStr | None:
        """torch ``load_inline``'s ``cuda_sources``: a string or a list of them."""
        ex = self.ex
        code = arg(call, api.source.pos, api.source.kw) if api.source else None
        if code is None:
            ex.fail("no `cuda_sources` (C++ only)")
            return None
        if isinstance(code, (ast.List, ast.Tuple, ast.Name)) or isinstance(
                code, (ast.ListComp, ast.GeneratorExp)):
            saved = ex.why
            parts = ex.strings(code, scope, 0)
            if parts is None and isinstance(code, ast.Name):
                ex.why = saved
                one = ex.string(code, scope)
                parts = [one] if one is not None else None
        else:
            one = ex.string(code, scope)
            parts = [one] if one is not None else None
        if not parts:
            return None
        joined = parts[0]
        for p in parts[1:]:
            joined = joined + MStr.synthetic("\n") + p
        return joined

    def name_expressions(self, call: ast.Call, api: CompileApi, scope) -> list[str]:
        e = arg(call, api.name_expressions.pos, api.name_expressions.kw) \
            if api.name_expressions else None
        if e is None:
            return []
        saved = self.ex.why
        items = self.ex.sequence(e, scope, 0)
        self.ex.why = saved
        out = []
        for item, item_scope in items or []:
            v = self.ex.const(item, item_scope)
            if isinstance(v, str):
                out.append(v)
        return out

"""Following a kernel's source through a module's data flow, beyond a single expression.

The part of :class:`~cudalint.sources.python.resolve.Extractor` that reaches a string
built by program logic that needs no run to evaluate:

* ``+=`` inside a ``for`` loop over constants, ``"".join`` of a list, a name bound to
  one, or a comprehension over constants (each element resolved with the loop variable
  bound to it);
* the return value of a function of the module (or a method of the class the call is
  in), called with arguments bound to its parameters (defaults where not passed);
* ``string.Template(...).substitute(...)`` / ``safe_substitute`` with a constant
  mapping or keywords;
* ``a + b`` with one side unknown: the known side keeps its map, the unknown one becomes
  nothing when it stands on lines of its own (a preamble of declarations), else an
  opaque identifier, as a ``%`` placeholder does.

Nothing here guesses a value: what cannot be followed gives None (and ``fail`` says
why) or an opaque token.
"""
from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from cudalint.sources.python.mapping import MStr
from cudalint.sources.python.scopes import Binding, Scope

if TYPE_CHECKING:
    from cudalint.sources.python.resolve import Extractor

MAX_UNROLL = 64          # elements of a loop or a sequence followed
_TEMPLATE = {"string.Template"}
_TEMPLATE_RE = re.compile(r"\$(?:(\$)|([_a-z][_a-z0-9]*)|\{([_a-z][_a-z0-9]*)\})",
                          re.IGNORECASE | re.ASCII)


_BLOCK = (ast.stmt, ast.excepthandler, ast.match_case)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def statement_children(node: ast.AST) -> list[ast.AST]:
    """The statements (and ``except``/``case`` clauses) directly under ``node``, in the
    order ``ast.iter_child_nodes`` gives them. A ``return`` or a ``def`` never stands
    inside an expression, so walks that look for them skip the expressions: visiting
    every expression node made these walks most of the extraction's time."""
    out: list[ast.AST] = []
    for name in node._fields:
        value = getattr(node, name, None)
        if isinstance(value, list) and value and isinstance(value[0], _BLOCK):
            out.extend(value)
    return out


def _own_returns(fn: ast.AST) -> list[ast.Return]:
    """The return statements of a function, not of the functions nested in it (in the
    order of a depth-first walk that takes the last child first)."""
    out = []
    todo = list(getattr(fn, "body", []))
    while todo:
        n = todo.pop()
        if isinstance(n, _SCOPES):
            continue
        if isinstance(n, ast.Return):
            out.append(n)
        todo.extend(statement_children(n))
    return out


def _dict_binding(scope: Scope | None, name: str, line: int):
    """(scope, value) of the one assignment of a dict name before `line` in its function
    or module body, looking past ``name[key] = ...`` (stores into it), or None."""
    while scope is not None:
        binds = scope.bindings.get(name)
        if binds:
            stores = {n.lineno for n in ast.walk(scope.node)
                      if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store)
                      and isinstance(n.value, ast.Name) and n.value.id == name}
            own = [b for b in binds if b.line not in stores]
            if len(own) == 1 and own[0].line < line and not own[0].aug and \
                    own[0].direct and isinstance(own[0].value, ast.expr):
                return scope, own[0].value
            return None
        if name in scope.params:
            return None
        scope = scope.parent
    return None


def _stored_keys(body: ast.AST, name: str) -> set:
    """The keys of ``name[key] = ...`` anywhere in a body (None: a key not constant)."""
    out: set = set()
    for node in ast.walk(body):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and \
                isinstance(node.value, ast.Name) and node.value.id == name:
            key = node.slice
            out.add(key.value if isinstance(key, ast.Constant) else None)
    return out


def expression_origin(expr: ast.expr | None) -> str:
    """``<helper()>``: an unknown operand, as written (shortened)."""
    try:
        text = ast.unparse(expr) if expr is not None else ""
    except Exception:
        text = ""
    text = " ".join(text.split())
    return f"<{text[:37] + '...' if len(text) > 40 else text}>" if text else ""


class Flow:
    """Mixin of the Extractor: loops, sequences, calls, templates, partial sums."""

    # -- sequences ----------------------------------------------------------------------

    def sequence(self: "Extractor", expr: ast.expr, scope, depth: int
                 ) -> list[tuple[ast.expr, Scope | None]] | None:
        """The elements of a list/tuple expression, each with the scope to read it in."""
        if depth > 24:
            return None
        if isinstance(expr, (ast.List, ast.Tuple)):
            if any(isinstance(e, ast.Starred) for e in expr.elts) or \
                    len(expr.elts) > MAX_UNROLL:
                self.fail("a sequence with starred or too many elements")
                return None
            return [(e, scope) for e in expr.elts]
        if isinstance(expr, ast.Name):
            found = self.lookup(expr.id, scope, expr.lineno, depth)
            if found is None:
                return None
            owner, binds = found
            out: list = []
            for b in binds:
                if b.loop is not None or not isinstance(b.value, ast.expr):
                    self.fail(f"`{expr.id}` is extended in a loop")
                    return None
                part = self.sequence(b.value, owner, depth + 1)
                if part is None:
                    return None
                out.extend(part)
            return out
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            a = self.sequence(expr.left, scope, depth + 1)
            b = self.sequence(expr.right, scope, depth + 1) if a is not None else None
            return a + b if a is not None and b is not None else None
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and \
                expr.func.id == "enumerate" and len(expr.args) == 1 and not expr.keywords:
            items = self.sequence(expr.args[0], scope, depth + 1)
            if items is None:
                return None
            return [(ast.Tuple([ast.Constant(i), e], ast.Load()), s)
                    for i, (e, s) in enumerate(items)]
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and \
                expr.func.id == "range" and 1 <= len(expr.args) <= 3 and not expr.keywords:
            bounds = [self.const(a, scope, depth + 1) for a in expr.args]
            if all(isinstance(b, int) for b in bounds) and (len(bounds) < 3 or bounds[2]):
                r = range(*bounds)
                if len(r) <= MAX_UNROLL:
                    return [(ast.Constant(i), None) for i in r]
        self.fail(f"iterates over `{ast.unparse(expr)[:40]}`, not a constant sequence")
        return None

    def unpack(self: "Extractor", target: ast.expr, expr: ast.expr, scope
               ) -> dict[str, tuple[ast.expr, Scope | None]] | None:
        if isinstance(target, ast.Name):
            return {target.id: (expr, scope)}
        if isinstance(target, (ast.Tuple, ast.List)) and \
                isinstance(expr, (ast.Tuple, ast.List)) and len(target.elts) == len(expr.elts):
            out: dict = {}
            for t, e in zip(target.elts, expr.elts):
                sub = self.unpack(t, e, scope)
                if sub is None:
                    return None
                out.update(sub)
            return out
        self.fail("a loop target that is not unpacked from constants")
        return None

    def unroll(self: "Extractor", loop: ast.For, group: list[Binding], owner, depth: int
               ) -> MStr | None:
        """The ``+=`` parts a ``for`` loop over constants appends, in order."""
        items = self.sequence(loop.iter, owner, depth + 1)
        if items is None:
            return None
        parts = []
        for item, item_scope in items:
            values = self.unpack(loop.target, item, item_scope)
            if values is None:
                return None
            with self.binding(owner, values):
                for b in group:
                    part = self.string(b.value, owner, depth + 1)
                    if part is None:
                        return None
                    parts.append(part)
        return MStr.concat(parts)

    def strings(self: "Extractor", expr: ast.expr, scope, depth: int) -> list[MStr] | None:
        """The strings of a sequence (what ``"".join`` receives)."""
        if isinstance(expr, (ast.ListComp, ast.GeneratorExp)):
            if len(expr.generators) != 1 or expr.generators[0].ifs or \
                    expr.generators[0].is_async:
                self.fail("a comprehension with conditions or several loops")
                return None
            gen = expr.generators[0]
            items = self.sequence(gen.iter, scope, depth + 1)
            if items is None:
                return None
            out = []
            for item, item_scope in items:
                values = self.unpack(gen.target, item, item_scope)
                if values is None:
                    return None
                with self.binding(scope, values):
                    part = self.string(expr.elt, scope, depth + 1)
                if part is None:
                    return None
                out.append(part)
            return out
        items = self.sequence(expr, scope, depth + 1)
        if items is None:
            return None
        out = []
        for item, item_scope in items:
            part = self.string(item, item_scope, depth + 1)
            if part is None:
                return None
            out.append(part)
        return out

    # -- calls of the module's own functions --------------------------------------------

    def function_of(self: "Extractor", fn: ast.expr, scope):
        """(def, the scope it is defined in) for a call of a function of the module, or
        of ``self.name`` / ``cls.name`` inside a method of the class that defines it."""
        if isinstance(fn, ast.Name):
            saved, self.why = self.why, None
            found = self.lookup(fn.id, scope, getattr(fn, "lineno", 1 << 30), 0)
            imported = self.why if self.why and " is imported" in self.why else None
            self.why = saved
            if imported:
                self.fail(imported)       # a helper of another module: say so
            if found is not None and len(found[1]) == 1 and isinstance(
                    found[1][0].value, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return found[1][0].value, found[0]
            return None
        if isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name) and \
                fn.value.id not in ("self", "cls"):      # M.f: a function of a module
            saved = self.why
            found = self.attribute_lookup(fn, scope, 0)   # of the project (imports.py)
            self.why = saved
            if found is not None and len(found[1]) == 1 and isinstance(
                    found[1][0].value, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return found[1][0].value, found[0]
            return None
        if isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name) and \
                fn.value.id in ("self", "cls"):
            s = scope
            while s is not None and not isinstance(s.node, ast.ClassDef):
                s = s.parent
            if s is None:
                return None
            binds = s.bindings.get(fn.attr) or []
            if len(binds) == 1 and isinstance(binds[0].value, ast.FunctionDef):
                return binds[0].value, s
        return None

    def inline(self: "Extractor", call: ast.Call, fn: ast.FunctionDef, owner, scope,
               depth: int) -> MStr | None:
        returns = _own_returns(fn)
        if len(returns) != 1 or returns[0].value is None:
            self.fail(f"`{fn.name}` has {len(returns)} return statements (one is followed)")
            return None
        method = isinstance(owner.node, ast.ClassDef) if owner is not None else False
        values = self.arguments(fn, call, scope, owner, skip_first=method)
        if values is None:
            return None
        # a method body reads module names, not the class body's; one Scope per function
        # (its bindings are collected once, and a name of it assigned in branches can be
        # pinned to one branch while the call is read again)
        parent = owner.parent if method else owner
        inner = self.fn_scopes.get((id(fn), id(parent)))
        if inner is None:
            inner = self.fn_scopes[(id(fn), id(parent))] = Scope(fn, parent)
        with self.binding(inner, values):
            return self.string(returns[0].value, inner, depth + 1)

    def arguments(self: "Extractor", fn: ast.FunctionDef, call: ast.Call, scope, owner,
                  skip_first: bool) -> dict | None:
        a = fn.args
        if any(k.arg is None for k in call.keywords):
            call = self.spread(call, scope)
        if a.vararg or any(isinstance(x, ast.Starred) for x in call.args) or \
                any(k.arg is None for k in call.keywords):
            self.fail(f"`{fn.name}` is called with *args or **kwargs")
            return None
        positional = a.posonlyargs + a.args
        if skip_first:
            positional = positional[1:]
        if len(call.args) > len(positional):
            return None
        values: dict = {}
        for p, v in zip(positional, call.args):
            values[p.arg] = (v, scope)
        for k in call.keywords:
            values[k.arg] = (k.value, scope)
        defaults = dict(zip([p.arg for p in (a.posonlyargs + a.args)][-len(a.defaults):],
                            a.defaults)) if a.defaults else {}
        defaults.update({p.arg: d for p, d in zip(a.kwonlyargs, a.kw_defaults)
                         if d is not None})
        for p in positional + a.kwonlyargs:
            if p.arg not in values:
                if p.arg not in defaults:
                    self.fail(f"`{fn.name}` is called without its argument `{p.arg}`")
                    return None
                values[p.arg] = (defaults[p.arg], owner)
        if skip_first and (a.posonlyargs + a.args):
            first = (a.posonlyargs + a.args)[0].arg
            values[first] = (ast.Constant(None), None)
        if a.kwarg:         # **kwargs: the keywords no parameter takes, as a dict
            named = {p.arg for p in positional + a.kwonlyargs}
            extra = [k for k in call.keywords if k.arg not in named]
            values[a.kwarg.arg] = (ast.Dict([ast.Constant(k.arg) for k in extra],
                                            [k.value for k in extra]), scope)
        return values

    def spread(self: "Extractor", call: ast.Call, scope) -> ast.Call:
        """``f(x, **opt)`` with ``opt = dict(k=v, ...)`` (or a dict literal) bound once:
        the call with those keywords written out. A key the function stores into
        (``opt['n'] = n``) is left out, so that its placeholder stays opaque rather
        than taking the stale value."""
        keywords: list[ast.keyword] = []
        for k in call.keywords:
            if k.arg is not None or not isinstance(k.value, ast.Name):
                keywords.append(k)
                continue
            found = _dict_binding(scope, k.value.id, k.value.lineno)
            d = found[1] if found is not None else None
            if isinstance(d, ast.Call) and isinstance(d.func, ast.Name) and \
                    d.func.id == "dict" and not d.args and all(x.arg for x in d.keywords):
                pairs = [(x.arg, x.value) for x in d.keywords]
            elif isinstance(d, ast.Dict) and all(
                    isinstance(x, ast.Constant) and isinstance(x.value, str) for x in d.keys):
                pairs = [(x.value, v) for x, v in zip(d.keys, d.values)]
            else:
                keywords.append(k)
                continue
            stored = _stored_keys(found[0].node, k.value.id) if found else set()
            if None in stored:
                keywords.append(k)
                continue
            keywords += [ast.keyword(arg=n, value=v) for n, v in pairs if n not in stored]
        return ast.Call(func=call.func, args=call.args, keywords=keywords)

    # -- string.Template ----------------------------------------------------------------

    def substitute(self: "Extractor", call: ast.Call, scope, depth: int) -> MStr | None:
        fn = call.func
        assert isinstance(fn, ast.Attribute)
        tmpl = self._template_text(fn.value, scope, depth)
        if tmpl is None:
            return None
        mapping: dict[str, tuple[ast.expr, Scope | None]] = {}
        known = True
        if call.args:
            d = call.args[0]
            owner = scope
            if isinstance(d, ast.Name):
                found = self.lookup(d.id, scope, d.lineno, depth)
                if found is not None and len(found[1]) == 1:
                    owner, d = found[0], found[1][0].value
            if isinstance(d, ast.Dict) and all(
                    isinstance(k, ast.Constant) and isinstance(k.value, str) for k in d.keys):
                mapping.update({k.value: (v, owner) for k, v in zip(d.keys, d.values)})
            else:
                known = False
        for k in call.keywords:
            if k.arg is None:
                d, owner = k.value, scope       # **kwargs of an inlined call: its dict
                if isinstance(d, ast.Name):
                    found = self.lookup(d.id, scope, d.lineno, depth)
                    if found is not None and len(found[1]) == 1:
                        owner, d = found[0], found[1][0].value
                if isinstance(d, ast.Dict) and all(
                        isinstance(x, ast.Constant) and isinstance(x.value, str)
                        for x in d.keys):
                    mapping.update({x.value: (v, owner) for x, v in zip(d.keys, d.values)})
                else:
                    known = False
            else:
                mapping[k.arg] = (k.value, scope)
        t = tmpl.text
        out = MStr()
        pos = 0
        for m in _TEMPLATE_RE.finditer(t):
            out = out + tmpl.slice(pos, m.start())
            pos = m.end()
            if m.group(1):
                out = out + tmpl.slice(m.start(), m.start() + 1)
                continue
            got = mapping.get(m.group(2) or m.group(3)) if known else None
            if got is None:
                out = out + self.opaque.token(m.group(0))
            else:
                out = out + self.placeholder(got[0], got[1], depth, origin=m.group(0))
        return out + tmpl.slice(pos, len(t))

    def _template_text(self: "Extractor", expr: ast.expr, scope, depth: int) -> MStr | None:
        if isinstance(expr, ast.Call) and self.qualname(expr.func) in _TEMPLATE and \
                len(expr.args) == 1 and not expr.keywords:
            return self.string(expr.args[0], scope, depth + 1)
        if isinstance(expr, ast.Name):
            found = self.lookup(expr.id, scope, expr.lineno, depth)
            if found is not None and len(found[1]) == 1 and \
                    isinstance(found[1][0].value, ast.expr):
                return self._template_text(found[1][0].value, found[0], depth + 1)
            return None
        self.fail("a template that is not `string.Template(<string>)`")
        return None

    # -- sums with an unknown part ------------------------------------------------------

    def concat(self: "Extractor", expr: ast.BinOp, scope, depth: int) -> MStr | None:
        left = self.string(expr.left, scope, depth + 1)
        right = self.string(expr.right, scope, depth + 1)
        if left is not None and right is not None:
            return left + right
        if left is None and right is None:
            return None
        if left is None:
            assert right is not None
            alone = right.text[:1] in ("", "\n")
            return (MStr.synthetic("\n") if alone else
                    self.opaque.token(expression_origin(expr.left))) + right
        assert left is not None
        alone = left.text[-1:] in ("", "\n")
        return left + (MStr.synthetic("\n") if alone else
                       self.opaque.token(expression_origin(expr.right)))

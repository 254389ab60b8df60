"""The value of a string expression in a Python file, with its map back to the file.

The code argument of a compile call may be a literal (any prefix, implicit
concatenation, escapes), a name bound to one in the function or module, ``+`` / ``+=``
concatenation, ``textwrap.dedent``, ``.strip()``, or a ``.format()`` / ``%`` / f-string
template. A placeholder whose value is an int or str constant bound in the module is
substituted; any other placeholder becomes an opaque identifier
(``__cudalint_opaque_N__``): a value is never guessed; the placeholder it stands for is
kept with the kernel, and messages show that instead (units.describe_opaque). Names are
looked up in the bindings of their :class:`Scope` (module, class or function body) as
seen at the line that reads them.
"""
from __future__ import annotations

import ast
import re
from contextlib import contextmanager

from cudalint.sources.python.files import FileReads
from cudalint.sources.python.flow import Flow, expression_origin
from cudalint.sources.python.imports import ImportedValues
from cudalint.sources.python.mapping import MStr, Scanner, format_field_end
from cudalint.sources.python.scopes import Binding, Scope, branch_chains, one_block
from cudalint.sources.python.units import OPAQUE_PREFIX

_DEDENT = {"textwrap.dedent"}
# source text read from a file when the program runs (read when the path is built from
# __file__: files.py; otherwise unread)
_READERS = {"open", "io.open", "pkgutil.get_data", "codecs.open"}
_READ_METHODS = {"read", "read_text", "read_bytes", "readlines"}

MAX_DEPTH = 24          # name/expression resolution depth
# reasons no reading of this file can lift (a branch or a parameter may be read again)
_UNKNOWABLE = (" is imported", "returned by `", "read from a file")
# string expressions followed for one compile call: loops unrolled inside inlined calls
# inside loops multiply, and a hostile file must not make one call cost seconds (the
# most a call of the corpus takes is 110, pycuda's and cupy's ndimage generators)
MAX_STEPS = 4000


_BRACE = re.compile(r"[{}]")

class _Opaque:
    """Opaque identifiers and where each came from: the placeholder as written
    (``%(name)s``, ``{dtype}``, ``$T``) or ``<expression>`` for an unknown operand of a
    ``+``; messages show that text instead of the token (units.describe_opaque)."""

    def __init__(self) -> None:
        self.n = 0
        self.origins: dict[str, str] = {}

    def token(self, origin: str) -> MStr:
        tok = f"{OPAQUE_PREFIX}{self.n}__"
        self.n += 1
        self.origins[tok] = origin
        return MStr.synthetic(tok)


# ---------------------------------------------------------------------------------------
# the extractor


class Extractor(Flow, FileReads, ImportedValues):
    def __init__(self, text: str, filename: str = ""):
        self.text = text
        self.filename = filename
        self.file_reads: list[tuple[str, str, list[int], str]] = []   # files.py
        self.scanner = Scanner(text)
        self.opaque = _Opaque()
        self.aliases: dict[str, str] = {}
        self.why: str | None = None          # why the last resolution gave up
        self.params_hit = False               # it read a parameter of a function
        self.branch_hit: tuple | None = None  # (scope, name, line) assigned in branches
        self.fn_scopes: dict[tuple[int, int], Scope] = {}   # inlined functions' bodies
        self.steps = 0                        # string() calls for the current call
        self._literals: dict[int, MStr | None] = {}   # a loop reads one literal often
        self._foreign_scanners: dict[str, tuple] = {}  # imports.py
        # (id(scope), name) -> (expression, its scope): arguments of an inlined call,
        # the current element of an unrolled loop
        self.bound: dict[tuple[int, str], tuple[ast.expr, Scope | None]] = {}
        # char offset of the start of each line as ast counts lines
        starts = [0]
        for m in re.finditer(r"\r\n|\r|\n", text):
            starts.append(m.end())
        self.line_starts = starts
        self._ascii = text.isascii()

    # -- positions ----------------------------------------------------------------------

    def offset(self, line: int, col_bytes: int) -> int:
        if line - 1 >= len(self.line_starts):
            return len(self.text)
        start = self.line_starts[line - 1]
        if self._ascii:
            return start + col_bytes
        end = self.line_starts[line] if line < len(self.line_starts) else len(self.text)
        raw = self.text[start:end].encode("utf-8", "surrogatepass")
        return start + len(raw[:col_bytes].decode("utf-8", "surrogatepass"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        s = self.offset(node.lineno, node.col_offset)          # type: ignore[attr-defined]
        e = self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        return s, e

    # -- names --------------------------------------------------------------------------

    def qualname(self, expr: ast.expr) -> str | None:
        if isinstance(expr, ast.Name):      # a name of another module: its own imports
            return getattr(expr, "_cl_aliases", self.aliases).get(expr.id)
        if isinstance(expr, ast.Attribute):
            base = self.qualname(expr.value)
            return f"{base}.{expr.attr}" if base else None
        return None

    # -- names bound while resolving (function arguments, loop variables) ---------------

    def fail(self, why: str) -> None:
        """Remember the first reason a resolution gave up (the unread list shows it)."""
        if self.why is None:
            self.why = why

    @contextmanager
    def binding(self, scope: Scope | None, values: dict[str, tuple[ast.expr, Scope | None]]):
        saved = {n: self.bound.get((id(scope), n)) for n in values}
        for n, v in values.items():
            self.bound[(id(scope), n)] = v
        try:
            yield
        finally:
            for n, v in saved.items():
                if v is None:
                    self.bound.pop((id(scope), n), None)
                else:
                    self.bound[(id(scope), n)] = v

    # -- values -------------------------------------------------------------------------

    def lookup(self, name: str, scope: Scope | None, line: int, depth: int):
        """(scope, bindings) of a name as seen at `line`, or None when not one value.

        In the innermost scope only bindings above `line` count; in enclosing scopes
        (a function reading a module constant) every binding counts, and there must be
        one plain assignment to follow, then only ``+=`` (unconditional, or each inside
        one ``for`` loop that is a statement of the body). An argument of an inlined
        call or a loop variable being unrolled is found first.
        """
        first = True
        while scope is not None:
            if not first and isinstance(scope.node, ast.ClassDef):
                scope = scope.parent            # class bodies do not enclose methods
                continue
            # a parameter the body assigns again (``code = Template(code)...``): below
            # that assignment the name is the new value, not the argument
            rebound = first and name in scope.params and any(
                b.line < line for b in scope.bindings.get(name, ()))
            got = self.bound.get((id(scope), name)) if not rebound else None
            if got is not None:
                if isinstance(got[0], list):     # a += chain pinned to one branch
                    return got[1], got[0]
                return got[1], [Binding(0, got[0], False, True)]
            if name in scope.params and not rebound:
                self.params_hit = True
                self.fail(f"`{name}` is a parameter of `{getattr(scope.node, 'name', '?')}`")
                return None
            binds = scope.bindings.get(name)
            if binds:
                cands = [b for b in binds if b.line < line] if first else binds
                if not cands:
                    self.fail(f"`{name}` is bound only after line {line}")
                    return None
                last_plain = max((k for k, b in enumerate(cands) if not b.aug), default=-1)
                imported = cands[last_plain].value if last_plain >= 0 else None
                if isinstance(imported, (ast.Import, ast.ImportFrom)):
                    got = self.foreign_lookup(name, imported, scope, depth)  # imports.py
                    if got is not None:
                        return got
                    where = "." * getattr(imported, "level", 0) + (
                        getattr(imported, "module", None) or "")
                    self.fail(f"`{name}` is imported{f' from `{where}`' if where else ''} "
                              "(text from another module is not followed)")
                    return None
                if last_plain < 0 or cands[last_plain].value is None:
                    self.fail(f"`{name}` is bound to something read at run time "
                              "(an import, a loop variable, an unpacked value)")
                    return None
                chosen = cands[last_plain:]
                seq = one_block(binds, cands, line) if first and len(cands) > 1 else None
                if seq is not None and cands[last_plain].value is not None:
                    return scope, seq
                if len(cands) > 1 and not (chosen[0].direct and all(
                        b.direct or (b.aug and b.loop is not None) for b in chosen)):
                    where = "a loop body" if any(b.looped for b in cands) else "branches"
                    self.fail(f"`{name}` is assigned in {where} (its value depends on "
                              "the run)")
                    if self.branch_hit is None:
                        self.branch_hit = (scope, name, line)
                    return None
                return scope, chosen
            scope = scope.parent
            first = False
        self.fail(f"`{name}` is not assigned in this module")
        return None

    def alternatives(self, name: str, scope: Scope | None, line: int):
        """Every value a name may hold at `line` when it is assigned in the branches of
        an ``if``/``elif``/``else`` (or once): [(scope, value)], or None."""
        found = self.lookup(name, scope, line, 0)
        if found is not None:
            owner, binds = found
            return [(owner, binds[0].value)] if len(binds) == 1 else None
        while scope is not None:
            binds = scope.bindings.get(name)
            if binds:
                cands = [b for b in binds if b.line < line]
                if cands and any(b.aug for b in cands):
                    chains = branch_chains(scope.node, cands)
                    return [(scope, c) for c in chains] if chains else None
                if not cands or any(b.aug or b.value is None or b.loop or b.looped
                                    for b in cands):
                    return None
                last: dict[int, Binding] = {}     # in one statement list the last wins
                for b in cands:
                    last[b.block] = b
                return [(scope, b.value) for b in last.values()]
            if name in scope.params:
                return None
            scope = scope.parent
        return None

    def string(self, expr: ast.expr, scope: Scope | None, depth: int = 0) -> MStr | None:
        """The mapped value of a string expression, or None when it is not known."""
        if depth > MAX_DEPTH:
            self.fail("nested too deeply")
            return None
        self.steps += 1
        if self.steps > MAX_STEPS:
            self.fail(f"more than {MAX_STEPS} steps to follow")
            return None
        if isinstance(expr, ast.Constant):
            if isinstance(expr.value, str):
                return self.literal(expr)
            return None
        if isinstance(expr, ast.JoinedStr):
            return self.fstring(expr, scope, depth)
        if isinstance(expr, (ast.Name, ast.Attribute)):
            found = self.lookup(expr.id, scope, expr.lineno, depth) \
                if isinstance(expr, ast.Name) else self.attribute_lookup(expr, scope, depth)
            if found is None:
                if isinstance(expr, ast.Attribute):
                    self.fail("an attribute expression is not followed")
                return None
            owner, binds = found
            vals: list[MStr] = []
            unknown = 0
            k = 0
            while k < len(binds):
                b = binds[k]
                if b.aug and b.loop is not None:
                    group = [x for x in binds[k:] if x.loop is b.loop]
                    k += len(group)
                    part = self.unroll(b.loop, group, owner, depth)
                else:
                    k += 1
                    saved, self.why = self.why, None
                    part = self.string(b.value, owner, depth + 1) \
                        if isinstance(b.value, ast.expr) else None
                    if part is None and len(binds) > 1 and self.why is not None and \
                            any(w in self.why for w in _UNKNOWABLE):
                        # one part of a += chain that no reading can know (another
                        # module's helper, a file): opaque, as one side of a + is
                        part = MStr.synthetic("\n") if not vals or \
                            vals[-1].text.endswith("\n") else \
                            self.opaque.token(expression_origin(b.value)
                                              if isinstance(b.value, ast.expr) else "")
                        unknown += 1
                    self.why = saved if self.why is None else self.why if saved is None \
                        else saved
                if part is None:
                    return None
                vals.append(part)
            if unknown and unknown == len(vals):
                return None
            return MStr.concat(vals) if len(vals) > 1 else vals[0] if vals else None
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            return self.concat(expr, scope, depth)
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mod):
            template = self.string(expr.left, scope, depth + 1)
            if template is None:
                return None
            return self.percent(template, expr.right, scope, depth)
        if isinstance(expr, ast.IfExp):
            test = self.truth(expr.test, scope, depth + 1)
            if test is None:
                self.fail("chosen by a conditional expression at run time")
                return None
            return self.string(expr.body if test else expr.orelse, scope, depth + 1)
        if isinstance(expr, ast.Call):
            return self.call_string(expr, scope, depth)
        kind = type(expr).__name__.lower()
        self.fail(f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} expression is not followed")
        return None

    def call_string(self, expr: ast.Call, scope, depth: int) -> MStr | None:
        fn = expr.func
        qual = self.qualname(fn)
        if qual in _DEDENT and len(expr.args) == 1 and not expr.keywords:
            inner = self.string(expr.args[0], scope, depth + 1)
            return dedent(inner) if inner is not None else None
        if qual in _READERS or (isinstance(fn, ast.Name) and fn.id == "open") or (
                isinstance(fn, ast.Attribute) and fn.attr in _READ_METHODS):
            got = self.file_value(expr, scope)      # a file of the package (files.py)
            if got is not None:
                return got
            self.fail("read from a file at run time")
            return None
        if isinstance(fn, ast.Attribute):
            if fn.attr in ("strip", "lstrip", "rstrip") and not expr.args \
                    and not expr.keywords:
                inner = self.string(fn.value, scope, depth + 1)
                return strip(inner, fn.attr) if inner is not None else None
            if fn.attr == "replace" and len(expr.args) == 2 and not expr.keywords:
                old, new = (self.const(a, scope, depth + 1) for a in expr.args)
                if isinstance(old, str) and old and not isinstance(new, str):
                    # a replacement known only at run time (a type chosen in branches)
                    # is a placeholder: one opaque identifier for all its occurrences
                    saved = self.why
                    new = self.opaque.token(expression_origin(expr.args[1])).text \
                        if self.const(expr.args[1], scope, depth + 1) is None else None
                    self.why = saved
                inner = self.string(fn.value, scope, depth + 1) \
                    if isinstance(old, str) and old and isinstance(new, str) else None
                return replace(inner, old, new) if inner is not None else None
            if fn.attr == "format":
                template = self.string(fn.value, scope, depth + 1)
                if template is None:
                    return None
                return self.format(template, expr, scope, depth)
            if fn.attr == "join" and len(expr.args) == 1 and not expr.keywords:
                sep = self.string(fn.value, scope, depth + 1)
                lines = self.file_lines_joined(sep, expr.args[0], scope) \
                    if sep is not None else None
                if lines is not None:
                    return lines
                parts = self.strings(expr.args[0], scope, depth + 1) \
                    if sep is not None else None
                if parts is None:
                    return None
                joined: list[MStr] = []
                for k, part in enumerate(parts):
                    joined.extend((sep, part) if k else (part,))
                return MStr.concat(joined)
            if fn.attr in ("substitute", "safe_substitute"):
                return self.substitute(expr, scope, depth)
        target = self.function_of(fn, scope)
        if target is not None:
            return self.inline(expr, target[0], target[1], scope, depth)
        self.fail(f"returned by `{ast.unparse(fn)[:40]}(...)`, not followed")
        return None

    def const(self, expr: ast.expr, scope: Scope | None, depth: int = 0):
        """An int/float/str constant value, or None (never a guess)."""
        if depth > MAX_DEPTH:
            return None
        if isinstance(expr, ast.Constant) and isinstance(expr.value, (int, float, str)) \
                and not isinstance(expr.value, bool):
            return expr.value
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
            v = self.const(expr.operand, scope, depth + 1)
            return -v if isinstance(v, (int, float)) else None
        if isinstance(expr, (ast.Name, ast.Attribute)):
            found = self.lookup(expr.id, scope, expr.lineno, depth) \
                if isinstance(expr, ast.Name) else self.attribute_lookup(expr, scope, depth)
            if found is not None and len(found[1]) == 1:
                return self.const(found[1][0].value, found[0], depth + 1)
            if isinstance(expr, ast.Name):
                return None
        if isinstance(expr, ast.BinOp):
            a = self.const(expr.left, scope, depth + 1)
            b = self.const(expr.right, scope, depth + 1)
            if a is None or b is None:
                return None
            return _arith(expr.op, a, b)
        if _is_warp_size(expr):
            return WARP_SIZE
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and \
                expr.value.id == "self":
            value = _self_attribute(scope, expr.attr)
            saved = self.params_hit, self.why    # another method's parameter: not ours
            got = self.const(value[0], value[1], depth + 1) if value else None
            self.params_hit, self.why = saved
            return got
        return None

    def truth(self, expr: ast.expr, scope: Scope | None, depth: int = 0) -> bool | None:
        """The truth of a condition made of constants (``FLAG = True`` in the module,
        ``not``, ``==``/``!=`` of constants), or None."""
        if depth > MAX_DEPTH:
            return None
        if isinstance(expr, ast.Constant):
            return bool(expr.value)
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
            v = self.truth(expr.operand, scope, depth + 1)
            return None if v is None else not v
        if isinstance(expr, ast.Name):
            saved = self.why
            found = self.lookup(expr.id, scope, expr.lineno, depth)
            self.why = saved
            if found is None or len(found[1]) != 1 or not isinstance(found[1][0].value,
                                                                      ast.expr):
                return None
            return self.truth(found[1][0].value, found[0], depth + 1)
        if isinstance(expr, ast.Compare) and len(expr.ops) == 1 and \
                isinstance(expr.ops[0], (ast.Eq, ast.NotEq)):
            saved = self.why
            a = self.const(expr.left, scope, depth + 1)
            b = self.const(expr.comparators[0], scope, depth + 1)
            self.why = saved
            if a is None or b is None:
                return None
            return (a == b) == isinstance(expr.ops[0], ast.Eq)
        return None

    def placeholder(self, value_expr: ast.expr | None, scope, depth: int,
                    spec: str = "", conversion: str = "", origin: str = "") -> MStr:
        if value_expr is not None and not spec and conversion in ("", "s"):
            text = self.text_value(value_expr, scope, depth)
            if text is not None:
                return text
        saved = self.why                     # an opaque placeholder is not a failure
        value = self.const(value_expr, scope, depth + 1) if value_expr is not None else None
        self.why = saved
        if value is None:
            return self.opaque.token(origin)
        try:
            if conversion == "r":
                value = repr(value)
            elif conversion in ("s", "a"):
                value = str(value) if conversion == "s" else ascii(value)
            return MStr.synthetic(format(value, spec))
        except (ValueError, TypeError):
            return self.opaque.token(origin)

    def text_value(self, expr: ast.expr, scope, depth: int) -> MStr | None:
        """A str value substituted into a template, mapped to the literal that holds it
        (so a finding inside it points there); None for anything but a string."""
        if isinstance(expr, ast.Constant) and not isinstance(expr.value, str):
            return None
        saved, n = self.why, self.opaque.n
        out = self.string(expr, scope, depth + 1)
        self.why = saved
        if out is None:
            self.opaque.n = n
        return out

    # -- literal forms ------------------------------------------------------------------

    def literal(self, node: ast.Constant) -> MStr | None:
        if getattr(node, "_cl_foreign", False):     # written in another module
            return self.foreign_literal(node)       # (its place is recorded each time)
        got = self._literals.get(id(node))
        if got is None:
            got = self._literals[id(node)] = self._literal(node)
        return got

    def _literal(self, node: ast.Constant) -> MStr | None:
        s, e = self.span(node)
        try:
            out = MStr()
            for prefix, quote, a, b, ls, le in self.scanner.literals(s, e):
                if "b" in prefix or "f" in prefix:
                    return None
                out = out + self.scanner.decode(prefix, quote, a, b, (ls, le))
        except (ValueError, IndexError, KeyError, AssertionError):
            out = None
        if out is None or out.text != node.value:
            # the scanner disagrees with Python: keep the value, map it to nothing
            return MStr.synthetic(node.value)
        return out

    def fstring(self, node: ast.JoinedStr, scope, depth: int) -> MStr | None:
        fields = [self._fvalue(v, scope, depth) for v in node.values
                  if isinstance(v, ast.FormattedValue)]
        if getattr(node, "_cl_foreign", False):     # written in another module
            parts, k = [], 0
            for v in node.values:
                if isinstance(v, ast.FormattedValue):
                    parts.append(fields[k])
                    k += 1
                elif isinstance(v, ast.Constant) and isinstance(v.value, str):
                    parts.append(MStr.synthetic(v.value))
            return MStr.concat(parts) if parts else MStr()
        s, e = self.span(node)
        try:
            out = MStr()
            for prefix, quote, a, b, ls, le in self.scanner.literals(s, e):
                if "b" in prefix:
                    return None
                out = out + self.scanner.decode(prefix, quote, a, b, (ls, le), fields)
        except (ValueError, IndexError, KeyError, AssertionError):
            return None
        if fields:
            return None          # the scanner and ast disagree on the fields
        return out

    def _fvalue(self, v: ast.FormattedValue, scope, depth: int) -> MStr:
        spec = ""
        if v.format_spec is not None:
            parts = []
            for p in getattr(v.format_spec, "values", []):
                if isinstance(p, ast.Constant) and isinstance(p.value, str):
                    parts.append(p.value)
                else:
                    return self.opaque.token(_field_origin(v.value, "", ""))
            spec = "".join(parts)
        conv = chr(v.conversion) if v.conversion and v.conversion > 0 else ""
        return self.placeholder(v.value, scope, depth, spec, conv,
                                origin=_field_origin(v.value, conv, spec))

    def format(self, template: MStr, call: ast.Call, scope, depth: int) -> MStr | None:
        if any(isinstance(a, ast.Starred) for a in call.args) or \
                any(k.arg is None for k in call.keywords):
            values_known = False
        else:
            values_known = True
        kwargs = {k.arg: k.value for k in call.keywords if k.arg}
        t = template.text
        # the pieces are joined once at the end (`out + piece` in the loop copied the
        # character maps again for each field: 55,000 `{{` of a fuzzed 130 KB template,
        # 4.5 s), and runs without braces are passed over in one step
        out: list[MStr] = []
        auto = 0
        i = 0
        lit_start = 0
        n = len(t)
        while i < n:
            nxt = _BRACE.search(t, i)
            if nxt is None:
                break
            i = nxt.start()
            c = t[i]
            if c in "{}" and i + 1 < len(t) and t[i + 1] == c:
                out.append(template.slice(lit_start, i + 1))
                i += 2
                lit_start = i
                continue
            if c == "}":
                return None                        # str.format would raise
            j = format_field_end(t, i)
            if j < 0:
                return None
            out.append(template.slice(lit_start, i))
            body = t[i + 1:j - 1]
            m = re.match(r"([^!:.\[]*)([.\[][^!:]*)?(?:!([rsa]))?(?::(.*))?$", body, re.S)
            if m is None:
                return None
            name, rest, conv, spec = m.group(1), m.group(2), m.group(3) or "", m.group(4) or ""
            if "{" in spec:
                value_expr = None
            elif name == "":
                value_expr = call.args[auto] if auto < len(call.args) else None
                auto += 1
            elif name.isdigit():
                k = int(name)
                value_expr = call.args[k] if k < len(call.args) else None
            else:
                value_expr = kwargs.get(name)
            if rest or not values_known:
                value_expr = None
            out.append(_in_macro(self.placeholder(value_expr, scope, depth, spec, conv,
                                                  origin=t[i:j]), t, i))
            i = j
            lit_start = i
        out.append(template.slice(lit_start, n))
        return MStr.concat(out)

    _PCT = re.compile(r"%(?:\((\w+)\))?([#0\- +]*)(\d+)?(?:\.(\d+))?[hlL]?([diouxXeEfFgGcrsa%])")

    def percent(self, template: MStr, right: ast.expr, scope, depth: int) -> MStr | None:
        t = template.text
        if isinstance(right, ast.Name) and depth < MAX_DEPTH:
            saved = self.why
            found = self.lookup(right.id, scope, right.lineno, depth)
            self.why = saved
            if found is not None and len(found[1]) == 1 and isinstance(
                    found[1][0].value, (ast.Tuple, ast.Dict, ast.Call)):
                return self.percent(template, found[1][0].value, found[0], depth + 1)
        if isinstance(right, ast.Call) and isinstance(right.func, ast.Name) and \
                right.func.id == "dict" and not right.args:
            right = ast.Dict([ast.Constant(k.arg) for k in right.keywords if k.arg],
                             [k.value for k in right.keywords if k.arg])
        if isinstance(right, ast.Tuple):
            seq: list[ast.expr] | None = list(right.elts)
            mapping = None
        elif isinstance(right, ast.Dict):
            seq = None
            mapping = {k.value: v for k, v in zip(right.keys, right.values)
                       if isinstance(k, ast.Constant) and isinstance(k.value, str)}
        else:
            seq, mapping = [right], None
        out = MStr()
        pos = 0
        k = 0
        for m in self._PCT.finditer(t):
            out = out + template.slice(pos, m.start())
            pos = m.end()
            if m.group(5) == "%":
                out = out + template.slice(m.start(), m.start() + 1)
                continue
            key = m.group(1)
            if key is not None:
                expr = mapping.get(key) if mapping is not None else None
            else:
                expr = seq[k] if seq is not None and k < len(seq) else None
                k += 1
            if expr is not None and m.group(5) == "s" and not (
                    m.group(2) or m.group(3) or m.group(4)):
                text = self.text_value(expr, scope, depth)
                if text is not None:
                    out = out + text
                    continue
            saved = self.why
            value = self.const(expr, scope, depth + 1) if expr is not None else None
            self.why = saved
            if value is None:
                out = out + _in_macro(self.opaque.token(m.group(0)), t, m.start())
                continue
            spec = "%" + m.group(2) + (m.group(3) or "") + \
                (("." + m.group(4)) if m.group(4) else "") + m.group(5)
            try:
                out = out + MStr.synthetic(spec % (value,))
            except (TypeError, ValueError, OverflowError):
                out = out + self.opaque.token(m.group(0))
        return out + template.slice(pos, len(t))


_MACRO_HEAD = re.compile(r"[ \t]*#[ \t]*define[ \t]+\w+\(([\w\s,]*)\)")


# a fact of every CUDA device the APIs report at run time: PyCUDA's dev.warp_size,
# DeviceData().warp_size, get_attribute(device_attribute.WARP_SIZE); CuPy's
# device.attributes['WarpSize'] (CUDA Programming Guide, "warpSize": 32)
WARP_SIZE = 32


def _is_warp_size(expr: ast.expr) -> bool:
    if isinstance(expr, ast.Attribute) and expr.attr == "warp_size":
        return True
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and \
            expr.func.attr == "get_attribute" and len(expr.args) == 1:
        a = expr.args[0]
        return isinstance(a, ast.Attribute) and a.attr == "WARP_SIZE"
    return False


def _self_attribute(scope: Scope | None, name: str):
    """(value, the method's scope) of ``self.name = value`` when the methods of the
    class around `scope` assign it exactly once, or None."""
    while scope is not None and not isinstance(scope.node, ast.ClassDef):
        scope = scope.parent
    if scope is None:
        return None
    found = []
    for st in scope.node.body:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for n in ast.walk(st):
                targets = n.targets if isinstance(n, ast.Assign) else \
                    [n.target] if isinstance(n, (ast.AugAssign, ast.AnnAssign)) else []
                for t in targets:
                    if isinstance(t, ast.Attribute) and t.attr == name and \
                            isinstance(t.value, ast.Name) and t.value.id == "self":
                        found.append((n, st))
    if len(found) != 1 or not isinstance(found[0][0], ast.Assign):
        return None
    node, method = found[0]
    return node.value, Scope(method, scope.parent)


def _in_macro(value: MStr, template: str, pos: int) -> MStr:
    """An opaque placeholder in the body of a function-like macro (``#define REDUCE(a,
    b) (%(reduce_expr)s)``) becomes an opaque expression of the macro's parameters,
    ``__cudalint_opaque_N__(a, b)``: the macro still reads its arguments."""
    if not (value.text.startswith(OPAQUE_PREFIX) and value.text.endswith("__")):
        return value
    line = template[template.rfind("\n", 0, pos) + 1:pos]
    m = _MACRO_HEAD.match(line)
    params = [p.strip() for p in m.group(1).split(",") if p.strip()] if m else []
    if not params:
        return value
    return value + MStr.synthetic("(" + ", ".join(params) + ")")


def _field_origin(expr: ast.expr, conv: str, spec: str) -> str:
    """``{x.dtype}``: an f-string field as written (shortened)."""
    inner = expression_origin(expr)[1:-1]
    return "{" + inner + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "") + "}"


def _arith(op: ast.operator, a, b):
    try:
        if isinstance(a, str) or isinstance(b, str):
            return a + b if isinstance(op, ast.Add) and isinstance(a, str) \
                and isinstance(b, str) else None
        if isinstance(op, ast.Add):
            return a + b
        if isinstance(op, ast.Sub):
            return a - b
        if isinstance(op, ast.Mult):
            v = a * b
            return v if abs(v) < 1 << 64 else None
        if isinstance(op, ast.FloorDiv):
            return a // b
        if isinstance(op, ast.Mod):
            return a % b
        if isinstance(op, ast.LShift) and isinstance(a, int) and isinstance(b, int) \
                and 0 <= b < 64:
            return a << b
        if isinstance(op, ast.RShift) and isinstance(a, int) and isinstance(b, int) \
                and b >= 0:
            return a >> b
    except (ZeroDivisionError, TypeError, OverflowError):
        return None
    return None


# ---------------------------------------------------------------------------------------
# string operations that keep the map


def dedent(s: MStr) -> MStr:
    """``textwrap.dedent`` on a mapped string (same algorithm, same result)."""
    text = s.text
    # whitespace-only lines become empty (textwrap's _whitespace_only_re)
    keep = [True] * len(text)
    for m in re.finditer(r"^[ \t]+$", text, re.MULTILINE):
        for k in range(m.start(), m.end()):
            keep[k] = False
    text2 = "".join(c for c, k in zip(text, keep) if k)
    idx = [i for i, k in enumerate(keep) if k]
    margin = None
    for m in re.finditer(r"(^[ \t]*)(?:[^ \t\n])", text2, re.MULTILINE):
        indent = m.group(1)
        if margin is None:
            margin = indent
        elif indent.startswith(margin):
            pass
        elif margin.startswith(indent):
            margin = indent
        else:
            for x, (a, b) in enumerate(zip(margin, indent)):
                if a != b:
                    margin = margin[:x]
                    break
    if margin:
        for m in re.finditer(r"(?m)^" + re.escape(margin), text2):
            for k in range(m.start(), m.end()):
                keep[idx[k]] = False
    chosen = [i for i, k in enumerate(keep) if k]
    return MStr("".join(text[i] for i in chosen), [s.map[i] for i in chosen],
                bytearray(s.verb[i] for i in chosen), s.pieces)


def strip(s: MStr, how: str) -> MStr:
    text = s.text
    a, b = 0, len(text)
    if how in ("strip", "lstrip"):
        a = len(text) - len(text.lstrip())
    if how in ("strip", "rstrip"):
        b = len(text.rstrip())
    b = max(a, b)
    return s.slice(a, b)


def replace(s: MStr, old: str, new: str) -> MStr:
    """``str.replace`` on a mapped string: the replaced text is synthetic, the rest
    keeps its map."""
    parts = []
    pos = 0
    text = s.text
    i = text.find(old)
    while i >= 0:
        parts += [s.slice(pos, i), MStr.synthetic(new)]
        pos = i + len(old)
        i = text.find(old, pos)
    parts.append(s.slice(pos, len(text)))
    return MStr.concat(parts)

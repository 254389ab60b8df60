"""Per-kernel, per-parameter access analysis: is the memory a pointer parameter points to
only ever read by the kernel?

For a pointer parameter ``p`` the analysis follows every value derived from it: pointer
arithmetic, casts (C-style and ``*_cast``), ``&p[i]``, conditional selections, local
pointer variables and references initialised or assigned from it, and the parameters of
device functions it is passed to (their bodies are analysed the same way). Every use ends
in one of three verdicts:

* a **load** (``p[i]`` read, ``*q``, ``q->f``, ``__ldg(q)``, passed by value, ...);
* a **write** (assignment, ``++``/``--``, atomics, ``__st*``, ``memcpy``/``memset``
  destination, a callee that writes through it);
* **unknown**: anything the analysis cannot see through, which the rules treat as a
  possible write: the pointer stored to memory or to a global (struct fields,
  arrays of pointers, ``Foo f{p}``), returned, captured by a lambda, used in inline
  assembly, turned into an integer that is kept, passed to a function that is not
  defined in the unit (or to a ``__noinline__`` one, whose loads ``__restrict__`` on the
  kernel would not reach), launched, or appearing in code the parser could not read.

Only a parameter with at least one load and neither writes nor unknowns is
``read_only``. The analysis also collects what adding ``const`` to the parameter would
require so that the program still compiles: local pointers and references initialised
from it that are declared with a non-const pointee, ``static_cast``/``reinterpret_cast``
to a non-const pointer, and device-function parameters it reaches; each becomes an edit
(``const_edits``), or, where no edit is certain to compile, a ``const_blocker`` reason.

    facts = ctx.analysis(PointerAccess)
    for acc in facts.kernel_params(kernel):
        acc.status          # "read_only" | "written" | "unknown" | "unused"
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from tree_sitter import Node

from cudalint.analysis.memory.names import (NameScanner, _bounded_pattern,
                                            _enclosing_declaration, _is_declared_name,
                                            _same, _word_spans, scan_identifiers, scan_paths)
from cudalint.analysis.memory.param_edits import const_edit
from cudalint.diagnostics import Edit
from cudalint.parse import text

if TYPE_CHECKING:
    from cudalint.context import UnitContext
    from cudalint.model.kernels import Function, Param

LOAD_INTRINSICS = frozenset({"__ldg", "__ldca", "__ldcg", "__ldcs", "__ldlu", "__ldcv"})
STORE_INTRINSICS = frozenset({"__stcg", "__stcs", "__stwb", "__stwt"})
# functions that take their arguments by value (a pointee lvalue passed to them is read)
_MATH = re.compile(
    r"^(?:std::|::)?(?:__)?(?:f?(?:abs|max|min|dim|ma)|sqrt|rsqrt|cbrt|rcbrt|exp|exp2|exp10|"
    r"expm1|log|log2|log10|log1p|pow|sin|cos|tan|asin|acos|atan|atan2|sinh|cosh|tanh|asinh|"
    r"acosh|atanh|erf|erfc|erfinv|erfcinv|lgamma|tgamma|floor|ceil|round|rint|lrint|llrint|"
    r"lround|llround|trunc|nearbyint|fmod|remainder|hypot|copysign|isnan|isinf|isfinite|"
    r"signbit|norm3d|norm4d|rnorm3d|rnorm4d|saturate|sinpi|cospi|ldexp|scalbn|ilogb|logb|"
    r"normcdf|normcdfinv|fdivide|fdividef|frcp_rn|fsqrt_rn|popc|popcll|clz|clzll|ffs|ffsll|"
    r"brev|brevll|byte_perm|mul24|umul24|mulhi|umulhi|mul64hi|umul64hi|sad|usad|hadd|rhadd|"
    r"uhadd|urhadd)f?$")
_BY_VALUE_PREFIX = re.compile(
    r"^(?:__(?:half|float|int|uint|ll|ull|double|short|ushort|bfloat16|hi|lo|low|high|"
    r"float2half|half2float|float2bfloat16|bfloat162float|h|f|d|i|u|shfl|ballot|any|all|"
    r"reduce|match|expf|logf|sinf|cosf|tanf|powf|exp10f|log2f|log10f|sincosf|saturatef|"
    r"fmaf|fadd|fsub|fmul|fdiv|frcp|fsqrt|dadd|dmul|ddiv|drcp|dsqrt|make|nv_)"
    r"|make_(?:float|int|uint|double|half|short|char|uchar|long|ulong|longlong)\d*$"
    r"|(?:float|int|double|half|bool|unsigned|char|short|long|size_t|float2|float4|int4)$)")
_SCALAR_CASTS = frozenset({"static_cast", "reinterpret_cast", "const_cast", "dynamic_cast"})
_COMPARISONS = frozenset({"==", "!=", "<", ">", "<=", ">=", "&&", "||"})
_TRANSPARENT_STATEMENTS = frozenset({"expression_statement", "condition_clause",
                                     "if_statement", "while_statement", "do_statement",
                                     "for_statement", "sizeof_expression",
                                     "decltype", "alignof_expression"})
_DEPTH_LIMIT = 6            # device-function call chains followed
# uses of one name in one function followed (the most in /tmp/real is 327, in the
# newcorpus sweeps 1,601: fast-hadamard-transform's generated code); more is left
# undecided: a fuzzed sum of 300,000 terms took seconds
MAX_USES = 2048


@dataclass
class ParamAccess:
    function: "Function"
    param: "Param"
    loads: list[Node] = field(default_factory=list)         # across callees too
    writes: list[tuple[Node, str]] = field(default_factory=list)
    unknowns: list[tuple[Node, str]] = field(default_factory=list)
    const_edits: list[Edit] = field(default_factory=list)   # besides the parameter's own
    const_blocker: str | None = None
    derived: list[str] = field(default_factory=list)        # local names holding it
    plain_loads: int = 0                                    # loads not through __ldg & co

    @property
    def status(self) -> str:
        if self.writes:
            return "written"
        if self.unknowns:
            return "unknown"
        return "read_only" if self.loads else "unused"

    @property
    def read_only(self) -> bool:
        return self.status == "read_only"


class PointerAccess:
    """Memoised per-unit analysis; ``ctx.analysis(PointerAccess)``."""

    def __init__(self, ctx: "UnitContext"):
        self.ctx = ctx
        self.model = ctx.model
        self._memo: dict[tuple[int, str], ParamAccess | None] = {}
        self._kernels: dict[int, list[ParamAccess]] = {}
        self._bodies: dict[int, _Body] = {}

    # ---- unit-wide indexes -----------------------------------------------------------
    def body_facts(self, fn: "Function") -> "_Body":
        facts = self._bodies.get(fn.node.id)
        if facts is None:
            facts = self._bodies[fn.node.id] = _Body(self, fn)
        return facts

    @cached_property
    def _prototypes(self) -> dict[str, list[Node]]:
        """Function declarations that are not definitions, and explicit instantiations."""
        out: dict[str, list[Node]] = {}
        for decl in self.model.nodes("declaration"):
            for d in decl.children_by_field_name("declarator"):
                while d is not None and d.type in ("pointer_declarator",
                                                   "reference_declarator"):
                    d = d.child_by_field_name("declarator")
                if d is not None and d.type == "function_declarator":
                    name = d.child_by_field_name("declarator")
                    if name is not None:
                        key = text(name).split("<", 1)[0].split("::")[-1].strip()
                        out.setdefault(key, []).append(decl)
        return out

    def address_taken(self, fn: "Function") -> bool:
        """The function's name used other than in its definition, a call or a launch, a
        ``cuda*`` API call or a cast (e.g. ``kernel = &copy;`` with a typed pointer):
        changing its parameter types could break that use. Undecided (more than MAX_USES
        mentions) counts as taken."""
        root, data = self.model.root, self.ctx.unit.data
        spans = list(_word_spans(data, fn.name, root))
        if len(spans) > MAX_USES:
            return True
        for ident, path, _ in scan_identifiers(root, data, fn.name, None, spans):
            if ident.start_byte == fn.name_node.start_byte:
                continue
            i = len(path) - 2                              # path[i]: the parent
            node = path[i] if i >= 0 else None
            if node is not None and node.type == "template_function":
                i -= 1
                node = path[i] if i >= 0 else None
            if node is not None and node.type == "call_expression":
                continue                                  # call or <<<launch>>>
            while i >= 0 and path[i].type in ("pointer_expression",
                                              "parenthesized_expression"):
                i -= 1
            cur = path[i] if i >= 0 else None
            if cur is not None and cur.type == "cast_expression":
                continue
            if cur is not None and cur.type == "argument_list" and i >= 1 and \
                    path[i - 1].type == "call_expression":
                callee = text(path[i - 1].child_by_field_name("function"))
                if callee.split("::")[-1].startswith(("cuda", "cu")):
                    continue
            return True
        return False

    def has_other_declarations(self, fn: "Function") -> bool:
        return bool(self._prototypes.get(fn.name)) or \
            len(self.model.function_named(fn.name)) > 1

    # ---- public ----------------------------------------------------------------------
    def kernel_params(self, fn: "Function") -> list[ParamAccess]:
        if fn.node.id not in self._kernels:
            out = []
            for p in fn.params:
                if p.pointer_depth == 1 and not p.is_reference and not p.is_array and p.name:
                    acc = self.param_access(fn, p.name)
                    if acc is not None:
                        out.append(acc)
            self._kernels[fn.node.id] = out
        return self._kernels[fn.node.id]

    def param_access(self, fn: "Function", name: str, depth: int = 0
                     ) -> ParamAccess | None:
        key = (fn.node.id, name)
        if key in self._memo:
            acc = self._memo[key]
            if acc is None:        # a recursive chain: unknown
                return None
            return acc
        if depth > _DEPTH_LIMIT or fn.body is None:
            return None
        self._memo[key] = None
        param = fn.param(name)
        if param is None:
            return None
        acc = ParamAccess(fn, param)
        _Tracer(self, fn, acc, depth).run()
        self._memo[key] = acc
        return acc


class _Body:
    """One function body, shared by the tracers of its parameters: where a name occurs
    (found by scanning the text and descending to it, never by walking every identifier),
    and the parents of the nodes on the way (``Node.parent`` walks down from the root of
    the tree on every call: quadratic in a deeply nested expression)."""

    def __init__(self, facts: PointerAccess, fn: "Function"):
        self.facts = facts
        self.fn = fn
        self.parents: dict[int, Node] = {}
        self._occurrences: dict[str, list[tuple[Node, bool, str | None]] | None] = {}
        # where the text names it but the tree has no identifier (a type, a field, a
        # comment): the only places type_uses() needs to look
        self._other_spans: dict[str, list[tuple[int, int]]] = {}
        self._scanner = NameScanner(fn.body, facts.ctx.unit.data, self.parents)

    def parent(self, node: Node) -> Node | None:
        p = self.parents.get(node.id)
        return p if p is not None else node.parent

    def occurrences(self, name: str) -> list[tuple[Node, bool, str | None]] | None:
        """(identifier, declares it, why it is opaque) for every ``name`` in the body, in
        source order; opaque: inside a lambda, inline assembly or an ERROR node. None:
        more than MAX_USES (not followed)."""
        if name in self._occurrences:
            return self._occurrences[name]
        spans = self._scanner.spans(name)
        out: list[tuple[Node, bool, str | None]] | None = None
        if len(spans) <= MAX_USES:
            out = []
            for ident, _, opaque in self._scanner.identifiers(name, spans):
                out.append((ident, _is_declared_name(ident, self.parent), opaque))
            if len(out) < len(spans):
                found = {(i.start_byte, i.end_byte) for i, _, _ in out}
                self._other_spans[name] = [sp for sp in spans if sp not in found]
        self._occurrences[name] = out
        return out

    def type_uses(self, name: str) -> list[Node]:
        """Parameter declarations of a local function declarator in which ``name`` is
        the type: C++'s most vexing parse of `Point c(p[0], p[1]);` (tree-sitter reads
        `p[0]` as a parameter of type `p`). The text, not the tree, holds these uses."""
        out: list[Node] = []
        if self.occurrences(name) is None:
            return out
        spans = self._other_spans.get(name)
        if self._scanner.indexed:
            spans = None                # the index lists identifiers only: scan the text
        elif spans is None:
            return out                  # every mention is an identifier
        for s, e, path, _ in scan_paths(self.fn.body, self.facts.ctx.unit.data, name,
                                        spans=spans):
            cur = path[-1]
            if cur.type == "type_identifier" and cur.start_byte == s and \
                    cur.end_byte == e and len(path) > 2 and \
                    path[-2].type in ("parameter_declaration",
                                      "optional_parameter_declaration"):
                out.append(path[-2])
        return out

    def declarations(self, name: str) -> list[Node] | None:
        """The declarator identifiers that declare ``name`` in the body (not params);
        None: too many uses to tell."""
        occurrences = self.occurrences(name)
        if occurrences is None:
            return None
        return [ident for ident, declared, _ in occurrences if declared]

    @cached_property
    def error_ranges(self) -> list[tuple[int, int]]:
        return [(e.start_byte, e.end_byte) for e in self.facts.model.error_nodes
                if e.start_byte >= self.fn.node.start_byte
                and e.end_byte <= self.fn.node.end_byte]


class _Tracer:
    """Follows one root pointer through one function body."""

    def __init__(self, facts: PointerAccess, fn: "Function", acc: ParamAccess, depth: int):
        self.facts = facts
        self.fn = fn
        self.acc = acc
        self.depth = depth
        self.body = facts.body_facts(fn)
        self.parent = self.body.parent
        self.ptr_names: set[str] = set()
        self.ref_names: set[str] = set()
        self.queue: list[tuple[str, str]] = []
        self.seen: set[tuple[str, int, bool]] = set()
        self.int_seen: set[int] = set()

    # ---- driver ----------------------------------------------------------------------
    def run(self) -> None:
        root = self.acc.param.name
        self.ptr_names.add(root)
        self.queue.append((root, "ptr"))
        if self._name_in_errors(root):
            self.unknown(self.fn.name_node, "the parser could not read part of the body")
        declared = self.body.declarations(root)
        if declared is None:
            self.unknown(self.fn.name_node, f"used more than {MAX_USES} times")
            return
        if declared:
            self.unknown(declared[0], "shadowed by a local variable")
            return
        while self.queue:
            name, kind = self.queue.pop()
            occurrences = self.body.occurrences(name)
            if occurrences is None:
                self.unknown(self.fn.name_node, f"`{name}` used more than {MAX_USES} times")
                continue
            if kind == "ptr":
                for decl in self.body.type_uses(name):
                    # `p[i]` read as a parameter `p [i]`: a load; any other shape
                    # (`p[0] = v`, a default value) is not followed
                    kids = decl.named_children
                    if decl.type == "parameter_declaration" and len(kids) == 2 and \
                            kids[1].type == "abstract_array_declarator":
                        self.load(decl)
                    else:
                        self.unknown(decl, "used where the parser saw a type")
            for occ, is_declaration, opaque in occurrences:
                if is_declaration:
                    continue
                if opaque is not None:
                    self.unknown(occ, opaque)
                    continue
                if kind == "ptr":
                    self.follow("ptr", occ, False)
                else:
                    self.follow("lval", occ, True)

    def follow(self, kind: str, node: Node, through_reference: bool) -> None:
        """Walk up from a use, one step at a time (a step returns the next one, or None
        once the use has its verdict); a step already taken adds nothing new."""
        step: _Step | None = (kind, node, through_reference)
        while step is not None:
            kind, node, through_reference = step
            key = (kind, node.id, through_reference)
            if key in self.seen:
                return
            self.seen.add(key)
            step = self.ptr_use(node) if kind == "ptr" else \
                self.lval_use(node, through_reference)

    def _name_in_errors(self, name: str) -> bool:
        ranges = self.body.error_ranges
        if not ranges:
            return False
        data = self.facts.ctx.unit.data
        pat = _bounded_pattern(name)
        return any(pat.search(data, s, e) for s, e in ranges)

    # ---- verdicts --------------------------------------------------------------------
    def load(self, node: Node, via_ldg: bool = False) -> None:
        self.acc.loads.append(node)
        if not via_ldg:
            self.acc.plain_loads += 1

    def write(self, node: Node, why: str) -> None:
        self.acc.writes.append((node, why))

    def unknown(self, node: Node, why: str) -> None:
        self.acc.unknowns.append((node, why))

    def block_const(self, why: str) -> None:
        if self.acc.const_blocker is None:
            self.acc.const_blocker = why

    # ---- a pointer-valued expression derived from the root ---------------------------
    def ptr_use(self, n: Node) -> "_Step | None":
        p = self.parent(n)
        if p is None:
            return self.unknown(n, "unexpected position")
        t = p.type
        if t == "parenthesized_expression":
            return ("ptr", p, False)
        if t == "binary_expression":
            op = text(p.child_by_field_name("operator"))
            if op in _COMPARISONS:
                return None
            if op == "+" or (op == "-" and _same(p.child_by_field_name("left"), n)):
                return ("ptr", p, False)
            return self.unknown(p, f"pointer used with `{op}`")
        if t == "unary_expression":
            if text(p.child_by_field_name("operator")) == "!":
                return None
            return self.unknown(p, "unary operator on the pointer")
        if t == "conditional_expression":
            if _same(p.child_by_field_name("condition"), n):
                return None
            return ("ptr", p, False)
        if t == "cast_expression":
            return self.cast_use(p, p.child_by_field_name("type"), c_style=True)
        if t == "subscript_expression":
            if _same(p.child_by_field_name("argument"), n):
                return ("lval", p, False)
            return self.unknown(p, "pointer used as an index")
        if t == "pointer_expression":
            if text(p.child_by_field_name("operator")) == "*":
                return ("lval", p, False)
            return self.unknown(p, "address of the pointer variable taken")
        if t == "field_expression":
            if text(p.child_by_field_name("operator")) == "->" and \
                    _same(p.child_by_field_name("argument"), n):
                return ("lval", p, False)
            return self.unknown(p, "member access on the pointer")
        if t == "update_expression":
            return ("ptr", p, False)          # p++ moves the local copy; its value is used
        if t == "assignment_expression":
            left, right = p.child_by_field_name("left"), p.child_by_field_name("right")
            if _same(left, n):
                op = text(p.child_by_field_name("operator"))
                if op in ("=", "+=", "-="):
                    return None             # the variable is re-pointed
                return self.unknown(p, f"pointer updated with `{op}`")
            if _same(right, n):
                if left is not None and left.type == "identifier":
                    self.new_alias(text(left), "ptr", left, None)
                    up = self.parent(p)
                    if up is not None and up.type != "expression_statement":
                        return ("ptr", p, False)
                    return None
                return self.unknown(p, "stored to memory (a struct field, an array "
                                       "element or through a pointer)")
        if t == "init_declarator":
            decl = p.child_by_field_name("declarator")
            if _same(p.child_by_field_name("value"), n) and decl is not None:
                return self.declared_from(p, decl, "ptr")
            return self.unknown(p, "unexpected initializer")
        if t == "argument_list":
            call = self.parent(p)
            if call is not None and call.type == "call_expression":
                index = [c.id for c in p.named_children].index(n.id)
                return self.call_arg(call, index, n)
            if call is not None and call.type == "init_declarator":
                return self.unknown(call, "passed to a constructor (an object holding it)")
            return self.unknown(p, "passed in an argument list")
        if t in ("initializer_list", "initializer_pair"):
            return self.unknown(p, "stored in an aggregate (array of pointers or struct)")
        if t == "return_statement":
            return self.unknown(p, "returned")
        if t in _TRANSPARENT_STATEMENTS:
            return None
        if t == "comma_expression":
            return self.unknown(p, "comma expression")
        return self.unknown(p, f"pointer used in `{t}`")

    def cast_use(self, cast: Node, type_node: Node | None, c_style: bool) -> "_Step | None":
        ttext = text(type_node)
        if "*" in ttext:
            if not c_style and "const" not in ttext:
                # reinterpret_cast<float4*>(p) does not compile once p is const
                if type_node is not None and type_node.child_count and ttext.count("*") == 1:
                    self.acc.const_edits.append(
                        Edit(type_node.start_byte, type_node.start_byte, "const "))
                else:
                    self.block_const(f"`{text(cast)}` casts it to a non-const pointer")
            if "&" in ttext:
                return self.unknown(cast, "cast to a reference")
            return ("ptr", cast, False)
        if ttext.strip() == "bool":
            return None
        return self.int_use(cast)

    def int_use(self, n: Node) -> None:
        """The address as an integer: fine inside a condition (alignment tests), unknown
        when it is kept (it could be turned back into a pointer and written)."""
        cur = n
        while True:
            if cur.id in self.int_seen:
                return None             # the walk from here has had its verdict already
            self.int_seen.add(cur.id)
            p = self.parent(cur)
            if p is None:
                return self.unknown(n, "address used as an integer")
            if p.type in ("binary_expression", "parenthesized_expression",
                          "unary_expression", "cast_expression"):
                if p.type == "cast_expression" and "*" in text(p.child_by_field_name("type")):
                    return self.unknown(n, "integer address cast back to a pointer")
                cur = p
                continue
            if p.type == "conditional_expression" and \
                    _same(p.child_by_field_name("condition"), cur):
                return None
            if p.type in ("condition_clause", "if_statement", "while_statement"):
                return None
            return self.unknown(n, "address kept as an integer")

    # ---- an lvalue of the memory the root points to ----------------------------------
    def lval_use(self, n: Node, through_reference: bool = False) -> "_Step | None":
        p = self.parent(n)
        if p is None:
            return self.unknown(n, "unexpected position")
        t = p.type
        if t == "parenthesized_expression":
            return ("lval", p, through_reference)
        if t == "field_expression" and _same(p.child_by_field_name("argument"), n):
            up = self.parent(p)
            if up is not None and up.type == "call_expression" and \
                    _same(up.child_by_field_name("function"), p):
                return self.unknown(p, "member function called on the pointed-to data")
            if text(p.child_by_field_name("operator")) == "->":
                return self.load(p)          # a pointer read from the data, then followed
            return ("lval", p, through_reference)
        if t == "subscript_expression":
            if _same(p.child_by_field_name("argument"), n):
                return ("lval", p, through_reference)
            return self.load(n)
        if t == "assignment_expression":
            if _same(p.child_by_field_name("left"), n):
                return self.write(p, "assigned")
            return self.load(n)
        if t == "update_expression":
            return self.write(p, "incremented")
        if t == "pointer_expression":
            if text(p.child_by_field_name("operator")) == "&":
                return ("ptr", p, False)
            return self.load(n)
        if t == "init_declarator" and _same(p.child_by_field_name("value"), n):
            decl = p.child_by_field_name("declarator")
            if decl is not None and decl.type == "reference_declarator":
                return self.declared_from(p, decl, "ref")
            return self.load(n)
        if t == "argument_list":
            call = self.parent(p)
            if call is not None and call.type == "call_expression":
                index = [c.id for c in p.named_children].index(n.id)
                return self.call_value_arg(call, index, n)
            return self.unknown(p, "passed to a constructor")
        if t in ("initializer_list", "initializer_pair"):
            return self.load(n)
        if t == "lambda_expression":
            return self.unknown(p, "captured by a lambda")
        if t == "return_statement":
            ret = text(self.fn.node.child_by_field_name("declarator"))
            if through_reference or "&" in ret.split("(", 1)[0]:
                return self.unknown(p, "returned by reference")
            return self.load(n)
        if t == "call_expression" and _same(p.child_by_field_name("function"), n):
            return self.unknown(p, "called")
        if t in ("sizeof_expression", "decltype", "alignof_expression"):
            return None
        return self.load(n)

    # ---- calls -----------------------------------------------------------------------
    def _callee_name(self, call: Node) -> str:
        f = call.child_by_field_name("function")
        if f is None:
            return ""
        if f.type == "template_function":
            f = f.child_by_field_name("name")
        return text(f)

    def call_arg(self, call: Node, index: int, arg: Node) -> "_Step | None":
        if any(c.type == "kernel_call_syntax" for c in call.children):
            return self.unknown(call, "passed to a kernel launch")
        fnode = call.child_by_field_name("function")
        if fnode is not None and fnode.type == "template_function":
            name = text(fnode.child_by_field_name("name"))
            if name in _SCALAR_CASTS:
                targs = fnode.child_by_field_name("arguments")
                ty = targs.named_children[0] if targs is not None and targs.named_children \
                    else None
                if name == "const_cast":
                    return self.unknown(call, "const_cast")
                return self.cast_use(call, ty, c_style=False)
        name = self._callee_name(call)
        short = name.split("::")[-1]
        if short in LOAD_INTRINSICS:
            return self.load(call, via_ldg=True)
        if short in STORE_INTRINSICS or short.startswith("atomic") or \
                short.startswith("__nv_atomic"):
            return self.write(call, f"`{short}`")
        if short in ("memcpy", "memset", "memmove"):
            if index == 0:
                return self.write(call, f"`{short}` destination")
            return self.load(call)
        if short in ("printf", "assert", "__assert_fail", "__builtin_expect"):
            return None
        if short in ("__builtin_assume_aligned",):
            return ("ptr", call, False)
        return self.device_call(call, name, index, arg)

    def _callees(self, name: str, nargs: int) -> list["Function"]:
        short = name.split("::")[-1].split("<")[0].strip()
        fns = [f for f in self.facts.model.function_named(short) if f.is_device]
        return [f for f in fns if len(f.params) == nargs or
                (len(f.params) > nargs and all(
                    p.node.type == "optional_parameter_declaration"
                    for p in f.params[nargs:]))]

    def device_call(self, call: Node, name: str, index: int, arg: Node) -> None:
        args = call.child_by_field_name("arguments")
        nargs = len(args.named_children) if args is not None else 0
        fns = self._callees(name, nargs) if name else []
        if len(fns) != 1:
            why = "overloaded" if fns else "not defined in this file"
            return self.unknown(call, f"passed to `{name or text(call)}`, {why}")
        callee = fns[0]
        if "__noinline__" in text(callee.node).split("(", 1)[0]:
            return self.unknown(call, f"passed to `__noinline__` `{callee.name}`")
        cp = callee.params[index] if index < len(callee.params) else None
        if cp is None or cp.is_reference or cp.pointer_depth != 1 or not cp.name:
            return self.unknown(call, f"passed to `{callee.name}` as a non-pointer")
        sub = self.facts.param_access(callee, cp.name, self.depth + 1)
        if sub is None:
            return self.unknown(call, f"passed to `{callee.name}` (recursive or too deep)")
        if sub.writes:
            return self.write(call, f"`{callee.name}` writes through its `{cp.name}`")
        if sub.unknowns:
            node, why = sub.unknowns[0]
            return self.unknown(call, f"passed to `{callee.name}`, where it is {why}")
        self.acc.loads.extend(sub.loads)
        self.acc.plain_loads += sub.plain_loads
        if not cp.pointee_const:
            if sub.const_blocker is not None:
                self.block_const(sub.const_blocker)
            elif self.facts.has_other_declarations(callee):
                self.block_const(f"`{callee.name}` is declared more than once; its "
                                 f"parameter `{cp.name}` must become const too")
            else:
                edit = const_edit(cp)
                if edit is None:
                    self.block_const(f"`{callee.name}`'s parameter `{cp.name}` must "
                                     "become const too")
                else:
                    self.acc.const_edits.append(edit)
                    self.acc.const_edits.extend(sub.const_edits)
        return None

    def call_value_arg(self, call: Node, index: int, arg: Node) -> None:
        """The pointed-to data (an lvalue) passed to a function: read, unless the
        callee may take it by non-const reference."""
        fnode = call.child_by_field_name("function")
        if fnode is not None and fnode.type == "template_function" and \
                text(fnode.child_by_field_name("name")) in _SCALAR_CASTS:
            ty = text(fnode.child_by_field_name("arguments"))
            if "&" in ty and "const" not in ty:
                return self.unknown(call, "cast to a non-const reference")
            return self.load(arg)
        name = self._callee_name(call)
        short = name.split("::")[-1]
        if short.startswith("atomic") and index >= 1:
            return self.load(arg)       # the operand: atomicAdd(addr, *g) reads *g
        if short in STORE_INTRINSICS or short.startswith("atomic"):
            return self.unknown(call, f"`{short}` on the data")
        if _MATH.match(name) or _BY_VALUE_PREFIX.match(short) or short in (
                "printf", "assert", "__ldg") or fnode is not None and \
                fnode.type == "primitive_type":
            return self.load(arg)
        args = call.child_by_field_name("arguments")
        nargs = len(args.named_children) if args is not None else 0
        fns = self._callees(name, nargs) if name else []
        if len(fns) == 1:
            cp = fns[0].params[index] if index < len(fns[0].params) else None
            if cp is not None and (not cp.is_reference or cp.pointee_const):
                return self.load(arg)
        return self.unknown(call, f"passed to `{name or text(call)}`, which may take it by "
                                  "reference")

    # ---- derived local variables -----------------------------------------------------
    def declared_from(self, init: Node, decl: Node, kind: str) -> None:
        """``T* q = <root-derived>`` (kind "ptr") or ``T& r = <root lvalue>`` ("ref")."""
        name_node = decl
        while name_node is not None and name_node.type != "identifier":
            if name_node.type not in ("pointer_declarator", "reference_declarator"):
                return self.unknown(init, f"declared as `{text(decl)}`")
            nxt = name_node.child_by_field_name("declarator")
            if nxt is None:
                nxt = next((c for c in name_node.named_children
                            if c.type in ("identifier", "pointer_declarator")), None)
            name_node = nxt
        if name_node is None:
            return self.unknown(init, "unexpected declarator")
        declaration = self.parent(init)
        ptr_depth = text(decl).count("*")
        if kind == "ptr" and (ptr_depth != 1 or decl.type == "reference_declarator"):
            if decl.type == "reference_declarator" or ptr_depth != 1:
                return self.unknown(init, f"held as `{text(decl)}`")
        self.new_alias(text(name_node), kind, name_node, declaration)
        return None

    def new_alias(self, name: str, kind: str, where: Node, declaration: Node | None
                  ) -> None:
        decls = self.body.declarations(name)
        if decls is None:
            self.unknown(where, f"`{name}` is used more than {MAX_USES} times")
            return
        if not decls:
            # not a local of this function: a global or a parameter
            if self.fn.param(name) is not None:
                self.block_const(f"it is assigned to the parameter `{name}`")
                self._add_alias(name, kind)
                return
            self.unknown(where, f"stored to `{name}`, which is not a local variable")
            return
        if len(decls) > 1:
            self.unknown(where, f"`{name}` is declared more than once")
            return
        decl_ident = decls[0]
        declaration = declaration or _enclosing_declaration(decl_ident, self.parent)
        if declaration is None:
            self.unknown(where, f"cannot find the declaration of `{name}`")
            return
        self._const_for_declaration(name, declaration)
        self._add_alias(name, kind)

    def _add_alias(self, name: str, kind: str) -> None:
        names = self.ptr_names if kind == "ptr" else self.ref_names
        if name in names:
            return
        names.add(name)
        self.acc.derived.append(name)
        if self._name_in_errors(name):
            self.unknown(self.fn.name_node, "the parser could not read part of the body")
        self.queue.append((name, kind))

    def _const_for_declaration(self, name: str, declaration: Node) -> None:
        if declaration.type != "declaration":
            self.block_const(f"`{name}` is declared in a `{declaration.type}`")
            return
        type_node = declaration.child_by_field_name("type")
        quals = {text(c) for c in declaration.children if c.type == "type_qualifier"}
        if "const" in quals or type_node is None:
            return
        if type_node.type == "placeholder_type_specifier":     # auto / auto* / auto&
            return
        if len(declaration.children_by_field_name("declarator")) != 1:
            self.block_const(f"`{name}` shares its declaration with other variables")
            return
        self.acc.const_edits.append(Edit(type_node.start_byte, type_node.start_byte,
                                         "const "))


# ---- helpers -----------------------------------------------------------------------
_Step = tuple[str, Node, bool]          # ("ptr" | "lval", node, through a reference)

"""The parse model: what a unit declares, read once from its tree-sitter tree.

Rules and analyses read facts from here (kernels, parameters, shared and local arrays,
launch sites, integer constants, parse-error regions) instead of walking the tree again.
Everything is computed lazily and at most once per unit.
"""
from __future__ import annotations

import re

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from functools import cached_property
from operator import itemgetter

from tree_sitter import Node, Tree

from cudalint.model.consteval import MAX_TEXT, MAX_VALUE, eval_int, fits
from cudalint.model.types import TypeAliases
from cudalint.parse import captures, text

FUNCTION_SPACES = ("__global__", "__device__", "__host__")
# the largest array whose size the model keeps (2 GiB): far past any shared memory
# (228 KB per SM on sm_90) or per-thread local array (512 KB of stack), so only
# sizes no kernel can declare are dropped
MAX_ARRAY_BYTES = 1 << 31
_UINT_MAX = (1 << 32) - 1

# One query over the whole tree collects every node kind the model and the analyses read:
# a query costs about a quarter of the parse whatever its patterns (the walk dominates),
# so one combined query instead of one per fact. Per-function facts take their slice of
# these lists by byte range (Model.nodes_in) instead of querying the body again.
# qualified_declaration: declarations with a type qualifier (const, constexpr, volatile,
# __shared__), the only ones that can declare a constant; array_declaration: those that
# declare an array; function_like_declaration: those that can declare a function (a
# function declarator, possibly under pointer or reference declarators). They spare
# Python passes over every declaration of the unit. assigned / updated / address_taken:
# the identifiers a statement writes (the lane engine's reaching values), which would
# otherwise cost a walk of each kernel body. if_statement (the lane engine's branch
# conditions) and preproc_conditional (model/preproc's #if blocks) were queries of their
# own: each compile cost ~14 ms in every process, as a capture here nothing measurable.
# callee_call: the call of each callee, which Node.parent would find by walking down from
# the root (its cost is the node's depth: 2,762 calls 28,000 levels deep took 1.5 s).
INDEX_QUERY = """
(declaration) @declaration
(function_definition) @function_definition
(call_expression (kernel_call_syntax)) @launch
(preproc_def name: (identifier) value: (preproc_arg)) @define
(enumerator_list) @enumerator_list
(subscript_expression) @subscript
(pointer_expression operator: "*") @deref
(call_expression function: (identifier) @callee) @callee_call
(struct_specifier name: (type_identifier) body: (field_declaration_list)) @struct
(declaration (type_qualifier)) @qualified_declaration
(declaration declarator: (array_declarator)) @array_declaration
(declaration declarator: (init_declarator declarator: (array_declarator))) @array_declaration
(declaration declarator: [(function_declarator) (pointer_declarator) (reference_declarator)])
  @function_like_declaration
(assignment_expression left: (identifier) @assigned)
(update_expression argument: (identifier) @updated)
(pointer_expression operator: "&" argument: (identifier) @address_taken)
(if_statement) @if_statement
[(preproc_if) (preproc_ifdef)] @preproc_conditional
"""
# captures that can hold one node twice (a declaration with two matching children)
_MAY_REPEAT = ("qualified_declaration", "array_declaration", "function_like_declaration")


@dataclass(eq=False)
class Param:
    name: str
    node: Node                  # the parameter_declaration
    name_node: Node | None
    base_type: str              # "float", "T", "float4" (without qualifiers)
    pointer_depth: int
    pointee_const: bool         # const applies to what the (outermost) pointer points to
    restrict: bool              # __restrict__ on the pointer
    is_reference: bool
    is_array: bool

    @property
    def is_pointer(self) -> bool:
        return self.pointer_depth > 0 or self.is_array


class Function:
    """A function definition. Its name, spaces and body are read when the model lists
    the functions; everything else (parameters, template parameters, launch bounds,
    constants) on first use: most functions of a unit are host code no rule looks into.

    A template instantiated by the project is a copy of its Function with its template
    arguments bound (:mod:`cudalint.model.instances`): ``instance`` names it
    (``reduce6<256>``), ``bindings`` and ``type_bindings`` hold the arguments.
    """
    instance: str | None = None
    bindings: dict[str, int] | None = None
    type_bindings: dict[str, str] | None = None
    # the launches that bind this instantiation (instances.InstanceLaunch), None when
    # this is no instantiation
    instance_launches: tuple | None = None

    def __init__(self, name: str, node: Node, name_node: Node, spaces: frozenset[str],
                 body: Node | None, declarator: Node | None = None,
                 parent: Node | None = None, model: "Model | None" = None,
                 params: list[Param] | None = None):
        self.name = name
        self.node = node                    # function_definition
        self.name_node = name_node
        self.spaces = spaces                # subset of __global__/__device__/__host__
        self.body = body
        self._declarator = declarator       # the function_declarator
        self._parent = parent               # node.parent (template_declaration or not)
        self._model = model
        if params is not None:
            self.params = params

    def __repr__(self) -> str:
        return f"Function(name={self.name!r}, spaces={sorted(self.spaces)!r})"

    @cached_property
    def params(self) -> list[Param]:
        if self._declarator is None:
            return []
        params = [_param(p) for p in _children_of_type(
            self._declarator.child_by_field_name("parameters"), "parameter_declaration")]
        return [p for p in params if p is not None]

    @cached_property
    def _header(self) -> tuple[dict[str, int | None], bool, tuple[int | None, int | None]
                               | None, Node | None, dict[str, int]]:
        """(template parameters, is template, launch bounds, their node, and the
        environment they are evaluated in, which ``constants`` then takes over)."""
        env = dict(self._model.constants) if self._model is not None else {}
        template_params: dict[str, int | None] = {}
        is_template = False
        launch_bounds = None
        launch_bounds_node = None
        parent = self._parent
        if parent is not None and parent.type == "template_declaration":
            is_template = True
            plist = parent.child_by_field_name("parameters")
            for tp in plist.named_children if plist is not None else []:
                tname = tp.child_by_field_name("name") or tp.child_by_field_name("declarator")
                default = tp.child_by_field_name("default_value")
                if tname is None:
                    continue
                value = _eval(text(default), env) if default is not None else None
                if self.bindings and text(tname) in self.bindings:
                    value = self.bindings[text(tname)]
                template_params[text(tname)] = value
                if value is not None:
                    env[text(tname)] = value
                else:
                    env.pop(text(tname), None)   # shadows any global of that name
        for child in self.node.children:
            if child.type == "launch_bounds":
                args = [c for c in child.named_children]
                launch_bounds_node = child
                vals = [_eval(text(a), env) for a in args[:2]]
                launch_bounds = (vals[0] if vals else None,
                                 vals[1] if len(vals) > 1 else None)
        return template_params, is_template, launch_bounds, launch_bounds_node, env

    def _param_names(self) -> list[str]:
        """The parameters' names, as ``params`` reads them (without the rest)."""
        if self._declarator is None:
            return []
        return [_param_name(p) for p in _children_of_type(
            self._declarator.child_by_field_name("parameters"), "parameter_declaration")]

    @property
    def template_params(self) -> dict[str, int | None]:
        return self._header[0]

    @property
    def is_template(self) -> bool:
        return self._header[1]

    @property
    def launch_bounds(self) -> tuple[int | None, int | None] | None:
        return self._header[2]

    @property
    def launch_bounds_node(self) -> Node | None:
        return self._header[3]

    @cached_property
    def constants(self) -> dict[str, int]:
        """Unit constants + template defaults + this function's const/constexpr locals."""
        env = self._header[4]       # a copy of the unit's, made for this function
        params = self.__dict__.get("params")
        names = [p.name for p in params] if params is not None else self._param_names()
        for name in names:      # parameters shadow constants of the same name
            env.pop(name, None)
        if self.body is not None:
            for decl in self.nodes_in("qualified_declaration"):   # const or constexpr
                env.update(_const_declaration(decl, env))
        return env

    def nodes_in(self, kind: str) -> list[Node]:
        """Nodes of an INDEX_QUERY capture inside the body, in source order."""
        if self.body is None:
            return []
        if self._model is not None:
            return self._model.nodes_in(kind, self.body)
        return index_captures(self.body).get(kind, [])

    @property
    def is_kernel(self) -> bool:
        return "__global__" in self.spaces

    @property
    def is_device(self) -> bool:
        return "__device__" in self.spaces or "__global__" in self.spaces

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)


@dataclass(eq=False)
class ArrayDecl:
    name: str
    node: Node                  # the declaration
    name_node: Node
    elem_type: str
    shared: bool
    extern: bool
    volatile: bool
    function: Function | None   # None at file scope
    _sizes: list[Node | None] = field(default_factory=list, repr=False)  # outermost first
    _model: "Model | None" = field(default=None, repr=False)

    @cached_property
    def dims(self) -> list[int | None]:
        """Each dimension's size; None: unknown or empty ([]). Evaluated on first use
        (the enclosing function's constants)."""
        if self._model is None:
            return [None] * len(self._sizes)
        fn = self.function
        env = fn.constants if fn is not None else self._model.constants
        dims = [_eval(text(size), env) if size is not None else None for size in self._sizes]
        # an array no GPU can hold (more than MAX_ARRAY_BYTES; elements of unknown type
        # counted as bytes) has unknown dimensions: nothing models billions of elements
        total = self.elem_size or 1
        for d in dims:
            if d is not None:
                total *= d if d > 0 else 1
                if d > MAX_ARRAY_BYTES or total > MAX_ARRAY_BYTES:
                    return [None] * len(dims)
        return dims

    @property
    def elem_size(self) -> int | None:
        from cudalint.model.consteval import sizeof_type
        return sizeof_type(self.elem_type)


@dataclass(eq=False)
class Launch:
    kernel: str                 # name as called (template arguments stripped)
    node: Node                  # call_expression
    config: list[Node]          # <<<grid, block, smem, stream>>> expressions
    function: Function | None   # the host function holding the launch
    _model: "Model | None" = field(default=None, repr=False)

    # block and grid: resolved on first use (the host's constants, its declarations), as
    # written: whether a GPU runs them is launch_shape's question (block_problem)
    @cached_property
    def block(self) -> tuple[int, int, int] | None:
        return self._dim3(1)

    @cached_property
    def args(self) -> list[Node]:
        """The kernel arguments of the call, comments left out."""
        arglist = self.node.child_by_field_name("arguments")
        return [a for a in (arglist.named_children if arglist else [])
                if a.type != "comment"]

    @cached_property
    def grid(self) -> tuple[int, int, int] | None:
        return self._dim3(0)

    def _dim3(self, k: int) -> tuple[int, int, int] | None:
        if len(self.config) <= k or self._model is None:
            return None
        host = self.function
        env = host.constants if host is not None else self._model.constants
        dims = self._model.resolve_dim3(self.config[k], host, env)
        if dims is None or all(v <= _UINT_MAX for v in dims):
            return dims
        # dim3 holds unsigned ints: C converts a larger value modulo 2**32 (nvcc warns;
        # 99999999999 launches 1215752191); a 0 left is no shape
        wrapped = tuple(v & _UINT_MAX for v in dims)
        return wrapped if all(wrapped) else None  # type: ignore[return-value]


def _strip_template(name: str) -> str:
    return name.split("<", 1)[0].strip()


class Model:
    def __init__(self, tree: Tree, extra_constants: dict[str, int] | None = None):
        self.tree = tree
        self.root = tree.root_node
        # -D values from settings and build files: only those C can hold
        self._extra = {k: v for k, v in (extra_constants or {}).items() if fits(v)}

    # ---- the node index ------------------------------------------------------------
    @cached_property
    def index(self) -> dict[str, list[Node]]:
        """INDEX_QUERY's captures over the whole unit, by capture name, in source order."""
        return index_captures(self.root)

    def nodes(self, kind: str) -> list[Node]:
        return self.index.get(kind, [])

    @cached_property
    def _starts(self) -> dict[str, list[int]]:
        return {}

    def nodes_in(self, kind: str, node: Node) -> list[Node]:
        """Index nodes of ``kind`` that start inside ``node`` (``node`` itself included)."""
        nodes = self.index.get(kind)
        if not nodes:
            return []
        starts = self._starts.get(kind)
        if starts is None:
            starts = self._starts[kind] = [n.start_byte for n in nodes]
        lo = bisect_left(starts, node.start_byte)
        hi = bisect_left(starts, node.end_byte, lo)
        return nodes[lo:hi]

    # ---- constants -----------------------------------------------------------------
    @cached_property
    def constants(self) -> dict[str, int]:
        """Integer constants at file scope: object-like #define, constexpr/const ints, enums."""
        env = dict(self._extra)
        events: list[tuple[int, int, Node]] = []
        for node in self.nodes("define"):
            events.append((node.start_byte, 0, node))
        for node in self.nodes("qualified_declaration"):   # others declare no constant
            parent = node.parent
            if parent is not None and (parent.type == "translation_unit" or (
                    parent.type == "declaration_list" and parent.parent is not None
                    and parent.parent.type == "namespace_definition")):
                events.append((node.start_byte, 1, node))
        for node in self.nodes("enumerator_list"):
            events.append((node.start_byte, 2, node))
        events.sort(key=_FIRST)
        for _, kind, node in events:
            if kind == 0:
                value = node.child_by_field_name("value")
                v = _eval(macro_body(text(value)), env) if value is not None else None
                if v is not None:
                    env[text(node.child_by_field_name("name"))] = v
            elif kind == 1:
                env.update(_const_declaration(node, env))
            else:
                env.update(_enum_values(node, env))
        return env

    @cached_property
    def type_aliases(self) -> TypeAliases:
        """The unit's typedef/using/#define names of types (one table for every analysis)."""
        return TypeAliases(self.nodes("define"), self.root.text or b"")

    # ---- functions -----------------------------------------------------------------
    @cached_property
    def functions(self) -> list[Function]:
        result = []
        for node in self.nodes("function_definition"):
            fn = self._function(node)
            if fn is not None:
                result.append(fn)
        return result

    @cached_property
    def kernels(self) -> list[Function]:
        return [f for f in self.functions if f.is_kernel]

    @cached_property
    def device_functions(self) -> list[Function]:
        return [f for f in self.functions if f.is_device]

    @cached_property
    def declared_names(self) -> frozenset[str]:
        """Names of every function defined or declared and every macro: cheap, no model."""
        caps = captures(
            """
            (function_declarator declarator: (identifier) @n)
            (preproc_function_def name: (identifier) @n)
            (preproc_def name: (identifier) @n)
            """, self.root)
        return frozenset(text(n) for n in caps.get("n", []))

    def function_named(self, name: str) -> list[Function]:
        return [f for f in self.functions if f.name == name]

    def enclosing_function(self, node: Node) -> Function | None:
        """The innermost function whose definition holds ``node`` (not ``node`` itself)."""
        functions = self.functions
        starts, reach = self._function_spans
        start, end = node.start_byte, node.end_byte
        j = bisect_right(starts, start) - 1
        while j >= 0 and reach[j] >= end:
            fn = functions[j]
            f = fn.node
            if f.end_byte >= end:
                if f.start_byte < start and end < f.end_byte:
                    return fn           # strictly inside: a descendant
                break                   # shares an end with it: ask the tree
            j -= 1
        else:
            return None
        by_id = self._function_by_node_id
        cur = node.parent
        while cur is not None:
            fn = by_id.get(cur.id)
            if fn is not None:
                return fn
            cur = cur.parent
        return None

    @cached_property
    def _function_spans(self) -> tuple[list[int], list[int]]:
        """Start bytes of the functions (source order) and the furthest end so far."""
        starts, reach = [], []
        far = -1
        for fn in self.functions:
            starts.append(fn.node.start_byte)
            far = max(far, fn.node.end_byte)
            reach.append(far)
        return starts, reach

    @cached_property
    def _function_by_node_id(self) -> dict[int, Function]:
        return {f.node.id: f for f in self.functions}

    def _function(self, node: Node) -> Function | None:
        declarator = node.child_by_field_name("declarator")
        while declarator is not None and declarator.type in (
                "pointer_declarator", "reference_declarator"):
            declarator = declarator.child_by_field_name("declarator")
        if declarator is None or declarator.type != "function_declarator":
            return None
        name_node = declarator.child_by_field_name("declarator")
        if name_node is None:
            return None
        # a macro call followed by a block (CUDA_KERNEL_LOOP(i, n) { ... }) parses as a
        # nested function definition: it is not a function
        parent = node.parent
        if parent is not None and parent.type == "compound_statement":
            return None
        spaces = frozenset(text(c) for c in node.children if c.type in FUNCTION_SPACES)
        name = _strip_template(text(name_node).split("::")[-1])
        return Function(name=name, node=node, name_node=name_node, spaces=spaces,
                        body=node.child_by_field_name("body"), declarator=declarator,
                        parent=parent, model=self)

    # ---- arrays --------------------------------------------------------------------
    @cached_property
    def arrays(self) -> list[ArrayDecl]:
        result = []
        for decl in self.nodes("array_declaration"):
            result.extend(self._arrays_of(decl))
        return result

    @cached_property
    def shared_arrays(self) -> list[ArrayDecl]:
        return [a for a in self.arrays if a.shared]

    @cached_property
    def local_arrays(self) -> list[ArrayDecl]:
        """Per-thread arrays declared inside device functions (not shared, static, extern)."""
        return [a for a in self.arrays if not a.shared and not a.extern
                and a.function is not None and a.function.is_device
                and "static" not in _storage(a.node)]

    def _arrays_of(self, decl: Node) -> list[ArrayDecl]:
        """The arrays a declaration with an array declarator declares."""
        quals = {text(c) for c in decl.children if c.type == "type_qualifier"}
        storage = _storage(decl)
        shared = "__shared__" in quals or "__shared__" in storage
        type_node = decl.child_by_field_name("type")
        elem = text(type_node)
        fn = self.enclosing_function(decl)
        out = []
        for d in decl.children_by_field_name("declarator"):
            if d.type == "init_declarator":
                d = d.child_by_field_name("declarator")
            if d is None or d.type != "array_declarator":
                continue
            sizes: list[Node | None] = []
            cur = d
            while cur is not None and cur.type == "array_declarator":
                sizes.append(cur.child_by_field_name("size"))
                cur = cur.child_by_field_name("declarator")
            if cur is None or cur.type != "identifier":
                continue
            sizes.reverse()
            out.append(ArrayDecl(name=text(cur), node=decl, name_node=cur, elem_type=elem,
                                 shared=shared, extern="extern" in storage,
                                 volatile="volatile" in quals, function=fn, _sizes=sizes,
                                 _model=self))
        return out

    # ---- launches ------------------------------------------------------------------
    @cached_property
    def launches(self) -> list[Launch]:
        result = []
        for call in self.nodes("launch"):
            fn_node = call.child_by_field_name("function")
            cfg = next((c for c in call.children if c.type == "kernel_call_syntax"), None)
            if fn_node is None or cfg is None:
                continue
            config = [c for c in cfg.named_children if c.type != "comment"]
            result.append(Launch(kernel=_strip_template(text(fn_node).split("::")[-1]),
                                 node=call, config=config,
                                 function=self.enclosing_function(call), _model=self))
        return result

    @cached_property
    def _launches_by_kernel(self) -> dict[str, list[Launch]]:
        by: dict[str, list[Launch]] = {}
        for launch in self.launches:
            by.setdefault(launch.kernel, []).append(launch)
        return by

    def launches_of(self, kernel: str) -> list[Launch]:
        """The launches of kernel ``kernel`` (by name), in source order. Indexed once: a
        fuzzed file of 244 copies of one kernel and its launch filtered every launch for
        every copy, in several analyses (seconds a lint, fuzz seed 37)."""
        return self._launches_by_kernel.get(kernel, [])

    def resolve_dim3(self, node: Node, host: Function | None,
                     env: dict[str, int]) -> tuple[int, int, int] | None:
        """A launch-configuration expression as (x, y, z), or None if not a known constant."""
        if node.type == "identifier" and host is not None and host.body is not None:
            name = text(node)
            init = last_initializer(host.nodes_in("declaration"), name,
                                     before=node.start_byte)
            if init is not None and written_after(host.body, name, init.end_byte):
                init = None     # `int m = 1; for (...) m *= size[i];`: not its initializer
                if name not in env:
                    return None  # (sheet-newcorpus10 W2, pytorch-loss taylor_softmax)
            if init is None:
                value = _eval(name, env)
                return (value, 1, 1) if value else None
            node = init
        if node.type in ("call_expression", "argument_list", "initializer_list",
                         "parameter_list"):
            args = node.child_by_field_name("arguments") if node.type == "call_expression" \
                else node
            if node.type == "call_expression" and text(node.child_by_field_name("function")) \
                    != "dim3":
                return None
            vals = [_eval(text(a), env) for a in (args.named_children if args else [])]
            if not vals or any(v is None or v <= 0 for v in vals) or len(vals) > 3:
                return None
            return tuple(vals + [1] * (3 - len(vals)))  # type: ignore[return-value]
        value = _eval(text(node), env)
        return (value, 1, 1) if value and value > 0 else None

    # ---- parse errors --------------------------------------------------------------
    @cached_property
    def error_nodes(self) -> list[Node]:
        """Outermost ERROR / MISSING nodes: regions the parser could not read."""
        if not self.root.has_error:
            return []
        # a cursor walk into the children that hold an error (no child lists built: a
        # fuzzed sum 16,000 terms deep, erroneous at its bottom, is a third cheaper)
        found: list[Node] = []
        cursor = self.root.walk()
        while True:
            node = cursor.node
            if node.type == "ERROR" or node.is_missing:
                found.append(node)
            elif node.has_error and cursor.goto_first_child():
                continue
            while not cursor.goto_next_sibling():
                if not cursor.goto_parent():
                    # source order; at one offset (a MISSING token where an ERROR
                    # starts) the later sibling first, as the stack walk this replaced
                    found.reverse()
                    return sorted(found, key=lambda n: n.start_byte)


# ---- helpers -------------------------------------------------------------------------
_FIRST = itemgetter(0)


def index_captures(node: Node) -> dict[str, list[Node]]:
    """INDEX_QUERY over ``node``: nodes by capture name, in source order, each once."""
    result = captures(INDEX_QUERY, node)
    for kind in _MAY_REPEAT:
        nodes = result.get(kind)
        if nodes and len(nodes) > 1:
            seen: set[int] = set()
            result[kind] = [n for n in nodes if not (n.id in seen or seen.add(n.id))]
    return result


def _eval(expr: str, env: dict[str, int] | None = None) -> int | None:
    """eval_int, with the two commonest cases (a decimal literal, a name) read directly."""
    if expr.isascii() and len(expr) <= MAX_TEXT:
        if expr.isdigit():
            if expr[0] != "0" or len(expr) == 1:
                # 20 digits at most: past UINT64_MAX a literal has no value (and a long
                # run of digits must not become a Python integer of any size)
                value = int(expr) if len(expr) <= 20 else MAX_VALUE + 1
                return value if value <= MAX_VALUE else None
        elif expr.isidentifier():
            if env and expr in env:
                return env[expr]
            if expr in ("true", "false"):
                return int(expr == "true")
            return None
    return eval_int(expr, env)


def _children_of_type(node: Node | None, kind: str) -> list[Node]:
    return [c for c in node.named_children if c.type == kind] if node is not None else []


def _storage(decl: Node) -> set[str]:
    return {text(c) for c in decl.children if c.type == "storage_class_specifier"}


_PARAM_DECLARATORS = ("pointer_declarator", "reference_declarator", "array_declarator",
                      "abstract_pointer_declarator")
_PARAM_INNER = ("identifier", "pointer_declarator", "reference_declarator",
                "array_declarator")


def _param_name(node: Node) -> str:
    """``_param(node).name`` without the rest."""
    cur = node.child_by_field_name("declarator")
    while cur is not None and cur.type in _PARAM_DECLARATORS:
        nxt = cur.child_by_field_name("declarator")
        if nxt is None:
            nxt = next((c for c in cur.named_children if c.type in _PARAM_INNER), None)
        cur = nxt
    return text(cur) if cur is not None and cur.type == "identifier" else ""


def _param(node: Node) -> Param | None:
    type_node = node.child_by_field_name("type")
    base = text(type_node)
    outer_quals = {text(c) for c in node.children if c.type == "type_qualifier"}
    depth = 0
    restrict = False
    is_ref = False
    is_array = False
    decl = node.child_by_field_name("declarator")
    cur = decl
    first_pointer = True
    while cur is not None and cur.type in _PARAM_DECLARATORS:
        if cur.type in ("pointer_declarator", "abstract_pointer_declarator"):
            depth += 1
            if first_pointer:
                for c in cur.children:
                    if c.type in ("type_qualifier", "ms_pointer_modifier") and \
                            "restrict" in text(c):
                        restrict = True
            first_pointer = False
        elif cur.type == "reference_declarator":
            is_ref = True
        else:
            is_array = True
        nxt = cur.child_by_field_name("declarator")
        if nxt is None:
            nxt = next((c for c in cur.named_children if c.type in _PARAM_INNER), None)
        cur = nxt
    name_node = cur if cur is not None and cur.type == "identifier" else None
    return Param(name=text(name_node) if name_node is not None else "", node=node,
                 name_node=name_node, base_type=base, pointer_depth=depth,
                 pointee_const="const" in outer_quals, restrict=restrict,
                 is_reference=is_ref, is_array=is_array)


def _const_declaration(decl: Node, env: dict[str, int]) -> dict[str, int]:
    quals = {text(c) for c in decl.children if c.type == "type_qualifier"}
    if not quals & {"const", "constexpr"}:
        return {}
    type_text = text(decl.child_by_field_name("type"))
    if not any(t in type_text for t in ("int", "long", "short", "char", "size_t",
                                        "unsigned", "auto", "bool")):
        return {}
    out = {}
    for d in decl.children_by_field_name("declarator"):
        if d.type != "init_declarator":
            continue
        name = d.child_by_field_name("declarator")
        value = d.child_by_field_name("value")
        if name is None or name.type != "identifier" or value is None:
            continue
        if value.type in ("argument_list", "initializer_list"):
            if len(value.named_children) != 1:
                continue
            value = value.named_children[0]
        v = _eval(text(value), ({**env, **out} if out else env))
        if v is not None:
            out[text(name)] = v
    return out


def _enum_values(node: Node, env: dict[str, int]) -> dict[str, int]:
    out: dict[str, int] = {}
    nxt = 0
    for e in _children_of_type(node, "enumerator"):
        name = e.child_by_field_name("name")
        value = e.child_by_field_name("value")
        if value is not None:
            v = _eval(text(value), ({**env, **out} if out else env))
            if v is None:
                return out      # later values depend on an unknown: stop
            nxt = v
        out[text(name)] = nxt
        nxt += 1
    return out


def last_initializer(declarations: list[Node], name: str, before: int) -> Node | None:
    """The initializer of the last declaration of ``name`` before a byte offset that is
    in scope there: a declaration in a sibling ``{ }`` is not (gpu4pyscf pcm.cu declares
    `const dim3 threads(THREADS, THREADS)` in one block and `threads(THREADS * THREADS)`
    in the next: the second launch's block is 1-D, not 32x32; class W7 of
    bench/triage/sheet-newcorpus8.md). A last declaration whose value cannot be read
    leaves it unknown, not the one before it."""
    best = None
    key = name.encode() if "\ufffd" not in name else b""
    for decl in declarations:
        if decl.start_byte >= before:
            break
        if key not in decl.text:
            continue            # cannot declare it
        for d in decl.children_by_field_name("declarator"):
            if d.type == "init_declarator" and text(d.child_by_field_name("declarator")) == name:
                if _in_scope(decl, before):
                    best = d.child_by_field_name("value")
            elif d.type == "function_declarator" and \
                    text(d.child_by_field_name("declarator")) == name:
                if not _in_scope(decl, before):
                    continue
                # `dim3 threads(THREADS);` parses as a function declaration: its
                # "parameter types" are the constructor's arguments
                params = d.child_by_field_name("parameters")
                best = params if params is not None and params.named_children and all(
                    p.type == "parameter_declaration" and
                    p.child_by_field_name("declarator") is None
                    for p in params.named_children) else None
    return best


def written_after(body: Node, name: str, start: int) -> bool:
    """Is ``name`` assigned (``=``, ``op=``, ``++``, ``--``) or its address taken in
    ``body`` after byte ``start`` (its initializer's end)? Anywhere after it, a launch
    in a loop included: the value at the launch is then not the initializer's."""
    data = body.text or b""
    rest = data[max(0, start - body.start_byte):]
    key = name.encode()
    if key not in rest:
        return False
    v = re.escape(key)
    return re.search(rb"(?<![\w.>])" + v + rb"\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)|"
                     rb"(?:\+\+|--)\s*" + v + rb"\b|(?<![\w.>])" + v + rb"\s*(?:\+\+|--)|"
                     rb"(?<![&\w)\]])&\s*" + v + rb"\b", rest) is not None


def _in_scope(decl: Node, at: int) -> bool:
    """Whether ``decl``'s block (or the statement holding it: a ``for`` init) still
    encloses the byte offset ``at``. Node.parent walks down from the root, so it is
    asked only of declarations of the name looked up."""
    scope = decl.parent
    return scope is None or scope.type == "translation_unit" or \
        scope.start_byte <= at < scope.end_byte


_MACRO_NOISE = re.compile(r"/\*.*?\*/|//[^\n]*|\\\r?\n", re.S)


def macro_body(value: str) -> str:
    """A #define's value without comments and line continuations
    (`#define N 4096  // side` is 4096)."""
    return _MACRO_NOISE.sub(" ", value).strip()

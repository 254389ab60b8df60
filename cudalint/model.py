"""The parse model: what a unit declares, read once from its tree-sitter tree.

Rules and analyses read facts from here (kernels, parameters, shared and local arrays,
launch sites, integer constants, parse-error regions) instead of walking the tree again.
Everything is computed lazily and at most once per unit.
"""
from __future__ import annotations

import re

from bisect import bisect_left
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable

from tree_sitter import Node, Tree

from .consteval import eval_int
from .parse import captures, text

FUNCTION_SPACES = ("__global__", "__device__", "__host__")

# One query over the whole tree collects every node kind the model and the analyses read:
# a query costs about a quarter of the parse whatever its patterns (the walk dominates),
# so one combined query instead of one per fact. Per-function facts take their slice of
# these lists by byte range (Model.nodes_in) instead of querying the body again.
INDEX_QUERY = """
(declaration) @declaration
(function_definition) @function_definition
(call_expression (kernel_call_syntax)) @launch
(preproc_def name: (identifier) value: (preproc_arg)) @define
(enumerator_list) @enumerator_list
(subscript_expression) @subscript
(pointer_expression operator: "*") @deref
(call_expression function: (identifier) @callee)
(struct_specifier name: (type_identifier) body: (field_declaration_list)) @struct
"""


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


@dataclass(eq=False)
class Function:
    name: str
    node: Node                  # function_definition
    name_node: Node
    spaces: frozenset[str]      # subset of __global__/__device__/__host__
    params: list[Param]
    body: Node | None
    template_params: dict[str, int | None] = field(default_factory=dict)
    is_template: bool = False
    launch_bounds: tuple[int | None, int | None] | None = None
    launch_bounds_node: Node | None = None
    _env: dict[str, int] = field(default_factory=dict, repr=False)
    # (kind, node) -> index nodes of that kind inside node (Model.nodes_in), if known
    _nodes_in: Callable[[str, Node], list[Node]] | None = field(default=None, repr=False)

    @cached_property
    def constants(self) -> dict[str, int]:
        """Unit constants + template defaults + this function's const/constexpr locals."""
        env = dict(self._env)
        if self.body is not None:
            for decl in self.nodes_in("declaration"):
                env.update(_const_declaration(decl, env))
        return env

    def nodes_in(self, kind: str) -> list[Node]:
        """Nodes of an INDEX_QUERY capture inside the body, in source order."""
        if self.body is None:
            return []
        if self._nodes_in is not None:
            return self._nodes_in(kind, self.body)
        return captures(INDEX_QUERY, self.body).get(kind, [])

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
    dims: list[int | None]      # None: unknown or empty ([])
    shared: bool
    extern: bool
    volatile: bool
    function: Function | None   # None at file scope

    @property
    def elem_size(self) -> int | None:
        from .consteval import sizeof_type
        return sizeof_type(self.elem_type)


@dataclass(eq=False)
class Launch:
    kernel: str                 # name as called (template arguments stripped)
    node: Node                  # call_expression
    config: list[Node]          # <<<grid, block, smem, stream>>> expressions
    block: tuple[int, int, int] | None
    grid: tuple[int, int, int] | None
    function: Function | None   # the host function holding the launch


def _strip_template(name: str) -> str:
    return name.split("<", 1)[0].strip()


class Model:
    def __init__(self, tree: Tree, extra_constants: dict[str, int] | None = None):
        self.tree = tree
        self.root = tree.root_node
        self._extra = dict(extra_constants or {})

    # ---- the node index ------------------------------------------------------------
    @cached_property
    def index(self) -> dict[str, list[Node]]:
        """INDEX_QUERY's captures over the whole unit, by capture name, in source order."""
        return captures(INDEX_QUERY, self.root)

    def nodes(self, kind: str) -> list[Node]:
        return self.index.get(kind, [])

    @cached_property
    def _starts(self) -> dict[str, list[int]]:
        return {k: [n.start_byte for n in v] for k, v in self.index.items()}

    def nodes_in(self, kind: str, node: Node) -> list[Node]:
        """Index nodes of ``kind`` that start inside ``node`` (``node`` itself included)."""
        nodes = self.index.get(kind)
        if not nodes:
            return []
        starts = self._starts[kind]
        lo = bisect_left(starts, node.start_byte)
        hi = bisect_left(starts, node.end_byte, lo)
        return nodes[lo:hi]

    # ---- constants -----------------------------------------------------------------
    @cached_property
    def constants(self) -> dict[str, int]:
        """Integer constants at file scope: object-like #define, constexpr/const ints, enums."""
        env = dict(self._extra)
        events: list[tuple[int, str, Node]] = []
        value_of = {}
        for node in self.nodes("define"):
            name = node.child_by_field_name("name")
            events.append((name.start_byte, "dname", name))
            value_of[node.id] = node.child_by_field_name("value")
        for node in self.nodes("declaration"):
            parent = node.parent
            if parent is not None and (parent.type == "translation_unit" or (
                    parent.type == "declaration_list" and parent.parent is not None
                    and parent.parent.type == "namespace_definition")):
                events.append((node.start_byte, "decl", node))
        for node in self.nodes("enumerator_list"):
            events.append((node.start_byte, "enum", node))
        for _, kind, node in sorted(events, key=lambda e: e[0]):
            if kind == "dname":
                value = value_of.get(node.parent.id)
                v = eval_int(macro_body(text(value)), env) if value is not None else None
                if v is not None:
                    env[text(node)] = v
            elif kind == "decl":
                env.update(_const_declaration(node, env))
            else:
                env.update(_enum_values(node, env))
        return env

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
        by_id = self._function_by_node_id
        cur = node.parent
        while cur is not None:
            fn = by_id.get(cur.id)
            if fn is not None:
                return fn
            cur = cur.parent
        return None

    @cached_property
    def _function_by_node_id(self) -> dict[int, Function]:
        return {f.node.id: f for f in self.functions}

    def _function(self, node: Node) -> Function | None:
        spaces = frozenset(text(c) for c in node.children if c.type in FUNCTION_SPACES)
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
        if node.parent is not None and node.parent.type == "compound_statement":
            return None
        name = _strip_template(text(name_node).split("::")[-1])
        params = [_param(p) for p in _children_of_type(
            declarator.child_by_field_name("parameters"), "parameter_declaration")]
        fn = Function(name=name, node=node, name_node=name_node, spaces=spaces,
                      params=[p for p in params if p is not None],
                      body=node.child_by_field_name("body"))
        env = dict(self.constants)
        parent = node.parent
        if parent is not None and parent.type == "template_declaration":
            fn.is_template = True
            plist = parent.child_by_field_name("parameters")
            for tp in plist.named_children if plist is not None else []:
                tname = tp.child_by_field_name("name") or tp.child_by_field_name("declarator")
                default = tp.child_by_field_name("default_value")
                if tname is None:
                    continue
                value = eval_int(text(default), env) if default is not None else None
                fn.template_params[text(tname)] = value
                if value is not None:
                    env[text(tname)] = value
                else:
                    env.pop(text(tname), None)   # shadows any global of that name
        for child in node.children:
            if child.type == "launch_bounds":
                args = [c for c in child.named_children]
                fn.launch_bounds_node = child
                vals = [eval_int(text(a), env) for a in args[:2]]
                fn.launch_bounds = (vals[0] if vals else None, vals[1] if len(vals) > 1 else None)
        for p in fn.params:   # parameters shadow constants of the same name
            env.pop(p.name, None)
        fn._env = env
        fn._nodes_in = self.nodes_in
        return fn

    # ---- arrays --------------------------------------------------------------------
    @cached_property
    def arrays(self) -> list[ArrayDecl]:
        result = []
        for decl in self.nodes("declaration"):
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
        if not any(_is_array_declarator(d) for d in decl.children_by_field_name("declarator")):
            return []                   # most declarations: no array, nothing to evaluate
        quals = {text(c) for c in decl.children if c.type == "type_qualifier"}
        storage = _storage(decl)
        shared = "__shared__" in quals or "__shared__" in storage
        type_node = decl.child_by_field_name("type")
        elem = text(type_node)
        fn = self.enclosing_function(decl)
        env = fn.constants if fn is not None else self.constants
        out = []
        for d in decl.children_by_field_name("declarator"):
            if d.type == "init_declarator":
                d = d.child_by_field_name("declarator")
            if d is None or d.type != "array_declarator":
                continue
            dims: list[int | None] = []
            cur = d
            while cur is not None and cur.type == "array_declarator":
                size = cur.child_by_field_name("size")
                dims.append(eval_int(text(size), env) if size is not None else None)
                cur = cur.child_by_field_name("declarator")
            if cur is None or cur.type != "identifier":
                continue
            dims.reverse()
            out.append(ArrayDecl(name=text(cur), node=decl, name_node=cur, elem_type=elem,
                                 dims=dims, shared=shared, extern="extern" in storage,
                                 volatile="volatile" in quals, function=fn))
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
            host = self.enclosing_function(call)
            env = host.constants if host is not None else self.constants
            block = self.resolve_dim3(config[1], host, env) if len(config) > 1 else None
            grid = self.resolve_dim3(config[0], host, env) if config else None
            result.append(Launch(kernel=_strip_template(text(fn_node).split("::")[-1]),
                                 node=call, config=config, block=block, grid=grid,
                                 function=host))
        return result

    def resolve_dim3(self, node: Node, host: Function | None,
                     env: dict[str, int]) -> tuple[int, int, int] | None:
        """A launch-configuration expression as (x, y, z), or None if not a known constant."""
        if node.type == "identifier" and host is not None and host.body is not None:
            init = _last_initializer(host.nodes_in("declaration"), text(node),
                                     before=node.start_byte)
            if init is None:
                value = eval_int(text(node), env)
                return (value, 1, 1) if value else None
            node = init
        if node.type in ("call_expression", "argument_list", "initializer_list"):
            args = node.child_by_field_name("arguments") if node.type == "call_expression" \
                else node
            if node.type == "call_expression" and text(node.child_by_field_name("function")) \
                    != "dim3":
                return None
            vals = [eval_int(text(a), env) for a in (args.named_children if args else [])]
            if not vals or any(v is None or v <= 0 for v in vals) or len(vals) > 3:
                return None
            return tuple(vals + [1] * (3 - len(vals)))  # type: ignore[return-value]
        value = eval_int(text(node), env)
        return (value, 1, 1) if value and value > 0 else None

    # ---- parse errors --------------------------------------------------------------
    @cached_property
    def error_nodes(self) -> list[Node]:
        """Outermost ERROR / MISSING nodes: regions the parser could not read."""
        if not self.root.has_error:
            return []
        found: list[Node] = []
        stack = [self.root]
        while stack:
            node = stack.pop()
            if node.type == "ERROR" or node.is_missing:
                found.append(node)
                continue
            if node.has_error:
                stack.extend(node.children)
        return sorted(found, key=lambda n: n.start_byte)


# ---- helpers -------------------------------------------------------------------------
def _children_of_type(node: Node | None, kind: str) -> list[Node]:
    return [c for c in node.named_children if c.type == kind] if node is not None else []


def _is_array_declarator(d: Node) -> bool:
    if d.type == "init_declarator":
        d = d.child_by_field_name("declarator")
    return d is not None and d.type == "array_declarator"


def _storage(decl: Node) -> set[str]:
    return {text(c) for c in decl.children if c.type == "storage_class_specifier"}


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
    while cur is not None and cur.type in ("pointer_declarator", "reference_declarator",
                                           "array_declarator", "abstract_pointer_declarator"):
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
            nxt = next((c for c in cur.named_children if c.type in (
                "identifier", "pointer_declarator", "reference_declarator",
                "array_declarator")), None)
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
        v = eval_int(text(value), {**env, **out})
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
            v = eval_int(text(value), {**env, **out})
            if v is None:
                return out      # later values depend on an unknown: stop
            nxt = v
        out[text(name)] = nxt
        nxt += 1
    return out


def _last_initializer(declarations: list[Node], name: str, before: int) -> Node | None:
    """The initializer of the last declaration of ``name`` before a byte offset."""
    best = None
    for decl in declarations:
        if decl.start_byte >= before:
            break
        for d in decl.children_by_field_name("declarator"):
            if d.type == "init_declarator" and text(d.child_by_field_name("declarator")) == name:
                best = d.child_by_field_name("value")
    return best


_MACRO_NOISE = re.compile(r"/\*.*?\*/|//[^\n]*|\\\r?\n", re.S)


def macro_body(value: str) -> str:
    """A #define's value without comments and line continuations
    (`#define N 4096  // side` is 4096)."""
    return _MACRO_NOISE.sub(" ", value).strip()

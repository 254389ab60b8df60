"""Template instantiations: a template kernel as each launch of the project binds it.

nvcc compiles a template kernel once per set of template arguments the program names,
and each instantiation is its own kernel: ``reduce6<256>`` runs ``if (blockSize >= 64)``
with the 64 known, ``transpose<double>`` has 8-byte tile elements, ``eval_image<3>``
runs no iteration of ``for (i = 3; i < stride; ++i)``. Read as written, with its template
parameters unknown, such a kernel is silent or wrong in the memory and sync analyses.

:class:`Instances` (``ctx.analysis(Instances)``) finds, for each template kernel of a
unit, the template arguments the project gives it: launches ``k<256><<<...>>>`` and
other mentions ``linear_kernel(k<3>, ...)`` in the unit's host code (arguments evaluated
with the enclosing function's constants, and through the instantiations of an enclosing
host template), and launches in other files (``Unit.launches``, whose arguments the
project index evaluated in the launcher), and the instantiations a CuPy RawModule names
in ``name_expressions`` (``Unit.embedded``). Each distinct binding is a copy of the
kernel's :class:`~cudalint.model.kernels.Function` with the arguments bound
(:func:`bind`): its ``constants`` hold the values, its ``type_bindings`` the types,
``instance`` names it, ``instance_launches`` are the launches that made it (their block
shapes are the instance's: :func:`~cudalint.model.launch_shape.block_shape`). A kernel
no mention binds, or one that some mention leaves unknown (arguments deduced or not
evaluable), is analysed as written too, as before. The block run binds the template
arguments of a device function at each call (``warpReduce<blockSize>(sdata, tid)``)
with the same :func:`bind`.

A finding made the same way in several instantiations is said once: the engine merges
messages that differ only in the instantiation named (:data:`INSTANCE_RE`).
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable

from tree_sitter import Node

from cudalint.model.consteval import eval_int, sizeof_type
from cudalint.model.dispatch import (arg_type, deduce, dispatch_aliases, expand_aliases,
                                     split_call)
from cudalint.parse import text

if TYPE_CHECKING:
    from cudalint.context import UnitContext
    from cudalint.model.kernels import ArrayDecl, Function, Model

MAX_INSTANCES = 8          # per template: past it, the rest are not analysed
# bytes of kernel body analysed per template, all instantiations together: a 20 KB
# implicit-GEMM kernel launched with 24 argument sets (torchsparse) is analysed once,
# a 1 KB reduction once per launch (each instantiation costs a full analysis)
INSTANCE_BUDGET = 24_000
MAX_NESTING = 3            # host templates around a launch followed this deep
# mentions and launches read per unit, all template kernels together (corpus: at most
# 202 in a unit, 94 for one kernel); past it a kernel is also analysed as written, as
# when a mention's arguments are unknown: a unit of n clones of one kernel and its
# launch would read n x n (fuzz seed 29, 493 clones: 243,049 reads)
MENTION_BUDGET = 10_000
INSTANCE_RE = re.compile(r"(?: at line (\d+))?(, (?:in )?)instantiation `([^`]+)`")
SHOWN = 3                  # instantiations a merged message names before "and N more"
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class TemplateParam:
    name: str
    kind: str                   # "type" | "value"
    default: str | None         # the default argument's text


@dataclass(frozen=True)
class InstanceLaunch:
    """A launch that binds an instantiation: its block (None: unknown), where."""
    block: tuple[int, int, int] | None
    line: Callable[[], int | None] | None
    file: str | None = None     # another file of the project (None: this unit)
    node: Node | None = None    # the launch's call_expression, in this unit


def mention(label: str) -> str:
    """How a message names an instantiation (the engine merges on this form)."""
    return f"instantiation `{label}`"


def merged(lines: list[str], labels: list[str], sep: str) -> str:
    """The launch lines and instantiations of a finding made alike in several."""
    at = ""
    if len(lines) == 1:
        at = f" at line {lines[0]}"
    elif lines:
        at = f" at lines {', '.join(lines[:SHOWN])}" + (
            f" and {len(lines) - SHOWN} more" if len(lines) > SHOWN else "")
    if len(labels) == 1:
        return f"{at}{sep}{mention(labels[0])}"
    shown = ", ".join(f"`{n}`" for n in labels[:SHOWN])
    more = f" and {len(labels) - SHOWN} more" if len(labels) > SHOWN else ""
    return f"{at}{sep}instantiations {shown}{more}"


def template_params(fn: "Function") -> list[TemplateParam] | None:
    """The template parameters of ``fn`` in order; None when it is no template or has
    a parameter pack or a template template parameter (not bound here)."""
    parent = fn._parent
    if parent is None or parent.type != "template_declaration":
        return None
    plist = parent.child_by_field_name("parameters")
    out = []
    for tp in plist.named_children if plist is not None else []:
        t = tp.type
        if t == "comment":
            continue
        if t == "type_parameter_declaration":
            names = [c for c in tp.named_children if c.type == "type_identifier"]
            if len(names) != 1:
                return None
            out.append(TemplateParam(text(names[0]), "type", None))
        elif t == "optional_type_parameter_declaration":
            name, default = tp.child_by_field_name("name"), tp.child_by_field_name(
                "default_type")
            if name is None:
                return None
            out.append(TemplateParam(text(name), "type",
                                     text(default) if default is not None else None))
        elif t in ("parameter_declaration", "optional_parameter_declaration"):
            name = tp.child_by_field_name("declarator")
            if name is None or name.type != "identifier":
                return None
            default = tp.child_by_field_name("default_value")
            out.append(TemplateParam(text(name), "value",
                                     text(default) if default is not None else None))
        else:
            return None
    return out


def split_args(args: str) -> list[str]:
    """``<a, b<c, d>, (e > f)>`` as ``['a', 'b<c, d>', '(e > f)']``."""
    s = args.strip()
    if s.startswith("<") and s.endswith(">"):
        s = s[1:-1]
    parts, depth, cur = [], 0, []
    for c in s:
        if c in "([{<":
            depth += 1
        elif c in ")]}>":
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
            continue
        cur.append(c)
    last = "".join(cur).strip()
    if last or parts:
        parts.append(last)
    return parts


def _type_text(arg: str, types: dict[str, str] | None) -> str:
    arg = _SPACES.sub(" ", arg.strip())
    if types:
        arg = re.sub(r"[A-Za-z_]\w*", lambda m: types.get(m.group(0), m.group(0)), arg)
    return arg


def binding(fn: "Function", args: list[str], env: dict[str, int],
            types: dict[str, str] | None = None,
            values: list[int | None] | None = None,
            known_type: Callable[[str], bool] | None = None
            ) -> tuple[dict[str, int], dict[str, str]] | None:
    """The template parameters of ``fn`` bound to ``args`` (texts, evaluated in ``env``;
    ``values`` when the caller already has them; types of an enclosing instantiation in
    ``types``), defaults for the rest; None when one is left unknown (a type argument
    ``known_type`` does not know counts as unknown)."""
    params = template_params(fn)
    if not params or len(args) > len(params):
        return None
    vals: dict[str, int] = {}
    tys: dict[str, str] = {}
    local = dict(env)
    for k, p in enumerate(params):
        arg = args[k] if k < len(args) else p.default
        if arg is None:
            return None                 # deduced from the call's arguments: not here
        if p.kind == "type":
            t = _type_text(arg, types if k < len(args) else tys)
            if not t or (known_type is not None and not known_type(t)):
                return None             # scalar_t of a dispatch macro: not known here
            tys[p.name] = t
            continue
        v = values[k] if values is not None and k < len(values) and k < len(args) \
            else None
        if v is None:
            v = eval_int(arg, local)
        if v is None:
            return None
        vals[p.name] = v
        local[p.name] = v               # a later default may use it
    return vals, tys


def bind(fn: "Function", vals: dict[str, int], tys: dict[str, str],
         launches: tuple[InstanceLaunch, ...] | None = None) -> "Function":
    """A copy of ``fn`` with its template parameters bound."""
    params = template_params(fn) or []
    shown = [tys[p.name] if p.kind == "type" else str(vals[p.name]) for p in params
             if p.name in tys or p.name in vals]
    clone = copy.copy(fn)
    for cached in ("_header", "constants", "params"):
        clone.__dict__.pop(cached, None)
    clone.instance = f"{fn.name}<{', '.join(shown)}>"
    clone.bindings = dict(vals)
    clone.type_bindings = dict(tys)
    clone.instance_launches = launches
    if tys:
        clone.params = [replace(p, base_type=_type_text(p.base_type, tys))
                        for p in fn.params]
    return clone


def bound_type(fn: "Function", type_text: str) -> str:
    """``type_text`` with the type parameters ``fn`` binds replaced (``T`` -> double)."""
    tys = fn.type_bindings
    return _type_text(type_text, tys) if tys else type_text


def instance_array(fn: "Function", arr: "ArrayDecl") -> "ArrayDecl":
    """An array declared in ``fn`` as an instantiation declares it: element type and
    sizes with the template arguments bound."""
    if not fn.instance or arr.function is None or arr.function.node.id != fn.node.id:
        return arr
    copied = copy.copy(arr)
    copied.__dict__.pop("dims", None)
    copied.elem_type = bound_type(fn, arr.elem_type)
    copied.function = fn
    return copied


class Instances:
    """The instantiations of a unit's template kernels (``ctx.analysis(Instances)``)."""

    def __init__(self, ctx: "UnitContext"):
        self.ctx = ctx
        self.model: "Model" = ctx.model
        self._memo: dict[int, list["Function"]] = {}
        self._host: dict[int, list["Function"]] = {}
        self._depth = 0
        self._structs: frozenset[str] | None = None
        self._latin: str | None = None
        # memos of what a mention gives whichever same-named kernel asks: a unit of
        # n clones of one template kernel and n launches asks n x n times (fuzz seed 29)
        self._dispatch = b"AT_DISPATCH" in ctx.unit.data
        self._found: dict[tuple, tuple] = {}
        self._launch_of: dict[tuple[int, int], tuple] = {}
        self._mention_memo: dict[str, list] = {}
        self._args_of: dict[int, tuple] = {}
        self._reads = 0
        self._by_name: dict[str, list] | None = None

    def known_type(self, t: str) -> bool:
        """A type whose layout the analyses know: a built-in or vector type, a struct
        of the unit, or a pointer (a type of a library or a dispatch macro is not)."""
        if t.endswith("*") or sizeof_type(t) is not None:
            return True
        if self._structs is None:
            self._structs = frozenset(
                text(n.child_by_field_name("name")) for n in self.model.nodes("struct"))
        return t in self._structs

    def kernels(self) -> list["Function"]:
        """The unit's kernels, each template kernel as the instantiations the project
        makes of it (and as written when one is unknown or there is none)."""
        out: list["Function"] = []
        data = self.ctx.unit.data
        for fn in self.model.kernels:
            if b"template" in data and fn.is_template:
                out.extend(self.of(fn))
            else:
                out.append(fn)
        return out

    def of(self, fn: "Function") -> list["Function"]:
        got = self._memo.get(fn.node.id)
        if got is None:
            got = self._memo[fn.node.id] = self._instances(fn, kernel=True)
        return got

    def _instances(self, fn: "Function", kernel: bool) -> list["Function"]:
        if template_params(fn) is None:
            return [fn]
        found: dict[tuple, tuple[dict, dict, list[InstanceLaunch]]] = {}
        unknown = False
        params = template_params(fn) or []
        params_key = tuple(params)

        def add(args: list[str] | None, aliases: dict, env: dict[str, int],
                types: dict[str, str] | None, launch=None) -> None:
            """One mention's arguments, once per type of the dispatch aliases they
            name; ``launch()`` gives its InstanceLaunch."""
            nonlocal unknown
            if self._reads >= MENTION_BUDGET:
                unknown = True
                return
            self._reads += 1
            lost, bound = self._bindings(fn, params_key, args, aliases, env, types)
            unknown = unknown or lost
            for key, vals, tys in bound:
                entry = found.setdefault(key, (vals, tys, []))
                if launch is not None:
                    entry[2].append(launch())
        for node, host_insts in self._mentions(fn):
            if self._reads >= MENTION_BUDGET:
                unknown = True
                break
            launch, args, aliases = self._mention_args(node)
            for host in host_insts:
                env = host.constants if host is not None else self.model.constants
                add(args, aliases, env, host.type_bindings if host is not None else None,
                    None if launch is None else
                    (lambda launch=launch, host=host, env=env:
                     self._unit_launch(launch, host, env)))
        if kernel:
            for site in getattr(self.ctx.unit, "launches", None) or []:
                if site.kernel != fn.name:
                    continue
                if self._reads >= MENTION_BUDGET:
                    unknown = True
                    break
                if site.template_args:
                    args = list(getattr(site, "template_values", ()) or
                                split_args(site.template_args))
                else:
                    args = deduce(params, fn.params,
                                  [arg_type(a, site.before)
                                   for a in split_call(site.args_text)])
                    if args is None:
                        unknown = unknown or any(p.default is None for p in params)
                        continue
                add(args, dict(site.aliases), self.model.constants, None,
                    lambda site=site: InstanceLaunch(site.block, (lambda s=site: s.line),
                                                     site.file))
            for args in self._name_expressions(fn):
                add(args, {}, self.model.constants, None)
            for launch in self._launches_of(fn.name):
                if self._reads >= MENTION_BUDGET:
                    unknown = True
                    break
                if launch.node.child_by_field_name("function").type != \
                        "template_function":
                    if not self._deduced(fn, params, launch, add):
                        unknown = unknown or any(p.default is None for p in params)
        if not found:
            return [fn]
        size = fn.body.end_byte - fn.body.start_byte if fn.body is not None else 0
        most = min(MAX_INSTANCES, max(1, INSTANCE_BUDGET // max(1, size)))
        out = [bind(fn, vals, tys, tuple(sites) if kernel else None)
               for vals, tys, sites in list(found.values())[:most]]
        return ([fn] if unknown else []) + out

    def _launches_of(self, name: str) -> list:
        """The unit's launches of kernels named ``name``, in order."""
        if self._by_name is None:
            self._by_name = {}
            for launch in self.model.launches:
                self._by_name.setdefault(launch.kernel, []).append(launch)
        return self._by_name.get(name, [])

    def _bindings(self, fn: "Function", params_key: tuple, args: list[str] | None,
                  aliases: dict, env: dict[str, int], types: dict[str, str] | None
                  ) -> tuple[bool, list[tuple]]:
        """(some binding left unknown, [(key, values, types)]) of one mention's
        arguments, once per type of the dispatch aliases they name. ``binding`` reads
        ``fn`` only through its template parameters, so kernels with the same ones
        share the answer (``env`` and ``types`` are compared by identity: they belong
        to a host function this object keeps alive)."""
        memo = (params_key, None if args is None else tuple(args),
                tuple(sorted(aliases.items())), id(env), id(types))
        got = self._found.get(memo)
        if got is not None and got[0] is env and got[1] is types:
            return got[2]
        expanded = expand_aliases(args, aliases) if args is not None else None
        lost, bound = expanded is None, []
        for one in expanded or ():
            b = binding(fn, one, env, types, known_type=self.known_type)
            if b is None:
                lost = True
                continue
            key = (tuple(sorted(b[0].items())), tuple(sorted(b[1].items())))
            bound.append((key, b[0], b[1]))
        self._found[memo] = (env, types, (lost, bound))
        return lost, bound

    def _mention_args(self, node: Node) -> tuple:
        """(the launch a mention is the kernel of or None, its argument texts, the
        dispatch aliases around it)."""
        got = self._args_of.get(node.id)
        if got is None:
            launch = node.parent if node.parent is not None and \
                node.parent.type == "call_expression" and any(
                    c.type == "kernel_call_syntax" for c in node.parent.children) else None
            args_node = node.child_by_field_name("arguments")
            args = [text(c) for c in (args_node.named_children if args_node else [])
                    if c.type != "comment"]
            got = self._args_of[node.id] = (launch, args, self._aliases(node))
        return got

    def _text(self) -> str:
        """The unit's text, one character per byte (offsets are the tree's)."""
        if self._latin is None:
            self._latin = self.ctx.unit.data.decode("latin-1")
        return self._latin

    def _aliases(self, node: Node) -> dict[str, tuple[str, ...] | None]:
        """The dispatch aliases around a mention (model.dispatch)."""
        if not self._dispatch:
            return {}
        host = self.model.enclosing_function(node)
        return dispatch_aliases(self._text(), node.start_byte,
                                host.node.start_byte if host is not None else 0)

    def _deduced(self, fn: "Function", params: list[TemplateParam], launch,
                 add: Callable) -> bool:
        """A launch of ``fn`` without template arguments in the unit, its arguments
        deduced from the types the launching function declares (in each
        instantiation of a host template); False when they are not."""
        host = launch.function
        arglist = launch.node.child_by_field_name("arguments")
        args = [a for a in (arglist.named_children if arglist else [])
                if a.type != "comment"]
        start = host.node.start_byte if host is not None else 0
        before = self._text()[start:launch.node.start_byte]
        deduced = deduce(params, fn.params, [arg_type(text(a), before) for a in args])
        if deduced is None:
            return False
        hosts: list = [host]
        if host is not None and host.is_template:
            if self._depth >= MAX_NESTING:
                return False
            self._depth += 1
            try:
                hosts = self._host.get(host.node.id)
                if hosts is None:
                    hosts = self._host[host.node.id] = [
                        h for h in self._instances(host, kernel=False) if h.instance]
            finally:
                self._depth -= 1
            if not hosts:
                return False
        aliases = self._aliases(launch.node)
        for h in hosts:
            env = h.constants if h is not None else self.model.constants
            add(deduced, aliases, env, h.type_bindings if h is not None else None,
                lambda h=h, env=env: self._unit_launch(launch.node, h, env))
        return True

    def _name_expressions(self, fn: "Function") -> list[list[str]]:
        """Template arguments of ``fn`` in the instantiations a CuPy RawModule names
        (``name_expressions=['k<float>', 'ns::k<double, 4>']``: nvcc builds exactly
        those). Its Python launches (``get_function('k<double>')``) give no instance of
        their own: their names are read without the arguments, so the block comes from
        the launches of ``k`` alike (launch_shape.block_shape)."""
        emb = getattr(self.ctx.unit, "embedded", None)
        out = []
        for expr in getattr(emb, "name_expressions", None) or ():
            head, lt, rest = expr.partition("<")
            if lt and head.strip().rsplit("::", 1)[-1] == fn.name and \
                    rest.rstrip().endswith(">"):
                out.append(split_args("<" + rest.strip()))
        return out

    def _unit_launch(self, launch: Node, host: "Function | None",
                     env: dict[str, int]) -> InstanceLaunch:
        key = (launch.id, id(host))
        got = self._launch_of.get(key)
        if got is not None and got[0] is host and got[1] is env:
            return got[2]
        made = self._make_unit_launch(launch, host, env)
        self._launch_of[key] = (host, env, made)
        return made

    def _make_unit_launch(self, launch: Node, host: "Function | None",
                          env: dict[str, int]) -> InstanceLaunch:
        cfg = next((c for c in launch.children if c.type == "kernel_call_syntax"), None)
        config = [c for c in cfg.named_children if c.type != "comment"] if cfg else []
        block = self.model.resolve_dim3(config[1], host, env) if len(config) > 1 else None
        start = launch.start_byte
        unit = self.ctx.unit

        def line() -> int | None:
            try:
                return unit.file.position(unit.file_offset(start))[0]
            except Exception:
                return None
        return InstanceLaunch(block, line, node=launch)

    def _mentions(self, fn: "Function"):
        """(template_function node, the enclosing host function's instantiations or
        [None] at file scope) of each mention of ``fn`` with template arguments outside
        its own definition."""
        found = self._mention_memo.get(fn.name)
        if found is None:
            # the mentions of the name and their hosts: the same for each kernel of that
            # name (clones of one kernel each searched the whole unit for them)
            found = self._mention_memo[fn.name] = list(self._all_mentions(fn.name))
        lo, hi = fn.node.start_byte, fn.node.end_byte
        for start, node, host in found:
            if lo <= start < hi:
                continue
            if host is None:
                yield node, [None]
            elif host.is_template:
                if self._depth >= MAX_NESTING:
                    continue
                self._depth += 1
                try:
                    insts = self._host.get(host.node.id)
                    if insts is None:
                        insts = self._host[host.node.id] = [
                            h for h in self._instances(host, kernel=False) if h.instance]
                finally:
                    self._depth -= 1
                if insts:
                    yield node, insts
            else:
                yield node, [host]

    def _all_mentions(self, fn_name: str):
        """(start, template_function node, enclosing host function or None) of every
        mention of ``fn_name`` with template arguments outside device code."""
        data = self.ctx.unit.data
        name = fn_name.encode()
        root = self.model.root
        for m in re.finditer(rb"(?<![\w.])" + re.escape(name) + rb"\s*<", data):
            node = root.named_descendant_for_byte_range(m.start(), m.start() + len(name))
            while node is not None and node.type in ("identifier",
                                                     "qualified_identifier"):
                node = node.parent
            if node is None or node.type != "template_function":
                continue
            host = self.model.enclosing_function(node)
            if host is not None and host.is_device and not host.is_kernel and \
                    "__host__" not in host.spaces:
                continue                # device code: bound at the call by the block run
            yield m.start(), node, host


def bind_call(callee: "Function", args: list[Node], values: list[int | None],
              types: dict[str, str] | None) -> "Function | None":
    """A device function called as ``f<a, b>(...)``, its template parameters bound to the
    call's arguments (``values``: those the caller evaluated); None when one is left
    unknown."""
    got = binding(callee, [text(a) for a in args], {}, types, values,
                  known_type=lambda t: t.endswith("*") or sizeof_type(t) is not None)
    if got is None:
        return None
    return bind(callee, got[0], got[1])

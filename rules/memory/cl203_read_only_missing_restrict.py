import re

from cudalint.analysis.memory.param_edits import const_edit, restrict_edit
from cudalint.analysis.memory.pointer_access import PointerAccess
from cudalint.model.preproc import not_for_modern_cuda
from cudalint.diagnostics import Finding, Fix
from cudalint.rule import Rule


class ReadOnlyMissingRestrict(Rule):
    """## What it does
    Finds `__global__` kernel pointer parameters whose memory the kernel only reads and
    that are not declared `const T* __restrict__`. A parameter counts as read-only only
    when every use of it and of every pointer derived from it (arithmetic, casts,
    `&p[i]`, local pointers and references, device functions it is passed to) is a load:
    a store, an atomic, a callee that writes or is not defined in the file, the pointer
    stored to memory, returned, captured by a lambda or used in inline assembly all make
    it "not read-only", and the rule stays silent.

    ## Why is this bad?
    Loads through a pointer the compiler can prove read-only for the whole kernel go
    through the read-only data (texture) path, `LDG.E.CONSTANT` in SASS: a separate cache
    with relaxed coalescing rules. The proof needs `__restrict__` (no other pointer
    touches the same memory) as well as `const`; on sm_90, nvcc 13 emits plain `LDG.E`
    for `const float*` and `LDG.E.CONSTANT` once the parameter is
    `const float* __restrict__` (measured for every fixture in `fixtures/CL203/`).

    ## Example
    ```cuda
    __global__ void scale(float* in, float* out, int n)
    {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) out[i] = 2.0f * in[i];      // LDG.E
    }
    ```

    ## Use instead
    ```cuda
    __global__ void scale(const float* __restrict__ in, float* out, int n)
    {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) out[i] = 2.0f * in[i];      // LDG.E.CONSTANT
    }
    ```

    ## Fix safety
    Adding `const` is a safe fix: the analysis proved that nothing is written through
    the parameter, and the fix also makes `const` the local pointers, references,
    `*_cast` target types and device-function parameters the pointer flows into, so the
    program still compiles. It is offered as unsafe when the kernel has external C++
    linkage (not `static`, not in an unnamed namespace, not `extern "C"`, not a kernel
    string from Python): `const` changes its mangled name, so a declaration of it in
    another file would no longer link; update such declarations with the fix. Adding `__restrict__` is unsafe: it promises the compiler
    that, while the kernel runs, the memory is not also reached through another pointer.
    If the caller may pass overlapping buffers (e.g. `out == in` for an in-place call),
    the compiler may read stale data. The message names the written parameters of the
    same type that must not overlap. Where that promise cannot be made, `__ldg()` still
    takes the read-only path for loads of data nothing writes during the kernel.

    ## References
    - Tuning CUDA Applications for Kepler, 1.4.4.3 "Read-Only Data Cache"
      (`const __restrict__`, `__ldg()`), in `shared/seeds/`
    - CUDA C++ Programming Guide, "__restrict__" and "Read-Only Data Cache Load Function"
    """
    code = "CL203"
    name = "read-only-missing-restrict"
    severity = "warning"
    fix_safety = "safe"

    def check(self, ctx):
        kernels = [k for k in ctx.model.kernels
                   if any(p.pointer_depth == 1 and not p.restrict for p in k.params)]
        if not kernels:
            return
        facts = ctx.analysis(PointerAccess)
        data = ctx.unit.data
        templates = _Lazy(lambda: _template_statements(data))
        for kernel in kernels:
            if not_for_modern_cuda(kernel.node, ctx):
                continue
            accesses = facts.kernel_params(kernel)
            by_name = {a.param.name: a for a in accesses}
            other_declared = _Lazy(lambda k=kernel: facts.has_other_declarations(k) or
                                   _explicitly_instantiated(data, k.name, templates))
            for acc in accesses:
                p = acc.param
                if p.restrict or not acc.read_only:
                    # `T* __restrict__` already gets LDG.E.CONSTANT from nvcc (measured:
                    # fixtures/CL203/sass.json); const alone would change no load
                    continue
                if acc.plain_loads != len(acc.loads):
                    # some loads use __ldg(): measured, nvcc 13 then leaves the plain
                    # loads of that pointer on LDG.E even with const __restrict__
                    continue
                if "volatile" in ctx.text(p.node):
                    continue
                if p.name_node is None or not ctx.unit.is_written(p.name_node.start_byte):
                    # a parameter cudalint wrote for a snippet (an ElementwiseKernel
                    # `raw T x` is a CArray passed by value): no declaration to change
                    continue
                if _launched_in_place(ctx, kernel, acc, by_name):
                    continue
                yield self._finding(ctx, kernel, acc, by_name, other_declared, data)

    def _finding(self, ctx, kernel, acc, by_name, other_declared, data):
        p = acc.param
        declared = " ".join(ctx.text(p.node).split())
        base = _bare_type(p.base_type)
        overlap = [a.param.name for a in by_name.values() if a is not acc
                   and a.status == "written" and _bare_type(a.param.base_type) == base]
        maybe = [a.param.name for a in by_name.values() if a is not acc
                 and a.status == "unknown" and _bare_type(a.param.base_type) == base]
        loads = len({(n.start_byte, n.end_byte) for n in acc.loads})
        want = "const" if not p.pointee_const else ""
        want += (" " if want else "") + ("__restrict__" if not p.restrict else "")
        msg = (f"`{p.name}` is only read by kernel `{kernel.name}` but is declared "
               f"`{declared}`: add `{want}` so its {loads} load{'s' if loads != 1 else ''} "
               "can use the read-only data path")
        if not p.restrict:
            others = overlap + maybe
            if others:
                names = ", ".join(f"`{n}`" for n in others)
                msg += (f" (`__restrict__` promises it never overlaps {names}; if it may, "
                        "use `__ldg()`)")
            else:
                msg += (" (`__restrict__` promises no other pointer reaches its data; if "
                        "one may, use `__ldg()`)")
        fix = None
        blocker = acc.const_blocker
        if blocker is None and not p.pointee_const and other_declared():
            blocker = f"`{kernel.name}` is declared or instantiated elsewhere too"
        if blocker is None and not p.pointee_const and \
                ctx.analysis(PointerAccess).address_taken(kernel):
            blocker = f"the address of `{kernel.name}` is taken with its current type"
        if not p.pointee_const and blocker is None:
            edit = const_edit(p)
            if edit is not None:
                derived = f" (and to {', '.join(f'`{d}`' for d in acc.derived)})" \
                    if acc.const_edits and acc.derived else ""
                private = _signature_is_private(ctx, kernel)
                fix = Fix(f"Add `const` to `{p.name}`{derived}" + (
                    "" if private else " (changes the C++ signature of "
                    f"`{kernel.name}`: update any declaration of it in other files)"),
                          (edit, *sorted(set(acc.const_edits), key=lambda e: e.start)),
                          "safe" if private else "unsafe")
        elif not p.pointee_const:
            msg += f" (adding `const` needs more: {blocker})"
        if fix is None and not p.restrict:
            edit = restrict_edit(p, data)
            if edit is not None:
                fix = Fix(f"Add `__restrict__` to `{p.name}` (asserts that no other pointer "
                          "the kernel uses overlaps it)", (edit,), "unsafe")
        return Finding.at(
            p.node, msg, fix=fix,
            metrics={"loads": loads, "const": p.pointee_const, "restrict": p.restrict,
                     "must_not_overlap": overlap})


def _signature_is_private(ctx, kernel) -> bool:
    """Can no other file hold a declaration that the `const` fix would stop matching?

    True for kernels compiled from a Python string (one module per string), with C
    linkage (`extern "C"`: the name does not encode the parameter types), or with
    internal linkage (`static`, an unnamed namespace). A kernel with external C++ linkage
    may be declared in a header or another .cu file: adding `const` changes its mangled
    name, and such a declaration would then fail to link.
    """
    if getattr(ctx.unit, "embedded", None) is not None:
        return True
    node = kernel.node
    for child in node.children:
        if child.type == "storage_class_specifier" and ctx.text(child) == "static":
            return True
    parent = node.parent
    while parent is not None:
        if parent.type == "linkage_specification":
            return True
        if parent.type == "namespace_definition" and \
                parent.child_by_field_name("name") is None:
            return True
        parent = parent.parent
    return False


def _bare_type(t: str) -> str:
    return " ".join(w for w in t.replace("*", " ").split()
                    if w not in ("const", "volatile", "__restrict__", "struct"))


class _Lazy:
    """A value computed on first call (most kernels never need it)."""

    def __init__(self, compute):
        self._compute = compute
        self._done = False
        self._value = None

    def __call__(self):
        if not self._done:
            self._value, self._done = self._compute(), True
        return self._value


_TEMPLATE = re.compile(rb"\btemplate\s")


def _template_statements(data: bytes) -> list[bytes]:
    """The text after each ``template`` keyword up to the first ``;``, ``{`` or ``}``,
    where that is a ``;`` (explicit instantiations and declarations)."""
    if b"template" not in data:
        return []
    out = []
    stop = re.compile(rb"[;{}]")
    end = -1                        # the first ;{} after the previous keyword (reused)
    for m in _TEMPLATE.finditer(data):
        if end < m.end():
            found = stop.search(data, m.end())
            end = found.start() if found is not None else len(data)
        if end < len(data) and data[end] == ord(";"):
            out.append(data[m.end():end])
    return out


def _explicitly_instantiated(data: bytes, name: str, templates) -> bool:
    r"""``template ... name<...>...;`` (the same as searching
    ``\btemplate\s+[^;{}]*\bname\s*<[^;{}]*;`` in the unit, without its backtracking)."""
    statements = templates()
    if not statements:
        return False
    pat = re.compile(rb"\b" + re.escape(name.encode()) + rb"\s*<")
    return any(pat.search(st) for st in statements)


def _launched_in_place(ctx, kernel, acc, by_name) -> bool:
    """Does a launch in this unit pass the same buffer for this pointer and for one the
    kernel writes (`merge<<<g, b>>>(dst, dst, n)`)? Then neither `__restrict__` nor
    `__ldg()` is valid for that launch: the data changes while the kernel runs."""
    written = [i for i, p in enumerate(kernel.params)
               if p.name in by_name and by_name[p.name].status == "written"]
    if not written:
        return False
    mine = next((i for i, p in enumerate(kernel.params) if p is acc.param), None)
    if mine is None:
        return False
    for launch in ctx.model.launches:
        if launch.kernel != kernel.name:
            continue
        args = launch.node.child_by_field_name("arguments")
        if args is None:
            continue
        texts = ["".join(ctx.text(a).split()) for a in args.named_children
                 if a.type != "comment"]
        if len(texts) != len(kernel.params):
            continue
        if any(texts[i] == texts[mine] for i in written):
            return True
    return False

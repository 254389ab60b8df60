from cudalint.analysis.memory.bank_exits import reaching_columns, without_exits
from cudalint.analysis.memory.bank_vectors import merged_statements
from cudalint.analysis.memory.figures import (at_the_call, bank_conflict_figures,
                                              block_line_metrics, merge_reached,
                                              reached_metrics, reached_text, surely_below,
                                              wavefronts)
from cudalint.analysis.memory.lanes import LaneAnalysis
from cudalint.analysis.memory.loops import hot, vector_access
from cudalint.analysis.memory.staging import staged_tile_loop
from cudalint.model.launch_shape import launch_bounds_threads
from cudalint.model.preproc import not_for_modern_cuda
from cudalint.diagnostics import Finding
from cudalint.parse import text
from cudalint.rule import Rule

# The smallest degree of a conflict on a store (not also a load: `s[i] += x` is a load)
# that a default finding reports; loads from 2 ways. Set from the H100 record
# fixtures/CL202/store_conflict.json: the smallest degree whose median slowdown over the
# six tile loops measured is at least 5% (tests/test_cl202_store_threshold.py).
STORE_MIN_WAYS = 2


class SharedBankConflict(Rule):
    """## What it does
    Finds `__shared__` memory accesses where lanes of one warp hit the same 4-byte bank
    at different addresses, and reports the n-way degree: the number of shared-memory
    wavefronts the access takes divided by the minimum for its width (1 for up to 4
    bytes per lane, 2 for 8 bytes, 4 for 16 bytes). The lane addresses are computed from
    the kernel's block shape (launch site, Python launch call or the `block-size`
    setting; the message says which), so padded tiles, XOR swizzles and
    broadcasts get exact answers. (Revised 2026-11-24) A kernel that reads no thread
    axis but `threadIdx.x` and whose block no launch gives is evaluated for any 1-D
    block of 32 or more threads (its first warp is the same; `block_source` `any-1d`);
    element types named through a `typedef`, a `using` alias or an object-like macro,
    loop counters declared before their loop (`int j; for (j = 0; j < 32; ++j)
    s[threadIdx.x][j] = ...`) and `dim3 threads(TILE, ROWS);` are followed. A row pitch
    that is an unknown parameter is not reported: with a pitch of p words, every odd p
    is conflict-free, so no degree holds for all but a few values. 8- and 16-byte
    accesses are served in half- and quarter-warp phases, as measured on an H100.

    (Revised 2026-11-24, issue 20) What executes: when a fully unrolled loop around the
    access (constant trip count, no `#pragma unroll 1`, no barrier; every loop between
    it and the access unrolled too) has a counter that moves the address by one element
    for every lane, and the lanes' first addresses are 16-byte (or 8-byte) aligned in
    every warp and sample, ptxas merges the thread's consecutive loads into one LDS.128
    (LDS.64): `A_shared_reduce_ptr[row + vk]`, `vk = 0..3`. The degree is then that of
    the 16-byte access (ideal 4 wavefronts), and the message says so (`vector_bytes`
    in the metrics). Checked against SASS (sm_90, tests/test_cl202_vector_sass.py on
    fixtures/CL202/vectorised.cu). In torchsparse's fp32 kernels the 4-byte model said
    "4-way" and "2-way" where ncu counted no conflicts, and its odd-stride advice
    removed the LDS.128 and made the kernels 25% and 8% slower (0.0791 -> 0.0985 ms,
    0.8279 -> 0.8965 ms); the 8-way case that stays conflicted as LDS.128 gained 27% from
    padding (1.0701 -> 0.7844 ms; bench/triage/sheet-2026-11-24.md #34, #35, #40,
    bench/triage/gpu/results-2026-11-24/). Vector accesses are padded by one vector.

    (Revised 2026-11-24, issue 20: merged statements, sheet-newcorpus5 W7) The same
    holds across statements: a thread's stores (or loads) to consecutive elements of one
    `__shared__` array in straight-line statements of one block, with nothing between
    them that may touch the array (another access to it, a pointer the kernel did not
    receive, an atomic, `asm`, a call of the unit's functions), are one STS.64/STS.128
    when the combined access is at most 16 bytes and its first element provably
    aligned to it (from the index expression: `(e) * 2` elements of 8 bytes is 16-byte
    aligned; `n + 4 * t` and `n - m + 4 * t` are not). quip-sharp's two 8-byte halves
    `cache[(t * 2 + r) * 2]`, `cache[(t * 2 + r) * 2 + 1]` are one STS.128, lanes 32
    bytes apart: 2-way (8 wavefronts instead of 4), said once at the first statement,
    where the 8-byte model said 4-way on both and printed an 8-byte pad that would
    break the vector. The width is checked against SASS (nvcc 13, sm_90,
    `tools/gputruth/merged_statements.py` -> `fixtures/CL202/merged_statements.json`,
    tests/test_cl202_merged_statements.py: 15 kernels, merged and not); the wavefronts
    of a 16-byte access are the model's, measured on an H100 for the same lane
    patterns (`fixtures/CL202/truth.json`: stride2_float4 8, col_float4_32x32 32,
    col_float4_32x36 4; `store_conflict.json`: 16-byte stores 4/8/16/32 at 1/2/4/8
    ways). Stores whose address moves with a loop nvcc keeps (pcn's `buf[l * 4 + f]` in
    a block-strided loop) keep the scalar figure: ptxas made them one STS.128 in one
    kernel and two STS.64 in another. A padding printed for a vector access is a
    whole number of vectors, and a swizzle moves whole vectors.

    (Revised 2026-11-24, issue 20: tail paths, sheet-newcorpus4 W2) A branch that the
    bound of its loop and its own condition on the same bound leave to one lane of a
    warp (`for (k = 4 * threadIdx.x; k < n; ...) if (k + 3 < n) {...} else {...
    buffer4[k2] = v; ...}`) gets that lane's figure: no conflict (pointnet2's
    cumsumKernel was said to be 4-way there; fixtures/CL201/tail_path.cu).

    (Revised 2026-11-24, issue 20: staged tiles, sheet-newcorpus4 #34-36 and #51-53)
    Staging code whose cost the block amortises is not a default finding: a
    `__shared__` store in a loop whose counter starts from the thread index (the block
    staging a tile together), followed in the same tile loop by a loop from 0 by one to
    the same bound that reads the array back at the index the store wrote (every thread
    reads every staged element), in a block of at least 128 threads from the launch; and
    a global load whose every use is such a store (`float x2 = xyz2[3*l]; buf[l*4] =
    x2;`, or `buf[i] = g[j]`). Each staged element is read once per thread of the block,
    so staging is one part in the block's size of the tile's traffic. Measured on an
    H100 (`tools/gputruth/staging.py`, `fixtures/CL202/staging.json`; pcn's
    tf_approxmatch shape, 32768 queries against 16384 points in tiles of 1024, CUDA
    events median of 15, ncu): the stores as written take 4 wavefronts each (4-way, as
    the rule computes), the kernel's global loads 9.9-10.0 sectors per request (3
    record loads of 12 and a weight load of 4: 10; 4.0 with SoA); a float4 store per record
    (CL202's remedy), with SoA loads too (CL201's), changed the kernel's time by -3.2% to
    +0.9% at 128 threads and +2.3% to +30% at 512 (an __expf consumer and a plain
    multiply), but saved 4.8-9.7% at 32 threads: a 32-thread block, an unknown block,
    or a read-back of a thread's own elements only (no reuse) stays reported
    (fixtures/CL201/staging.cu). The store-conflict measurement of a GEMM-like tile loop
    (each thread reading 4 elements per staged one: 4-15% for 2 ways,
    `fixtures/CL202/store_conflict.json`) is not this shape and its findings stay.

    A default finding also sits in the kernel's hottest region (`loops.hot`): inside as
    many loops with a run-time trip count as the deepest shared access of the kernel
    and as the deepest global one, and taking at least a quarter of the wavefronts per
    pass of the deepest shared access (constant trip counts times wavefronts; a
    `__shared__` array named in an `ldmatrix` address counts as a 16-byte access). A
    kernel with no loops keeps all its accesses. Measured on an H100 (same sheet):
    torchsparse's reduce_bitmask, a 4-way reduction by warp 0 once per block after the
    global loads, 0.0192 -> 0.0191 ms when conflict-free (#42-#45). The per-access
    figures are unchanged; `report_all_loops` (tests, not a user setting) reports
    every conflicted access. Still reported: 16-byte tile stores at the same nesting as
    the ldmatrix loads of the MMA loop (torchsparse setting 1: -2.8% and -3.2% when
    conflict-free, below the 5% bar).

    (Revised 2026-11-24, issue 20) Measured on an H100 (tools/gputruth/worth_acting.py ->
    fixtures/CL202/worth_acting.json, tests/test_cl202_worth_acting.py): cuda-samples
    convolutionSeparable's row kernel, verbatim at 3072x3072, fills its `[4][160]` tile
    with 10 stores per thread that are 2-way (ncu: 2.0 wavefronts per STS, as computed)
    and then reads it 136 times, 2-way too. The stores are outside the hottest region
    (ncu: 1/13 of the loads' wavefronts) and are not reported: filling the same tile
    conflict-free, loads unchanged, took 0.0572 ms against 0.0551 as written (no gain;
    freeing them removes 3.6% of the kernel's shared wavefronts). The load finding
    stays and its padding `[4][176]` frees both: 0.0389 ms (-29%). A kaolin-style loop
    of 2-way transposes between barriers (`[16][17]`, 16x16 block, analog) ran 12%
    faster swizzled (0.661 -> 0.589 ms): conflicts in the hot loop of a barrier-bound
    kernel still cost more than 5%, so they stay reported.

    (Revised 2026-11-24, issue 20) Stores are reported from the same degree as loads, 2
    ways and up (`STORE_MIN_WAYS`), because the GPU says so. The triage's 2-way 16-byte
    tile stores cost torchsparse's kernels 0% to 6.1% (bench/triage/sheet-final.md), and
    no instruction waits on a store, so stores were expected to need 4 ways before they
    matter. Measured on an H100 (tools/gputruth/store_conflict.py ->
    fixtures/CL202/store_conflict.json, checked by tests/test_cl202_store_threshold.py):
    in a GEMM-style tile loop (global load, shared store with an n-way conflict, barrier,
    conflict-free shared loads and 2, 4 or 8 FMAs per loaded float; 4- and 16-byte
    lanes; ncu counted the wavefronts each degree promises), a 2-way store conflict made
    the loop 4.0% to 14.8% slower (median of the six loops 8.0%, the figure that sets
    the threshold), 4-way 13% to 42%, 8-way 45% to 97%; a 2-way conflict on the loads
    instead cost 2.2% to 48%. A loop of stores alone ran 1.97x, 3.92x and 7.82x longer at
    2, 4 and 8 ways: a store conflict costs its extra wavefronts, as a load conflict
    does. They are cheap where the loop is bound by other work (torchsparse's tile
    stores beside its ldmatrix and MMA) and cost 5% and more where shared memory bounds
    it, and a source file does not say which.

    (Revised 2026-11-24, issue 13) Shared accesses in a `__device__` function of the file
    that a kernel calls are evaluated at each call with the caller's pointer and index
    values, as CL201 says; the finding says where it is reached from. Measured on an
    H100 (fixtures/CL202/device_function.cu): a column read through a device function
    32 wavefronts, the padded and row bindings 1.

    (Revised 2026-11-24, issue 20, second triage) `__launch_bounds__` is never the block
    shape, only its upper bound: cusignal's sosfilt kernels say 1024 and run one thread
    per filter section (2-16), where their stride-6 conflicts (lanes i and i + 16) do not
    occur; all 30 findings there were wrong. A kernel with a bound and no launch in the
    project is not reported (the any-block form has no triage record for this rule).
    The padding printed is checked by the model first: every evaluated access to the
    array is evaluated again with the padded pitch (1 to 32 elements), and a padding is
    printed only if every conflicted access then takes fewer wavefronts and none more.
    kaolin's sg kernel writes a `[16][17]` tile by rows with a 16x16 block and reads it
    transposed; the `[16][18]` printed before frees the reads and leaves the stores
    2-way (cudalint on the edited file said so). When no padding passes, the XOR
    swizzle `[row][col ^ (row % w)]` over the unpadded power-of-two width w is checked
    the same way and printed with this access's exact index; when neither passes, no
    layout change is suggested. A place said for several instantiations or calling
    kernels with different figures is one finding, the worst, naming the others.

    (Revised 2026-11-24, issue 20: sheet-newcorpus8 W4) Lanes that leave the loop
    iteration through `if (c) continue;` or `if (c) break;` before the access (an
    earlier statement of a block that holds it, the jump's loop around both) do not run
    it, as if it were under `if (!c)`: gpu4pyscf's `type1_rad_ang<3>` reads `prad[0]`
    only in lanes with i + j + k in {0, 2} (the rest `continue`), `rad_all[0]` and
    `rad_all[8]`, in different banks: no conflict, where counting the lanes that skip it
    (i + j + k up to 7, `rad_all[16]`) said 2-way (fixtures/CL202/iteration_exits.cu).
    The lanes are removed only where the condition gives the same lanes in every sample
    of the unknowns that leaves some lane in the iteration (a jump decided by data or by
    a parameter removes none, as for an enclosing `if`), and not for the merged copies of
    an unrolled loop (`analysis/memory/bank_exits.py`).

    When the degree depends on values the kernel receives it is reported only as a sure
    lower bound ("at least N-way", `exact: false`): the lanes whose distances do not
    depend on them, at their best alignment. JSON metrics: `wavefronts`,
    `ideal_wavefronts`, `bank_ways`, `exact`, `block`, `block_source`, `block_line`.

    ## Why is this bad?
    Shared memory has 32 banks of 4 bytes. Lanes that read different words of the same
    bank are served one after another: a column walk over a `float tile[32][32]` takes
    32 wavefronts instead of 1, so the access runs 32 times slower.

    ## Example
    ```cuda
    __shared__ float tile[32][32];
    sum += tile[threadIdx.x][k];      // 32-way bank conflict
    ```

    ## Use instead
    ```cuda
    __shared__ float tile[32][33];    // one word of padding per row
    sum += tile[threadIdx.x][k];      // conflict-free
    ```

    ## References
    - Tuning CUDA Applications for Kepler, 1.4.3 "Shared Memory and Warp Shuffle"
      (bank width and conflicts), https://docs.nvidia.com/cuda/kepler-tuning-guide/
    - CUDA C++ Best Practices Guide, "Shared Memory and Memory Banks"

    ## Precision on unseen code
    Precision on unseen code: 5/5 right, none wrong (2026-11-25, c7afdf7, the four new-project
    sheets 9-12 re-scored, 52 projects; docs/precision.md).
    Precision on unseen code: 0/23 right (2026-11-24, ea1e6f7; docs/precision.md);
    earlier 9/33 (2026-11-24, 1d70d04)

    """
    code = "CL202"
    name = "shared-bank-conflict"
    severity = "warning"

    def check(self, ctx):
        # alike from several kernels (a device function's access): said once
        yield from merge_reached(at_the_call(ctx, list(self._findings(ctx))))

    def _findings(self, ctx):
        facts = ctx.analysis(LaneAnalysis)
        # statements ptxas merges into one vector access: evaluated, reported and
        # re-checked as that access, once, at the first statement
        merges = merged_statements(ctx, facts.accesses)
        by_array: dict[tuple, list] = {}
        for a in facts.accesses:
            if a.space == "shared" and a.array is not None:
                m = merges.get(id(a))
                if m is not None and m.first is not a:
                    continue
                by_array.setdefault((id(a.kernel), id(a.array)), []).append(
                    a if m is None else m.executed)
        layouts: dict = {}          # the layout checked for an array's accesses, once
        for access in facts.accesses:
            if access.space != "shared":
                continue
            if access.block.source == "any-1d" and \
                    launch_bounds_threads(access.reached.kernel if access.reached is not None
                                          else access.kernel) is not None:
                # a kernel whose blocks its author bounds but no launch of the project
                # gives: the any-block form has no triage record for bank conflicts, and
                # a conflict between lanes i and i + 16 needs a block of 17 threads
                # (cusignal's sosfilt: __launch_bounds__(1024), 2-16 threads)
                continue
            merge = merges.get(id(access))
            if merge is not None and merge.first is not access:
                continue                        # said at the first statement of its vector
            if merge is None and surely_below(access, wavefronts,
                                              2 * access.ideal_wavefronts):
                continue                        # conflict-free: no need for every figure
            if not self.report_all_loops and not hot(access):
                continue                        # outside the kernel's hottest loop
            # what executes: consecutive elements of statements ptxas merges, and of an
            # unrolled loop, are one vector
            stated = access if merge is None else merge.executed
            executed = vector_access(stated) or stated
            if executed is stated:
                # lanes that left the iteration (`if (c) continue;`) before the access
                # do not run it, as if it were under `if (!c)`; not applied to the copies
                # of an unrolled loop, whose jumps may move with the counter
                executed = without_exits(executed, reaching_columns(access))
            if executed is not access and \
                    surely_below(executed, wavefronts, 2 * executed.ideal_wavefronts):
                continue
            fig = bank_conflict_figures(executed)
            if fig is None or fig["bank_ways"] < 2 or not_for_modern_cuda(access.node, ctx):
                continue
            ways = fig["bank_ways"]
            if access.is_store and not access.is_load and ways < self.store_min_ways:
                continue                        # a store below the measured threshold
            if not self.report_all_loops and staged_tile_loop(access) is not None:
                continue                        # a tile every thread of the block reads
            ways_txt = f"{ways:g}" if fig["exact"] else f"at least {ways:g}"
            # scalar parameters every launch passes as one constant: say where from
            bound = "".join(f"; `{n}` = {v} from the launch"
                            f"{f' at line {row}' if row is not None else ''}"
                            for n, (v, row) in sorted(access.bound.items()))
            merged = ""
            if merge is not None:
                kind = "store" if access.is_store else "load"
                rows = [str(r) for r in merge.rows(ctx)]
                where = rows[0] if len(rows) == 1 else \
                    f"{', '.join(rows[:-1])} and {rows[-1]}"
                merged = (f"; ptxas merges the thread's {len(merge.members)} "
                          f"{access.width}-byte {kind}s to consecutive elements on line"
                          f"{'s' if len(rows) > 1 else ''} {where} into one "
                          f"{merge.width}-byte {kind}")
                if executed is not stated:
                    merged += (f", and {executed.width // stated.width} unrolled "
                               f"iterations of them into one {executed.width}-byte {kind}")
                fig["vector_bytes"] = executed.width
                fig["merged_lines"] = [int(r) for r in rows]
            elif executed is not access:
                k = executed.width // access.width
                merged = (f"; ptxas merges the thread's {k} unrolled {access.width}-byte "
                          f"accesses to consecutive elements into one {executed.width}-byte "
                          f"access")
                fig["vector_bytes"] = executed.width
            yield access, Finding.at(
                access.node,
                f"{ways_txt}-way bank conflict on {access.expr_text or ctx.text(access.node)} "
                f"({_describe(executed)}; {access.block.describe()}{bound}"
                f"{reached_text(access)}{merged}): "
                f"{fig['wavefronts']:g} wavefronts instead of {fig['ideal_wavefronts']}; "
                f"{_remedy(executed, by_array.get((id(access.kernel), id(access.array)), []), layouts)}",
                metrics={**fig, **block_line_metrics(access),
                         **({"bound": {n: {"value": v, "line": row} for n, (v, row)
                                       in sorted(access.bound.items())}}
                            if access.bound else {}),
                         **reached_metrics(access)})

    # every conflicted access, also those outside the kernel's hottest loop (tests of
    # the figures; not a user setting)
    report_all_loops = False
    # the smallest n-way store conflict reported (STORE_MIN_WAYS)
    store_min_ways = STORE_MIN_WAYS


def _describe(access) -> str:
    arr = access.array
    if arr is None:
        return f"{access.width}-byte lanes"
    dims = "".join(f"[{d}]" if d is not None else "[]" for d in arr.dims)
    return f"{arr.name} is {arr.elem_type}{dims}"


def _remedy(access, siblings=(), layouts=None) -> str:
    arr = access.array
    if arr is not None and len(arr.dims) >= 2 and all(d is not None for d in arr.dims):
        dims = list(arr.dims)
        elem = max(1, arr.elem_size or access.width or 4)   # a typedef'd type: the lane's
        # one bank's worth of padding, or one whole vector for 8/16-byte lanes
        step = max(1, max(access.width, 4) // elem)
        accesses = [access, *(a for a in siblings if a is not access and
                              a.node.id != access.node.id)]
        pitch = dims[-1]
        key = (frozenset(a.node.id for a in accesses), access.width, id(arr))
        if layouts is None or key not in layouts:
            pad = next((p for p in range(step, PITCHES_CHECKED + 1, step)
                        if _better(accesses, lambda o, p=p: _repitched(o, pitch, pitch + p,
                                                                       elem))), None)
            width = None if pad is not None or len(dims) != 2 else \
                _swizzle_width(accesses, pitch, elem)
            if layouts is not None:
                layouts[key] = pad, width
        else:
            pad, width = layouts[key]
        if pad is not None:
            dims[-1] += pad
            padded = "".join(f"[{d}]" for d in dims)
            # a vector access swizzled element by element is no longer a vector
            what = "the column index" if access.width <= elem else \
                f"the column's {access.width}-byte vectors, not their elements,"
            return (f"pad the rows: `__shared__ {arr.elem_type} {arr.name}{padded};` "
                    f"or XOR-swizzle {what} with the row")
        if width is not None:
            dims[-1] = width
            plain = "".join(f"[{d}]" for d in dims)
            return (f"no row padding frees every access to `{arr.name}` without keeping or "
                    f"adding a conflict on another; XOR-swizzle the column with the row: "
                    f"`__shared__ {arr.elem_type} {arr.name}{plain};` and "
                    f"`{_swizzled(access.node, arr.name, width)}` here, `[row][col ^ (row % "
                    f"{width})]` in each of its {len(accesses)} evaluated accesses (checked "
                    f"on all of them)")
        return (f"no row padding (up to {PITCHES_CHECKED} elements) or XOR swizzle of the "
                f"column with the row frees this access without keeping or adding a "
                f"conflict on another of the {len(accesses)} evaluated accesses to "
                f"`{arr.name}`: "
                f"no layout change to suggest")
    if access.width > 4:
        return (f"pad the row stride by {access.width} bytes (an odd number of "
                f"{access.width}-byte vectors keeps the vector access), or XOR-swizzle the "
                f"index with the lane")
    return "use an odd stride in 4-byte words, or XOR-swizzle the index with the lane"


# row paddings tried, in elements: up to one full turn of the 32 banks
PITCHES_CHECKED = 32


def _better(accesses, move) -> bool:
    """With every byte offset moved by ``move``, each conflicted access takes fewer
    wavefronts than now and no access more: a layout printed is one the model has
    checked on every access to the array (kaolin's sg kernel writes a [16][17] tile by
    rows and reads it transposed: [16][18] frees the reads and conflicts the stores)."""
    for a in accesses:
        before = max(a.wavefronts())
        after = max(wavefronts([None if o is None else move(o) for o in row], a.width)
                    for row in a.groups)
        if after > before or (before > a.ideal_wavefronts and after >= before):
            return False
    return True


def _repitched(offset: int, pitch: int, new_pitch: int, elem: int) -> int:
    """A byte offset into rows of ``pitch`` elements, moved to rows of ``new_pitch``."""
    index, within = divmod(offset, elem)
    row, col = divmod(index, pitch)
    return (row * new_pitch + col) * elem + within


def _swizzle_width(accesses, pitch: int, elem: int) -> int | None:
    """The power-of-two row width (the columns the accesses use, the padding dropped)
    whose swizzle ``col ^ (row % width)`` frees every conflicted access to the array
    and slows none; None when there is none or an access is wider than one element (a
    swizzle moves elements, not vectors)."""
    if any(a.width != elem for a in accesses):
        return None
    cols = [divmod(o // elem, pitch)[1] for a in accesses for row in a.groups
            for o in row if o is not None]
    if not cols or any(o % elem for a in accesses for row in a.groups for o in row
                       if o is not None):
        return None
    width = 1
    while width <= max(cols):
        width *= 2
    if width > pitch or width < 2:
        return None

    def move(o: int) -> int:
        row, col = divmod(o // elem, pitch)
        return (row * width + (col ^ (row % width))) * elem
    return width if _better(accesses, move) else None


def _swizzled(node, name: str, width: int) -> str:
    """This access written with the swizzled column: ``tile[tx][ty ^ (tx % 16)]``."""
    inner = node.child_by_field_name("argument")
    col = node.child_by_field_name("indices")
    row = inner.child_by_field_name("indices") if inner is not None and \
        inner.type == "subscript_expression" else None
    if row is None or col is None:
        return f"{name}[row][col ^ (row % {width})]"
    r, c = (text(n).strip()[1:-1].strip() for n in (row, col))
    shown = r if r.replace("_", "").replace(".", "").isalnum() else f"({r})"
    return f"{name}[{r}][{c} ^ ({shown} % {width})]"

from cudalint.analysis.memory.callee_lanes import CalleeMemo
from cudalint.analysis.memory.figures import (SECTOR, at_the_call, block_line_metrics,
                                              coalescing_figures, merge_reached,
                                              reached_metrics, reached_text, root_kernel,
                                              sectors, surely_below)
from cudalint.analysis.memory.column_walk import neighbour_index
from cudalint.analysis.memory.early_break import early_break_scan
from cudalint.analysis.memory.hot_path import HotPath
from cudalint.analysis.memory.lane_values import PARAM_SAMPLES
from cudalint.analysis.memory.lanes import LaneAnalysis
from cudalint.analysis.memory.loops import hot, row_walk_loop, whole_record_loop
from cudalint.model.preproc import not_for_modern_cuda
from cudalint.analysis.memory.siblings import (SiblingGroup, access_row, constant_distance,
                                               group_siblings)
from cudalint.analysis.memory.siblings import direction as _direction
from cudalint.analysis.memory.symbolic import coalescing_figures_by_value, large_value_samples
from cudalint.analysis.memory.repeated_loads import own_store, repeated_load
from cudalint.analysis.memory.staging import staging_load
from cudalint.analysis.memory.traffic import (fetched_and_used, filled_by_neighbours,
                                              other_warps_may_fill, rereading_loop)
from cudalint.diagnostics import Finding
from cudalint.rule import Rule
from cudalint.rules.memory._cl201_text import (_column_walk_remedy, _column_walk_text,
                                              _group_remedy, _linear, _remedy, _rows_text,
                                              _symbolic_elements, least_sectors)


# The longest row a thread may walk across a loop and still cost nothing measurable: on an
# H100 rows of 3, 8 and 9 floats ran as fast as the column-major layout (0.98-1.33x), rows
# of 32, 256 and 2048 floats 2.4-2.8x slower, with DRAM bytes equal to the useful bytes in
# both (the cost is L1 throughput): fixtures/CL201/record_loop.json, written by
# tools/gputruth/record_loop.py. Between 36 and 128 bytes nothing was measured.
SHORT_RECORD_BYTES = 36


class UncoalescedGlobalAccess(Rule):
    """## What it does
    Finds global-memory loads and stores whose addresses, across the 32 lanes of a warp,
    touch more 32-byte sectors than the access size needs, and reports the predicted
    sectors per request next to the ideal (4 for 4-byte lanes, 8 for 8-byte, 16 for
    16-byte). The addresses are evaluated lane by lane from the thread index and the
    kernel's block shape, taken from the launch site in the file, the Python launch call
    (`block=`) or the `block-size` setting, in that order; the message says which one and
    where. (Revised 2026-11-24, issue 20) `__launch_bounds__` is never the block: it only
    bounds it (cusignal's sosfilt says 1024 and runs 2-16 threads). (Revised
    2026-11-24) With no block shape known, a kernel that reads no thread axis but
    `threadIdx.x` (no `threadIdx.y/z`, `blockDim.y/z`, `dim3`, cooperative-groups block)
    and whose launches in the unit pass no shape that may be 2-D is evaluated for a
    block of 256 and of 32 threads; accesses whose figures and lane stride agree are
    reported "for any 1-D block of 32 or more threads" (`block_source` `any-1d`,
    `block` null): every such block has the same first warp; under a
    `__launch_bounds__(n)` below 256 the block of n threads is evaluated instead of 256,
    the message says "32 to n threads", and a bound below 32 leaves nothing to report.
    Otherwise silent. Pointers
    bumped in place before an access (`p += i * 3; x = p[0];`, or `p = p + i * 3;`, in
    no loop and on the access's path) and loop counters declared before their loop
    (`int j; for (j = 0; ...)`) are followed; `dim3 threads(THREADS);` gives the block
    shape.

    The figure is exact, or, when it depends on values the kernel receives (an offset,
    a pitch), a sure lower bound: the lanes whose distances to each other do not depend
    on those values, at their best alignment. Such findings say "at least N" and carry
    `exact: false`. An element handed to a template call or a reference parameter gives
    no finding (the callee may access it with another width, e.g.
    `AssignAs<uint4>(dst, src[i])`).

    (Revised 2026-11-24, issue 14) A lane stride that is an unknown scalar parameter
    times a constant (`acc += a[row * cols + k]` with `row` from threadIdx.x,
    `A[c * ld + r]`, rows of a 2-D block `pitch` bytes apart) is reported by value: the
    figure for every value >= 0 of that parameter, when it is below the threshold for at
    most 4 values (a 16x16 block reading `A[c * ld + r]`: 0 to 3), which the message
    names ("32 32-byte sectors per request for any `cols` >= 8 (at least 8 for every
    `cols` but 0 or 1)"); `exact: false`,
    `condition` (`cols >= 8`) and `by_value` (`param`, `from`, `least`, `exceptions`) in
    the metrics, `stride_bytes_per_unit`/`stride_bytes_offset` for a lane stride of
    `4 * cols + 0` bytes. The parameter is the only unknown the address reads, or the
    one whose lane offsets keep their shape when every other is fixed; a product of two
    unknowns is not reported. Code under an `if` that compares that parameter with a
    constant (`if (incx == 1) {...} else {... x[i * incx] ...}`) is not reported: the
    kernel has its fast path. When every launch of the kernel in the unit passes one
    constant for a scalar parameter (a literal, a macro, a constexpr, a host local set
    from constants), it is bound: the figure is exact and the message says where the
    value came from (`` `cols` = 64 from the launch at line 12``; metrics `bound`).

    Flagged at `coalescing-threshold` (default 2.0) times the ideal or more: a misaligned
    unit-stride access (5 sectors instead of 4) is not worth a warning. (Revised
    2026-11-24, third triage of issue 20) Nor is one of 1-byte lanes, whose only
    extra sector is the base alignment's (PyTorch-Encoding's `mask[i + 1 + b * n]`: 2
    sectors for an ideal 1, the neighbouring warp using the other bytes): an access
    whose lane stride equals its width is never reported. (Revised
    2026-11-24) A default finding also needs wasted traffic over the kernel: bytes the
    warp fetches that no access of the kernel uses, one sector's worth or more at the
    best base alignment (one field of a record, a column walk; the access and every
    access through the same pointer at a constant distance from it count, wherever they
    are in the kernel), or whole records read again on each pass of a loop (a loop that
    does not move the address around an inner loop that does, or around a load whose
    pointer a store in the loop may alias). A record read or written whole once per
    thread (`x = p[3*i]; y = p[3*i+1]; z = p[3*i+2];`) is not reported: its figures are
    still exact, but the sectors its first access brings serve the others from L1 and
    DRAM moves only the useful bytes. Measured on an H100 (`tools/gputruth/memory.py
    --traffic`, fixtures/CL201/traffic.json; 16 Mi records, ncu `dram__bytes_read.sum`
    with caches flushed, CUDA events median of 25 runs): 12-byte records read whole
    once, DRAM bytes 1.00x the useful bytes and 1.012x the run time of
    structure-of-arrays (0.0969 vs 0.0957 ms); 36-byte records 1.00x and 0.998x;
    written whole once, DRAM writes within the useful bytes; but one field of 12-byte
    records 3.00x the useful bytes from DRAM and 1.53x the run time of an array of its
    own (0.0970 vs 0.0633 ms), two fields 1.50x the bytes. Re-read loops are reported
    on the strength of issue 20's measurement of mmcv's farthest-point-sampling kernel
    (SoA 1.48 vs 1.68 ms, 12%); a plain loop re-reading 12-byte records measured within
    1% of SoA (0.997x with 12 MiB in L2 on 32 SMs, 0.992x with 96 MiB from DRAM, 0.91x
    when each SM's share stays in its L1), so the message says to profile first. The
    message says which kind of waste it found; JSON metrics `wasted` (`unused_bytes` or
    `reread_in_loop`), `warp_fetched_bytes` and
    `warp_used_bytes`, or `loop_line`. JSON metrics:
    `sectors_per_request`, `ideal_sectors_per_request`, `exact`, `stride_bytes` (or
    `x_stride_bytes` for 2D blocks), `block`, `block_source`, `block_line`,
    `sibling_accesses`, `sibling_rows`. A load of what the same thread stored earlier
    in every lane (a loop writing a record's fields, then reading some back) is not
    reported: no fetched byte goes unused on its account (sheet-newcorpus9; the store
    is reported at the store). The threshold compares with
    `ideal_sectors_per_request` (32 distinct lanes, as measured); the message's "instead
    of N" is `least_sectors_per_request`, the sectors the warp's distinct bytes need
    (lanes reading one address share it; `least_sectors_per_request_max` and "2-4" when
    warps differ: sheet-newcorpus8 #11).

    (Revised 2026-11-24, issue 20) A default finding also sits in the kernel's hottest
    region (`loops.hot`): inside as many loops with a run-time trip count as the
    deepest global access of the kernel (counting the accesses no figure is computed
    for: an address the same for every lane, a data-dependent index through a pointer
    parameter), and in a loop run at least a quarter as often per pass (constant trip
    counts multiplied). A kernel with no loops keeps all its accesses. And a load whose
    lane stride is a record the same thread reads whole across an enclosing loop
    (`for (k = 0; k < K; ++k) ... q[pix * K + k]`, the counter moving the address by
    the bytes the access and its siblings cover, the trip count times that equal to the
    lane stride) is a record read whole once, silent by default as above while the
    record is at most 36 bytes: on an H100, rows of 3, 8 and 9 floats walked by one
    thread ran as fast as the column-major layout, rows of 32, 256 and 2048 floats
    2.4-2.8x slower (0.27 vs 0.10 ms over 256 MB, DRAM bytes equal to the useful bytes
    in both: the cost is L1 throughput; `fixtures/CL201/record_loop.json`, written by
    `tools/gputruth/record_loop.py`). A row-wise matrix-vector product's
    `a[row * cols + k]`, whose row length `cols` is unknown, stays a finding
    (sheet-newcorpus8 N4: pyg-lib's `pos[t * D + d]`, D = 3 in use, and faiss's rows
    of M = 4-16 codes were judged not worth acting on, but tomopy's `recon[d * nx + i]`
    and deepmd-kit's `last_layer_size` rows, the same shape with long rows, right in
    the same triage; the source does not tell them apart. A length a template argument
    or every launch gives, 36 bytes or less, is silent: fixtures/CL201/short_rows.cu).
    The hand triage of issue 20 (bench/triage/sheet-2026-11-24.md #1-#11,
    bench/triage/gpu/results-2026-11-24/)
    found 11/11 such findings not worth acting on: K-slots written once per query after
    an O(n) search loop (pytorch_cluster knn: 4 MB at the measured AoS store rate of
    265 GB/s, ~16 us against 15.7 ms for the kernel on an H100), pixels' K-records read
    whole across the k loop. Stores of records written whole in the hot loop stay
    reported: a store-only kernel writing 96-byte records lane by lane ran at 265 GB/s
    against 3130 GB/s for SoA. `report_whole_records` (tests, not a user setting)
    reports them all. (Revised 2026-11-24, third triage of issue 20) A row a thread walks
    across a loop with a run-time or data-dependent trip count (`for (k = 1; k <=
    total_pts; k++) ... row[k]`, the count loaded from memory), or writes element by
    element (`for (l = 0; l < nsample; ++l) idx[l] = k`), is reported as a row walk, not
    as "bytes no access uses": the rest of each sector is the next iterations'
    elements. (Revised 2026-11-24, sheet-newcorpus8 W5) So is a row walked across a
    loop of a constant trip count longer than the 16 iterations whose bytes the
    traffic figure counts one by one (gpu4pyscf's `af[out] = ...; for (i = 1; i < 20;
    ++i) af[out + i] = ...`, said to write 256 of 1024 bytes: the thread writes every
    byte of its 160-byte row; fixtures/CL201/long_row_walk.cu); one field of records
    in such a loop (the counter moving to other records) keeps the unused-bytes
    message. When the row length is a parameter, the message names the parameter's
    values on each side of the measured line ("rows of 32 floats or more (`K` >= 11
    here) ... rows of 9 floats or fewer (`K` <= 3) ran as fast") instead of quoting "9
    floats or fewer cost nothing" beside a figure for rows of 9 floats, and the remedy
    is the row one (store the rows column-major, or stage them through shared memory),
    not a record count at the parameter's smallest value. A guard on a loop counter
    against a parameter (`if (base + k < K)`) no longer hides the walk: a condition that
    shuts every lane out in every sample of the parameter is taken to hold, like any
    bound on a uniform unknown (bitsandbytes' 4-bit GEMV tail, each lane reading its
    32 elements across unrolled `k` and `i` loops, was said to use 128 of 1024 bytes).
    A load of the elements an earlier load of the kernel already read, with nothing that
    may write memory between them and the earlier one on every path to it, issues no
    request (SASS: roiaware's `if (argmax[0] == -1) return; atomicAdd(grad_in +
    argmax[0] * C + c, ...)` has one LDG for `argmax`): it is no finding of its own. A
    reload after an atomic or a store (two LDG) stays a sibling of the first load, named
    "1 more load of the same element".

    (Revised 2026-11-24, issue 20) A store on the hits of a scan that stops after a count
    (`if (d2 < r2) { idx[cnt] = k; if (++cnt >= nsample) break; }`, the fill loop at the
    first hit inside it, or the padding loop after it whose header reads the count: ball
    and voxel queries) stays a finding, and its message quotes what the layout change
    measured over the range (metrics `early_break_scan`): on an H100 (a ball-query analog,
    `tools/gputruth/not_worth.py`, `fixtures/CL201/not_worth.json`; 32768 queries, n 1k
    to 64k points, nsample 16 to 64), column-major rows changed the kernel's time by
    -7.0% to +1.8% when 1% or 10% of the scanned points hit, and saved 28-48% when half
    hit and 10-23% when a padding loop after a short scan (1024 points, 1% hits) wrote
    most of each row. The hit rate is data, not source, so no condition separates them.

    (Revised 2026-11-24, issue 20: the hot path) An access is not a default finding
    when fewer loops with a run-time trip count enclose it than enclose some global
    memory access of the same kernel, or of a device function of the file that the
    kernel calls (the call's loops plus the callee's own): it runs O(1) times per
    thread while the kernel does O(n) work per thread elsewhere (pytorch3d's
    rasterizers write each pixel's K-record once, after a loop over every face whose
    loads are in a device function). A loop counts as run-time unless its trip count
    is a constant or its counter indexes a per-thread array of constant size (`for (k =
    0; k < q_size; ++k) ... q[k]` with `Pixel q[150]`); a `for` initializer runs once,
    outside its loop. Measured on an H100 (`tools/gputruth/hot_path.py`,
    `fixtures/CL201/hot_path.json`; 2^20 threads, each scanning n items with global
    loads and about 20 flops, CUDA events median of 15, ncu): writing a 3- or 8-float
    record array-of-structs (12 and 32 sectors per request, as the rule computes)
    instead of structure-of-arrays changed the kernel's time by -0.3% to +0.5% for a
    run-time n of 64, 256, 1024 and 4096 (0.103 to 11.0 ms), and by at most 0.2% for a
    constant n of 64 to 1024: nowhere near 5%, so a run-time loop is taken as long
    enough. The same kernels with a constant n stay under the constant-loop weighting
    above. An 8-float record a thread writes whole across an unrolled loop (`for (r =
    0; r < 8; ++r) out[i * 8 + r] = best[r];`) is a record written whole once, like one
    read whole. A record walked inside the loop that does the work stays reported:
    a pixel's K = 8 records read in a loop that gathers 9 floats per face and ends in
    9 atomics ran 12.5% slower as rows than as k-major columns (1.159 vs 1.014 ms;
    all three per-pixel arrays converted), so the hand triage's guess for
    rasterize_meshes.cu:489 ("a small share of the loop") did not hold. The figure of
    an access off the hot path stays in the metrics of the opt-in path
    (`report_whole_records`): `off_hot_path` with `work_loop_line`, `work_in` (the
    device function, or null) and `work_runtime_loops`.

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

    (Revised 2026-11-24, issue 20: tail paths, sheet-newcorpus4 W2) A figure is for
    the lanes that run the access. A branch of a loop body that the loop's bound and
    the branch's condition on the same bound leave to a window of values narrower than
    the lanes' spacing (`for (k = 4 * threadIdx.x; k < n; ...) if (k + 3 < n) {...}
    else {... inp[k2] ...}`: the `else` runs where n - 3 <= k < n, and lanes' k are 4
    apart) is run by one lane of a warp at most, whatever the bound: its accesses get
    one lane's figures (one sector, no conflict), not the whole warp's (pointnet2's
    cumsumKernel was said to touch 16 sectors per request). A tail all 32 lanes can
    share (`k + 127 < n`) keeps the warp's figures (fixtures/CL201/tail_path.cu).

    (Revised 2026-11-24, issue 20: walks whose other sector bytes the kernel uses,
    sheet-newcorpus5 W4/W5) A row walk whose counter starts at the lane's own row (`for
    (i = r * m; i < r * m + m; ++i) ... d[i]`, or `int i; for (i = i_s; i < i_t; ++i)`: a
    start that differs by lane, a bound the same distance from it in every lane of a
    warp) is a row walk like one counted from 0, and a record read whole when its length
    is a constant; measured on an H100 in this spelling (`fixtures/CL201/column_walk.json`)
    rows of 64 floats 2.64x the column-major time, rows of 8 floats 1.00x, as
    record_loop.json. A column walk whose neighbouring elements the kernel reads through
    an index the same for every lane of a warp, stepping by one from one warp
    (threadIdx.y/z) or block (blockIdx.*) to the next and moving the address by one
    element (`for (j = threadIdx.y; j < n; j += 32) ... a[i * n + j]`, lanes on `i`; `c =
    blockIdx.y; ... g[v * C + c]`), is no "bytes no access uses": the message names the
    index and its axis, and the remedy puts the lanes on it (swap the roles of
    threadIdx.x and threadIdx.y, or transpose through shared memory); metrics `wasted`
    `column_walk`, `neighbour_index`, `neighbour_axis`. It stays a default finding, on
    the measured cost (`tools/gputruth/column_walk.py`, 256 MB of floats, ncu): with the
    other warps of a 32x32 block reading the neighbours, DRAM and L2 moved the useful
    bytes but L1 8x the sectors, and the walk took 2.2-2.8x the time of the lanes on `j`;
    with the neighbours in other blocks a grid row apart (blockIdx.y), DRAM moved 8-16x
    the useful bytes and the walk took 3.4-8.7x the time. Neighbours in blockIdx.x were
    not measured, and the message says so. A declaration of several names (`int t =
    blockIdx.x, e = threadIdx.x;`) is not followed: the lane engine holds them together.
    (Revised 2026-11-24, sheet-newcorpus8 W1, W2) The neighbours need not be one element
    away nor one warp: when the warp's own bytes (its accesses through the pointer and
    the thread's short counted loops), moved by every value the block's rows take of an
    index that is threadIdx.y/z itself and by the neighbouring values of one that is a
    blockIdx itself, use every byte of the sectors it fetches but less than a sector, it
    is the same column walk (`traffic.filled_by_neighbours`). deepmd-kit's
    `grad_net[idx * nnei * 4 + idy * 4 + idw]` (`idw` = threadIdx.y of a 128x4 block:
    16 bytes; `idy` = blockIdx.y: the next 16) and `rij[idx * nnei * 3 + idy * 3 + d]`
    (d = 0..2 in the thread's loop, the next 12 bytes at blockIdx.y + 1) were said to
    use 128 and 384 of 1024 bytes with the SoA remedy; they now name the indices
    (metrics `more_neighbours` for the second and later), quote both column-walk records
    where the block's rows and other blocks share each sector (that mix was not
    measured) and put the lanes on those indices. An index under a guard that shuts
    some of its values out, or rows that leave bytes of each sector to nobody (a 128x2
    block on 4-float groups; 2 of each 3-float record), keep the unused-bytes message
    (fixtures/CL201/filled_by_neighbours.cu). Where the address also moves with
    threadIdx.y/z or blockIdx.y/z in a form that check cannot weigh (a device function's
    argument, `blockIdx.y * blockDim.y + threadIdx.y` with other warps of the block in
    the warp's sectors, `idz / 3`, `& 1`), no unused bytes are claimed and no record
    remedy given: the sector figure stands, with "whether fetched bytes go unused is
    not decided here" (metrics `wasted: "undecided"`; six such claims were wrong in
    sheet-newcorpus8: #6, #11, #24-#26, #64; fixtures/CL201/undecided_neighbours.cu).

    (Revised 2026-11-24, issue 13) Accesses in a `__device__` function of the file that
    a kernel calls (three calls deep at most) are evaluated at each call with what the
    call passes: a pointer argument is the caller's pointer (`head(xyz + 3 * i)`, one
    moved to the lane's record), an integer argument its per-lane value, explicit
    template arguments (`row_start<8>(m, i)`) and a type deduced from a pointer argument
    (`every_other(v, i)` with a `double *`) are bound. The finding is at the access in
    the device function and says where it is reached from ("reached from `k` at line
    42", "... through `outer` at line 39"; metrics `reached_from`); a device function
    called from several kernels is reported per binding, once where the findings are
    alike, and a call with neighbouring elements per lane adds nothing. An argument the
    caller cannot follow (a pointer read from memory, an index from data), or a
    reference parameter, leaves the access unreported. The record's other accesses in
    the kernel count for the wasted-traffic condition, and the loops around the calls
    for the hot-region and hot-path gates. Measured on an H100 (tools/gputruth/memory.py
    --only fixtures/CL201/device_function.cu): 12, 12, 32, 16 and 16 sectors per request
    for the five bindings, 4 for the coalesced one, as predicted. A device function
    defined in a project header the file includes is followed the same way (nvcc
    inlines it as if it were written in the file; library headers are never read), and
    its finding is at the kernel's call, naming the access's place in the header ("in
    `helpers.cuh` at line 3, column 12, called here"; metrics `in_header`): the figure
    is the caller's, and the header's own lint has no kernel to give it. When the
    callee budget stops before every call of a kernel was followed, the kernel claims
    no unused bytes (the calls not followed may use them).

    Sibling accesses are reported once. Array-of-structs code touches a thread's record
    field by field (`out[2*i] = p.x; out[2*i+1] = p.y;`, `v[3*i]`, `v[3*i+1]`,
    `v[3*i+2]`): every scalar access is uncoalesced (and measured so), but they are one
    problem with one remedy. Flagged accesses of a kernel are grouped when they go
    through the same base pointer in the same direction (loads, stores or
    read-modify-writes) with the same width and lane stride; their addresses differ by
    a constant (the same for every lane, warp and value of the unknowns, with the same
    lanes active) and the whole group fits in one record (from the lowest to the highest
    byte it touches, at most the stride); and they run in one basic block: unconditional
    parts of statements of the same `{}` block, with no branch, loop, jump, nested
    block or barrier (`__syncthreads`, `__syncwarp`, `__threadfence`, a cooperative
    groups `sync`, `bar.sync`, a call of a function of the file that has one) from the
    first to the last, each at most 10 lines after the previous one. The finding is at
    the first access and keeps its figures; the message says how many siblings share
    the pattern and where ("and 2 more loads to the same 12-byte records (lines 41-42)"),
    `sibling_accesses` counts them and `sibling_rows` lists their lines. When the group
    covers whole records, the remedy says so: one 8- or 16-byte vector access for
    records of that size at record-aligned offsets, otherwise SoA or staging through
    shared memory. Two arrays, two strides, the next record (`p[2*i]`, `p[2*i+64]`) or
    siblings split by a barrier or a branch are reported separately, except that groups
    of one kernel on the same records whose bytes the kernel leaves unused share one
    waste figure and one remedy: they are one finding, at the first, which names the
    other lines ("the kernel reads the same records again at lines 887 and 924";
    metrics `record_rows`).

    ## Why is this bad?
    A warp's load is served in 32-byte sectors. When consecutive lanes read addresses
    far apart (a column walk of a row-major matrix, one field of an array of structs,
    `a[threadIdx.x * 32]`), each lane pulls in a sector of its own and most of the bytes
    moved are thrown away: the kernel needs up to 8x the memory bandwidth.

    ## Example
    ```cuda
    out[row] = in[threadIdx.x * width + col];   // 32 sectors per request
    ```

    ## Use instead
    ```cuda
    // let consecutive lanes read consecutive addresses; transpose through shared
    // memory when the algorithm needs the column
    tile[threadIdx.y][threadIdx.x] = in[row * width + threadIdx.x];
    ```

    ## References
    - Tuning CUDA Applications for Kepler, 1.4.4 "Global Memory" (coalescing and the
      read-only data cache), https://docs.nvidia.com/cuda/kepler-tuning-guide/
    - CUDA C++ Best Practices Guide, "Coalesced Access to Global Memory"

    ## Precision on unseen code
    Precision on unseen code: 15/40 right (25 not worth: 12 kaolin-wisp ops only its tests call, LEAP's rows sorted in 8-thread blocks, a gather whose layout the API fixes, a few-KB table), none wrong (2026-11-25, c7afdf7, the four new-project
    sheets 9-12 re-scored, 52 projects; docs/precision.md).
    Precision on unseen code: 18/45 right, 8 wrong (2026-11-24, a95f04b, 13 projects; the 8
    wrong fixed in 7968258 and 9e19fa6; docs/precision.md); earlier 2/3 (ea1e6f7), 6/18
    (1d70d04). The row stores of early-break scans judged not worth there by estimate
    (under 5%) measured -7.0% to +1.8% at 1-10% hits but 28-48% at 50%: they stay,
    with those figures in the message

    """
    code = "CL201"
    name = "uncoalesced-global-access"
    severity = "warning"

    def check(self, ctx):
        facts = ctx.analysis(LaneAnalysis)
        threshold = ctx.settings.coalescing_threshold
        flagged = []
        for access in facts.accesses:
            if access.space != "global":
                continue
            if access.symbolic is not None:
                # a lane stride that is an unknown parameter times a constant
                fig = coalescing_figures_by_value(access, threshold)
                if fig is not None and not not_for_modern_cuda(access.node, ctx):
                    # siblings share a fixed stride within a row of the block, or the
                    # same stride by value (keyed by its value at the largest sample)
                    key = fig.get("x_stride_bytes")
                    if key is None and "stride_bytes_per_unit" in fig:
                        key = fig["stride_bytes_per_unit"] * PARAM_SAMPLES[-1] + \
                            fig["stride_bytes_offset"]
                    flagged.append((access, key, fig))
                    continue
            if surely_below(access, sectors, threshold * access.ideal_sectors):
                continue                        # coalesced: no need for every figure
            fig = coalescing_figures(access)
            if fig is None or fig["sectors_per_request"] < threshold * \
                    fig["ideal_sectors_per_request"] or not_for_modern_cuda(access.node, ctx):
                continue
            if abs(fig.get("stride_bytes") or 0) == access.width:
                # consecutive lanes, consecutive elements: only the base alignment puts
                # the warp across one more sector (1-byte lanes at `mask[i + 1]`: 2
                # sectors for an ideal 1), and the neighbouring warp uses that sector
                continue
            flagged.append((access, fig.get("stride_bytes", fig.get("x_stride_bytes")), fig))
        # a load of elements an earlier load of the kernel already holds in a register
        # issues no request of its own: no finding of its own
        flagged = [f for f in flagged if repeated_load(f[0], facts.accesses) is None]
        # nor does a load of what the thread itself has just stored: no DRAM bytes go
        # unused on its account (the store is said at the store)
        flagged = [f for f in flagged if own_store(f[0], facts.accesses) is None]
        # figures stay per access (the GPU measures each one); the fields of one record
        # accessed one after another are reported once, at the first of them
        hot_path = ctx.analysis(HotPath) if flagged else None
        found = []
        for group in group_siblings(ctx, flagged):
            if not self.report_whole_records and (
                    not any(hot(a) for a in group.members)
                    or _direction(group.first) in ("load", "store") and whole_record_loop(
                        group.first, max(group.offsets) - min(group.offsets) + group.first.width,
                        max_record=SHORT_RECORD_BYTES) is not None):
                continue                # outside the hottest loop, or a record used whole
            if not self.report_whole_records and all(
                    staging_load(a, facts.accesses) is not None for a in group.members):
                continue                # staging a tile every thread of the block reads
            waste = _wasted_traffic(ctx, group, facts.accesses)
            if waste is None and not self.report_whole_records:
                continue
            # run once per thread while the kernel loops over a run-time count elsewhere
            cold = [hot_path.off_path(a) for a in group.members]
            work = cold[0] if all(cold) else None
            if work is not None and not self.report_whole_records:
                continue
            found.append((group.first, self._finding(ctx, group, waste, work)))
        found = _one_per_record(ctx, found)
        yield from merge_reached(at_the_call(ctx, found))   # alike from several kernels: once

    # every uncoalesced access, also records read whole once and accesses outside the
    # hottest loop (tests of the figures and of sibling grouping; not a user setting)
    report_whole_records = False


    def _finding(self, ctx, group: SiblingGroup, waste: dict | None,
                 work=None) -> Finding:
        access, fig = group.first, group.payload[0]
        stride = fig.get("stride_bytes")
        if stride is not None:
            stride_txt = f"a stride of {stride} bytes between lanes"
        elif "x_stride_bytes" in fig:
            stride_txt = (f"a stride of {fig['x_stride_bytes']} bytes from one threadIdx.x "
                          f"to the next, and rows of the block apart,")
        else:
            stride_txt = "scattered lane addresses"
        count = f"{fig['sectors_per_request']:g}" if fig["exact"] else \
            f"at least {fig['sectors_per_request']:g}"
        suffix = ""
        by = fig.get("by_value")
        if by is not None:
            name = f"`{by['param']}`"
            if "stride_bytes_per_unit" in fig:
                step = _linear(fig["stride_bytes_per_unit"], name,
                               fig["stride_bytes_offset"])
                stride_txt = f"a stride of {step} bytes between lanes"
            elif "x_stride_bytes" in fig:
                stride_txt = (f"a stride of {fig['x_stride_bytes']} bytes from one "
                              f"threadIdx.x to the next, and rows of the block apart by a "
                              f"multiple of {name},")
            else:
                stride_txt = f"lane addresses that move apart as {name} grows"
            count = f"{fig['sectors_per_request']:g}"
            suffix = f" for any {name} >= {by['from']}" if by["from"] > 0 else \
                f" for any {name}"
            if by["exceptions"] or by["least"] < fig["sectors_per_request"]:
                exc = [str(v) for v in by["exceptions"]]
                but = "" if not exc else exc[0] if len(exc) == 1 else \
                    f"{', '.join(exc[:-1])} or {exc[-1]}"
                suffix += (f" (at least {by['least']:g} for every {name}"
                           f"{' but ' + but if but else ''})")
        kind = {"store": "store", "load": "load"}.get(_direction(access), "update")
        rows = [access_row(ctx, a) for a in group.siblings]
        siblings = ""
        if group.siblings:
            n = len(group.siblings)
            what = f"{kind}{'s' if n > 1 else ''}"
            records = f"the same {group.stride}-byte records" if group.stride < 128 else \
                "neighbouring elements"
            if not any(group.offsets):
                # the element again, after something that may write it (an atomic, a store
                # through another pointer): reloaded, not a neighbour
                records = "the same element"
            siblings = f" and {n} more {what} {'of' if not any(group.offsets) else 'to'} " \
                f"{records}{_rows_text(rows)}"
        remedy = _group_remedy(access, group) if group.siblings else None
        if waste is not None and waste.get("wasted") == "row_walk":
            verb = "write" if kind == "store" else "read"
            remedy = (f"store the rows column-major (element k of every row side by side) "
                      f"so that consecutive lanes {verb} consecutive elements, or stage the "
                      f"block's rows through shared memory")
        if waste is not None and waste.get("wasted") == "column_walk":
            remedy = _column_walk_remedy(waste, kind)
        if waste is not None and waste.get("wasted") == "undecided":
            verb = "write" if kind == "store" else "read"
            remedy = (f"let consecutive lanes {verb} consecutive elements (the index that "
                      f"moves by one element on threadIdx.x), or transpose through a "
                      f"shared-memory tile")
        if remedy is None:
            if by is not None and "stride_bytes_per_unit" in fig:
                # the stride at the values the figure holds for
                stride = fig["stride_bytes_per_unit"] * max(by["from"], 1) + \
                    fig["stride_bytes_offset"]
            remedy = _remedy(access, stride if stride is not None else
                             fig.get("x_stride_bytes"),
                             _symbolic_elements(fig, by, access.width))
        if kind == "load" and stride is not None and stride < 128 and \
                _stored_to_shared(ctx, access):
            remedy = _staged_remedy(stride // access.width if stride % access.width == 0
                                    else None)
        why = f"; {waste['text']}" if waste else ""
        scan = early_break_scan(access) if kind == "store" else None
        if scan is not None:
            row = ctx.unit.own_line(scan.start_byte)
            why += (f"; these rows are written on the hits of a scan that stops after a "
                    f"count (the loop{f' at line {row}' if row is not None else ''}): "
                    f"{_MEASURED_SCAN}")
        bound = "".join(f"; `{n}` = {v} from the launch"
                        f"{f' at line {row}' if row is not None else ''}"
                        for n, (v, row) in sorted(access.bound.items()))
        return Finding.at(
            access.node,
            f"uncoalesced {kind} {access.expr_text or ctx.text(access.node)}{siblings}: "
            f"{stride_txt} makes a warp touch {count} 32-byte sectors per request{suffix} "
            f"instead of {least_sectors(fig)} "
            f"({access.block.describe()}{bound}{reached_text(access)}){why}; {remedy}",
            metrics={**fig, **block_line_metrics(access),
                     "sibling_accesses": len(group.siblings),
                     "sibling_rows": [r for r in rows if r is not None],
                     **({"bound": {n: {"value": v, "line": row} for n, (v, row)
                                   in sorted(access.bound.items())}} if access.bound else {}),
                     **({k: v for k, v in waste.items() if k != "text"} if waste else {}),
                     **({"early_break_scan": True} if scan is not None else {}),
                     **(_work_metrics(ctx, work) if work is not None else {}),
                     **reached_metrics(access)})


# the records already go to shared memory, a field at a time (mmcv's rotated NMS): the
# copy itself is what to change (fixtures/CL201/mmcv_records.cu, `nms_rotated_flat`: 4
# sectors per request measured where the field-by-field copy takes 24)
def _staged_remedy(elements: int | None) -> str:
    bound = f"records * {elements}" if elements else "the records' elements"
    return ("the records already go to shared memory: copy them with consecutive lanes "
            f"reading consecutive elements (`for (k = threadIdx.x; k < {bound}; k += "
            "blockDim.x)`), then pick the fields from shared memory")


def _stored_to_shared(ctx, access) -> bool:
    """Is the loaded value stored as it is into a ``__shared__`` array (`s[t * 5 + k] =
    g[t * 6 + k];`)?"""
    node = access.node
    while node.parent is not None and node.parent.type in ("parenthesized_expression",
                                                             "cast_expression"):
        node = node.parent
    parent = node.parent
    if parent is None or parent.type != "assignment_expression" or \
            parent.child_by_field_name("right") is None or \
            parent.child_by_field_name("right").id != node.id:
        return False
    left = parent.child_by_field_name("left")
    span = (left.start_byte, left.end_byte)
    return any(a.space == "shared" and (a.node.start_byte, a.node.end_byte) == span
               for a in ctx.analysis(LaneAnalysis).accesses)


# measured on an H100 (fixtures/CL201/traffic.json, tools/gputruth/memory.py --traffic)
_MEASURED_FIELD = ("measured on an H100: one field of 12-byte records moves 3.0x the "
                   "useful bytes from DRAM and takes 1.53x the time of an array of its own")
_MEASURED_ROW_WALK = ("measured on an H100, rows of 32 floats or more walked this way run "
                      "2.4-2.8x slower than a column-major layout where lanes read "
                      "neighbouring elements, rows of 9 floats or fewer cost nothing")
# the store-only kernel of the first triage (cl201_record_store_{aos,soa}_GBps in bench/triage/
# gpu/results-2026-11-24/timings.txt): 96-byte records written lane by lane vs SoA
_MEASURED_ROW_STORE = ("measured on an H100, a store-only kernel writing 96-byte rows "
                       "this way ran at 265 GB/s against 3130 GB/s column-major; behind "
                       "a loop that does the work the stores may cost little: profile first")


# fixtures/CL201/not_worth.json (tools/gputruth/not_worth.py): a ball-query analog, rows of
# nsample indices stored on hits of an O(n) scan with an early break, rows vs columns;
# tests/test_not_worth.py checks these figures against the record
_MEASURED_SCAN = ("measured on an H100 (a ball-query analog, n 1k-64k, nsample 16-64), "
                  "storing the rows column-major changed the kernel's time by -7.0% to "
                  "+1.8% when 1% or 10% of the scanned points hit, but saved 28-48% when "
                  "half of them hit and 10-23% when a padding loop after a short scan "
                  "wrote most of each row: worth it only where queries fill their rows "
                  "within a few times nsample points; profile first")


def _row_walk_measure(fig: dict) -> str:
    """The row-walk measurement, said of the rows this finding is about: a row length
    given by a parameter gets the parameter's values on each side of the measured line
    (``K`` >= 11 for rows of 12 * ``K`` bytes), so the message never quotes "9 floats or
    fewer cost nothing" beside a figure for rows of 9 floats without saying which."""
    per, off = fig.get("stride_bytes_per_unit"), fig.get("stride_bytes_offset")
    by = fig.get("by_value")
    if by is not None and per:
        name = f"`{by['param']}`"
        long_from = max(-(-(128 - off) // per), by["from"])
        short_to = (SHORT_RECORD_BYTES - off) // per
        short = (f"; rows of 9 floats or fewer ({name} <= {short_to}) ran as fast"
                 if short_to >= by["from"] else "")
        return (f"measured on an H100, rows of 32 floats or more ({name} >= {long_from} "
                f"here) walked this way run 2.4-2.8x slower than a column-major layout "
                f"where lanes read neighbouring elements{short}")
    stride = fig.get("stride_bytes")
    if stride is not None and SHORT_RECORD_BYTES < stride < 128:
        return (f"rows of {stride} bytes here; measured on an H100, rows of 9 floats or "
                f"fewer walked this way ran as fast as a column-major layout and rows of "
                f"32 floats or more 2.4-2.8x slower: in between nothing was measured")
    return _MEASURED_ROW_WALK
_MEASURED_REREAD = ("records read whole once cost what structure-of-arrays costs; a "
                    "farthest-point-sampling loop re-reading them gained 12% from SoA, a "
                    "plain re-read loop measured within 1% on an H100: profile first")


def _wasted_traffic(ctx, group: SiblingGroup, accesses) -> dict | None:
    """Why the group's sectors cost more than its bytes, or None when they do not: every
    sector a warp fetches for it is used by the kernel's accesses through the same
    pointer, up to one (``fetched_and_used``), and no loop reads them again
    (``rereading_loop``)."""
    access, fig = group.first, group.payload[0]
    span = max(group.offsets) - min(group.offsets) + access.width
    direction = _direction(access)
    walk = whole_record_loop(access, span) if direction == "load" else None
    fetched, used = fetched_and_used(access, [a for a in accesses if a.space == "global"],
                                     large_value_samples(fig))
    if walk is None and fetched - used >= SECTOR:
        # a row walked as far as a run-time or data-dependent count takes it, or a row
        # written (or updated: `row[i] += v`) element by element: the rest of each
        # fetched sector is the next iterations' elements, so "bytes no access uses"
        # would be false
        walk = row_walk_loop(access, span, large_value_samples(fig))
        # how far: the loop's count, which need not be the row's length
        part = "" if walk is None else " as far as the loop's count takes it"
    else:
        part = ""
    if walk is not None:
        # the thread walks its row across the loop: no byte is wasted, the cost is
        # L1 throughput on rows longer than SHORT_RECORD_BYTES (stores: write rate)
        row = ctx.unit.own_line(walk.start_byte)
        at = f" at line {row}" if row is not None else ""
        if direction == "store":
            return {"wasted": "row_walk", "loop_line": row,
                    "text": f"each thread writes its own row across the loop{at}{part}: "
                            f"{_MEASURED_ROW_STORE}"}
        return {"wasted": "row_walk", "loop_line": row,
                "text": f"each thread walks its own row across the loop{at}{part}: "
                        f"{_row_walk_measure(fig)}"}
    near = neighbour_index(access, large_value_samples(fig)) \
        if fetched - used >= SECTOR else None
    if near is None and fetched - used >= SECTOR:
        # the rest of each sector is other warps' rows and other blocks' (sheet-newcorpus8
        # W1, W2): the same column walk, its neighbours not one element away
        near = filled_by_neighbours(access, [a for a in accesses if a.space == "global"],
                                    large_value_samples(fig))
    if near is not None:
        # a column walk: the rest of each sector is the neighbouring warps' or blocks'
        # elements, used by the kernel, so "bytes no access uses" would be false
        return {"wasted": "column_walk", "neighbour_index": near.name,
                "neighbour_axis": near.axis,
                **({"more_neighbours": [{"index": n, "axis": a} for n, a in near.more]}
                   if near.more else {}),
                "text": _column_walk_text(near, fig, direction)}
    if root_kernel(access).node.id in ctx.analysis(CalleeMemo).cut:
        return None             # calls not followed may use the rest of the sectors
    if fetched - used >= SECTOR and other_warps_may_fill(
            access, [a for a in accesses if a.space == "global"], large_value_samples(fig)):
        # other warps (threadIdx.y/z) or blocks (blockIdx.y/z) may use the rest of each
        # sector through an index filled_by_neighbours cannot weigh (sheet-newcorpus8
        # #6, #11, #24-#26, #64): the sector figure is known, the unused bytes are not
        verb = {"store": "write", "load": "read"}.get(_direction(access), "access")
        return {"wasted": "undecided",
                "text": f"the address also moves with threadIdx.y/z or blockIdx.y/z, so "
                        f"other warps or blocks may {verb} the rest of each sector: "
                        f"whether fetched bytes go unused is not decided here"}
    if fetched - used >= SECTOR or not fetched:
        verb = {"store": "writes", "load": "reads"}.get(_direction(access), "accesses")
        return {"wasted": "unused_bytes", "warp_fetched_bytes": fetched,
                "warp_used_bytes": used,
                "text": f"of the {fetched} bytes a warp moves here, the kernel {verb} "
                        f"{used} ({_MEASURED_FIELD})"}
    loop = rereading_loop(access)
    if loop is not None:
        row = ctx.unit.own_line(loop.start_byte)
        at = f" at line {row}" if row is not None else ""
        return {"wasted": "reread_in_loop", "loop_line": row,
                "text": f"the kernel uses whole records, but the loop{at} reads them again "
                        f"on every pass ({_MEASURED_REREAD})"}
    return None


def _one_per_record(ctx, found: list) -> list:
    """One finding per record: groups of one kernel that read (or write) the same
    records in several places (gsplat's backward kernels read a 36-byte scratch record
    in three pieces, lines 870, 887 and 924) share one waste figure, computed over all
    of the kernel's accesses to those records; they are said once, at the first, which
    names the other places (metrics ``record_rows``). Each place's own figures are the
    same; the remedy (SoA, or one staged read) is one change."""
    out: list = []
    first: dict[tuple, tuple] = {}
    for access, finding in found:
        m = finding.metrics
        if m.get("wasted") != "unused_bytes" or access.reached is not None:
            out.append((access, finding))
            continue
        key = (id(root_kernel(access)), access.region, _direction(access),
               m.get("stride_bytes"), m.get("warp_used_bytes"), m.get("warp_fetched_bytes"),
               access.block.describe())
        head = first.get(key)
        stride = m.get("stride_bytes")
        distance = constant_distance(head[0], access) if head is not None else None
        if head is None or distance is None or not stride or abs(distance) >= abs(stride):
            # another record (`p[2 * i]` then `p[2 * i + 64]`: 32 records on): its own
            if head is None:
                first[key] = (access, finding)
            out.append((access, finding))
            continue
        rows = head[1].metrics.setdefault("record_rows", [])
        row = ctx.line(access.node)
        if row not in rows and row != ctx.line(head[0].node):
            rows.append(row)
    for access, finding in out:
        rows = finding.metrics.get("record_rows")
        if rows:
            verb = {"store": "writes", "load": "reads"}.get(_direction(access), "accesses")
            where = ", ".join(map(str, rows[:-1])) + (" and " if len(rows) > 1 else "") + \
                str(rows[-1])
            finding.message += (f"; the kernel {verb} the same records again at "
                                f"line{'s' if len(rows) > 1 else ''} {where} "
                                "(one finding for them)")
    return out


def _work_metrics(ctx, work) -> dict:
    """Where the kernel's per-thread work is, for an access off the hot path (reported
    only with ``report_whole_records``): the innermost run-time loop around its deepest
    global access, in the kernel or in a device function it calls."""
    row = ctx.unit.own_line(work.loop.start_byte) if work.loop is not None else None
    return {"off_hot_path": {"work_loop_line": row, "work_in": work.callee,
                             "work_runtime_loops": work.runtime}}


"""Memory facts: the addresses each lane of a warp touches, and how kernels use pointers.

- ``lanes``: the symbolic index engine. For each global or shared access it gives the
  addresses of the 32 lanes of the warps it samples, hence sectors per request (CL201) and
  bank wavefronts (CL202). ``LaneAnalysis`` is its entry point; the engine's parts:
  - ``lane_values``: vectors with one value per (sample, warp, lane) column, pointers
    over them, and C's integer operators column by column;
  - ``kernel_lanes``: ``KernelLanes``, the evaluator of one kernel's addresses and of
    which lanes reach each access;
  - ``figures``: an ``Access`` and what it costs: sectors, wavefronts, and the sure lower
    bounds used when they depend on unknowns.
  - ``callee_lanes``: the accesses of the device functions a kernel calls, evaluated
    with the caller's lane values bound to their parameters at each call.
  - ``kernel_lanes_conditions``: the lanes a condition lets through when only part of it
    can be evaluated (``threadIdx.x < len && pad[b]``, ``?:`` around a load, a lane
    compared with a ``__shared__`` scalar set before a barrier).
  - ``tail_paths``: branches of a loop body at most one lane of a warp runs.
- ``loops``: the loops around an access: the hottest region, unrolled vector accesses,
  row walks.
- ``bank_vectors``: shared accesses of separate statements ptxas merges into one
  STS.64/STS.128 (LDS), evaluated as that vector access (CL202).
- ``staging``: tiles a large block stages and then reads whole, whose staging cost is
  amortised (CL201/CL202's default).
- ``column_walk`` and ``early_break``: what CL201's message says about a column walk whose
  sectors other warps or blocks use, and about row stores on the hits of a scan.
- ``siblings``: accesses to fields of one record grouped, so a record read field by field
  is one finding with one figure.
- ``traffic``: whether the sectors an access fetches are used by the kernel's accesses
  through the same pointer, and loops that read whole records again (CL201's default).
- ``hot_path``: accesses that run O(1) times per thread while the kernel, or a device
  function it calls, loops over a run-time count around other global accesses (CL201's
  default).
- ``symbolic``: figures of an access whose lane stride is an unknown parameter times a
  constant, for every value of that parameter (CL201 by value).
- ``pointer_access``: for each pointer parameter, its loads and stores, whether it may
  alias another, and what making it const requires (CL203).
- ``param_edits``: the edits that make a pointer parameter ``const`` and ``__restrict__``.
- ``alias_effects``: the memory instructions a missing ``__restrict__`` makes a kernel
  execute: loads repeated after a store that may alias them, stores kept in a loop
  (CL203); with ``vector_split``: field loads of one vector element (``float2``,
  ``float4``, ...) that such a store splits into several loads.
- ``names``: where a name is written in a body, found from the text (identifiers, their
  paths, whether a declaration declares them); read by pointer_access and local_index.
- ``local_index``: local arrays indexed by run-time values, which ptxas places in local
  memory (CL204); ``local_loops``: the loop shapes it reads.
- ``global_races``: pairs of global accesses of one launch, one a store, whose addresses
  meet for two threads with no barrier (one block) or nothing at all (two blocks)
  ordering them, from the lane engine run at blockIdx 0 and 1 (CL108); ``race_search``:
  its search of the bytes where two threads' accesses meet.
- ``local_room``: the registers such an array would take and the block a device function
  runs with: what CL204's advice rests on.
"""

"""Synchronization facts: control flow, thread dependence and simulated blocks.

- ``cfg``: barriers, warp intrinsics and the control statements around them.
- ``divergence``: which values and conditions depend on the thread (CL103).
- ``warp_reach``: whether every live lane of a warp reaches a statement (where CL101's
  fix may put a full-mask ``__syncwarp()``).
- ``races``: the facade the rules read (``RaceAnalysis``, ``Race``, ``MaskMismatch``):
  runs chosen warps of each kernel's block statement by statement and reports the
  shared-memory races every run agrees on (CL101, CL102), the barriers reached by only
  part of a block and those whose skipping threads wait at another one (CL103), and
  warp-intrinsic masks that name lanes not present (CL105).
- ``block_run``: one run of a block (``BlockRun``): driver, active-thread masks,
  statements, declarations and variables; with ``block_eval`` (expressions),
  ``block_calls`` (barriers, warp syncs, intrinsics, inlined device functions) and
  ``block_log`` (shared accesses between barriers, races and mask mismatches found).
- ``values``: the run's values (per-thread vectors, pointers into shared memory) and the
  C arithmetic on them.
- ``syntax``: a memoised mirror of tree-sitter nodes; declarators, literals, type names.
- ``callees``: what a call's name means to a run; the device functions a kernel reaches.
- ``unit_memo``: what every run of a unit's kernels shares; inert device functions.
- ``interval``: a static proof that a kernel can report only divergent barriers (such
  kernels run only when CL103 asks).
- ``barrier_order``: from a run's log of barrier arrivals, the barriers that threads
  skip and then meet another barrier instead (mismatched: CL103).
- ``skipped_barriers``: every block barrier part of the block skips, why, and whether
  the skipping threads wait at another barrier (CL103) or not (CL106, opt-in).
- ``write_conflicts``: stores at which two threads write different values to one
  shared address (CL107), candidates found statically, decided by the block run.
"""

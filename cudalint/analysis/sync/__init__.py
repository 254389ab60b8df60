"""Synchronization facts: control flow, thread dependence and simulated blocks.

- ``cfg``: barriers, warp intrinsics and the control statements around them.
- ``divergence``: which values and conditions depend on the thread (CL103).
- ``races``: a block interpreter that runs chosen warps of a kernel statement by statement
  and reports shared-memory races between barriers (CL101, CL102), the barriers reached by
  only part of a block (CL103) and warp-intrinsic masks that name lanes not present (CL105).
"""

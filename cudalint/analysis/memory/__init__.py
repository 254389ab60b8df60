"""Memory facts: the addresses each lane of a warp touches, and how kernels use pointers.

- ``lanes``: the symbolic index engine. For each global or shared access it gives the
  addresses of the 32 lanes of the warps it samples, hence sectors per request (CL201) and
  bank wavefronts (CL202).
- ``siblings``: accesses to fields of one record grouped, so a record read field by field
  is one finding with one figure.
- ``pointer_access``: for each pointer parameter, its loads and stores, whether it may
  alias another, and the edits that make it ``const __restrict__`` (CL203).
- ``local_index``: local arrays indexed by run-time values, which ptxas places in local
  memory (CL204).
"""

"""Model: what one unit declares, read from its tree-sitter parse.

- ``kernels``: kernels and device functions, their parameters, shared and local arrays,
  launches (``k<<<grid, block>>>`` and Python launch calls), block shapes given by
  ``__launch_bounds__``, and the unit's integer constants. Computed on first use, once per
  unit, through ``UnitContext.model``.
- ``consteval``: integer constant expressions and ``sizeof`` of the built-in types.
- ``preproc``: the ``#if`` blocks that enclose a place (HIP branches and pre-Volta guards
  that rules stay silent in).
- ``instances``: a template kernel as each launch of the project instantiates it
  (template arguments bound, its launches' block shapes), read by the memory and sync
  analyses (CL101-CL107, CL201, CL202).
- ``dispatch``: the types a template argument stands for where the host code writes
  none: PyTorch's ``AT_DISPATCH_*`` lambdas (``scalar_t``) and arguments deduced from
  the launch's argument types; read by ``instances``.
- ``branch_values``: the values a host variable must hold at a launch, from the ``case``
  label or ``==`` test around it (``case 4: k<4><<<...>>>(n, nv)``: ``nv`` is 4); read by
  the memory analysis when it binds a kernel's scalar parameters at its launches.

Every analysis and rule reads the model; the model reads only ``sources`` and ``parse``.
"""

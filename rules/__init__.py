"""Built-in rules, one module per rule, grouped by family (installed as cudalint.rules).

* ``core``: the linter's own notices (CL000-CL002)
* ``sync``: synchronization and warp semantics (CL1xx)
* ``memory``: memory access (CL2xx)
* ``ptxas``: registers and occupancy from ptxas (CL3xx)
* ``fp``: floating point and build flags (CL4xx)
* ``shapes``: tensor-core friendly shapes in Python model code (CL5xx)
* ``launch``: launch configurations no GPU runs (CL6xx)
"""

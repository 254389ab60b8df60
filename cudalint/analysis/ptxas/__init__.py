"""ptxas facts: registers, spills, stack frames and occupancy per kernel.

- ``ptxas_log``: parses ``ptxas -v`` output (nvcc logs of any version, demangled names).
- ``ptxas_run``: compiles a unit with nvcc ``-Xptxas -v`` (``--ptxas``), cached.
- ``occupancy``: the CUDA occupancy calculator per architecture.

Read by CL301 (spills), CL302 (stack frames) and CL303 (occupancy).
"""

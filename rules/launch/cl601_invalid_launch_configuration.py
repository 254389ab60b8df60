from cudalint.diagnostics import Finding
from cudalint.model.launch_shape import MAX_THREADS_PER_BLOCK, block_problem, dims3, \
    grid_problem
from cudalint.rule import Rule

_FAILS = "the launch returns an error and the kernel does not run"
_UINT_MAX = (1 << 32) - 1


def _shape(dims: tuple[int, int, int]) -> str:
    """(32, 8, 1) -> "32x8"."""
    shown = list(dims)
    while len(shown) > 1 and shown[-1] == 1:
        shown.pop()
    return "x".join(map(str, shown))


def _python_dims(raw, api: str) -> tuple[int, int, int] | None:
    """A Python launch's dims as the GPU gets them: CuPy converts each to a C unsigned
    int (modulo 2**32: `block=(4294967328,)` ran 32 threads, measured); what another API
    does with a value past 2**32 - 1 is not known here (None)."""
    dims = dims3(raw) if raw else None
    if dims is None or all(v <= _UINT_MAX for v in dims):
        return dims
    if not api.startswith("cupy"):
        return None
    wrapped = tuple(v & _UINT_MAX for v in dims)
    return wrapped if all(wrapped) else None  # type: ignore[return-value]


class InvalidLaunchConfiguration(Rule):
    """## What it does
    Finds kernel launches whose block or grid shape no GPU can run, from every place a
    shape is written: `k<<<grid, block>>>` (constants, `dim3` values and the `dim3`
    variables of the launching function), the `block=`/`grid=` of a Python launch of an
    embedded kernel (CuPy, PyCUDA), and `__launch_bounds__(max_threads)`. The limits are
    the same on every compute capability: at most 1024 threads per block, block x and y
    at most 1024, block z at most 64; grid x at most 2^31 - 1, grid y and z at most
    65535. A shape the linter cannot resolve to constants is not judged; the
    `block-size` setting is checked when it is read (a configuration error). A value
    past 2^32 - 1 is taken as the `unsigned int` a `dim3` holds: C converts it modulo
    2^32 (nvcc warns), and so does CuPy.

    ## Why is this bad?
    The launch does nothing: it returns an error, no thread runs, and unless the code
    checks `cudaGetLastError()` after the launch, the output buffers silently keep
    whatever they held. The runtime documents `cudaErrorInvalidConfiguration` ("invalid
    configuration argument") for too many threads or blocks; measured with CUDA 13.0 on
    an H100, every `ruleid` launch of this rule's fixture returned
    `cudaErrorInvalidValue`, and the CuPy launches `CUDA_ERROR_INVALID_VALUE`, while
    every look-alike ran (`fixtures/CL601/truth.json`, `tools/gputruth/launch.py`).
    A `__launch_bounds__` above 1024 threads promises the compiler a block that cannot
    exist, and ptxas still budgets registers for it: `__launch_bounds__(2048)` caps a
    kernel at 32 registers per thread on sm_90 (one that needs 57 spilled 1,128 bytes),
    and above 2048 ptxas ignores the bound with a warning. None of the other rules
    analyse a kernel under a shape that cannot run.

    ## Example
    ```cuda
    #define BLOCK 2048
    scale<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(x, n);     // 2048 threads per block
    scale<<<1, dim3(4, 4, 128)>>>(x, n);                // block z at most 64
    ```

    ## Use instead
    ```cuda
    #define BLOCK 256
    scale<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(x, n);
    scale<<<dim3(1, 1, 2), dim3(4, 4, 64)>>>(x, n);     // the rest of z in the grid
    ```

    ## References
    - CUDA C++ Programming Guide, "Compute Capabilities", table "Technical
      Specifications per Compute Capability": maximum x- or y-dimension of a block 1024,
      z-dimension 64, number of threads per block 1024; maximum x-dimension of a grid
      2^31 - 1, y- or z-dimension 65535 (compute capability 5.0 to 12.x)
    - CUDA Runtime API, `cudaErrorInvalidConfiguration`: "a kernel launch is requesting
      resources that can never be satisfied by the current device ... requesting too many
      threads or blocks"; measured (CUDA 13.0, H100): `fixtures/CL601/truth.json`
    - CUDA C++ Programming Guide, "Launch Bounds" (`maxThreadsPerBlock`)
    """
    code = "CL601"
    name = "invalid-launch-configuration"
    severity = "error"

    def check(self, ctx):
        for launch in ctx.model.launches:
            for k, what, problem_of in ((0, "grid", grid_problem), (1, "block", block_problem)):
                if len(launch.config) <= k:
                    continue
                dims = dims3(launch.grid if k == 0 else launch.block)
                problem = problem_of(dims) if dims is not None else None
                if problem is None:
                    continue
                yield Finding.at(
                    launch.config[k],
                    f"launch of `{launch.kernel}` with {what} {_shape(dims)}: {problem}; "
                    f"{_FAILS}",
                    metrics={"kernel": launch.kernel, what: list(dims), "source": "launch"})
        emb = getattr(ctx.unit, "embedded", None)
        for launch in getattr(emb, "launches", None) or []:
            start, end = getattr(launch, "start", None), getattr(launch, "end", None)
            if not isinstance(start, int) or not isinstance(end, int):
                continue
            name = getattr(launch, "kernel", None) or getattr(emb, "name", None)
            shown = f"`{name}`" if name else "the kernel"
            for what, problem_of in (("grid", grid_problem), ("block", block_problem)):
                dims = _python_dims(getattr(launch, what, None), getattr(emb, "api", ""))
                problem = problem_of(dims) if dims is not None else None
                if problem is None:
                    continue
                yield Finding.in_file_at(
                    start, end,
                    f"Python launch of {shown} with {what} {_shape(dims)}: {problem}; "
                    f"{_FAILS}",
                    metrics={"kernel": name, what: list(dims), "source": "python-launch"})
        for fn in ctx.model.kernels:
            bounds = fn.launch_bounds
            node = fn.launch_bounds_node
            if not bounds or node is None or bounds[0] is None or \
                    bounds[0] <= MAX_THREADS_PER_BLOCK:
                continue
            written = " ".join(ctx.text(node).split())
            if len(written) > 60:
                written = written[:57] + "..."
            yield Finding.at(
                node,
                f"`{written}` on `{fn.name}` allows {bounds[0]} threads per block, "
                f"at most {MAX_THREADS_PER_BLOCK}: no launch of that size can run",
                metrics={"kernel": fn.name, "max_threads": bounds[0],
                         "source": "launch_bounds"})

import ast
import re

from cudalint.diagnostics import Finding
from cudalint.rule import Rule

from cudalint.rules.shapes.cl501_conv_channels_unaligned import _CONV, _arg, _layer

_LOADERS = {"DataLoader"}
_ROLES = {"Linear": (("in_features", 0), ("out_features", 1)),
          "conv": (("in_channels", 0), ("out_channels", 1))}
TILE = 64
TORCH_IMPORT = re.compile(r"^[ \t]*(?:import[ \t]+torch\b|from[ \t]+torch\b)", re.M)


class BatchSizeQuantization(Rule):
    """## What it does
    Reports literal sizes that cuDNN/cuBLAS tile in blocks of 64 and that are not
    multiples of 64, where the rest of the shape is known:

    - `torch.utils.data.DataLoader(..., batch_size=N)` (keyword or second positional
      argument) with a literal `N` above 64;
    - `nn.Linear` / `nn.Conv1d/2d/3d` whose two sizes are both literals, for a size above
      64 that is a multiple of 8 (the smaller alignment is CL501's) but not of 64.

    Not reported: sizes of 64 or less (a small layer or batch is a design choice, not a
    quantization accident), sizes computed at run time, grouped convolutions, files that
    do not use torch. Off by default (informational).

    ## Why is this bad?
    A GEMM or convolution is cut into tiles (64 or more rows/columns); a dimension just
    above a multiple of the tile size leaves the last row of tiles mostly empty, so the
    GPU does a whole tile's work for a few rows ("tile quantization"). The batch size
    feeds the N*P*Q dimension of every convolution and the rows of every linear layer;
    channel counts feed K and C.

    ## Example
    ```python
    loader = DataLoader(train_set, batch_size=100, shuffle=True)
    self.fc = nn.Linear(1000, 200)
    ```

    ## Use instead
    ```python
    loader = DataLoader(train_set, batch_size=128, shuffle=True)    # or 64
    self.fc = nn.Linear(1024, 256)
    ```

    ## References
    - Optimizing Convolutional Layers (cuDNN), quick-start checklist ("divisible by at
      least 64 and ideally 256"),
      https://docs.nvidia.com/deeplearning/performance/dl-performance-convolutional/,
      and Matrix Multiplication Background, "Quantization Effects",
      https://docs.nvidia.com/deeplearning/performance/dl-performance-matrix-multiplication/
    """
    code = "CL502"
    name = "batch-size-quantization"
    severity = "info"
    default_enabled = False
    target = "file"
    file_kinds = frozenset({"python"})

    def check(self, ctx):
        if ctx.is_test:
            return                      # toy models on purpose
        text = ctx.file.text
        if not any(w in text for w in ("DataLoader", "Conv", "Linear")) or \
                not TORCH_IMPORT.search(text):
            return
        tree = ctx.python_tree
        if tree is None:
            return
        at = ctx.ast_span

        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            if _loader(node.func):
                arg = _arg(node, 1, "batch_size")
                v = _literal(arg)
                if v is None or v <= TILE or v % TILE == 0:
                    continue
                down, up = v // TILE * TILE, (v // TILE + 1) * TILE
                yield Finding(*at(arg),
                              f"batch_size={v} is not a multiple of {TILE}: every GEMM and "
                              f"convolution tiles the batch in blocks of {TILE} or more, "
                              f"so the last block runs {v % TILE}/{TILE} full; use {down} "
                              f"or {up}",
                              metrics={"size": v, "role": "batch_size", "tile": TILE,
                                       "suggested": [down, up]})
                continue
            name = _layer(node.func)
            if name is None:
                continue
            if any(k.arg == "groups" and _literal(k.value) != 1 for k in node.keywords):
                continue
            roles = _ROLES["Linear" if name == "Linear" else "conv"]
            args = [(role, _arg(node, pos, role)) for role, pos in roles]
            values = [_literal(a) for _, a in args]
            if any(v is None for v in values):
                continue                    # the rest of the shape is not known
            for (role, arg), v in zip(args, values):
                if v <= TILE or v % 8 or v % TILE == 0:
                    continue                # small, CL501's alignment, or aligned
                down, up = v // TILE * TILE, (v // TILE + 1) * TILE
                kind = "conv" if name in _CONV else "linear"
                yield Finding(*at(arg),
                              f"`{name}` {role}={v} is not a multiple of {TILE}: the "
                              f"{kind} is tiled in blocks of {TILE}, the last one runs "
                              f"{v % TILE}/{TILE} full; {down} or {up} would not waste it",
                              metrics={"size": v, "role": role, "tile": TILE,
                                       "suggested": [down, up]})


def _loader(func) -> bool:
    if isinstance(func, ast.Name):
        return func.id in _LOADERS
    if isinstance(func, ast.Attribute) and func.attr in _LOADERS:
        base = func.value               # torch.utils.data.DataLoader, data.DataLoader
        while isinstance(base, ast.Attribute):
            if base.attr == "data":
                return True
            base = base.value
        return isinstance(base, ast.Name) and base.id == "data"
    return False


def _literal(node) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None

import ast
import re

from cudalint.diagnostics import Finding
from cudalint.rule import Rule

_CONV = {"Conv1d", "Conv2d", "Conv3d"}
_LAYERS = _CONV | {"Linear"}
_ROLES = {"Linear": (("in_features", 0), ("out_features", 1)),
          "conv": (("in_channels", 0), ("out_channels", 1))}


class ConvChannelsUnaligned(Rule):
    """## What it does
    Checks `torch.nn.Conv1d/2d/3d` and `torch.nn.Linear` built with literal channel or
    feature counts (keyword or positional) and reports counts that are not multiples of 8
    (FP16/BF16 Tensor Cores; multiples of 4 suffice for TF32). A first layer with 1 or 3
    input channels is not asked to go to 8: the message suggests padding the input to 4
    channels (cuDNN's C=4 kernels, with stride 2). Counts below 8 on the output side
    (a 1- or 2-way head), grouped convolutions and non-literal sizes are left alone, and
    so are test files (`test_*.py`, `*_test.py`, `conftest.py`, files under `tests/`,
    `test/`, `testing/`), which build toy models on purpose. CL502 and CL503 skip them too.

    ## Why is this bad?
    cuDNN and cuBLAS pick Tensor Core kernels when C and K (or the GEMM dimensions) are
    aligned; otherwise they pad internally or fall back to slower kernels, and NHWC data
    may not be padded at all with older cuDNN.

    ## Example
    ```python
    self.proj = nn.Conv2d(64, 100, kernel_size=3)
    ```

    ## Use instead
    ```python
    self.proj = nn.Conv2d(64, 104, kernel_size=3)    # or 96
    ```

    ## References
    - Optimizing Convolutional Layers (cuDNN), "Channels In And Out" and the quick-start
      checklist (`shared/seeds/001_*`, `003_*`)
    """
    code = "CL501"
    name = "conv-channels-unaligned"
    severity = "info"
    target = "file"
    file_kinds = frozenset({"python"})

    def check(self, ctx):
        if ctx.is_test:
            return                      # toy models on purpose
        text = ctx.file.text
        if "torch" not in text or ("Conv" not in text and "Linear" not in text) or \
                _LAYER_CALL.search(text) is None:
            return                      # no layer is called: no parse
        tree = ctx.python_tree
        if tree is None:
            return
        torchy = "torch" in text
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = _layer(node.func)
            if name is None or not torchy:
                continue
            if any(k.arg == "groups" and not (isinstance(k.value, ast.Constant) and
                                              k.value.value == 1) for k in node.keywords):
                continue
            roles = _ROLES["Linear" if name == "Linear" else "conv"]
            for role, pos in roles:
                arg = _arg(node, pos, role)
                if not (isinstance(arg, ast.Constant) and type(arg.value) is int):
                    continue
                v = arg.value
                if v % 8 == 0:
                    continue
                start, end = ctx.ast_span(arg)
                if name in _CONV and role == "in_channels" and v in (1, 3):
                    yield Finding(start, end,
                                  f"first-layer `{name}` with {v} input channel"
                                  f"{'s' if v > 1 else ''}: pad the input to 4 channels "
                                  "(cuDNN has C=4 kernels, best with stride 2)",
                                  metrics={"channels": v, "role": role, "suggested": 4})
                    continue
                if name in _CONV and role == "in_channels" and v == 4:
                    continue
                if v < 8 and role in ("out_channels", "out_features"):
                    continue
                up = (v + 7) // 8 * 8
                tf32 = " (a multiple of 4: fine for TF32, not for FP16/BF16)" if v % 4 == 0 \
                    else ""
                yield Finding(start, end,
                              f"`{name}` {role}={v} is not a multiple of 8{tf32}: Tensor "
                              "Core kernels want " + (f"{up - 8} or {up}" if up > 8 else
                                                      "8 (pad it)"),
                              metrics={"channels": v, "role": role, "suggested": up})


_LAYER_CALL = re.compile(r"\b(?:" + "|".join(sorted(_LAYERS)) + r")\s*\(")


def _layer(func):
    if isinstance(func, ast.Attribute) and func.attr in _LAYERS:
        base = func.value
        if isinstance(base, ast.Name) and base.id in ("nn", "torch"):
            return func.attr
        if isinstance(base, ast.Attribute) and base.attr == "nn":
            return func.attr
        return None
    if isinstance(func, ast.Name) and func.id in _LAYERS:
        return func.id
    return None


def _arg(call, pos, kw):
    for k in call.keywords:
        if k.arg == kw:
            return k.value
    if pos < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[:pos + 1]):
        return call.args[pos]
    return None

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
    feature counts (keyword or positional) and reports counts where choosing another
    count changes the kernel cuDNN or cuBLAS runs:

    - a count of 5 or more that is not a multiple of 8 (FP16/BF16 Tensor Cores; a
      multiple of 4 suffices for TF32): the GEMM dimension N (= C or K) is padded to the
      next multiple of 8, or, with cuDNN before 7.6.3 and NHWC data, the layer falls back
      to a kernel without Tensor Cores;
    - an image stem: a `Conv2d` with 1 to 3 input channels, a kernel larger than 1 and
      stride 2. cuDNN has special kernels for C = 4 at stride 2, so padding the input to 4
      channels picks them and skips cuDNN's own padding.

    Off by default. cudalint cannot see from an `nn.Conv2d` call the precision or the
    memory format the layer runs in, and the gain depends on both. Measured on an H100
    (`bench/triage/gpu/results-newcorpus2/layers.json`, cuDNN 9.19, issue 20's second
    triage): a 7x7 stride-2 stem padded from 3 to 4 input channels is 37-49% faster in
    FP16 channels-last, but gains nothing in FP32, the default of PyTorch and of the
    projects triaged (RAFT 0.99 -> 1.06 ms, ResNet stem of maskrcnn-benchmark 1.99 ->
    8.08 ms). Odd counts (196, 12, 13, 183, 20, 1500/750) change nothing in FP32; 3755
    and 51 were the exceptions (-15%, -18%). On 12 sampled findings of 22 unseen projects
    1 was right and worth acting on. Select it (`--select CL501`) for a model trained
    or served in FP16/BF16 with channels-last tensors.

    It stays silent where padding does not change the Tensor Core path:

    - a stem with a kernel of 3 or smaller and 16 or fewer (literal) outputs: padding the
      3-channel input of a 3x3, 16-output stride-2 stem made it slower in every precision
      measured (FP32 0.055 -> 0.084 ms with the pad, FP16 channels-last 0.058 -> 0.131 ms for the convolution
      alone, PWC-Net's extractor on an H100);
    - 1 to 4 input channels of any other layer (depth maps, xyz offsets, coordinate
      grids, `Linear(3, ...)` on positions, 1x1 convolutions, stride-1 stems): the
      reduction C*R*S is a handful of elements, the layer is bound by memory traffic, and
      padding C to 8 only multiplies the bytes read; C = 4 kernels exist only for
      stride 2;
    - counts below 8 on the output side (a 1- or 2-way head), grouped convolutions and
      non-literal sizes;
    - test files (`test_*.py`, `*_test.py`, `conftest.py`, files under `tests/`, `test/`,
      `testing/`), which build toy models on purpose. CL502 and CL503 skip them too.

    ## Why is this bad?
    cuDNN and cuBLAS pick Tensor Core kernels when C and K (or the GEMM dimensions) are
    aligned; otherwise they pad internally (cuDNN 7.6.3 and later) or fall back to slower
    kernels, and NHWC data is not padded at all with older cuDNN. "Choosing C and K to be
    multiples of 8 for FP16 ... gives the best efficiency: for these cases, padding is not
    required" (cuDNN guide, 4.4.3).

    ## Example
    ```python
    self.proj = nn.Conv2d(64, 100, kernel_size=3)
    self.stem = nn.Conv2d(3, 64, kernel_size=7, stride=2, padding=3)
    ```

    ## Use instead
    ```python
    self.proj = nn.Conv2d(64, 104, kernel_size=3)    # or 96
    self.stem = nn.Conv2d(4, 64, kernel_size=7, stride=2, padding=3)   # input padded to 4
    ```

    ## References
    - Optimizing Convolutional Layers (cuDNN user guide), 4.4.3 "Channels In And Out"
      (automatic padding since cuDNN 7.6.3; C = 4 kernels for first layers at stride 2,
      Figure 8), 4.4.2 "Filter Size" (for 1x1 filters it is the product C*R*S that
      matters) and Chapter 1, "Quick-Start Checklist",
      https://docs.nvidia.com/deeplearning/performance/dl-performance-convolutional/

    ## Precision on unseen code
    Precision on unseen code: 1/12 right (2026-11-24, ea1e6f7; docs/precision.md)

    """
    code = "CL501"
    name = "conv-channels-unaligned"
    severity = "info"
    default_enabled = False             # precision and layout unknown: see the docstring
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
                if role in ("in_channels", "in_features") and v <= 4:
                    if name == "Conv2d" and v < 4 and _image_stem(node):
                        yield Finding(start, end,
                                      f"image stem `{name}` with {v} input channel"
                                      f"{'s' if v > 1 else ''} at stride 2: pad the input "
                                      "to 4 channels (cuDNN has C=4 kernels for stride 2; "
                                      "other counts are padded by cuDNN itself)",
                                      metrics={"channels": v, "role": role, "suggested": 4})
                    continue                # not a stem: padding only adds bytes
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


def _image_stem(call):
    """A first layer on images as the cuDNN guide means it: kernel larger than 1x1 and
    stride 2 (its C = 4 kernels are for stride 2). Unknown kernel or stride: not a stem.
    Nor is a small stem, a kernel of 3 or less with 16 or fewer literal outputs: the 7x7
    32- and 64-output stems gained from a 4-channel input on an H100 in FP16
    channels-last, the 3x3 16-output stem got slower in every precision (issue 20,
    bench/triage/gpu/results-newcorpus2/layers.json)."""
    kernel = _ints(_arg(call, 2, "kernel_size"))
    stride = _ints(_arg(call, 3, "stride"))
    if not (kernel and max(kernel) > 1 and stride and max(stride) == 2):
        return False
    out = _arg(call, 1, "out_channels")
    few = isinstance(out, ast.Constant) and type(out.value) is int and out.value <= 16
    return not (max(kernel) <= 3 and few)


def _ints(node):
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List)) and node.elts and all(
            isinstance(e, ast.Constant) and type(e.value) is int for e in node.elts):
        return [e.value for e in node.elts]
    return []


def _arg(call, pos, kw):
    for k in call.keywords:
        if k.arg == kw:
            return k.value
    if pos < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[:pos + 1]):
        return call.args[pos]
    return None

import ast
import re

from cudalint.diagnostics import Finding
from cudalint.rule import Rule

from cudalint.rules.shapes.cl501_conv_channels_unaligned import _layer
from cudalint.rules.shapes.cl502_batch_size_quantization import TORCH_IMPORT

_CONV_NHWC = {"Conv2d", "Conv3d"}
_AUTOCAST = {"autocast"}
_CUDA_AMP_IMPORT = re.compile(r"from\s+torch\.cuda\.amp\s+import[^\n]*\bautocast\b")


class NchwWithAmp(Rule):
    """## What it does
    Reports a Python module that trains or runs in reduced precision -- `torch.autocast`
    / `torch.cuda.amp.autocast` / `torch.amp.autocast` on CUDA, a `GradScaler`, or a
    `.half()` conversion -- and builds 2-D or 3-D convolutions (`nn.Conv2d`, `nn.Conv3d`),
    but never mentions the channels-last memory format (`torch.channels_last`,
    `channels_last_3d`, `memory_format=`). Reported once, at the first reduced-precision
    call. Off by default (informational).

    Not reported: modules without such convolutions (1-D convolutions have no
    channels-last form), autocast on the CPU or with `enabled=False`, files that do not
    use torch, and any module that mentions `channels_last` or `memory_format` anywhere
    (the model may be converted elsewhere in it).

    ## Why is this bad?
    cuDNN's Tensor Core convolutions work in NHWC. With PyTorch's default NCHW
    (contiguous) tensors, every FP16/BF16 convolution is wrapped in transposes of its
    input and output, which cost bandwidth and can take as long as the convolution for
    small filters and large activations.

    ## Example
    ```python
    model = ResNet().cuda()                 # nn.Conv2d inside
    with torch.autocast("cuda", dtype=torch.float16):
        loss = criterion(model(images), labels)
    ```

    ## Use instead
    ```python
    model = ResNet().cuda().to(memory_format=torch.channels_last)
    with torch.autocast("cuda", dtype=torch.float16):
        images = images.to(memory_format=torch.channels_last)
        loss = criterion(model(images), labels)
    ```

    ## References
    - Optimizing Convolutional Layers (cuDNN), "Tensor Layouts In Memory: NCHW vs NHWC",
      https://docs.nvidia.com/deeplearning/performance/dl-performance-convolutional/
    - PyTorch, "Channels Last Memory Format" tutorial
    """
    code = "CL503"
    name = "nchw-with-amp"
    severity = "info"
    default_enabled = False
    target = "file"
    file_kinds = frozenset({"python"})

    def check(self, ctx):
        if ctx.is_test:
            return                      # toy models on purpose
        text = ctx.file.text
        if "Conv" not in text or "channels_last" in text or "memory_format" in text or \
                not TORCH_IMPORT.search(text):
            return
        if not any(w in text for w in ("autocast", "GradScaler", ".half(")):
            return
        tree = ctx.python_tree
        if tree is None:
            return
        cuda_import = _CUDA_AMP_IMPORT.search(text) is not None
        convs: list[ast.Call] = []
        amp: list[tuple[ast.AST, str]] = []
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            if _layer(node.func) in _CONV_NHWC:
                convs.append(node)
                continue
            kind = _reduced_precision(node, cuda_import)
            if kind is not None:
                amp.append((node, kind))
        if not convs or not amp:
            return
        node, kind = min(amp, key=lambda a: (a[0].lineno, a[0].col_offset))
        start, end = ctx.ast_span(node)
        n = len(convs)
        first = min(convs, key=lambda c: (c.lineno, c.col_offset))
        yield Finding(start, end,
                      f"{kind} with {n} NCHW convolution{'s' if n != 1 else ''} (first at "
                      f"line {first.lineno}) and no `channels_last` in this module: cuDNN "
                      "transposes every FP16/BF16 convolution to NHWC and back; convert "
                      "the model and its inputs with "
                      "`.to(memory_format=torch.channels_last)`",
                      metrics={"convolutions": n, "amp": kind, "first_conv_line": first.lineno})


def _name(func) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _reduced_precision(call: ast.Call, cuda_import: bool) -> str | None:
    """"autocast", "GradScaler" or ".half()" when ``call`` turns on reduced precision on
    the GPU; None otherwise (CPU autocast, enabled=False, other calls). ``cuda_import``:
    the module imports `autocast` from torch.cuda.amp (a bare `autocast()` is CUDA's)."""
    name = _name(call.func)
    if name in _AUTOCAST:
        cuda_amp = _is_cuda_amp(call.func) or (isinstance(call.func, ast.Name) and
                                               cuda_import)
        for k in call.keywords:
            if k.arg == "enabled" and isinstance(k.value, ast.Constant) and \
                    k.value.value is False:
                return None
            if k.arg == "device_type" and not _cuda(k.value):
                return None
            if k.arg == "dtype" and isinstance(k.value, ast.Attribute) and \
                    k.value.attr == "float32":
                return None
        if call.args and not _cuda(call.args[0]) and not cuda_amp:
            return None
        if not call.args and not any(k.arg == "device_type" for k in call.keywords) and \
                not cuda_amp:
            return None                 # torch.autocast() needs a device: not ours to guess
        return "autocast"
    if name == "GradScaler":
        for k in call.keywords:
            if k.arg == "enabled" and isinstance(k.value, ast.Constant) and \
                    k.value.value is False:
                return None
        if call.args and isinstance(call.args[0], ast.Constant) and \
                call.args[0].value not in ("cuda", True):
            return None
        return "GradScaler"
    if name == "half" and isinstance(call.func, ast.Attribute) and not call.args:
        return ".half()"
    return None


def _cuda(node) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and \
        node.value.startswith("cuda")


def _is_cuda_amp(func) -> bool:
    """`torch.cuda.amp.autocast`, `cuda.amp.autocast`, `amp.autocast` from torch.cuda
    (positional args are then dtype/enabled, not a device)."""
    if not isinstance(func, ast.Attribute):
        return False
    base = func.value
    parts = []
    while isinstance(base, ast.Attribute):
        parts.append(base.attr)
        base = base.value
    if isinstance(base, ast.Name):
        parts.append(base.id)
    return "cuda" in parts and "amp" in parts

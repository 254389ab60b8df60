"""What a call's name tells the block run and the interval check, and which device
functions of a unit a kernel can reach.

Warp intrinsics take a lane mask that CL105 checks (``MASKED``: their names as bytes,
for scans of body text); lane-id functions return each thread's lane; value-only
functions (math, conversions) neither touch shared memory nor synchronize, while any
other function the unit does not define counts as a barrier. Device functions the unit
does define are inlined, at most ``MAX_INLINE_DEPTH`` deep: those a kernel names,
transitively (:func:`reachable_names`, :func:`reachable_texts`), are the code a run of
it may execute.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cudalint.model.kernels import Function

MAX_INLINE_DEPTH = 6

WARP_INTRINSICS = frozenset({
    "__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync",
    "__ballot_sync", "__any_sync", "__all_sync", "__uni_sync", "__match_any_sync",
    "__match_all_sync", "__reduce_add_sync", "__reduce_min_sync", "__reduce_max_sync",
    "__reduce_and_sync", "__reduce_or_sync", "__reduce_xor_sync", "__syncwarp",
})
PURE = re.compile(
    r"^(?:std::|::|cuda::std::)?(?:[a-z]*(?:sqrt|rsqrt|cbrt|rcbrt|exp|exp2|exp10|expm1|log|"
    r"log2|log10|log1p|pow|sin|cos|tan|sinh|cosh|tanh|asin|acos|atan|atan2|fabs|abs|fmax|"
    r"fmin|max|min|floor|ceil|round|rint|trunc|fma|fmod|erf|erfc|erfinv|hypot|isnan|isinf|"
    r"isfinite|copysign|lgamma|tgamma|sincos|sincospi|rcp|saturate|lrint|llrint|lround|"
    r"signbit|nearbyint|remainder|ldexp|frexp|fdim|norm\d*d?|rnorm\d*d?|normcdf|sinpi|"
    r"cospi)f?|make_\w+|printf|assert|static_cast|reinterpret_cast|const_cast|"
    r"dynamic_cast|float|double|int|unsigned|half|__half|bfloat16|__nv_bfloat16|"
    r"min|max|abs|swap|clamp|ceil_div|div_up|DIVUP|THCCeilDiv|ceilDiv|sizeof|"
    r"numeric_limits|is_same)$")
LANE_FUNCS = frozenset({"__lane_id", "lane_id", "laneid", "get_lane_id", "__laneid",
                        "LaneId"})
VALUE_CALLS = frozenset({"min", "max", "umin", "umax", "imin", "imax", "static_cast",
                         "int", "unsigned", "size_t", "reinterpret_cast"})


MASKED = tuple(n.encode() for n in sorted(WARP_INTRINSICS))


def reachable_texts(fn: "Function", functions) -> list[bytes]:
    """The body texts a run of ``fn`` can execute: its own and those of the unit's
    device functions it (transitively) names, the ones a run may inline."""
    texts = [fn.body.text or b""]
    seen = {fn.name}
    todo = [texts[0]]
    while todo:
        data = todo.pop()
        for name, f in functions.items():
            if name in seen or name.encode() not in data:
                continue
            seen.add(name)
            t = f.body.text or b""
            texts.append(t)
            todo.append(t)
    return texts


def reachable_names(fn: "Function", functions) -> set[str]:
    """The unit's device functions a run of ``fn`` may inline (those it names,
    transitively), as :func:`reachable_texts` finds them."""
    seen = {fn.name}
    todo = [fn.body.text or b""]
    while todo:
        data = todo.pop()
        for name, f in functions.items():
            if name in seen or name.encode() not in data:
                continue
            seen.add(name)
            todo.append(f.body.text or b"")
    return seen

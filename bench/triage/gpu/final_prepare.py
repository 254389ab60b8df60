"""Variants for the final triage pass (bench/triage/sheet-final.md): the CL201 findings on
torchsparse's kernel-map loads in the setting1 implicit-GEMM kernels. The map is read as
``out_in_map[row * kernel_volume + k]`` with 16 rows per warp (2 lanes per row), so lanes
sit ``4 * kernel_volume`` bytes apart. The variant stores the map transposed
(``out_in_map[k * M + row]``: consecutive rows in consecutive ints), the layout a fix would
use; the bench fills the map with random entries, so both layouts gather equally random
rows and the time difference is what the access pattern costs.

Reads build/triage_gpu/ts_orig.cuh and wg_orig.cuh (written by prepare.py) and writes
ts_map.cuh and wg_map.cuh beside them.

    python bench/triage/gpu/prepare.py && python bench/triage/gpu/final_prepare.py
"""
from __future__ import annotations

from pathlib import Path

B = Path(__file__).resolve().parents[3] / "build" / "triage_gpu"


def _sub(text: str, old: str, new: str, count: int) -> str:
    # each pattern must occur as often as the kernels we mean to change use it
    assert text.count(old) == count, (old, text.count(old))
    return text.replace(old, new)


def _kernel_span(text: str, name: str, next_name: str) -> tuple[int, int]:
    start = text.index(name)
    start = text.rindex("template", 0, start) if "template" in text[max(0, start - 200):start] \
        else text.rindex("__global__", 0, start)
    return start, text.index(next_name, start + len(name))


def forward() -> None:
    text = (B / "ts_orig.cuh").read_text()
    spans = [_kernel_span(text, "conv_forward_cuda_setting1_mode0_f16f16f32(",
                          "conv_forward_cuda_setting2_mode0_f16f16f32("),
             _kernel_span(text, "conv_forward_cuda_setting1_mode0_tf32tf32f32(",
                          "conv_forward_cuda_setting2_mode0_tf32tf32f32(")]
    out, last = [], 0
    for a, b in spans:
        out.append(text[last:a])
        k = text[a:b]
        k = _sub(k, "int *out_in_map_ptr = out_in_map + (blockIdx.x / j_factors1 * 128 + "
                    "threadIdx.y * 16 + threadIdx.x / 2) * kernel_volume + ((threadIdx.y * 256) "
                    "% 16) / K_tile_padded + ((threadIdx.x * 8) % 16) / K_tile_padded;",
                 "int *out_in_map_ptr = out_in_map + (blockIdx.x / j_factors1 * 128 + "
                 "threadIdx.y * 16 + threadIdx.x / 2);", 1)
        k = _sub(k, "int *out_in_map_ptr_local = out_in_map_ptr + i2_0_0 * K_tile / K_tile_padded;",
                 "int *out_in_map_ptr_local = out_in_map_ptr + (i2_0_0 * K_tile / K_tile_padded) * M;", 1)
        k = _sub(k, "int input_idx = out_in_map_ptr_local[ax0_ax1_fused_0 * 32 * kernel_volume + "
                    "(ax0_ax1_fused_0 * 512 % 16) / K_tile_padded];",
                 "int input_idx = out_in_map_ptr_local[ax0_ax1_fused_0 * 32];", 1)
        out.append(k)
        last = b
    out.append(text[last:])
    (B / "ts_map.cuh").write_text("".join(out))


def wgrad() -> None:
    text = (B / "wg_orig.cuh").read_text()
    a, b = _kernel_span(text, "conv_backward_cuda_setting1_mode0_f16f16f32(",
                        "conv_backward_cuda_setting2_mode0_f16f16f32(")
    k = text[a:b]
    k = _sub(k, "int *out_in_map_ptr = out_in_map + (threadIdx.y * 16 + threadIdx.x / 2) * "
                "kernel_volume + ((threadIdx.y * 256) % 16) / K_tile_padded + ((threadIdx.x * 8) "
                "% 16) / K_tile_padded + (blockIdx_y / j_factors1 * 16) / K_tile_padded;",
             "int *out_in_map_ptr = out_in_map + (threadIdx.y * 16 + threadIdx.x / 2) + "
             "((blockIdx_y / j_factors1 * 16) / K_tile_padded) * M_fwd;", 1)
    k = _sub(k, "int *out_in_map_ptr_local = out_in_map_ptr + i2_0_0 * 64 * kernel_volume;",
             "int *out_in_map_ptr_local = out_in_map_ptr + i2_0_0 * 64;", 2)
    k = _sub(k, "int input_idx = out_in_map_ptr_local[ax0_ax1_fused_0 * 16 * kernel_volume + "
                "(ax0_ax1_fused_0 * 256 % 16) / K_tile_padded];",
             "int input_idx = out_in_map_ptr_local[ax0_ax1_fused_0 * 16];", 2)
    (B / "wg_map.cuh").write_text(text[:a] + k + text[b:])


if __name__ == "__main__":
    forward()
    wgrad()
    for p in ("ts_map.cuh", "wg_map.cuh"):
        print(p, (B / p).stat().st_size)

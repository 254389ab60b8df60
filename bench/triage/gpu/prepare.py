"""Copy the third-party kernels the 2026-11-24 triage measures out of the fetched projects
(/tmp/newcorpus, never committed) into build/triage_gpu/ (ignored by git; carried to the
GPU machine), with the variants each measurement compares. A variant only changes the
addresses or the array form a finding is about; variants that change addresses compute
wrong values on purpose: they bound the run time the finding's fix could save.

    python bench/triage/gpu/prepare.py [/tmp/newcorpus]
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/newcorpus")
OUT = Path(__file__).resolve().parents[3] / "build" / "triage_gpu"


def torchsparse() -> None:
    conv = ROOT / "torchsparse/torchsparse/backend/convolution"
    src = (conv / "convolution_forward_implicit_gemm_cuda.cu").read_text()
    body = src[:src.index("at::Tensor conv_forward_implicit_gemm_cuda(")]
    body = body.replace('#include <torch/extension.h>\n', '').replace(
        '#include "convolution_forward_implicit_gemm_cuda.h"\n', '').replace(
        '#include "../utils/memory.cuh"\n', '#include "memory.cuh"\n')
    (OUT / "memory.cuh").write_text("#include <cstdint>\n#include <cuda_fp16.h>\n" +
                                    (conv.parent / "utils/memory.cuh").read_text())
    (OUT / "ts_orig.cuh").write_text(body)
    # CL202 on the uint4/ulonglong4 tile stores (2 or 4 lanes per 80-byte row): lanes store
    # contiguous 16-byte chunks instead (conflict-free); the ldmatrix/fragment reads stay
    store = body
    store = re.sub(r"\(\(\(\(int\)threadIdx\.x\) >> 1\) \* 40\)\) \+ \(\(\(\(int\)threadIdx\.x\) & 1\) \* 8\)\)",
                   "(((int)threadIdx.x) * 8)))", store)
    store = re.sub(r"\(\(\(\(int\)threadIdx\.x\) >> 2\) \* 40\)\) \+ \(\(\(\(int\)threadIdx\.x\) & 3\) \* 8\)\)",
                   "(((int)threadIdx.x) * 8)))", store)
    (OUT / "ts_store.cuh").write_text(store)
    # CL202 on the tf32 fragment loads A_shared[... (t>>2)*40 ... (t&3)]: row stride 36
    lines = body.split("\n")
    lines = [ln.replace("((((int)threadIdx.x) >> 2) * 40))", "((((int)threadIdx.x) >> 2) * 36))")
             if "A_shared_warp[" in ln and "= A_shared[" in ln else ln for ln in lines]
    (OUT / "ts_frag.cuh").write_text("\n".join(lines))
    # CL202 on the f32 SIMT loop A_shared_reduce_ptr[((i / 4) * 16) * 16 + vk]: row stride 17
    red = body.replace("A_shared_reduce_ptr =  A_shared + ((threadIdx_x / 4) * 16);",
                       "A_shared_reduce_ptr =  A_shared + ((threadIdx_x / 4) * 17);")
    red = red.replace("A_shared_reduce_ptr[((i / 4) * 16) * 16 + vk_in_block]",
                      "A_shared_reduce_ptr[((i / 4) * 16) * 17 + vk_in_block]")
    red = red.replace("__shared__ float A_shared[2048];", "__shared__ float A_shared[2304];")
    # setting2 (8-way, rows of 32 floats per 4 lanes) and setting3 (2-way): row stride 33
    red = red.replace("A_shared_reduce_ptr =  A_shared + ((threadIdx_x / 4) * 32);",
                      "A_shared_reduce_ptr =  A_shared + ((threadIdx_x / 4) * 33);")
    red = red.replace("A_shared_reduce_ptr[((i / 4) * 16) * 32 + vk_in_block]",
                      "A_shared_reduce_ptr[((i / 4) * 16) * 33 + vk_in_block]")
    red = red.replace("A_shared_reduce_ptr =  A_shared + ((threadIdx_x / 16) * 32);",
                      "A_shared_reduce_ptr =  A_shared + ((threadIdx_x / 16) * 33);")
    red = red.replace("A_shared_reduce_ptr[((i / 4) * 8) * 32 + vk_in_block]",
                      "A_shared_reduce_ptr[((i / 4) * 8) * 33 + vk_in_block]")
    red = red.replace("__shared__ float A_shared[4096];", "__shared__ float A_shared[4608];")
    (OUT / "ts_reduce.cuh").write_text(red)
    # the weight-gradient kernels (findings #12-#17): same store variant
    src = (conv / "convolution_backward_wgrad_implicit_gemm_cuda.cu").read_text()
    body = src[:src.index("at::Tensor conv_backward_wgrad_implicit_gemm_cuda(")]
    body = body.replace('#include <torch/extension.h>\n', '').replace(
        '#include "convolution_backward_wgrad_implicit_gemm_cuda.h"\n', '').replace(
        '#include "../utils/memory.cuh"\n', '#include "memory.cuh"\n')
    (OUT / "wg_orig.cuh").write_text(body)
    (OUT / "wg_store.cuh").write_text(re.sub(
        r"\(\(\(\(int\)threadIdx\.x\) >> 1\) \* 40\)\) \+ \(\(\(\(int\)threadIdx\.x\) & 1\) \* 8\)\)",
        "(((int)threadIdx.x) * 8)))", re.sub(
            r"\(\(\(\(int\)threadIdx\.x\) >> 2\) \* 40\)\) \+ \(\(\(\(int\)threadIdx\.x\) & 3\) \* 8\)\)",
            "(((int)threadIdx.x) * 8)))", body)))
    bm = (ROOT / "torchsparse/torchsparse/backend/others/reduce_bitmask_cuda.cu").read_text()
    kernel = bm[bm.index('extern "C" __global__'):bm.index("torch::Tensor reduce_bitmask_cuda(")]
    head = bm[bm.index("#define thd_per_blk"):bm.index('extern "C" __global__')]
    kernel = kernel.replace('extern "C" __global__', "__global__")
    (OUT / "bitmask_orig.cuh").write_text(head + kernel.replace(
        "reduce_mask_cuda_int32", "reduce_mask_orig"))
    fixed = kernel.replace("bitmask_shared + (laneid << 2)", "bitmask_shared + laneid").replace(
        "final_reduce_ptr[i]", "final_reduce_ptr[i * 32]")
    (OUT / "bitmask_fixed.cuh").write_text(
        "\n".join(ln for ln in head.split("\n") if not ln.startswith("#define")) +
        fixed.replace("reduce_mask_cuda_int32", "reduce_mask_fixed"))


def knn() -> None:
    src = (ROOT / "pytorch_cluster/csrc/cuda/knn_cuda.cu").read_text()
    kern = src[src.index("template <typename scalar_t> struct Cosine"):
               src.index("torch::Tensor knn_cuda(")]
    utils = (ROOT / "pytorch_cluster/csrc/cuda/utils.cuh").read_text()
    m = re.search(r"__device__[^{]*get_example_idx[^{]*\{.*?\n\}", utils, re.S)
    (OUT / "knn_orig.cuh").write_text("#include <cstdint>\n" + m.group() + "\n" + kern)


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    torchsparse()
    knn()
    for p in sorted(OUT.iterdir()):
        print(p.name, p.stat().st_size)


if __name__ == "__main__":
    main()

import cupy
import textwrap
from pycuda.compiler import SourceModule
from torch.utils.cpp_extension import load_inline
N = -1
from cupy import ElementwiseKernel
k = ElementwiseKernel('float32 x, float32 y', 'float32 z', ('z = x + y; #define M0 (1.0)\n#define M1 M0 M0\n#define M2 M1 M1\n#'
    'define M3 M2 M2\n#define M4 M3 M3\n#define M5 M4 M4\n#define M6 M5 M5\n#define M7 M6 M6\n#define M8 M7 M7\n#define M9 M8 M8\n#define M10 M9 M9\n#define M11 '), 'ew', preamble='#define M0 (1.0)\n#define M1 M0 M0\n#define M2 M1 M1\n#define M3 M2 M2\n#define M4 M3 M3\n#define M5 M4 M4\n#define M6 M5 M5\n#define M7 M6 M6\n#define M8 M7 M7\n#define M9 M8 M8\n#define M10 M9 M9\n#define M11 M10 M10\n#define M12 M11 M11\n#define M13 M12 M12\n#define M14 M13 M13\n#define M15 M14 M14\n#define M16 M15 M15\n\n__device__ float f(float x) { return pow(x, 2.0); }\n__global__ void k(float* y) {\n  constexpr int K = M16;\n  for (int i = 0; i < M16; ++i) y[threadIdx.x] += f(y[i]) * 0.1;\n}\n')

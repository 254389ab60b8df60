# issue 25, item 1: PyCUDA block=(99999999999, 1, 1) reached the lane model (MemoryError)
import pycuda.autoinit
from pycuda.compiler import SourceModule
mod = SourceModule("""
__global__ void k(float* a) { a[threadIdx.x] = 1; }
""")
f = mod.get_function("k")
f(a, block=(99999999999, 1, 1), grid=(1, 1))

"""A kernel compiled at run time by PyCUDA."""
from pycuda.compiler import SourceModule

mod = SourceModule("""
__global__ void broadcast_lane0(float* data) {
    float v = data[threadIdx.x];
    data[threadIdx.x] = __shfl(v, 0);
}
""", options=["-O3"])
broadcast_lane0 = mod.get_function("broadcast_lane0")


def run(data_gpu):
    broadcast_lane0(data_gpu, block=(32, 1, 1), grid=(1, 1))

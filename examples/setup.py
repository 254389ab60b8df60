from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="warpy",
    ext_modules=[
        CUDAExtension(
            "warpy._C",
            sources=["warpy/csrc/reduce.cu", "warpy/csrc/tile.cu",
                     "warpy/csrc/legacy_ops.cu"],
            extra_compile_args={"cxx": ["-O3"], "nvcc": ["-O3", "--use_fast_math"]},
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)

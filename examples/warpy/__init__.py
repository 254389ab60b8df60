"""warpy: warp-level reductions in every flavour of CUDA-in-Python."""

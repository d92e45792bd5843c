"""CUDA worker code: the GPU benchmark wrapper and device memory passes, the sm_90 wgmma kernel generator, the CUDA run worker."""

"""SYCL worker code: SPIR-V kernels + a host plan from a GPU-lowered module, and the dpctl run worker."""

"""xegpu worker code: SPIR-V device binaries of XeVM kernels through the `llvm-spirv` translator."""

// Prepare outlined kernels for convert-gpu-to-spirv on OpenCL: every gpu.func kernel gets an
// entry-point ABI (the work-group size is given at launch time, so none is fixed here), and every
// gpu.module gets the OpenCL Kernel target environment, so that math ops inside kernels become
// OpenCL extended instructions (spirv.CL.*) rather than GLSL ones.
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %kernels = transform.structured.match ops{["gpu.func"]} in %root : (!transform.any_op) -> !transform.any_op
    %abi = transform.param.constant #spirv.entry_point_abi<> -> !transform.any_param
    transform.annotate %kernels "spirv.entry_point_abi" = %abi : !transform.any_op, !transform.any_param
    %modules = transform.structured.match ops{["gpu.module"]} in %root : (!transform.any_op) -> !transform.any_op
    %env = transform.param.constant #spirv.target_env<#spirv.vce<v1.0, [Addresses, Int64, Kernel], []>, api=OpenCL, #spirv.resource_limits<>> -> !transform.any_param
    transform.annotate %modules "spirv.target_env" = %env : !transform.any_op, !transform.any_param
    transform.yield
  }
}

// Decompose ops that have no loop lowering and that bufferization does not take: linalg.softmax into
// its generic ops (max, sub+exp, sum, div); linalg.pack / linalg.unpack left by the payload (upstream's
// tests write them; the schedules that pack lower their own) into pad + expand_shape + transpose and
// transpose + collapse_shape + extract_slice.
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %sm = transform.structured.match ops{["linalg.softmax"]} in %root : (!transform.any_op) -> !transform.any_op
    %d = transform.structured.decompose_interface %sm : (!transform.any_op) -> !transform.any_op
    %packs = transform.structured.match ops{["linalg.pack"]} in %root : (!transform.any_op) -> !transform.op<"linalg.pack">
    %p:3 = transform.structured.lower_pack %packs : (!transform.op<"linalg.pack">)
      -> (!transform.op<"tensor.pad">, !transform.op<"tensor.expand_shape">, !transform.op<"linalg.transpose">)
    %unpacks = transform.structured.match ops{["linalg.unpack"]} in %root : (!transform.any_op) -> !transform.op<"linalg.unpack">
    %u:4 = transform.structured.lower_unpack %unpacks : (!transform.op<"linalg.unpack">)
      -> (!transform.op<"tensor.empty">, !transform.op<"linalg.transpose">, !transform.op<"tensor.collapse_shape">,
          !transform.op<"tensor.extract_slice">)
    transform.yield
  }
}

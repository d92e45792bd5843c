// One-shot bufferization of the whole module (function boundaries included, identity
// layouts), then canonicalization. The transform-dialect twin of bufferization.yaml.
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.consumed}) {
    %e = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.bufferization.eliminate_empty_tensors %e : !transform.any_op
    %b = transform.bufferization.one_shot_bufferize %root {bufferize_function_boundaries = true, allow_return_allocs_from_loops = true,
        function_boundary_type_conversion = 1 : i32} : (!transform.any_op) -> !transform.any_op
    %f = transform.structured.match ops{["func.func"]} in %b : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %f {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.yield
  }
}

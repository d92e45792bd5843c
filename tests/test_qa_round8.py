"""Eighth QA round: upstream MLIR integration tests run for real, hostile sessions and pipeline files, round 7's
leftovers; each test failed before its fix (docs/qa-round8.md)."""
from __future__ import annotations

import pytest

from conftest import MATMUL, failed, ok

# a transform module whose first sequence fails the verifier (an op with a result more than MLIR 22 gives it,
# as upstream's newer pack-unpack-mmt4d.mlir has), a second sequence and a function after it: MLIR verifies
# the isolated ops in parallel, and the error reported from a pool thread aborted the compile worker
BAD_TRANSFORM_MODULE = """\
module @transforms attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%m: !transform.any_op {transform.readonly}) {
    %u = transform.structured.match ops{["linalg.unpack"]} in %m : (!transform.any_op) -> !transform.op<"linalg.unpack">
    transform.structured.lower_unpack %u : (!transform.op<"linalg.unpack">) -> (!transform.op<"tensor.empty">, !transform.op<"linalg.copy">)
    transform.yield
  }
  transform.named_sequence @other(%e: !transform.any_op {transform.readonly}) -> !transform.any_op {
    transform.yield %e : !transform.any_op
  }
}
func.func @main() {
  return
}
"""


def test_a_verifier_error_inside_an_isolated_op_fails_at_its_line_every_time(ctx, tmp_path):
    """The bindings collect verifier errors in a handler that makes Python objects without the GIL; reported
    from one of MLIR's pool threads, nanobind aborted the worker ("incref_check(): ... GIL was not held") on
    about one load in three, and the load failed with that instead of the file's line."""
    path = tmp_path / "lower_unpack_results.mlir"
    path.write_text(BAD_TRANSFORM_MODULE)
    for _ in range(12):
        error = failed(ctx, f"load {path}")
        assert "SIGABRT" not in error and "nanobind" not in error, error
        assert error.startswith(f"{path}:4:5: 'transform.structured.lower_unpack' op expected 4 results"), error
    ok(ctx, f"load {MATMUL}")     # the same worker goes on

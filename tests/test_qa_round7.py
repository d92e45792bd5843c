"""Seventh QA round: round 6's leftovers (did-you-mean for options MLIR does not print, progress of a long
`select`), then new ground (REPL, --cpu overrides, hostile session files, upstream test files); each test
failed before its fix (docs/qa-round7.md)."""
from __future__ import annotations

import pytest

from conftest import MATMUL, failed, ok


@pytest.mark.parametrize("line, says", [
    # a list option without a default is not printed by MLIR: it was no candidate
    ("pass canonicalize{disable-pattern=x}", "canonicalize: no such option disable-pattern (did you mean disable-patterns?)"),
    ("pass one-shot-bufferize{dialect-filters=x}", "no such option dialect-filters (did you mean dialect-filter?)"),
    # a pipeline prints as its passes, and its option parser writes why it refused to stderr: the error said
    # only "failed to add `sparsifier` with options `...`"
    ("pass sparsifier{enable-runtime-libary=1}", "sparsifier: no such option enable-runtime-libary (did you mean enable-runtime-library?)"),
    ("pass sparsifier{parallelization_strategy=none}", "(did you mean parallelization-strategy?)"),
    ("pass buffer-deallocation-pipeline{private-function-dynamic-ownershp=1}",
     "(did you mean private-function-dynamic-ownership?)"),
    # a value the option parser refuses: the reason was on the worker's stderr, not in the error
    ("pass canonicalize{max-iterations=x}", "canonicalize: option max-iterations: 'x' value invalid for long argument"),
    ("pass sparsifier{vl=x}", "sparsifier: option vl: 'x' value invalid for integer argument"),
    ("pass canonicalize{region-simplify=1}", "canonicalize: option region-simplify: Cannot find option named '1'"),
])
def test_an_option_mlir_does_not_print_gets_a_did_you_mean_and_a_refused_value_says_why(ctx, line, says):
    ok(ctx, f"load {MATMUL}")
    error = failed(ctx, line)
    assert says in error, error
    assert ctx.session.cursor == 0

"""Front-end dialects the targets' schedules and lowerings do not take, and the upstream pipelines that
lower them to linalg (no MLIR import here: the selector and the worker both read it).

TOSA (what TFLite, torch-mlir's TOSA path and ONNX converters emit): `tosa-to-linalg-pipeline` (shape
inference, broadcasts made explicit, tosa.matmul / conv2d to linalg.batch_matmul / convolutions,
elementwise ops to linalg.generic, tosa.const to arith.constant).
"""
from __future__ import annotations

#: dialect prefix -> the upstream pipeline (pass-pipeline text on builtin.module) that lowers it to linalg
LOWERINGS = {"tosa": "tosa-to-linalg-pipeline"}
#: elementwise arith / math ops on whole tensors (`arith.addf %a, %b : tensor<3xf32>`, as upstream tests
#: write them): linalg.generic ops by upstream's convert-elementwise-to-linalg
ELEMENTWISE_ON_TENSORS = "func.func(convert-elementwise-to-linalg)"
ELEMENTWISE_DIALECTS = ("arith", "math")
#: the pass (workbench/worker/frontend_dialects.py) every target pipeline starts with, and `select` applies
#: first where the payload holds such ops
FRONTEND_PASS = "lh-frontend-to-linalg"

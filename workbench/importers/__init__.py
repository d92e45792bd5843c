"""Framework importers: each runs as a process of its own, by file path, under a Python that has the
framework (torch and torch-mlir for `torch_export.py`). They import no `workbench` module and never
the upstream `mlir` package, so the framework and the MLIR wheels never share a process."""

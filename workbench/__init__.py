"""lh-workbench: an interactive MLIR compiler workbench."""
__version__ = "0.1.0"

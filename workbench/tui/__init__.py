"""The Textual front end (`lh-workbench PAYLOAD.mlir` on a terminal)."""

#!/usr/bin/env bash
# Set up (once) and run the main job on an example: tile, bench, lower and run a matmul with a
# correctness check; the same with the shipped fast schedule and the selector's parameters; then
# replay the saved session headless and show that it reproduces the IR.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${LH_WORKBENCH_VENV:-.venv}"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install -q -e . >/dev/null
"$VENV/bin/lh-workbench" examples/matmul.mlir --script commands/matmul-cpu.lhw --json /tmp/lh-matmul-cpu.json
"$VENV/bin/lh-workbench" examples/matmul.mlir --script commands/matmul-fast.lhw --json /tmp/lh-matmul-fast.json
"$VENV/bin/lh-workbench" replay sessions/matmul-cpu.yaml --check --json /tmp/lh-matmul-cpu-replay.json

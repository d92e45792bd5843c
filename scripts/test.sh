#!/usr/bin/env bash
# Set up a virtual environment with the pinned MLIR wheels and run the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${LH_WORKBENCH_VENV:-.venv}"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null
"$VENV/bin/python" -m pip install -q -e '.[test,mpi,sycl,xegpu]'
exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@"

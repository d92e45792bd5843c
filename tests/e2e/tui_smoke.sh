#!/usr/bin/env bash
# Smoke test of the real TUI in tmux: start it, apply a step, toggle the diff, undo, search, help, quit.
# Usage: tests/e2e/tui_smoke.sh   (exit 0 = pass; prints the failing pane otherwise)
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
PY="${PYTHON:-$(command -v python3)}"
SOCK="lhwb-smoke-$$"
STATE="$(mktemp -d)"
T="tmux -L $SOCK"
cleanup() { $T kill-server 2>/dev/null || true; rm -rf "$STATE"; }
trap cleanup EXIT

wait_for() {  # wait_for PATTERN [SECONDS]
  local pat="$1" limit="${2:-60}" i=0
  $T has-session -t wb 2>/dev/null || { echo "FAIL: the tmux session is gone" >&2; exit 1; }
  while (( i < limit * 4 )); do
    if $T capture-pane -t wb -p | grep -q -- "$pat"; then return 0; fi
    sleep 0.25; i=$((i + 1))
  done
  echo "FAIL: '$pat' not on screen after ${limit}s; pane:" >&2
  $T capture-pane -t wb -p >&2
  exit 1
}

$T new-session -d -s wb -x 130 -y 40 \
  "cd '$REPO' && LH_WORKBENCH_STATE_DIR='$STATE' TERM=xterm-256color '$PY' -m workbench.launch examples/matmul.mlir; sleep 30"
wait_for "Tab completes" 60
wait_for "IR after step 0" 10
$T send-keys -t wb "apply pipelines/lib/tile.mlir" Enter
wait_for "step 1: pipelines/lib/tile.mlir" 60
wait_for "scf.for" 10
$T send-keys -t wb C-d
wait_for "diff step 0 → step 1" 10
$T send-keys -t wb "frobnicate" Enter
wait_for "unknown command 'frobnicate'" 20
$T send-keys -t wb C-z
wait_for "undone: now at step 0" 20
$T send-keys -t wb C-f
sleep 0.5
$T send-keys -t wb 'linalg\.matmul' Enter
wait_for "1/1 matches" 20
$T send-keys -t wb F1
wait_for "Keys (Esc closes)" 20
wait_for "app.go_to_symbol" 5
$T send-keys -t wb Escape
sleep 0.5
if $T capture-pane -t wb -p | grep -q "Keys (Esc closes)"; then
  echo "FAIL: Escape did not close the help screen" >&2; $T capture-pane -t wb -p >&2; exit 1
fi
$T send-keys -t wb C-q
sleep 1
if $T capture-pane -t wb -p | grep -q "Tab completes"; then
  echo "FAIL: the app did not quit on Ctrl+Q" >&2; $T capture-pane -t wb -p >&2; exit 1
fi
# a payload that does not parse: the error on the terminal (file:line:col), exit status 1, no app left
printf 'func.func @f() {\n  %%0 = arith.addi %%x, %%x : i32\n  return\n}\n' > "$STATE/bad.mlir"
$T kill-session -t wb
$T new-session -d -s wb -x 130 -y 40 \
  "cd '$REPO' && LH_WORKBENCH_STATE_DIR='$STATE' TERM=xterm-256color '$PY' -m workbench.launch '$STATE/bad.mlir'; echo EXIT=\$?; sleep 30"
wait_for "EXIT=1" 60
wait_for "bad.mlir:2:" 5
echo "tui smoke: ok"

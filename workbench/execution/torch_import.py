"""`import`: a torch model -> linalg-on-tensors `.mlir` + inputs + torch's outputs, in a process of its own.

The export runs `workbench/importers/torch_export.py` by path under the torch Python (`--torch-python`,
else `$LH_WORKBENCH_TORCH_PYTHON`, else this interpreter): torch and the MLIR wheels never share a
process, and torch may live in a virtualenv of its own (`pip install 'lh-workbench[torch]'`).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from workbench.common.files import not_a_folder

EXPORTER = Path(__file__).resolve().parents[1] / "importers" / "torch_export.py"
TORCH_PYTHON_ENV = "LH_WORKBENCH_TORCH_PYTHON"
DEFAULT_TIMEOUT_S = 900.0


class TorchImportError(RuntimeError):
    def __init__(self, message: str, detail: str = ""):
        super().__init__(message)
        self.detail = detail


#: a line torch's logging writes in glog form (`E1127 20:25:55.519000 17628 torch/_subclasses/fake_tensor.py:3090] ...`):
#: an export that fails under fake tensors logs the traceback of the failing op this way, line by line
_TORCH_LOG_LINE = re.compile(r"^[EWIF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ \S+:\d+\] ")


def _stderr_detail(stderr: str, limit: int = 4000) -> str:
    """What the exporter wrote to stderr, as a failure's detail: its last `limit` characters in whole lines,
    without torch's logged traceback lines (30 lines of `E1127 ... fake_tensor.py:3090]   File ...` after a
    one-line error that already names the model's line, the first of them cut in the middle)."""
    lines = [line for line in (stderr or "").splitlines() if not _TORCH_LOG_LINE.match(line)]
    kept: list[str] = []
    size = 0
    for line in reversed(lines):
        size += len(line) + 1
        if size > limit:
            break
        kept.append(line)
    return "\n".join(reversed(kept)).strip()


def torch_python(explicit: str | None = None) -> str:
    return explicit or os.environ.get(TORCH_PYTHON_ENV) or sys.executable


def import_torch_model(model: str, *, inputs: str | None = None, out: str | Path = "out", name: str | None = None,
                       dtype: str | None = None, seed: int = 0, python: str | None = None,
                       timeout: float = DEFAULT_TIMEOUT_S) -> dict:
    """Run the exporter; returns its JSON answer (`mlir`, `sidecar`, `inputs`, `expected`, ...)."""
    unfit = not_a_folder(Path(out))
    if unfit:   # (the export ran first, minutes for a big model, then `FileExistsError: [Errno 17] ...`)
        raise TorchImportError(f"--out {out}: {unfit} (it names the folder that the payload, its inputs and "
                               "torch's outputs are written to)")
    exe = torch_python(python)
    cmd = [exe, str(EXPORTER), model, "--out", str(out), "--seed", str(seed)]
    for flag, value in (("--inputs", inputs), ("--name", name), ("--dtype", dtype)):
        if value:
            cmd += [flag, value]
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)  # the torch Python's own packages, not ours
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except FileNotFoundError:
        raise TorchImportError(f"torch python {exe!r} not found (set --torch-python or ${TORCH_PYTHON_ENV})")
    except subprocess.TimeoutExpired:
        raise TorchImportError(f"torch export timed out after {timeout:.0f} s")
    answer = None
    for line in reversed(proc.stdout.strip().splitlines()):
        if line.startswith("{"):
            try:
                answer = json.loads(line)
                break
            except ValueError:
                continue
    if answer is None:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-20:]
        raise TorchImportError(f"torch export ({exe}) exited with status {proc.returncode} and no answer"
                               + (f": {tail[-1]}" if tail else ""), "\n".join(tail))
    if not answer.get("ok"):
        raise TorchImportError(answer.get("error") or "torch export failed", _stderr_detail(proc.stderr))
    return answer


def next_commands(answer: dict) -> list[str]:
    """What to type next: open the payload; a checked run on torch's inputs vs torch's outputs."""
    return [f"lh-workbench {answer['mlir']}",
            f"run --check --npy {','.join(answer['inputs'])} --expect {','.join(answer['expected'])}"]

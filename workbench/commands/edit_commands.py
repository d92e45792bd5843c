"""Hand edits of the IR as steps: `edit` (interactive, opens $EDITOR) and `edit-apply FILE`.

An edit step records a module the user wrote by hand. The edited text is parsed and
verified by the compile worker (never in this process); if it fails, the session is
unchanged and the diagnostic (with file:line:col locations) is returned. The verified
module is kept content-addressed under `<state dir>/edits/<sha>.mlir`, which is what a
saved session refers to.

An edit replaces the whole module and records the sha256 of the IR it was made on, so it replays
exactly (saved sessions copy the edited module next to themselves) but cannot be re-applied to a
different input: re-applying an earlier step's parameters across an edit fails cleanly.
"""
from __future__ import annotations

import os
import shlex
import subprocess
import time
from pathlib import Path

from workbench.commands.registry import Args, Arg, Command, CommandContext, Registry
from workbench.paths import state_dir
from workbench.result import Result
from workbench.session import SessionError, atomic_write
from workbench.steps.kinds import Step
from workbench.common.compact_text import as_text
from workbench.common.files import read_regular_text


def edits_dir() -> Path:
    d = state_dir() / "edits"
    d.mkdir(parents=True, exist_ok=True)
    return d


def edit_scratch_file(ctx: CommandContext) -> Path:
    """Where the current IR is written for the user to edit."""
    s = ctx.session
    stem = s.payload_path.stem if s.payload_path else "module"
    return edits_dir() / f"{stem}-after-step{s.cursor}.mlir"


def record_edit(ctx: CommandContext, path: Path) -> Result:
    from workbench.commands.step_results import applied_result as _apply_result

    s = ctx.session
    try:
        s.require_loaded()
    except SessionError as e:
        return Result.failure(str(e))
    try:
        text = read_regular_text(Path(path))
    except OSError as e:
        return Result.failure(f"cannot read {path}: {e.strerror}")
    t0 = time.perf_counter()
    ans = s.client.request({"op": "parse", "filename": str(path), "text": text})
    seconds = time.perf_counter() - t0
    if not ans.get("ok"):
        return Result.failure(f"edited IR rejected (session unchanged): {ans.get('error')}",
                              ans.get("diagnostics") or None)
    sha = ans["sha"]
    if sha == s.current_sha:
        return Result(True, "edit: the module is unchanged; no step recorded", data={"noop": True})
    saved = edits_dir() / f"{sha[:16]}.mlir"
    if not saved.exists():
        atomic_write(saved, as_text(ans["ir"]))
    try:
        applied = s.apply(Step("edit", str(saved), {}, {"base": s.current_sha[:16]}, Path.cwd()), printed=True)
    except SessionError as e:
        return Result.failure(str(e), e.detail or None)
    applied.seconds += seconds
    return _apply_result(ctx, applied, s.cursor)


def default_editor_command() -> list[str]:
    return shlex.split(os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi")


def cmd_edit_apply(ctx: CommandContext, a: Args) -> Result:
    return record_edit(ctx, Path(a["file"]))


def cmd_edit(ctx: CommandContext, a: Args) -> Result:
    """Interactive: write the current IR, let the front end open an editor, record the result."""
    s = ctx.session
    if not s.loaded:
        return Result.failure("no payload loaded: use `load FILE.mlir`")
    opener = getattr(ctx, "open_editor", None)
    if opener is None:
        if not ctx.interactive:
            return Result.failure("edit opens an editor (TUI/REPL only); headless: `edit-apply FILE.mlir`")

        def opener(path: Path) -> int:
            return subprocess.call(default_editor_command() + [str(path)])
    path = edit_scratch_file(ctx)
    original = s.current_ir
    atomic_write(path, original)
    status = opener(path)
    if isinstance(status, int) and status != 0:   # a failed editor is no "no change"
        return Result.failure(f"edit: the editor ({' '.join(default_editor_command())}) exited with status "
                              f"{status}; nothing recorded")
    if path.read_text() == original:
        return Result(True, "edit: no change", data={"noop": True})
    return record_edit(ctx, path)


def register(reg: Registry) -> Registry:
    if reg.get("edit-apply") is None:
        reg.register(Command("edit-apply", "record an edited module (FILE.mlir) as a step, if it parses and verifies",
                             cmd_edit_apply, [Arg("file", "edited module", complete="path:.mlir")],
                             category="2-steps"))
    if reg.get("edit") is None:
        reg.register(Command("edit", "edit the current IR in $EDITOR; recorded as a step if it verifies",
                             cmd_edit, category="2-steps"))
    return reg

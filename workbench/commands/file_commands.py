"""Sessions on disk and consent: `save`, `replay`, `resume`, `trust`. Each handler takes (ctx, args) and returns a Result."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from workbench.commands.registry import Arg, Args, Command, CommandContext, Flag, Registry
from workbench.commands.step_results import confirm_losing_steps, fail
from workbench.common import safe_yaml, trust_store
from workbench.common.files import resolved
from workbench.common.suggest import did_you_mean_path
from workbench.paths import in_shipped_sessions
from workbench.result import Result, clip_lines
from workbench.session import SessionError, read_session_file, replay_into
from workbench.steps import spec as S
from workbench.steps.kinds import StepError


#: a replay of more steps than this reports progress as steps done / total and a rate, at most every
#: PROGRESS_INTERVAL_S, instead of a line per step (20,000 steps printed 20,000 lines over 2.3 minutes)
LONG_REPLAY_STEPS = 50
PROGRESS_INTERVAL_S = 1.0


class ReplayProgress:
    """What a replay tells its progress callback: a line per step for a short session; for a long one
    `replay: step 1450/20000 (7%), 145 steps/s, about 2 min left` now and then, failed steps always."""

    def __init__(self, say: Callable[[str], None], total: int):
        self.say, self.total, self.done = say, total, 0
        self.long = total > LONG_REPLAY_STEPS
        self.t0 = self.last = time.monotonic()

    def step(self, report: Any) -> None:
        self.done += 1 if report.ok else 0
        if not self.long or not report.ok:
            self.say(clip_lines(f"step {report.index}/{self.total} {'ok' if report.ok else 'FAILED'}: "
                                f"{report.spec}", 300))
            return
        now = time.monotonic()
        if now - self.last >= PROGRESS_INTERVAL_S and self.done < self.total:
            self.last = now
            self.say(self.line(now))

    def line(self, now: float) -> str:
        rate = self.done / max(now - self.t0, 1e-9)
        left = (self.total - self.done) / rate if rate > 0 else float("inf")
        when = (f"about {left:.0f} s left" if left < 90 else f"about {left / 60:.0f} min left"
                if left < 5400 else f"about {left / 3600:.1f} h left")
        return (f"replay: step {self.done}/{self.total} ({100 * self.done // self.total}%), {rate:.0f} steps/s, "
                f"{when}")

    def finish(self) -> None:
        if self.long and self.done == self.total:
            elapsed = time.monotonic() - self.t0
            self.say(f"replay: {self.done}/{self.total} steps in {elapsed:.1f} s "
                     f"({self.done / max(elapsed, 1e-9):.0f} steps/s)")


def cmd_save(ctx: CommandContext, a: Args) -> Result:
    s = ctx.session
    if not s.loaded:
        return Result.failure("no payload loaded: nothing to save")
    try:
        path = s.save(a["file"])
    except OSError as e:
        return Result.failure(f"cannot write {a['file']}: {e.strerror}")
    data: dict[str, Any] = {"path": str(path)}
    size = Path(path).stat().st_size
    if size > safe_yaml.MAX_BYTES:   # replay refuses it before parsing: say so now, not when it is read back
        data["warnings"] = [f"{path} is {size >> 10} KiB, more than the {safe_yaml.MAX_BYTES >> 20} MiB that "
                            "replay reads (save fewer steps: `history` and `undo`, or split the session)"]
    return Result(True, f"saved {len(s.active_steps)} steps to {path}", data=data)


def replay_file(ctx: CommandContext, path: Path, payload: Path | None = None,
                allow_unregistered: bool = False, own: bool = False, keep_partial: bool = False) -> Result:
    """Load a session file's payload (or `payload`) and apply its steps: shared by `replay` and `resume`.
    A session file this user did not save (and not `own`, e.g. this user's journal) is "from
    elsewhere": running its payload then needs consent (see `run_consent`). A replay that fails leaves
    the session as it was, unless `keep_partial` (headless `lh-workbench replay`: --emit writes the IR
    where it stopped)."""
    snapshot = ctx.session.state_snapshot()
    res = _replay_file(ctx, path, payload, allow_unregistered, own)
    if not res.ok and not keep_partial:
        ctx.session.restore_state(snapshot)
        res.error = f"{res.error} (the session is unchanged)"
        res.summary = res.error
    return res


def _replay_file(ctx: CommandContext, path: Path, payload: Path | None, allow_unregistered: bool,
                 own: bool) -> Result:
    s = ctx.session
    try:
        loaded = read_session_file(path)
    except (SessionError, StepError, S.SpecError) as e:
        return fail(e)
    try:
        payload = payload or loaded.payload
        chunk = loaded.payload_chunk
    except SessionError as e:
        return fail(e)
    if payload is None:
        return Result.failure(f"{path} names no payload: pass --payload FILE.mlir")
    if not Path(payload).exists() and payload == loaded.payload:
        # the session file moved without its payload (or the payload moved): say where it was looked for
        # and how to name another (`Workbench: payload: path:` is relative to the session file)
        written = (loaded.meta.get("payload") or {}).get("path")
        return Result.failure(f"{payload}: no such file{did_you_mean_path(Path(payload))} (the session's payload "
                              f"{written!r}, relative to the session file; name it with "
                              f"`replay --payload FILE.mlir {path}`)")
    foreign = not own and not in_shipped_sessions(path) and not trust_store.is_trusted(path, trust_store.SESSION)
    try:   # a payload the session names (not `--payload FILE`): its parse error quotes only MLIR files' text
        s.load(payload, allow_unregistered=allow_unregistered or bool(loaded.meta.get("allow_unregistered_dialects")),
               chunk=chunk, named_by=resolved(Path(path)) if foreign and payload == loaded.payload else None)
    except SessionError as e:
        return fail(e)
    s.input_ranges = {int(i): tuple(r) for i, r in (loaded.meta.get("input_ranges") or {}).items()}
    if foreign:
        s.foreign_source = resolved(Path(path))
    elif own and loaded.meta.get("from_elsewhere"):   # a journal of a session replayed from elsewhere
        s.foreign_source = Path(str(loaded.meta["from_elsewhere"]))
    expected_payload = (loaded.meta.get("payload") or {}).get("sha256")
    warnings = list(loaded.notes)
    if expected_payload and expected_payload != s.payload_file_sha:
        warnings.append(f"payload {payload} changed since the session was saved (sha256 differs)")
    progress = ReplayProgress(ctx.progress, len(loaded.steps))
    try:
        reports = replay_into(s, loaded, on_step=progress.step)
    except SessionError as e:  # e.g. the session names an unknown target
        return fail(e)
    except KeyboardInterrupt:   # Ctrl-C (the REPL, a headless replay): the workers stop, one line says where
        from workbench.execution.worker_client import cancel_command

        cancel_command()
        s.client.cancel()
        return Result.failure(f"replay cancelled at step {progress.done + 1} of {len(loaded.steps)} (Ctrl-C)")
    progress.finish()
    ok = all(r.ok for r in reports) and len(reports) == len(loaded.steps)
    expected = loaded.meta.get("ir_sha256")
    data: dict[str, Any] = {"steps": [r.to_json() for r in reports], "ir_sha256": s.current_sha,
                            "payload": str(payload), "session": str(path)}
    first_difference = _first_difference(loaded, reports)
    if expected:
        data["expected_ir_sha256"] = expected
        data["reproduced"] = ok and expected == s.current_sha
        if ok and expected != s.current_sha:
            warnings.append("final IR differs from the one recorded in the session" + first_difference
                            + _versions_differ(loaded.meta))
    if ok and (not expected or expected == s.current_sha) and first_difference:
        # the final IR is as recorded (or none is), a step's is not: a record edited by hand, or steps that
        # reach the same IR another way; said, where it was taken without a word
        warnings.append("the IR after a step differs from the session's record of it" + first_difference
                        + ("; the final IR is as recorded" if expected else "") + _versions_differ(loaded.meta))
    if warnings:
        data["warnings"] = warnings
    if not ok:
        bad = next(r for r in reports if not r.ok)
        return Result(False, bad.error or "replay failed", error=bad.error, detail=bad.detail, data=data)
    if not own:
        s.mark_saved()   # the steps are those of the file: nothing to journal until they change
    summary = f"replayed {len(reports)} steps from {path}"
    if warnings:
        summary += " (warning: " + "; ".join(warnings) + ")"
    return Result(True, summary, data=data)


def _versions_differ(meta: dict) -> str:
    """`; saved with MLIR 19.1.0, this is 22.1.8` where the session was saved by another MLIR or workbench
    version (a likely reason why its IR differs), else ''."""
    import workbench
    from workbench.common.mlir_libs import mlir_version

    notes = [f"{what} {meta[key]}, this is {now}" for what, key, now in
             (("MLIR", "mlir_version", mlir_version()), ("lh-workbench", "version", workbench.__version__))
             if meta.get(key) and str(meta[key]) != now]
    return "; saved with " + " and ".join(notes) if notes else ""


def _first_difference(loaded, reports) -> str:
    """Where the replayed IR first differs from the step records the session holds (`Workbench.steps`)."""
    recorded = {r.get("index"): r.get("ir_sha256") for r in loaded.meta.get("steps") or []}
    for offset, report in enumerate(reports, start=1):
        if recorded.get(offset) and report.ir_sha256 and recorded[offset] != report.ir_sha256:
            return f" (first after step {offset}: {clip_lines(report.spec, 120)})"
    return ""


def cmd_replay(ctx: CommandContext, a: Args) -> Result:
    if not confirm_losing_steps(ctx, f"replay {a['file']}"):   # it replaces the steps, as load does
        return Result.failure("replay cancelled: the session is unchanged (save it first with `save FILE.yaml`)")
    return replay_file(ctx, Path(a["file"]), Path(a["payload"]) if a.get("payload") else None)


def cmd_resume(ctx: CommandContext, a: Args) -> Result:
    s = ctx.session
    if s.payload_path is None:
        return Result.failure("no payload loaded: `load` it first, then `resume`")
    journal = s.journal_for(s.payload_path, s.payload_chunk)
    if journal is None:
        return Result.failure(f"no autosaved session for {s.payload_path}")
    if not confirm_losing_steps(ctx, "resume"):
        return Result.failure("resume cancelled: the session is unchanged")
    res = replay_file(ctx, journal, payload=s.payload_path, allow_unregistered=s.allow_unregistered, own=True)
    if res.ok:
        s.adopt_journal(journal)
    return res


def cmd_trust(ctx: CommandContext, a: Args) -> Result:
    p = resolved(Path(a["file"]))
    if not p.is_file():
        return Result.failure(f"{a['file']}: " + ("a directory, not a file" if p.is_dir() else
                                                  "not a regular file" if p.exists() else "no such file"))
    ctx.session.build_ctx.trusted.add(str(p))
    kept = p.suffix == ".py" and trust_store.record(p, trust_store.PYTHON)
    return Result(True, f"trusted {p}" + (" (this content, also for later sessions)" if kept else " for this session"))


def register(reg: Registry) -> None:
    add = reg.register
    add(Command("save", "save the session as a replayable pipeline YAML", cmd_save,
                [Arg("file", "session file", complete="path:.yaml")], category="4-files"))
    add(Command("replay", "load a saved session (its payload) and re-apply its steps", cmd_replay,
                [Arg("file", "session file", complete="path:.yaml")],
                [Flag("--payload", "use this payload instead of the recorded one", True, complete="path:.mlir")],
                category="4-files"))
    add(Command("resume", "restore the autosaved session of the loaded payload", cmd_resume, category="4-files"))
    add(Command("trust", "allow running a Python schedule file from outside the library", cmd_trust,
                [Arg("file", "schedule .py file", complete="path:.py")], category="4-files"))

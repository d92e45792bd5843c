"""`run --filecheck`: the payload file's RUN line says how mlir-runner runs the program (`-e NAME`,
`-entry-point-result=...`, `-shared-libs=...`) and how FileCheck checks what it prints (`--check-prefix`);
this reads them and matches the run's printed output against the file's CHECK lines."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from workbench.common import split_input
from workbench.common.filecheck_output import FileCheckReport, FileCheckUnavailable, filecheck_output

#: -entry-point-result values mlir-runner accepts (JitRunner.cpp): it prints a non-void result itself
RUNNER_RESULTS = ("void", "i32", "i64", "f32")


class FileCheckSetupError(ValueError):
    """Why `run --filecheck` cannot start (one line)."""


class NothingToCheck(FileCheckSetupError):
    """The file has no line of the prefixes to check: the verdict itself, known before the program runs."""


@dataclass
class FileCheckPlan:
    check_text: str            # the payload file (its chunk's lines, file line numbers kept)
    check_file: str            # its name, for `file:line` in the report
    options: split_input.FileCheckOptions
    run_line: split_input.RunLine | None
    runner: split_input.RunnerOptions | None

    def own_lowering_hint(self, session) -> str:
        """When no step was applied, the program ran through the workbench's own lowering, not the RUN
        line's passes (which may be what prints the checked text: -generate-runtime-verification): say so."""
        if session.cursor > 0 or self.run_line is None:
            return ""
        runs = split_input.find_run_lines(session.payload_path.read_text())
        number = next((i for i, r in enumerate(runs, start=1) if r.number == self.run_line.number), None)
        try:
            compiling = split_input.compiling_run_line(runs, self.run_line).mlir_opt_pipelines()
        except split_input.ChunkError:
            compiling = []
        if not compiling or number is None:
            return ""
        return f" (the workbench's own lowering ran, not the RUN line's passes: `run-line {number}` applies them)"

    def check(self, printed: str) -> FileCheckReport:
        o = self.options
        try:
            return filecheck_output(self.check_text, printed, o.prefixes, self.check_file, o.match_full_lines,
                                    o.strict_whitespace, dict(o.variables))
        except FileCheckUnavailable as e:
            raise FileCheckSetupError(str(e))


def plan_filecheck(session, prefixes_override: str | None = None, run_line_number: int | None = None) -> FileCheckPlan:
    """The CHECK lines to match and the runner's options: from RUN line `run_line_number` (1-based among the
    file's RUN lines) or else the first RUN line that pipes mlir-runner into FileCheck (else the first that
    runs FileCheck; CHECK when none says otherwise)."""
    session.require_loaded()
    path = session.payload_path
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise FileCheckSetupError(f"cannot read {path}: {getattr(e, 'strerror', None) or e}")
    runs = split_input.find_run_lines(text)
    if session.payload_chunk is not None:
        text = split_input.chunk_text(text, session.payload_chunk, path.name)
    chosen = None
    if run_line_number is not None:
        if not 1 <= run_line_number <= len(runs):
            raise FileCheckSetupError(f"{path.name} has {len(runs)} RUN line(s), no RUN line {run_line_number}")
        chosen = runs[run_line_number - 1]
    else:
        checked = [r for r in runs if r.filecheck() is not None]
        chosen = next((r for r in checked if r.runner() is not None), checked[0] if checked else None)
        # after `run-line N` the program is that line's: its runner (-e, -entry-point-result) and FileCheck
        # options (--check-prefix), not the first line's (mathtofuncs_ipowi.mlir: four RUN lines of one
        # pipeline, each running another function under a prefix of its own)
        applied = next((a.step.run_line for a in reversed(session.active_steps) if a.step.run_line), None)
        if applied is not None and applied > len(runs):
            # (a session saved against another version of the file: its RUN lines changed since)
            raise FileCheckSetupError(f"a step came from RUN line {applied} of {path.name}, which has {len(runs)} RUN "
                                      f"line(s) now: edited since the session was saved? `run --filecheck "
                                      f"--run-line N` picks the line to check against")
        if applied is not None:
            line = runs[applied - 1]
            if line.filecheck() is not None and line.runner() is not None:
                chosen = line
    if chosen is not None and chosen.filecheck() is not None and not chosen.runs_program():
        number = runs.index(chosen) + 1
        raise FileCheckSetupError(f"RUN line {number} pipes mlir-opt into FileCheck: its CHECK lines are about the IR, "
                                  f"not about what a program prints (`run-line {number}` applies its passes, `show` "
                                  "prints the IR)")
    runner = chosen.runner() if chosen is not None else None
    options = (chosen.filecheck() if chosen is not None else None) or split_input.FileCheckOptions()
    if prefixes_override:
        options = dataclasses.replace(options, prefixes=tuple(p for p in prefixes_override.split(",") if p))
    if runner is not None:
        _check_runner(runner, chosen.number)
    plan = FileCheckPlan(text, path.name, options, chosen, runner)
    empty = plan.check("")       # a file without a line of its prefixes: said before the program compiles and runs
    if not empty.total and (empty.first_failure or {}).get("line") == 0:
        raise NothingToCheck(empty.summary())
    return plan


def _check_runner(runner: split_input.RunnerOptions, line: int) -> None:
    """The runner options the workbench cannot honour, as one line: a result kind mlir-runner does not
    know, a -shared-libs library the MLIR wheels do not ship."""
    from workbench.common.mlir_libs import MissingRuntimeLibrary, find_runtime_library

    if runner.result not in RUNNER_RESULTS:
        raise FileCheckSetupError(f"RUN line {line}: -entry-point-result={runner.result} is not one of mlir-runner's "
                                  f"({', '.join(RUNNER_RESULTS)})")
    for lib in runner.shared_libs:
        if lib.startswith("%t"):
            continue   # lit expands %t (the test's temporary file) first: `%tlir_runner_utils` names a file that
            #            does not exist, which mlir-runner reports and goes on without
        if "%" in lib or "/" in lib:
            raise FileCheckSetupError(f"RUN line {line}: -shared-libs names {lib}, a library that is not one of "
                                      "MLIR's runtime libraries")
        try:
            find_runtime_library(lib)
        except MissingRuntimeLibrary:
            raise FileCheckSetupError(f"RUN line {line}: -shared-libs library lib{lib}.so is not in the MLIR wheels")

"""`lh-workbench`: interactive (TUI / REPL), scripted (`--script`) and `replay` front end.

Exit status: 0 success, 1 a step or command failed, 2 usage error.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from workbench.commands import CommandContext, default_registry
from workbench.commands.file_commands import replay_file
from workbench.commands.registry import one_line_error
from workbench.commands.script import run_script_text
from workbench.result import Result, clip_lines, json_text
from workbench.common.files import read_regular_text
from workbench.common.suggest import did_you_mean
from workbench.session import Session, atomic_write

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
MAX_SCRIPT_BYTES = 16 << 20   # a command file is a few lines


def _read_stdin_script() -> str:
    """Commands piped or redirected in (`--script -`, or no TTY): at most MAX_SCRIPT_BYTES of text
    (`< /dev/zero` read forever before); OSError with a strerror saying why not."""
    data = sys.stdin.buffer.read(MAX_SCRIPT_BYTES + 1)
    if len(data) > MAX_SCRIPT_BYTES:
        raise OSError(0, f"more than {MAX_SCRIPT_BYTES >> 20} MiB: not a command script")
    nul = data.find(b"\0")
    if nul >= 0:
        raise OSError(0, f"not a command script (a NUL byte at offset {nul})")
    try:
        return data.decode()
    except UnicodeDecodeError as e:
        raise OSError(0, f"not UTF-8 text (byte {e.start})")


class ArgumentParser(argparse.ArgumentParser):
    """argparse with a did-you-mean for a mistyped option (`--scrpit` -> --script)."""

    def error(self, message: str):
        if message.startswith("unrecognized arguments:"):
            known = [o for action in self._actions for o in action.option_strings]
            words = message.split(":", 1)[1].split()
            if any(word.split("=")[0] in known for word in words if word.startswith("-")):
                # a known option refused: it came after `--`, where every word is a positional argument (the
                # hint was `--script` for `--script`)
                message += " (options after `--` are taken as arguments: put them before it)"
            else:
                files = [word for word in words if word.startswith("-") and Path(word).exists()]
                hints = [f" ({files[0]} is a file: name it ./{files[0]} or after `--`)"] if files else []
                hints += [did_you_mean(word.split("=")[0], known) for word in words if word.startswith("-")]
                message += next((h for h in hints if h), "")
        self.last_error = message
        super().error(message)


def _json_arg(argv: list[str], bare: str | None = None) -> str | None:
    """The --json path of a command line argparse refused (`--json X` or `--json=X`), if one is given; `bare`
    for a `--json` without a value (`targets --json` prints)."""
    for i, word in enumerate(argv):
        if word.startswith("--json="):
            return word.split("=", 1)[1] or None
        if word == "--json":
            return argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("--") else bare
    return None


def _usage_failure(json_path: str | None, message: str, prefix: str = "lh-workbench") -> int:
    """A usage error before any work: one line on stderr and, where --json was asked for, the failure
    document (with every key of a report) in its place, not nothing (a consumer read the last run's)."""
    if prefix:   # (argparse has printed its own lines)
        print(f"{prefix}: {message}", file=sys.stderr)
    if json_path:
        doc = json_text({"ok": False, "ir_sha256": None, "steps": [], "target": None, "commands": [],
                         "run": None, "error": message, "usage_error": True})
        if json_path == "-":
            print(doc)
        else:
            _write_output("--json", json_path, doc + "\n")
    return EXIT_USAGE


class _VersionAction(argparse.Action):
    """--version: the version line, or with --json on the command line (before or after it) a JSON document
    {"ok", "version", "mlir_python_bindings"} written where --json says (`--version --json -` printed text)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help="show the version (with --json: as a JSON document) and exit"):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from workbench import __version__

        json_path = _json_arg(getattr(parser, "argv", None) or [])
        if not json_path:
            print(_version())
            parser.exit()
        doc = json_text({"ok": True, "version": __version__, "mlir_python_bindings": _mlir_bindings_version()})
        if json_path == "-":
            print(doc)
        elif not _write_output("--json", json_path, doc + "\n"):
            parser.exit(1)
        parser.exit()


def _parse(parser: ArgumentParser, argv: list[str], bare_json: str | None = None) -> argparse.Namespace:
    """parse_args, writing the --json failure document when argparse refuses the command line (`bare_json`:
    where a `--json` without a value writes, for a command whose --json takes none)."""
    parser.argv = list(argv)   # (--version reads --json from the whole line)
    try:
        return parser.parse_args(argv)
    except SystemExit as e:
        if e.code == EXIT_USAGE and getattr(parser, "last_error", None):
            json_path = _json_arg(argv, bare_json)
            if json_path and (json_path == "-" or not Path(json_path).is_dir()):
                _usage_failure(json_path, parser.last_error, prefix="")
        raise


class Printer:
    """Prints results: rich on a terminal, plain text otherwise; progress on stderr."""

    def __init__(self, quiet: bool = False, stdout_reserved: bool = False):
        self.quiet = quiet
        # with `--json -` stdout carries only the JSON document: results go to stderr
        self.out = sys.stderr if stdout_reserved else sys.stdout
        self.tty = self.out.isatty()
        self._console = None

    def result(self, res: Result, prefix: str = "") -> None:
        if self.quiet and res.ok:
            return
        stream = self.out if res.ok else sys.stderr
        if self.tty:
            from rich.console import Console

            if self._console is None:
                self._console = Console(file=self.out)
            if prefix:
                self._console.print(prefix, end="")
            self._console.print(res.rich())
        else:
            print(prefix + res.plain(), file=stream, flush=True)

    def progress(self, message: str) -> None:
        if not self.quiet:
            print(clip_lines(f"  .. {message}"), file=sys.stderr, flush=True)

    _bar = None

    def progress_event(self, event: dict, message: str) -> None:
        """Structured progress (`tune`): a rich progress bar on a terminal, else one line per event."""
        if self.quiet:
            return
        if not sys.stderr.isatty() or event.get("phase") != "trial":
            if self._bar is not None and event.get("phase") != "trial":
                self._bar[0].stop()
                self._bar = None
            self.progress(message)
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        if self._bar is None:
            bar = Progress(TextColumn("[bold]tune"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                           TextColumn("{task.description}"), transient=False)
            bar.start()
            self._bar = (bar, bar.add_task("", total=event.get("total")))
        bar, task = self._bar
        best = event.get("best_s")
        bar.update(task, completed=event.get("done", 0), total=event.get("total"),
                   description=f"best {best * 1e3:.3f} ms" if best else "no success yet")


def _seconds(text: str) -> float:
    """A positive, finite number of seconds (`--compile-timeout -5` was taken: every step then 'timed out
    after -5 s')."""
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return value


def _mlir_bindings_version() -> str:
    try:
        from importlib.metadata import version

        return version("xtc-mlir-python-bindings")
    except Exception:   # (an upstream `mlir` wheel, or none: the version is not ours to fail on)
        return "unknown"


def _version() -> str:
    from workbench import __version__

    return f"lh-workbench {__version__} (MLIR python bindings {_mlir_bindings_version()})"


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--emit", metavar="OUT.mlir", help="write the final IR here")
    p.add_argument("--json", metavar="OUT.json", help="write a machine-readable report here ('-' for stdout)")
    p.add_argument("--allow-python", action="store_true",
                   help="allow Python schedule files from outside the installed pipelines/ library")
    p.add_argument("--allow-unregistered-dialects", action="store_true",
                   help="accept payload ops of dialects MLIR does not know (as generic ops), e.g. upstream test-dialect payloads")
    p.add_argument("--allow-run", action="store_true",
                   help="allow running the payload of a session from elsewhere (one this user did not save)")
    p.add_argument("--compile-timeout", type=_seconds, metavar="SECONDS",
                   help="time limit of one compile step (default 600, or $LH_WORKBENCH_COMPILE_TIMEOUT)")
    p.add_argument("--target", help="select the target (cpu, ...)")
    p.add_argument("--cpu", metavar="NAME", help="select parameters and compile for this CPU machine (host, avx2, "
                                                 "avx512, skylake-avx512, znver3, ...; default: this host), its cores and "
                                                 "caches too as NAME:cores=16,l2=2M,l1d=48K,l3=300M")
    p.add_argument("--keep-going", action="store_true", help="do not stop at the first failing command")
    p.add_argument("--quiet", "-q", action="store_true", help="print only errors")


def _main_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="lh-workbench",
        description="Interactive MLIR compiler workbench. Also: `lh-workbench replay SESSION.yaml`, "
                    "`lh-workbench targets`, `lh-workbench import MODEL.py:NAME --inputs 8x3x224x224xf32`.")
    p.add_argument("payload", nargs="?", help="payload .mlir file, or a torch model MODEL.py[:NAME] (exported "
                   "first, as `lh-workbench import MODEL.py` does)")
    p.add_argument("--script", metavar="FILE.lhw", help="run a command file headless (`-`: the commands on stdin)")
    p.add_argument("--repl", action="store_true", help="use the prompt-toolkit REPL instead of the TUI")
    p.add_argument("--version", action=_VersionAction)
    p.add_argument("--chunk", type=int, metavar="K",
                   help="load only chunk K (1-based) of a payload split by `// -----` lines (upstream test files, "
                        "as mlir-opt --split-input-file reads them)")
    p.add_argument("--inputs", metavar="SPECS",
                   help="input specs of a torch model payload (MODEL.py[:NAME]), as `lh-workbench import --inputs` "
                        "takes them: 1x3x224x224xf32,4x16xi64[0:100] (default: the file's get_inputs())")
    resume = p.add_mutually_exclusive_group()
    resume.add_argument("--resume", action="store_true", help="restore the autosaved session of this payload")
    resume.add_argument("--no-resume", action="store_true",
                        help="do not offer to restore an autosaved session (it is kept)")
    _common(p)
    return p


def _replay_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="lh-workbench replay", description="Re-apply a saved session headless.")
    p.add_argument("session", help="session / pipeline YAML")
    p.add_argument("--payload", help="payload .mlir (default: the one recorded in the session)")
    p.add_argument("--run", action="store_true", help="run the result on the target afterwards")
    p.add_argument("--check", action="store_true", help="run with a correctness check (implies --run)")
    _common(p)
    return p


def _report(session: Session, ok: bool, extra: dict[str, Any]) -> dict[str, Any]:
    from workbench.session import StepReport

    steps = []
    for i, a in enumerate(session.active_steps, start=1):
        steps.append(StepReport(i, a.step.kind, a.step.label(), a.step.params, True, a.seconds, a.output_sha,
                                noop=a.noop).to_json())
    # failed steps (replay: the failing step; scripts: failing step commands) follow, with ok=false
    steps.extend(extra.pop("failed_steps", None) or [])
    out: dict[str, Any] = {"ok": ok, "ir_sha256": session.current_sha if session.loaded else None,
                           "steps": steps, "target": session.target_name}
    out.update(extra)
    # the same keys whether it worked or where it stopped (a consumer reads doc["run"], doc["error"])
    for key in ("run", "error"):
        out.setdefault(key, None)
    return out


def _write_output(what: str, path: str, text: str) -> bool:
    """Write --emit / --json output; a bad path is one line on stderr (and a failed run), never a traceback."""
    try:
        atomic_write(Path(path), text)
    except OSError as e:
        print(f"lh-workbench: cannot write {what} {path}: {e.strerror or one_line_error(e)}", file=sys.stderr)
        return False
    return True


def _finish(session: Session, args, ok: bool, extra: dict[str, Any]) -> int:
    if session.journal_error:
        # the steps ran, but a crash would have lost them: that is what failed
        extra["warnings"] = [*(extra.get("warnings") or []), session.journal_error]   # (replay's may be None)
        print(f"lh-workbench: {session.journal_error}", file=sys.stderr)
        ok = False
    written = True
    if args.emit and session.loaded:
        written = _write_output("--emit", args.emit, session.current_ir)
    if args.json:
        doc = json_text(_report(session, ok and written, extra))
        if args.json == "-":
            print(doc)
        else:
            written = _write_output("--json", args.json, doc + "\n") and written
    return EXIT_OK if ok and written else EXIT_FAILED


def _check_output_paths(args) -> str | None:
    """A one-line usage error for --emit / --json paths that can never be written (checked before any work)."""
    for flag, value in (("--emit", args.emit), ("--json", args.json)):
        if not value or value == "-":
            continue
        p = Path(value)
        if p.is_dir() or value.endswith(("/", os.sep)):
            return f"{flag} {value}: is a directory"
        parent = next((q for q in [p.parent, *p.parent.parents] if q.exists()), None)
        if parent is not None and not parent.is_dir():
            return f"{flag} {value}: {parent} is not a directory"
    return None


def _apply_settings(session: Session, args) -> None:
    session.run_allowed = bool(args.allow_run)
    if args.compile_timeout:
        getattr(session.client, "_client", session.client).timeout_s = args.compile_timeout
    session.warn = lambda message: print(clip_lines(f"lh-workbench: {message}"), file=sys.stderr, flush=True)


def _make_context(session: Session, printer: Printer, interactive: bool = False) -> CommandContext:
    ctx = CommandContext(session, default_registry(), interactive=interactive, progress=printer.progress)
    ctx.progress_event = printer.progress_event  # structured progress (tune): a bar on a terminal
    return ctx


def cmd_replay(argv: list[str]) -> int:
    args = _parse(_replay_parser(), argv)
    bad = _check_output_paths(args)
    if bad:
        print(f"lh-workbench replay: {bad}", file=sys.stderr)
        return EXIT_USAGE
    printer = Printer(args.quiet, stdout_reserved=args.json == "-")
    session = Session(allow_python=args.allow_python)
    _apply_settings(session, args)
    try:
        ctx = _make_context(session, printer)
        session.journal_enabled = False
        try:
            res = replay_file(ctx, Path(args.session), Path(args.payload) if args.payload else None,
                              allow_unregistered=args.allow_unregistered_dialects, keep_partial=True)
        except Exception as e:   # as the commands do: one line and the --json report, never a traceback
            from workbench.commands.registry import one_line_error

            res = Result.failure(f"replay: internal error: {type(e).__name__}: {one_line_error(e)}")
        except KeyboardInterrupt:   # Ctrl-C before the steps (loading the payload): as one during them
            from workbench.execution.worker_client import cancel_command

            cancel_command()
            session.client.cancel()
            res = Result.failure("replay cancelled (Ctrl-C)")
        # present when the session cannot be read, too (`warnings` was there only when there were some)
        extra: dict[str, Any] = {"payload": None, "session": str(args.session), "expected_ir_sha256": None,
                                 "reproduced": None, "warnings": None}
        extra.update((k, v) for k, v in res.data.items() if k not in ("steps", "command"))
        if not res.ok:
            extra["error"] = res.error
            extra["failed_steps"] = [s for s in res.data.get("steps", []) if not s["ok"]]
        printer.result(res)
        ok = res.ok
        if ok and (args.target or args.cpu):
            recorded_cpu = session.cpu_name
            r = ctx.registry.dispatch(_target_line(args), ctx)
            ok = r.ok
            if not r.ok:
                printer.result(r)
                extra["error"] = r.error
            elif session.cpu_name != recorded_cpu:
                note = _other_machine_note(session, recorded_cpu)
                extra["warnings"] = [*(extra.get("warnings") or []), note]
                print(f"warning: {note}", file=printer.out, flush=True)
        if ok and (args.run or args.check):
            r = ctx.registry.dispatch("run" + (" --check" if args.check else ""), ctx)
            printer.result(r)
            ok = r.ok
            extra["run"] = session.last_run
            if not r.ok:
                extra["error"] = r.error
        return _finish(session, args, ok, extra)
    finally:
        session.close()


def _other_machine_note(session: Session, recorded_cpu: str) -> str:
    """`replay --cpu X` of a session built for another machine model: its steps (and the parameters the
    selector chose for that machine) are compiled for X as recorded, not selected again."""
    chosen = sum(1 for a in session.active_steps if a.step.selected_by)
    was = f"--cpu {recorded_cpu}" if recorded_cpu else "the machine it was saved on (no `cpu:`)"
    now = f"--cpu {session.cpu_name}" if session.cpu_name else "this host"
    return (f"the session was built for {was}; its steps"
            + (f" ({chosen} with parameters a selector or tune chose for that machine)" if chosen else "")
            + f" are compiled for {now} as recorded, not selected again (`select --apply` picks parameters for {now})")


def cmd_targets(argv: list[str]) -> int:
    p = ArgumentParser(prog="lh-workbench targets", description="List targets and whether they can run here.")
    # --json alone prints (as it always did); with a path it writes there, as every other command's --json
    # does (`targets --json -` / `--json out.json` were usage errors)
    p.add_argument("--json", metavar="OUT.json", nargs="?", const="-",
                   help="print JSON, or write it to OUT.json ('-' for stdout)")
    p.add_argument("--cpu", metavar="NAME", default="", help="describe this CPU machine instead of the host (NAME, or NAME:cores=16,l2=2M,"
                                                              "l1d=48K,l3=300M)")
    args = _parse(p, argv, bare_json="-")   # `targets --bogus --json -` wrote nothing on stdout
    from workbench.commands.target_commands import machine_summary, target_listing
    from workbench.targets.cpu_host import MachineError

    def emit(document) -> bool:
        text = json_text(document)
        if args.json == "-":
            print(text)
            return True
        return _write_output("--json", args.json, text + "\n")

    try:
        listing = target_listing(args.cpu)
    except MachineError as e:
        print(f"lh-workbench targets: {e}", file=sys.stderr)
        if args.json:   # a consumer of --json gets JSON either way
            emit({"ok": False, "error": str(e)})
        return EXIT_USAGE
    if args.json:
        return EXIT_OK if emit(listing) else EXIT_FAILED
    else:
        for t in listing:
            print(f"{t['name']:<8} {'yes' if t['can_run'] else 'no ':<4} {t['reason']}")
            if "machine" in t:
                print(f"{'':<13} machine: {machine_summary(t['machine'])}")
    return EXIT_OK


def cmd_import(argv: list[str]) -> int:
    """`lh-workbench import MODEL.py[:NAME] --inputs ...`: write the payload, inputs and torch's outputs."""
    from workbench.commands.import_commands import IMPORT_FLAGS, run_import

    p = ArgumentParser(prog="lh-workbench import",
                                description="Export a torch model with torch-mlir's fx importer (linalg-on-tensors) "
                                            "in a process of its own; write its inputs and torch's outputs.")
    p.add_argument("model", help="MODEL.py[:NAME]: an nn.Module class, a factory, or KernelBench's Model")
    for flag in IMPORT_FLAGS:
        p.add_argument(flag.name, help=flag.help, type=int if flag.type == "int" else str)
    p.add_argument("--json", metavar="OUT.json", help="write the exporter's answer here ('-' for stdout)")
    args = _parse(p, argv)
    printer = Printer(stdout_reserved=args.json == "-")
    res = run_import(vars(args), printer.progress)
    printer.result(res)
    if args.json:   # failed too: {"ok": false, "error": ...}, as the other --json documents
        # the detail too (the exporter's stderr): a clipped line on the terminal says `--json has the whole message`
        doc = json_text({"ok": res.ok, "error": res.error, "detail": res.detail, **res.data})
        if args.json == "-":
            print(doc)
        else:
            atomic_write(Path(args.json), doc + "\n")
    return EXIT_OK if res.ok else EXIT_FAILED


#: the words `lh-workbench WORD ...` takes as a subcommand (`help`: what a new user types for --help)
SUBCOMMANDS = ("import", "replay", "targets")


def _mistyped_subcommand(argv: list[str]) -> str | None:
    """What a first word that names no file but looks like a subcommand was meant to be: `lh-workbench replya
    s.yaml` was refused for its second word (`unrecognized arguments: s.yaml`) and `lh-workbench targest` as a
    payload that does not exist, neither naming the subcommand."""
    if not argv or argv[0].startswith("-") or Path(argv[0]).exists() or any(c in argv[0] for c in "/.:[\\"):
        return None
    word = argv[0]
    if word.lower() in ("help", "h", "usage"):
        return f"{word}: no such file or subcommand (lh-workbench --help lists the options; subcommands: " \
               f"{', '.join(SUBCOMMANDS)}, each with --help)"
    hint = did_you_mean(word, SUBCOMMANDS)
    if not hint and word in default_registry().names():
        # `lh-workbench run matmul.mlir` was `unrecognized arguments: matmul.mlir` (`run` taken for the payload)
        return (f"{word}: no such file or subcommand (`{word}` is a command inside the workbench: `lh-workbench "
                f"FILE.mlir` opens the payload, then `{word}`; headless: `lh-workbench FILE.mlir --script FILE.lhw`)")
    return f"{word}: no such file or subcommand{hint}" if hint else None


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "import":
        return cmd_import(argv[1:])
    if argv and argv[0] == "replay":
        return cmd_replay(argv[1:])
    if argv and argv[0] == "targets":
        return cmd_targets(argv[1:])
    mistyped = _mistyped_subcommand(argv)
    if mistyped:
        return _usage_failure(_json_arg(argv), mistyped)
    args = _parse(_main_parser(), argv)
    if args.inputs and not (args.payload or "").partition(":")[0].endswith(".py"):
        return _usage_failure(args.json, "--inputs gives the input specs of a torch model payload (MODEL.py[:NAME]); "
                                         "an MLIR payload's inputs are `run --inputs random|zeros|ones` or `run --npy`")
    bad = _check_output_paths(args)
    if bad:   # a --json that can never be written gets no document
        print(f"lh-workbench: {bad}", file=sys.stderr)
        return EXIT_USAGE
    script_text: str | None = None
    script_name = args.script
    if args.script:
        try:
            if args.script == "-":
                script_text, script_name = _read_stdin_script(), "<stdin>"
            else:
                script_text = read_regular_text(Path(args.script), MAX_SCRIPT_BYTES)   # /dev/zero read forever
        except IsADirectoryError:
            return _usage_failure(args.json, f"{args.script}: is a directory, not a script file")
        except FileNotFoundError:
            return _usage_failure(args.json, f"{args.script}: no such script file")
        except OSError as e:
            return _usage_failure(args.json, f"{args.script}: {e.strerror or one_line_error(e)}")
        if not args.payload and not _loads_first(script_text):
            return _usage_failure(args.json, "--script needs a payload (lh-workbench PAYLOAD.mlir --script FILE.lhw), "
                                             "or a script whose first command is `load FILE` or `import ...`")
    elif not args.repl and not sys.stdin.isatty():
        # piped or redirected commands are a script: no questions, no prompts, the exit status says
        # whether every command worked
        try:
            script_text = _read_stdin_script()
        except OSError as e:
            return _usage_failure(args.json, f"<stdin>: {e.strerror or one_line_error(e)}")
        script_name = "<stdin>"
    interactive = script_text is None
    use_tui = interactive and not args.repl and sys.stdin.isatty() and sys.stdout.isatty()
    printer = Printer(args.quiet, stdout_reserved=args.json == "-")
    session = Session(allow_python=args.allow_python)
    _apply_settings(session, args)
    ctx = _make_context(session, printer, interactive=interactive)
    try:
        if args.payload and use_tui:
            status = _tui_loading_in_background(ctx, args)
            return _interactive_end(session, args, status == EXIT_OK) if status in (EXIT_OK, EXIT_FAILED) \
                and session.loaded else status
        if args.payload:
            res = ctx.registry.dispatch(_load_line(args), ctx)
            if not res.ok:
                if not interactive:
                    printer.result(res)
                    return _finish(session, args, False, {"error": res.error, "commands": []})
                return _report_failed_load(res)
            if res.data.get("chunks") and not args.quiet:   # an upstream test file: say how to take one chunk
                print(f"lh-workbench: note: {args.payload} has {res.data['chunks']} chunks separated by `// -----` "
                      f"lines, loaded as one module; --chunk K takes one (as mlir-opt --split-input-file)",
                      file=sys.stderr)
            if args.resume and not interactive:   # the REPL resumes itself
                res = ctx.registry.dispatch("resume", ctx)
                printer.result(res)
                if not res.ok:
                    return _finish(session, args, False, {"error": res.error, "commands": []})
        if args.target or args.cpu:
            res = ctx.registry.dispatch(_target_line(args), ctx)
            if not res.ok:
                printer.result(res)
                _finish(session, args, False, {"error": res.error, "commands": [], "usage_error": True})
                return EXIT_USAGE
        if script_text is not None:
            outcome = run_script_text(script_text, ctx, keep_going=args.keep_going,
                                      on_result=lambda n, line, r: printer.result(r, prefix=f"[{n}] "))
            extra: dict[str, Any] = {"commands": [{"line": n, "command": line, **r.to_json()}
                                                  for n, line, r in outcome.results]}
            if not outcome.ok:
                extra["error"] = outcome.error
                extra["failed_steps"] = [r.data["step"] for _, _, r in outcome.results
                                         if not r.ok and isinstance(r.data.get("step"), dict)]
                print(clip_lines(f"lh-workbench: {script_name}:{outcome.failed_line}: "
                                 f"{outcome.error.split(': ', 2)[-1]}"),
                      file=sys.stderr)
            run = session.last_run
            if run is not None:
                extra["run"] = run
            # the script reproduces its steps: a run that got to its end leaves no journal to be offered as
            # an autosaved session by the next `lh-workbench` of this payload (a killed run keeps it, and
            # so does one that resumed a journal: those steps are in no file)
            resumed = args.resume or any(line.split()[:1] == ["resume"] for _, line, _ in outcome.results)
            if not resumed:
                session.mark_saved()
            return _finish(session, args, outcome.ok, extra)
        if use_tui:
            from workbench.tui.app import run_app

            run_app(ctx)
            return _interactive_end(session, args, True)
        from workbench.repl import run_repl

        failures = run_repl(ctx, resume=True if args.resume else (False if args.no_resume else None))
        return _interactive_end(session, args, failures == 0)
    finally:
        session.close()


def _loads_first(script_text: str) -> bool:
    """Whether the script's first command (after blank and comment lines) loads a payload itself."""
    from workbench.commands.script import script_lines

    lines = script_lines(script_text)
    return bool(lines) and lines[0][1].split()[0] in ("load", "import")


def _interactive_end(session: Session, args: argparse.Namespace, ok: bool) -> int:
    """The end of a TUI or REPL session: `--emit` / `--json` write the final IR and the report of where it
    ended (they were ignored without a word: `--repl --json out.json` wrote nothing)."""
    if not (args.emit or args.json):
        return EXIT_OK if ok else EXIT_FAILED
    extra: dict[str, Any] = {"commands": []}
    if session.last_run is not None:
        extra["run"] = session.last_run
    return _finish(session, args, ok, extra)


def _target_line(args: argparse.Namespace) -> str:
    """`--target` / `--cpu` as the `target` command."""
    return f"target {args.target or ''}" + (f" --cpu {_quote(args.cpu)}" if args.cpu else "")


def _load_line(args: argparse.Namespace) -> str:
    """`load PAYLOAD`, or `import MODEL.py[:NAME]` for a torch model (exported in a process of its own,
    its payload, inputs and torch's outputs written under out/, then loaded)."""
    if args.payload.partition(":")[0].endswith(".py"):
        # a model file without get_inputs() was refused with `no --inputs`, an option this form did not take
        return f"import {_quote(args.payload)}" + (f" --inputs {_quote(args.inputs)}" if args.inputs else "")
    flag = "--allow-unregistered " if args.allow_unregistered_dialects else ""
    if args.chunk is not None:
        flag += f"--chunk {args.chunk} "
    return f"load {flag}{_quote(args.payload)}"


def _tui_loading_in_background(ctx: CommandContext, args: argparse.Namespace) -> int:
    """`lh-workbench PAYLOAD` on a terminal: the payload loads in a background thread (the compile worker
    parses it) while this thread imports the TUI and starts it, so the first screen comes sooner. A payload
    that fails before the TUI is up is reported without it; one that fails later ends it. Exit 1 either way."""
    from concurrent.futures import ThreadPoolExecutor

    if args.target or args.cpu:   # settings first: they do not need the payload
        res = ctx.registry.dispatch(_target_line(args), ctx)
        if not res.ok:
            Printer().result(res)
            return EXIT_USAGE

    def load() -> Result:
        res = ctx.registry.dispatch(_load_line(args), ctx)
        if res.ok and args.resume:
            resumed = ctx.registry.dispatch("resume", ctx)
            if not resumed.ok:
                return resumed
        return res

    pool = ThreadPoolExecutor(1, thread_name_prefix="load")
    try:
        pending = pool.submit(load)
        from workbench.tui.app import run_app   # ~0.5 s of imports, while the worker parses

        if pending.done() and not pending.result().ok:
            return _report_failed_load(pending.result())
        app = run_app(ctx, pending_load=pending, offer_resume=not args.no_resume)
    finally:   # quit while loading: the caller's session.close() stops the worker, the thread ends
        pool.shutdown(wait=False)
    if app.load_error is not None:
        return _report_failed_load(app.load_error)
    return EXIT_OK


def _report_failed_load(res: Result) -> int:
    # no empty app over a payload that failed: the error, exit 1
    print(clip_lines(f"lh-workbench: {res.error}"), file=sys.stderr)
    if res.detail:
        print(clip_lines(res.detail.rstrip()), file=sys.stderr)
    return EXIT_FAILED


def _quote(s: str) -> str:
    return f'"{s}"' if " " in s else s


if __name__ == "__main__":
    sys.exit(main())

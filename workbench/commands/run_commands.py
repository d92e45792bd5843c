"""`run`: execute the live module on the selected target (timings, GFLOP/s, correctness check)."""
from __future__ import annotations

import math

from pathlib import Path

import re

from workbench.commands.registry import Arg, Args, CommandContext, Command, Flag, Registry, UsageError
from workbench.common.bench_defaults import MAX_BENCH_CALLS, MAX_CALLS_PER_SAMPLE
from workbench.common.dtypes import INPUT_KINDS
from workbench.common.files import not_a_folder, output_file
from workbench.common.suggest import did_you_mean_path
from workbench.result import Result
from workbench.run_session import RunOptions, assembly_of_current, run_current
from workbench.session import SessionError


def _parse_npy(text: str | None) -> dict[int, Path]:
    out: dict[int, Path] = {}
    if not text:
        return out
    for i, part in enumerate(p for p in text.split(",") if p):
        if "=" in part:
            idx, _, path = part.partition("=")
            try:
                out[int(idx)] = Path(path)
            except ValueError:
                raise UsageError(f"--npy expects INDEX=FILE.npy or a comma-separated list of files, got {part!r}")
        else:
            out[i] = Path(part)
    return out


def _missing_files(flag: str, paths) -> str | None:
    """The one-line error for the first of `paths` that is no file (checked before anything compiles)."""
    for path in paths:   # (a device or FIFO is the reader's to refuse, with its own words)
        if Path(path).is_dir():
            return f"run: {flag} {path}: is a directory"
        if not Path(path).exists():
            return f"run: {flag} {path}: no such file{did_you_mean_path(path)}"
    return None


def _parse_ranges(text: str | None) -> dict[int, tuple[float, float]]:
    """`0=0:100,2=-1.5:1.5` -> {0: (0, 100), 2: (-1.5, 1.5)}: [lo, hi) of argument i's random values."""
    ranges: dict[int, tuple[float, float]] = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        index, eq, span = part.partition("=")
        lo, colon, hi = span.partition(":")
        try:
            i, lo_v, hi_v = int(index), float(lo), float(hi)
        except ValueError:
            raise UsageError(f"--ranges expects INDEX=LO:HI[,INDEX=LO:HI...], got {part!r}")
        if not eq or not colon or hi_v <= lo_v:
            raise UsageError(f"--ranges expects INDEX=LO:HI with LO < HI, got {part!r}")
        if not math.isfinite(hi_v - lo_v):   # inf, nan, or a span numpy cannot draw from (OverflowError)
            raise UsageError(f"--ranges expects finite LO < HI whose difference is finite too, got {part!r}")
        ranges[i] = (int(lo_v) if lo_v.is_integer() else lo_v, int(hi_v) if hi_v.is_integer() else hi_v)
    return ranges
#: stddev / median above this: the timings are too noisy to compare (another load, too few calls)
NOISY_SPREAD = 0.10


def spread_warning(report: dict) -> str | None:
    """A warning when the spread of the timings is large compared with the median."""
    median, stddev = report.get("median_s"), report.get("stddev_s")
    if not median or stddev is None or stddev / median <= NOISY_SPREAD:
        return None
    text = f"noisy timings: stddev is {stddev / median:.0%} of the median (> {NOISY_SPREAD:.0%})"
    times = report.get("times_s") or []
    slow = [t for t in times if t > 2 * median]
    rest = [t for t in times if t <= 2 * median]
    if slow and rest:   # a few stalled calls, or all of them spread? the median is what run reports
        near = max(abs(t - median) for t in rest) / median
        text += (f": {len(slow)} of {len(times)} calls took up to {max(slow) / median:.0f}x the median, "
                 f"the other {len(rest)} are within {near:.0%} of it")
    return text + "; other load on the machine? more --iterations?"


def check_possible(session) -> tuple[bool, str]:
    """Whether `run --check` can run its reference here: the reference target must be runnable."""
    from workbench.targets import TargetError, get_target

    try:
        ok, why = get_target(session.target.reference_target).can_run()
    except TargetError as e:
        return False, str(e)
    return ok, why


def _samples(report: dict) -> str:
    """"10 iterations", or "10 samples of 20 calls" where each timed sample is the mean of back-to-back calls."""
    calls = report.get("calls_per_sample") or 1
    return (f"{report['iterations']} iterations" if calls == 1
            else f"{report['iterations']} samples of {calls} calls")


def _fmt_s(t: float) -> str:
    return f"{t * 1e3:.3f} ms" if t < 1 else f"{t:.3f} s"


def run_consent(ctx) -> Result | None:
    """None when the session's code may run here; else the failure to return. A session replayed
    from a file this user did not save is native code from elsewhere: ask (interactive) or
    require `--allow-run` (headless), as Python schedules need consent."""
    s = ctx.session
    if s.foreign_source is None or s.run_allowed:
        return None
    question = (f"the steps come from {s.foreign_source}, a session from elsewhere: running compiles its "
                f"payload to native code and runs it on this machine. Run it?")
    if ctx.interactive and ctx.confirm(question):
        s.run_allowed = True
        return None
    return Result.failure(f"refusing to run the payload of {s.foreign_source} (a session from elsewhere) "
                          "without consent: pass --allow-run (headless) or answer yes when asked")


def cmd_run(ctx: CommandContext, a: Args) -> Result:
    s = ctx.session
    if not s.loaded:   # before `lowering and running ...` is said
        return Result.failure("no payload loaded: use `load FILE.mlir`")
    refused = run_consent(ctx)
    if refused is not None:
        return refused
    missing = (_missing_files("--npy", _parse_npy(a.get("npy")).values())
               or _missing_files("--expect", [f for f in (a.get("expect") or "").split(",") if f]))
    if missing:   # before the run: a missing --expect file read as `outputs differ` after it
        return Result.failure(missing)
    kind = a.get("inputs")
    if kind is not None and kind not in INPUT_KINDS:   # was said after the lowering, by the run worker
        from workbench.common.suggest import did_you_mean

        shape = (" (shapes are `lh-workbench import --inputs`'s; a run's inputs come from files: --npy a.npy,b.npy)"
                 if re.fullmatch(r"[0-9x?]+[a-z]+[0-9]*(\[.*\])?(,.*)?", kind) else "")
        raise UsageError(f"run: --inputs {kind!r}: expected one of {', '.join(INPUT_KINDS)}"
                         f"{did_you_mean(kind, INPUT_KINDS)}{shape}")
    if a.get("save_outputs"):
        unfit = not_a_folder(Path(a["save_outputs"]))
        if unfit:   # found after the run (`run: /dev/full: File exists`), which took the run's results with it
            return Result.failure(f"run: --save-outputs {a['save_outputs']}: {unfit} (it names the folder that "
                                  "inputN.npy / outputN.npy are written to)")
    previous = s.target_name
    if a.get("target"):
        try:
            s.select_target(a["target"])
        except SessionError as e:
            return Result.failure(str(e))
    plan = None
    if a.get("filecheck") or a.get("check_prefixes"):
        from workbench.commands.filecheck_run import FileCheckSetupError, NothingToCheck, plan_filecheck

        try:
            plan = plan_filecheck(s, a.get("check_prefixes"), a.get("run_line"))
        except NothingToCheck as e:
            return Result.failure(str(e))
        except (SessionError, FileCheckSetupError) as e:
            return Result.failure(f"run --filecheck: {e}")
    ranges = _parse_ranges(a.get("ranges"))
    opts = RunOptions(ranges=ranges, check=a["check"], inputs=a.get("inputs") or "random", seed=a.get("seed") or 0,
                      npy=_parse_npy(a.get("npy")), threads=a.get("threads"),
                      timeout=a.get("timeout") or 120.0, compile_timeout=a.get("compile_timeout"),
                      warmup=a.get("warmup"), iterations=a.get("iterations"),
                      calls_per_sample=a.get("calls_per_sample"), entry=a.get("entry") or _runner_entry(s, plan),
                      save_outputs=Path(a["save_outputs"]) if a.get("save_outputs") else None,
                      ranks=a.get("ranks"), expect=[Path(f) for f in (a.get("expect") or "").split(",") if f],
                      inputs_given=bool(a.get("inputs") or a.get("npy")), profile=bool(a.get("profile")),
                      print_result=plan.runner.result if plan is not None and plan.runner is not None else "",
                      capture_output=plan is not None,
                      requested=tuple(k for k in ("warmup", "iterations", "calls_per_sample", "entry")
                                      if a.get(k) not in (None, "")))
    ctx.progress(f"lowering and running on {s.target_name} ...")
    try:
        report = run_current(s, opts, ctx.progress)
    except SessionError as e:
        return Result.failure(str(e), e.detail or None)
    filecheck = None
    if plan is not None and not report["error"]:
        from workbench.commands.filecheck_run import FileCheckSetupError

        try:
            filecheck = plan.check(report.get("stdout") or "")
        except FileCheckSetupError as e:
            report["error"] = f"run --filecheck: {e}"
        else:
            report["filecheck"] = filecheck.to_json()
    if report["error"] and a.get("target") and s.target_name != previous and not s.target.can_run()[0]:
        # a target that cannot run here does not stay selected for the next `run`
        s.select_target(previous)
        report["error"] += f" (the target stays {previous})"
    if ranges and not (report["error"] or "").startswith("--ranges"):
        s.input_ranges.update(ranges)  # recorded: later runs and the saved session use them
    s.last_run = {k: v for k, v in report.items() if k not in ("detail",)}
    if report["error"]:
        return Result(False, report["error"], kind="run", error=report["error"], detail=report.get("detail"),
                      data={"run": s.last_run})
    where = f" on {report['ranks']} ranks" if report.get("ranks") else ""
    summary = (f"{report['target']} @{report['entry']}{where}: median {_fmt_s(report['median_s'])} "
               f"(min {_fmt_s(report['min_s'])}, {_samples(report)})")
    if report["gflops"]:
        summary += f", {report['gflops']:.2f} GFLOP/s"
    chk = report["check"]
    if chk is not None and chk.get("compared") == "stdout":
        summary += (f"; check {'passed' if chk['passed'] else 'FAILED'} (printed output vs the reference's, "
                    f"{chk['lines']} lines" + (f": {chk['mismatch']}" if chk.get("mismatch") else "") + ")")
    elif chk is not None:
        summary += (f"; check {'passed' if chk['passed'] else 'FAILED'} (max abs err {chk['max_abs_err']:.3g}, "
                    f"max rel err {chk['max_rel_err']:.3g})")
    exp = report.get("expected_check")
    if exp is not None:
        summary += f"; vs {_expected_name(exp)} {'passed' if exp['passed'] else 'FAILED'}"
        summary += (f" ({exp['error']})" if exp.get("error") else
                    f" (max abs err {exp['max_abs_err']:.3g}, max rel err {exp['max_rel_err']:.3g})")
    rows = [["min", _fmt_s(report["min_s"])], ["median", _fmt_s(report["median_s"])],
            ["mean", _fmt_s(report["mean_s"])], ["stddev", _fmt_s(report["stddev_s"])]]
    if report["gflops"]:
        rows.append(["GFLOP/s", f"{report['gflops']:.2f}"])
    if filecheck is not None:
        summary += "; " + filecheck.summary()
    printed = report.get("stdout")
    body = [f"printed by @{report['entry']}:\n{printed}"] if printed else []
    if filecheck is not None:
        body.append(filecheck.body(printed or ""))
    if report.get("profile"):
        body.append(profile_text(report["profile"]))
    res = Result(True, summary, kind="table", data={"run": s.last_run,
                                                    "table": {"columns": ["statistic", "value"], "rows": rows}},
                 body="\n".join(body) or None)
    warnings = [w for w in (report.get("warning"), spread_warning(report)) if w]
    if warnings:
        res.data["warnings"] = warnings
    if chk is not None and not chk["passed"]:
        res.ok = False
        res.error = "check failed: " + summary.split("; check ")[-1]
    elif filecheck is not None and not filecheck.passed:
        res.ok = False
        res.error = filecheck.summary() + plan.own_lowering_hint(s)
    elif exp is not None and not exp["passed"]:
        res.ok = False
        res.error = f"check failed: outputs differ from {_expected_name(exp)}: " + summary.split("; vs ")[-1]
    return res


def _runner_entry(session, plan) -> str:
    """The entry the RUN line's mlir-runner calls (`-e NAME`), where the module defines it (the
    workbench's own choice otherwise: the runner's default @main may not exist)."""
    if plan is None or plan.runner is None:
        return ""
    name = plan.runner.entry
    try:
        functions = {f["name"] for f in session.inspect(session.cursor).get("funcs", []) if not f["declaration"]}
    except (SessionError, KeyError, TypeError):
        return name
    return name if not functions or name in functions else ""


def cmd_asm(ctx: CommandContext, a: Args) -> Result:
    s = ctx.session
    pattern = None
    if a.get("grep"):
        try:
            pattern = re.compile(a["grep"])
        except re.error as e:
            return Result.failure(f"--grep: not a regular expression: {e}")
    if s.loaded:   # compiling a model takes a while: say what is going on, as `run` does
        ctx.progress(f"compiling step {s.cursor} for {s.target_name} and disassembling ...")
    try:
        ans = assembly_of_current(s, a.get("function") or "", float(a.get("timeout") or 120.0))
    except SessionError as e:
        return Result.failure(str(e), e.detail)
    if not ans["ok"]:
        return Result.failure(f"asm: {ans['error']}", ans.get("diagnostics"))
    text = ans["text"]
    lines = text.splitlines()
    what = "PTX" if ans["format"] == "ptx" else "assembly"
    data = {"format": ans["format"], "lines": len(lines), "target": s.target_name}
    if pattern is not None:
        hits = [line for line in lines if pattern.search(line)]
        data["matches"] = len(hits)
        summary = f"{what} of step {s.cursor}: {len(hits)} of {len(lines)} lines match {a['grep']!r}"
        text = "\n".join(hits) + ("\n" if hits else "")
    else:
        summary = f"{what} of step {s.cursor} ({len(lines)} lines, target {s.target_name})"
    if a.get("out"):
        try:
            out = output_file(a["out"])
            out.write_text(ans["text"])
        except OSError as e:
            return Result.failure(f"asm: cannot write {a['out']}: {e.strerror}")
        data["path"] = str(out)
        summary += f"; written to {out}"
        text = "" if pattern is None else text
    data["text"] = text
    return Result(True, summary, kind="asm", body=text or None, data=data)


def _expected_name(exp: dict) -> str:
    return "expected outputs" if exp.get("source") == "--expect" else f"expected outputs ({exp.get('source')})"


PROFILE_ROWS = 25
PROFILE_BAR = 24


def profile_text(profile: dict) -> str:
    """`run --profile`'s table: each timed op's time per call and share of the timed total, longest
    first, with a bar (the first PROFILE_ROWS; the rest summed)."""
    regions = sorted(profile["regions"], key=lambda r: -r["seconds"])
    total = sum(r["seconds"] for r in regions) or 1.0
    lines = [f"time per call by op ({profile['calls']} calls; a loop nest is named by the ids of the ops "
             f"scheduled into it and its payload line):"]
    for r in regions[:PROFILE_ROWS]:
        share = r["seconds"] / total
        bar = "█" * max(1 if share >= 0.005 else 0, round(share * PROFILE_BAR))
        lines.append(f"  {_fmt_s(r['seconds']):>10}  {share:6.1%}  {bar:<{PROFILE_BAR}}  {r['label']}")
    rest = regions[PROFILE_ROWS:]
    if rest:
        spent = sum(r["seconds"] for r in rest)
        lines.append(f"  {_fmt_s(spent):>10}  {spent / total:6.1%}  {'':<{PROFILE_BAR}}  ({len(rest)} more ops)")
    return "\n".join(lines)


def register(reg: Registry) -> None:
    reg.register(Command(
        "run", "lower the live module for the target, run it isolated: timings, GFLOP/s, --check vs reference",
        cmd_run, [],
        [Flag("--check", "compare outputs with the unscheduled payload (cpu-reference: BLAS for f32 matmuls, loops for the rest)"),
         Flag("--target", "target to run on", True, complete="target"),
         Flag("--inputs", "random | zeros | ones", True, complete="choice:random,zeros,ones"),
         Flag("--seed", "seed of random inputs", True, type="int", minimum=0),
         Flag("--npy", "input .npy files: a.npy,b.npy or 0=a.npy,2=c.npy", True, complete="path:.npy"),
         Flag("--ranges", "value ranges of random inputs, [lo, hi): 0=0:100,2=-1:1 (recorded in the session; "
              "integer arguments used as indices get [0, dim size) by default)", True),
         Flag("--threads", "threads for OpenMP/async code", True, type="int", minimum=0),
         Flag("--ranks", "processes of a multi-rank target (mpi; default: what the partition was made for)",
              True, type="int", minimum=1),
         Flag("--timeout", "seconds the calls into the compiled code may take before the run worker is killed "
              "(default 120; the JIT compile before them has --compile-timeout)", True, type="float", minimum=0.1),
         Flag("--compile-timeout", "seconds the run worker's JIT compile may take (default max(600, 5 x --timeout))",
              True, type="float", minimum=0.1),
         Flag("--warmup", "warm-up calls (when run inserts the wrapper)", True, type="int", minimum=0,
              maximum=MAX_BENCH_CALLS),
         Flag("--iterations", "timed calls (when run inserts the wrapper)", True, type="int", minimum=1,
              maximum=MAX_BENCH_CALLS),
         Flag("--calls-per-sample", "calls back to back in each timed sample, which is their mean (when run "
              "inserts the wrapper; on cuda one stream synchronization a sample)", True, type="int", minimum=1,
              maximum=MAX_CALLS_PER_SAMPLE),
         Flag("--entry", "entry function (when run inserts the wrapper)", True, complete="function:entry"),
         Flag("--expect", "expected outputs (.npy, in result order) to compare with, e.g. torch's", True,
              complete="path:.npy"),
         Flag("--save-outputs", "write inputN.npy / outputN.npy (and referenceN.npy with --check) here", True,
              complete="path:"),
         Flag("--filecheck", "match what the program prints against the payload file's CHECK lines, as the RUN "
              "line's FileCheck does (filecheck: CHECK, -NEXT, -SAME, -NOT, -LABEL, -EMPTY, {{regex}}, [[VAR:re]]); "
              "the runner's -e NAME is the entry"),
         Flag("--check-prefixes", "FileCheck prefixes for --filecheck (default: the RUN line's, else CHECK)", True,
              metavar="A,B"),
         Flag("--run-line", "the RUN line (1-based) whose mlir-runner / FileCheck options --filecheck follows "
              "(default: the line `run-line N` applied, else the first that pipes mlir-runner into FileCheck)", True,
              type="int", minimum=1,
              complete="run_line"),
         Flag("--profile", "time each top-level op of the payload (loop nests after scheduling, linalg ops, "
              "calls) and list them by time per call (cpu); the ops of the functions it calls (an outlined "
              "layer, `@layer ...` rows) are timed in them")],
        details="Without a `bench` step, run inserts the benchmark wrapper at the end. The module is lowered "
                "with the target's default pipeline if it is not in the LLVM dialect yet. Generated code runs in "
                "a separate process: a crash or hang fails the run, never the session. A payload written by `import` "
                "has a sidecar (NAME.expected.json): `run` then uses the model's inputs unless --inputs/--npy "
                "say otherwise, and `run --check` also compares with the framework's outputs (elementwise, "
                "rtol/atol per element type: f32 1e-3/1e-4).",
        category="5-run"))
    reg.register(Command(
        "asm", "the machine code of the live module as run compiles it: x86 assembly (cpu, mpi), kernels' PTX (cuda)",
        cmd_asm, [Arg("function", "only this function (cpu: a symbol such as _lh_bench or the payload's entry; "
                                  "cuda: kernels whose name contains it)", optional=True, complete="function")],
        [Flag("--grep", "only the lines matching this regular expression (and how many: e.g. vfmadd, ld.global)", True),
         Flag("--out", "write the whole text to this file", True, complete="path:"),
         Flag("--timeout", "seconds before the compiling worker is killed", True, type="float", minimum=0.1)],
        details="Lowers like `run` (benchmark wrapper and the target's default lowering where the module still "
                "needs them) and compiles in a separate worker for the target's CPU and features (`target --cpu`); "
                "the object is disassembled with llvm-objdump; ExecutionEngine's `_mlir_NAME` wrappers (they unpack the "
                "arguments of a public function) are compiled for the host. The session is not changed.",
        category="5-run"))

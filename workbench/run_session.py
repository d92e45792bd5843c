"""`run`: lower the live module for the selected target, execute it isolated, time it, check it.

1. The compile worker inserts the benchmark wrapper if no `bench` step did (at the end),
   and applies the target's default lowering if the module is not in the LLVM dialect yet.
2. Seeded inputs are made for the wrapper's inputs (or read from .npy files).
3. The target runs it in a fresh run worker: one plain call (outputs for the check) and
   the timed wrapper (per-iteration times from rtclock).
4. With `check`, the *unscheduled* payload is lowered through the target's reference
   pipeline and run once on the same inputs; outputs are compared with dtype tolerances.
   Where a framework's outputs are known (the `import` sidecar, whose inputs `run` then uses by
   default, or `--expect` files), the outputs are compared with those as well.
A crash, abort or hang of generated code fails the run; the session is untouched.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from workbench.common.parallel_runtime import busy_note
from workbench.execution.expected import ExpectedOutputs, compare_expected
from workbench.execution.runner import RunInputError, Timing, compare, jit_compile_timeout, make_inputs, select_outputs
from workbench.execution.worker_client import COMPILE_PHASE
from workbench.session import Session, SessionError
from workbench.steps.kinds import Step, StepError
from workbench.targets import TargetError

DEFAULT_TIMEOUT_S = 120.0


@dataclass
class RunOptions:
    check: bool = False
    inputs: str = "random"
    seed: int = 0
    npy: dict[int, Path] = field(default_factory=dict)
    threads: int | None = None
    timeout: float = DEFAULT_TIMEOUT_S   # the calls into the compiled code
    #: the run worker's JIT compile before the calls (`run --compile-timeout`; None: max(600 s, 5 x timeout))
    compile_timeout: float | None = None
    warmup: int | None = None
    iterations: int | None = None
    calls_per_sample: int | None = None
    entry: str = ""
    save_outputs: Path | None = None
    ranks: int | None = None
    ranges: dict[int, tuple[float, float]] = field(default_factory=dict)  # `run --ranges`: argument -> [lo, hi)
    expect: list[Path] = field(default_factory=list)   # expected outputs given by hand (`--expect`)
    inputs_given: bool = False   # --inputs / --npy given: the sidecar's inputs are not the default
    profile: bool = False        # `run --profile`: time each top-level op of the payload (lh-profile-regions)
    #: `run --filecheck` of a RUN line with `-entry-point-result=i32|i64|f32`: the entry's scalar result is
    #: printed after what the program prints, as mlir-runner prints it ("" / "void": nothing)
    print_result: str = ""
    #: `run --filecheck`: what the program prints is wanted, whatever it returns (the plain call is made)
    capture_output: bool = False
    #: the wrapper settings the user asked for by name (`run --iterations 30`): where the module already has
    #: its benchmark wrapper (a `bench` step), another entry is an error and other counts a warning (the
    #: wrapper's are compiled in), not silently the wrapper's
    requested: tuple[str, ...] = ()


def expected_for(session: Session, opts: RunOptions) -> tuple[ExpectedOutputs | None, dict[int, Path]]:
    """The expected outputs this run compares with (or None) and the .npy inputs it uses.
    The sidecar's outputs hold for the sidecar's inputs only: they are used when the run takes
    those inputs (by default, or the same files by `--npy`)."""
    npy = dict(opts.npy)
    if opts.expect:
        return ExpectedOutputs(expected=list(opts.expect), source="--expect"), npy
    side = session.expected
    if side is None or not side.inputs:
        return None, npy
    sidecar_inputs = {i: p.resolve() for i, p in enumerate(side.inputs)}
    if not opts.inputs_given:
        return side, dict(enumerate(side.inputs))
    if npy and {i: Path(p).resolve() for i, p in npy.items()} == sidecar_inputs:
        return side, npy
    return None, npy


def _lowering_stages(session: Session, pipeline_name: str, params: dict | None = None) -> list[dict]:
    try:
        return Step("pipeline", pipeline_name, dict(params or {}), {}, Path.cwd()).stages(session.build_ctx)
    except StepError as e:
        raise SessionError(str(e))


def _prepare(session: Session, key: str, pipeline_name: str, bench_params: dict,
             prelude: list[dict] | None = None, artifact: str = "llvm", wrapper: str = "required",
             bytecode: bool = False, lowering_params: dict | None = None) -> dict:
    """The compile worker's `prepare_run`: the wrapper inserted where missing (`wrapper="optional"`: a
    module already lowered without one is taken as it is), the lowering applied where needed. `bytecode`:
    the lowered module also as MLIR bytecode (`llvm_bytecode`), its text without the weights' blobs.
    `lowering_params`: the named pipeline's options (a session step's own, `cuda-lower{chip=sm_90}`)."""
    ans = session.request_on_ir(key, {"op": "prepare_run", "artifact": artifact, "bench_params": bench_params,
                                      "prelude": prelude or [], "lowering": _lowering_stages(session, pipeline_name, lowering_params),
                                      "wrapper": wrapper, "lowered_bytecode": bytecode})
    if not ans["ok"]:
        error = ans["error"]
        if "cannot pick the entry function" in error and session.payload_chunk is None and session.payload_chunks > 1:
            error += (f"; or load one of the file's {session.payload_chunks} `// -----` chunks: "
                      f"`load --chunk K {session.payload_path.name}`")
        raise SessionError(error, ans.get("diagnostics", ""))
    return ans


def assembly_of_current(session: Session, function: str = "", timeout: float = DEFAULT_TIMEOUT_S) -> dict[str, Any]:
    """`asm`: the machine code of the live module as `run` would compile it (the benchmark wrapper
    inserted and the target's default lowering applied where the module still needs them); the
    target says what that is (x86 assembly of the JIT's object, PTX of the kernels)."""
    session.require_loaded()
    target = session.target
    try:
        prepared = _prepare(session, session.current_key, target.default_lowering, {}, artifact=target.run_artifact,
                            wrapper="optional")
    except SessionError as e:
        # several public functions and no bench step: the function asked for is the wrapper's entry (`asm mm`
        # failed with "cannot pick the entry function" though it names one)
        if "cannot pick the entry function" not in str(e):
            raise
        if not function:
            raise SessionError(f"{e}; here: `asm NAME`", e.detail) from None
        prepared = _prepare(session, session.current_key, target.default_lowering, {"entry": function},
                            artifact=target.run_artifact, wrapper="optional")
    return target.assembly(_artifact(prepared), function, timeout)


def run_current(session: Session, opts: RunOptions, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run the live module; returns the `run` JSON object (error set on failure, never raises for code faults).
    `progress` hears the run worker's phases (JIT-compiling, compiled in N s)."""
    session.require_loaded()
    target = session.target
    report: dict[str, Any] = {"target": target.name, "entry": None, "iterations": None, "warmup": None,
                              "min_s": None, "median_s": None, "mean_s": None, "stddev_s": None,
                              "gflops": None, "check": None, "error": None}
    bench_params = {k: v for k, v in (("warmup", opts.warmup), ("iterations", opts.iterations),
                                      ("calls_per_sample", opts.calls_per_sample), ("entry", opts.entry))
                    if v not in (None, "")}
    if opts.ranks is not None and not target.multi_rank:
        report["error"] = f"--ranks: target {target.name} runs in one process (choose a multi-rank target)"
        return report
    try:
        ok, why = target.can_run()
        if not ok:  # before lowering: the one clear line is "cannot run here", not a lowering detail
            report["error"] = f"target {target.name} cannot run here: {why}"
            return report
        if opts.profile and not target.profiles_ops:
            report["error"] = f"run --profile: target {target.name} does not time its ops (the cpu target does)"
            return report
        base, relowered, options = (profile_base(session), None, None) if opts.profile \
            else unwrapped_lowering_base(session)
        prepared = _prepare(session, base, target.default_lowering, bench_params, artifact=target.run_artifact,
                            bytecode=target.jit_bytecode, lowering_params=options,
                            prelude=[{"kind": "pass", "pipeline": "lh-profile-regions"}] if opts.profile else None)
        if relowered is not None:
            report["warning"] = (f"no `bench` step before step {relowered} (`apply {target.default_lowering}`): "
                                 "run put the wrapper in before it and lowered again (the session is unchanged)")
    except SessionError as e:
        report["error"] = str(e)
        report["detail"] = e.detail
        return report
    meta = prepared["bench"]
    try:
        meta = target.host_meta(meta, session.inspect(0), opts.ranks)
    except (TargetError, SessionError) as e:
        report["error"] = str(e)
        return report
    report.update(entry=meta["entry"], iterations=meta["iterations"], warmup=meta["warmup"],
                  calls_per_sample=meta.get("calls_per_sample", 1),
                  inserted_wrapper=prepared["inserted_wrapper"])
    if not prepared["inserted_wrapper"]:
        conflict = wrapper_conflict(session, opts, meta)
        if conflict and "entry" in opts.requested and opts.entry != meta["entry"]:
            report["error"] = conflict   # another function than the one asked for would run
            return report
        if conflict:   # the counts: the run goes on with the wrapper's, and says so
            report["warning"] = conflict
    n_in = meta["num_inputs"]
    expected, npy = expected_for(session, opts)
    if expected is not None and expected.source != "--expect" and not opts.check:
        expected = None  # the sidecar's inputs are used; its outputs are compared by `run --check`
    try:
        ranges = input_ranges(session, meta["entry"], opts)
        recorded = sorted(i for i in ranges if not 0 <= i < n_in and i not in opts.ranges)
        if recorded:   # a session file's `input_ranges: {7: ...}`: every run failed on it, and `run` cannot drop it
            for i in recorded:
                del ranges[i]
                session.input_ranges.pop(i, None)
            dropped = (f"the session's input_ranges name argument{'s' if len(recorded) > 1 else ''} "
                       f"{', '.join(map(str, recorded))} of @{meta['entry']}, which has {n_in} inputs: dropped")
            report["warning"] = "; ".join(w for w in (report.get("warning"), dropped) if w)
        beyond = sorted(i for i in ranges if not 0 <= i < n_in)
        if beyond:   # `--ranges 9=0:1` was taken (and recorded) without a word
            raise RunInputError(f"--ranges: @{meta['entry']} has no argument {beyond[0]} (its arguments are "
                                f"0..{n_in - 1})")
        beyond = sorted(i for i in (npy or {}) if not 0 <= i < n_in)
        if beyond:   # `--npy 5=x.npy` for an entry of 3 inputs ran with random inputs without a word
            raise RunInputError(f"--npy: @{meta['entry']} has no input {beyond[0]} (its inputs are 0..{n_in - 1})")
        report["input_ranges"] = {str(k): list(v) for k, v in ranges.items()} or None
        inputs = make_inputs(meta["arg_specs"][:n_in], opts.inputs, opts.seed, npy, ranges)
    except RunInputError as e:
        report["error"] = str(e)
        return report
    # a program (no outputs: an upstream test's @main that prints its results) is called for what it prints
    call = (opts.check or opts.save_outputs is not None or expected is not None or not meta["outputs"]
            or opts.print_result not in ("", "void") or opts.capture_output)
    ans = target.execute(_artifact(prepared), meta, inputs, call=call, bench=True, timeout=opts.timeout,
                         threads=opts.threads, bytecode=prepared.get("llvm_bytecode"),
                         compile_timeout=opts.compile_timeout, progress=progress)
    if not ans["ok"]:
        report["error"] = f"run failed: {ans['error']}{_timeout_hint(ans['error'], opts, meta, _artifact(prepared))}"
        report["detail"] = ans.get("diagnostics", "")
        return report
    if ans.get("other_load"):
        report["warning"] = "; ".join(w for w in (report.get("warning"), busy_note(ans["other_load"]))
                                      if w)
    if opts.save_outputs is not None:
        _save(opts.save_outputs, "input", inputs)
        if "args_after" in ans:
            _save(opts.save_outputs, "output", select_outputs(meta, ans["args_after"], ans["outputs"]))
    if ans.get("profile"):
        report["profile"] = ans["profile"]
    if ans.get("stdout"):
        report["stdout"] = ans["stdout"]   # what the plain call printed (printMemrefF32, printf)
    if opts.print_result not in ("", "void") and meta["outputs"] and "args_after" in ans:
        report["stdout"] = report.get("stdout", "") + runner_printed_result(
            opts.print_result, select_outputs(meta, ans["args_after"], ans["outputs"]))
    times = ans["times"]
    report.update(ans.get("report") or {})  # target-specific additions (e.g. per-rank times)
    report.update(Timing(times).to_json())
    report["times_s"] = times
    report["compile_s"] = ans.get("compile_s")
    try:
        flops = sum(o["flops"] for o in session.inspect(0)["ops"])
    except SessionError:
        flops = 0
    report["flops"] = flops
    if flops and report["median_s"]:
        report["gflops"] = flops / report["median_s"] / 1e9
    if expected is not None:
        report["expected_check"] = compare_expected(select_outputs(meta, ans["args_after"], ans["outputs"]),
                                                    expected)
        if report["expected_check"].get("warning"):
            report["warning"] = "; ".join(w for w in (report.get("warning"), report["expected_check"]["warning"]) if w)
    if opts.check:
        report["check"] = _check(session, target, meta, inputs, ans, opts, progress)
        if report["check"].get("error"):
            report["error"] = report["check"]["error"]
    return report


def wrapper_conflict(session: Session, opts: RunOptions, meta: dict) -> str:
    """Why the settings `run` was asked for cannot hold where the benchmark wrapper is already in the module
    (its warmup, iterations and entry are compiled in), or "" where they agree."""
    differ = [name for name in opts.requested
              if getattr(opts, name) not in (None, "") and str(getattr(opts, name)) != str(meta[name])]
    if not differ:
        return ""
    benches = [i for i, applied in enumerate(session.active_steps, 1) if applied.step.kind == "bench"]
    where = (f"step {benches[-1]} put it in: `params {benches[-1]} "
             f"{' '.join(f'{name}={getattr(opts, name)}' for name in differ)}` changes it"
             if benches else "it is part of the module")
    per_sample = meta.get("calls_per_sample", 1)
    flags = ", ".join(f"--{name.replace('_', '-')} {getattr(opts, name)}" for name in differ)
    return (f"{flags}: the module "
            f"already has its benchmark wrapper, which calls @{meta['entry']} with warmup={meta['warmup']} "
            f"iterations={meta['iterations']}{f' calls_per_sample={per_sample}' if per_sample != 1 else ''} ({where})")


def _timeout_hint(error: str, opts: RunOptions, meta: dict | None, artifact: Any = None) -> str:
    """What to do about a run killed at a time limit. The run worker's JIT compile has its own limit (`run
    --compile-timeout`, max(600 s, 5 x --timeout) by default: torchvision's DenseNet-121 at 64x64 spent 67 s
    compiling its 320k lines, 0.5 s in its 11 calls); `run --timeout` (120 s) covers the calls only."""
    if "timed out after" not in error:
        return ""
    if COMPILE_PHASE in error:
        size = (f" of {artifact.count(chr(10)) + 1} lines of LLVM dialect" if isinstance(artifact, str) else "")
        limit = opts.compile_timeout or jit_compile_timeout(opts.timeout)
        return f" (`run --compile-timeout {limit * 4:g}` allows longer; it covers the JIT compile of the module{size})"
    calls = (f"; it covers the {meta['warmup']} + {meta['iterations'] * meta.get('calls_per_sample', 1)} calls of the "
             f"compiled code, not its compile" if meta else "; it covers the calls of the compiled code, not its compile")
    return f" (`run --timeout {max(opts.timeout * 4, 600):g}` allows longer{calls})"


def runner_printed_result(kind: str, outputs: list) -> str:
    """What mlir-runner prints after an entry with `-entry-point-result=KIND` returns (JitRunner.cpp:
    `llvm::outs() << res << '\\n'`): an integer as it is, an f32 in raw_ostream's `%e` form (2.000000e+00)."""
    if len(outputs) != 1 or outputs[0].size != 1:
        return ""
    value = outputs[0].reshape(-1)[0]
    return f"{float(value):e}\n" if kind == "f32" else f"{int(value)}\n"


def profile_base(session: Session) -> str:
    """The IR `run --profile` instruments: the live module, or where the session applied the target's
    default lowering (`apply cpu-lower`), that step's input (after it, the ops are LLVM blocks)."""
    lowering = session.target.default_lowering
    for applied in session.active_steps:
        if applied.step.kind == "pipeline" and applied.step.spec.split("{")[0].strip() == lowering:
            return applied.input_key
    return session.current_key


def unwrapped_lowering_base(session: Session) -> tuple[str, int | None, dict | None]:
    """The IR a plain `run` starts from: the live module, or where its last step is the target's default
    lowering (`apply cpu-lower`) with no `bench` step before it, that step's input (the wrapper goes in
    there and the lowering runs again, as for a module not lowered yet; after it, an entry with arguments
    has nothing left to wrap), the step's number and its options (the lowering runs again with them)."""
    active = session.active_steps
    if (active and active[-1].step.kind == "pipeline"
            and active[-1].step.spec.split("{")[0].strip() == session.target.default_lowering
            and not any(applied.step.kind == "bench" for applied in active)):
        return active[-1].input_key, len(active), dict(active[-1].step.params)
    return session.current_key, None, None


def input_ranges(session: Session, entry: str, opts: RunOptions) -> dict[int, tuple[float, float]]:
    """Value ranges of random inputs: integer arguments the payload uses as indices get [0, N) (N: the
    size of the dimension they index, inferred from the unscheduled payload), then the session's
    recorded ranges (`run --ranges`), then this run's."""
    ranges: dict[int, tuple[float, float]] = {}
    try:
        funcs = session.inspect(0)["funcs"]
    except SessionError:
        funcs = []
    for f in funcs:
        if f["name"] == entry:
            ranges.update({int(k): tuple(v) for k, v in (f.get("index_ranges") or {}).items()})
    ranges.update(session.input_ranges)
    ranges.update(opts.ranges)
    return ranges


#: passes that define the payload's interface rather than schedule it: the check's reference starts
#: from the IR after the session's first steps when they are these (a payload with dynamic dims made
#: static by `pass lh-specialize-shapes{...}` has no reference of its own)
INTERFACE_PASSES = ("lh-specialize-shapes",)


def reference_base(session: Session) -> str:
    """The IR (store key) the check's reference lowers: the payload, or the output of the session's
    leading INTERFACE_PASSES steps."""
    base = session.initial_sha
    for applied in session.active_steps:
        if applied.step.kind != "pass" or not applied.step.spec.startswith(INTERFACE_PASSES):
            break
        base = applied.output_key
    return base


#: LLVM's optimisation level of the check's reference: its scalar loop nests of small static trip counts
#: (a GroupNorm's 4 x 64 sums per group at test size) are fully unrolled at -O3 into blocks whose machine
#: scheduling is quadratic in their loads and stores (a diffusion UNet stage's reference compiled ~2 minutes;
#: 6 s against 0.3 s for one 4x4x64 sum). -O2 keeps the loops; without fast-math both compute the same values.
REFERENCE_OPT_LEVEL = 2


def _check(session: Session, target, meta: dict, inputs: list, ans: dict, opts: RunOptions,
           progress: Callable[[str], None] | None = None) -> dict:
    from workbench.targets import get_target

    reference_target = get_target(target.reference_target)
    base = reference_base(session)
    # the function the scheduled code's wrapper called (a `bench entry=mm` step of a payload of several public
    # functions): the reference, the payload with no such step, would not know which one to call
    entry = opts.entry or meta.get("entry") or ""
    key = _reference_key(base, target, opts, inputs, entry)
    cached = session.reference_cache.get(key)
    if cached is None:
        try:
            ref = _prepare(session, base, target.reference_lowering,
                           {"warmup": 0, "iterations": 1, **({"entry": entry} if entry else {})},
                           prelude=target.reference_prelude(), artifact=reference_target.run_artifact,
                           bytecode=reference_target.jit_bytecode)
        except SessionError as e:
            return {"passed": False, "error": f"reference lowering failed: {e}"}
        cached = {"ref": ref, "want": None}
    ref = cached["ref"]
    rmeta = ref["bench"]
    ref_specs = rmeta["arg_specs"][:rmeta["num_inputs"]]
    got_specs = meta["arg_specs"][:meta["num_inputs"]]
    # a schedule may append output-only arguments (results turned into out-parameters): those are
    # not inputs of the reference; every other argument must match the payload's inputs
    extra = list(range(len(ref_specs), len(got_specs)))
    if extra and all(f"arg:{i}" in meta["outputs"] for i in extra):
        got_specs = got_specs[:len(ref_specs)]
    if [(s["shape"], s["dtype"]) for s in ref_specs] != [(s["shape"], s["dtype"]) for s in got_specs]:
        return {"passed": False, "error": "cannot check: the entry's inputs changed shape since the payload ("
                + ", ".join(s["type"] for s in got_specs) + " vs " + ", ".join(s["type"] for s in ref_specs) + ")"}
    if cached["want"] is None:
        rans = reference_target.execute(_artifact(ref), rmeta, inputs[:len(ref_specs)], call=True, bench=False,
                                        bytecode=ref.get("llvm_bytecode"), timeout=opts.timeout,
                                        compile_timeout=opts.compile_timeout, opt_level=REFERENCE_OPT_LEVEL,
                                        progress=(lambda m: progress(f"reference: {m}")) if progress else None)
        if not rans["ok"]:
            return {"passed": False, "error": f"reference run failed: {rans['error']}"
                                              f"{_timeout_hint(rans['error'], opts, None, _artifact(ref))}"}
        cached["want"] = select_outputs(rmeta, rans["args_after"], rans["outputs"])
        cached["stdout"] = rans.get("stdout", "")
        session.reference_cache.put(key, cached)
    if not rmeta["outputs"]:   # a program (the payload returns nothing): what it prints is its result; an
        # output argument the scheduled code reports (the last memref argument, once bufferized) is no result
        return compare_printed(ans.get("stdout", ""), cached.get("stdout", ""))
    if not meta["outputs"]:
        return {"passed": False, "error": "cannot check: the scheduled entry reports no outputs, the payload's "
                + ", ".join(rmeta["outputs"])}
    got = select_outputs(meta, ans["args_after"], ans["outputs"])
    want = cached["want"]
    dtypes = _output_dtypes(rmeta)
    if opts.save_outputs is not None:
        _save(opts.save_outputs, "reference", want)
    return compare(got, want, dtypes).to_json()


def compare_printed(got: str, want: str) -> dict:
    """The check of a program without output buffers: what it printed against what the reference printed,
    line by line (the memref addresses printMemrefF32 shows, `base@ = 0x...`, are not compared)."""
    import re

    def lines(text):
        return [re.sub(r"base@ = 0x[0-9a-fA-F]+", "base@ = _", ln.rstrip()) for ln in text.splitlines()]

    g, w = lines(got), lines(want)
    report = {"passed": g == w, "compared": "stdout", "lines": len(w), "max_abs_err": 0.0, "max_rel_err": 0.0}
    if g != w:
        i = next((i for i, (a, b) in enumerate(zip(g, w)) if a != b), min(len(g), len(w)))
        report["mismatch"] = (f"printed line {i + 1} differs: {g[i] if i < len(g) else '(none)'!r} vs the "
                              f"reference's {w[i] if i < len(w) else '(none)'!r}")
    return report


def _output_dtypes(meta: dict) -> list[str]:
    """The element type of each selected output (`result:j` -> the j-th output buffer, `arg:i` -> argument i)."""
    specs = meta["arg_specs"]
    dtypes = []
    for o in meta["outputs"]:
        kind, _, idx = o.partition(":")
        spec = specs[meta["num_inputs"] + int(idx)] if kind == "result" else specs[int(idx)]
        dtypes.append(spec["dtype"])
    return dtypes


def _reference_key(base: str, target, opts: RunOptions, inputs: list, entry: str) -> tuple:
    """Reference outputs depend only on the IR they start from (`base`: reference_base), the reference
    pipeline and the inputs: runs that share them (e.g. every candidate of `tune`) reuse one reference run."""
    import hashlib

    digest = hashlib.sha256()
    for a in inputs:
        digest.update(str((a.shape, a.dtype.str)).encode())
        digest.update(a.tobytes())
    return (base, target.reference_target, target.reference_lowering, entry,
            repr(target.reference_prelude()), digest.hexdigest())


def _artifact(prepared: dict):
    """What `Target.execute` runs: the LLVM-dialect text, or a target's own artifact (see run_artifact)."""
    return prepared["artifact"] if "artifact" in prepared else prepared["llvm"]


def _save(directory: Path, prefix: str, arrays: list) -> None:
    import numpy as np

    from workbench.common.dtypes import is_extended_float

    directory.mkdir(parents=True, exist_ok=True)
    for i, a in enumerate(arrays):
        # bf16/fp8 as raw items (|V2, |V1): np.load cannot read some ml_dtypes descriptors (`<f1` of
        # e5m2); `run --npy` reads them back as the argument's type, numpy users `.view(ml_dtypes.X)`
        np.save(directory / f"{prefix}{i}.npy", a.view(f"V{a.itemsize}") if is_extended_float(a.dtype) else a)
